package seqcount

import (
	"math"
	"strconv"
)

// podTally pools each pod's counts over the usable steps, from Counts.Pods.
type podTally struct {
	kind         Kind
	stable, gray map[string]*Counts
}

func newPodTally(kind Kind) podTally {
	return podTally{kind: kind, stable: map[string]*Counts{}, gray: map[string]*Counts{}}
}

// add pools one usable step's per-pod counts; a pod entry with non-finite or negative counts is
// left out of the pod tally (the step's totals are what the test reads).
func (p podTally) add(st Step) {
	pool(p.stable, st.Stable.Pods)
	pool(p.gray, st.Gray.Pods)
}

func pool(m map[string]*Counts, pods []Counts) {
	for i, c := range pods {
		if !allFinite(c) || c.Num < 0 || c.Requests < 0 {
			continue
		}
		name := c.Pod
		if name == "" {
			name = "#" + strconv.Itoa(i)
		}
		acc := m[name]
		if acc == nil {
			acc = &Counts{Pod: name}
			m[name] = acc
		}
		acc.Num += c.Num
		acc.Requests += c.Requests
	}
}

// counts returns the number of gray and stable pods that served requests, at least 1 each (one
// pod is assumed for a track without per-pod counts).
func (p podTally) counts() (gray, stable int) {
	return max(served(p.gray), 1), max(served(p.stable), 1)
}

func served(m map[string]*Counts) int {
	n := 0
	for _, c := range m {
		if c.Requests > 0 {
			n++
		}
	}
	return n
}

// spread estimates the sd of lasting per-pod offsets of the log rate from stable's pods: the
// sample variance of the pods' pooled log rates less their mean sampling variance (for Proportion,
// about 1/events per pod; for PerRequest it is not known and nothing is taken off, which
// overstates the spread). It returns 0 and why with fewer than two stable pods.
func (p podTally) spread() (float64, string) {
	var logs, noise []float64
	for _, c := range p.stable {
		if c.Requests <= 0 {
			continue
		}
		switch {
		case p.kind == Proportion:
			logs = append(logs, math.Log(smoothRate(c.Num, c.Requests)))
			noise = append(noise, 1/(c.Num+0.5))
		case c.Num > 0:
			logs = append(logs, math.Log(c.Num/c.Requests))
			noise = append(noise, 0)
		}
	}
	if len(logs) < 2 {
		if len(p.stable) == 0 {
			return 0, "not allowed for (no per-pod counts)"
		}
		return 0, "not allowed for (fewer than two stable pods with a rate)"
	}
	var mean, vn float64
	for i, l := range logs {
		mean += l
		vn += noise[i]
	}
	mean /= float64(len(logs))
	vn /= float64(len(logs))
	var ss float64
	for _, l := range logs {
		ss += (l - mean) * (l - mean)
	}
	v := ss/float64(len(logs)-1) - vn
	if v <= 0 {
		return 0, "estimated 0 from stable's pods"
	}
	return math.Sqrt(v), "estimated from stable's pods"
}

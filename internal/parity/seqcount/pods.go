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

// spread estimates the sd of lasting per-pod offsets of the log rate from the pods within each
// track: the within-track sums of squares of the pods' pooled log rates about their track's mean
// over their degrees of freedom (pods less one, per track, summed), less the pods' mean sampling
// variance (for Proportion, about 1/events per pod; for PerRequest it is not known and nothing is
// taken off, which overstates the spread). It returns 0 and why without a track of two pods.
func (p podTally) spread() (float64, string) {
	var ss, vn float64
	var df, npods int
	for _, track := range []map[string]*Counts{p.stable, p.gray} {
		var logs []float64
		for _, c := range track {
			if c.Requests <= 0 {
				continue
			}
			switch {
			case p.kind == Proportion:
				logs = append(logs, math.Log(smoothRate(c.Num, c.Requests)))
				vn += 1 / (c.Num + 0.5)
			case c.Num > 0:
				logs = append(logs, math.Log(c.Num/c.Requests))
			default:
				continue
			}
			npods++
		}
		if len(logs) < 2 {
			continue
		}
		var mean float64
		for _, l := range logs {
			mean += l / float64(len(logs))
		}
		for _, l := range logs {
			ss += (l - mean) * (l - mean)
		}
		df += len(logs) - 1
	}
	if df < 1 {
		if len(p.stable) == 0 {
			return 0, "not allowed for (no per-pod counts)"
		}
		return 0, "not allowed for (no track with two pods with a rate)"
	}
	v := ss/float64(df) - vn/float64(npods)
	if v <= 0 {
		return 0, "estimated 0 from the pods within each track"
	}
	return math.Sqrt(v), "estimated from the pods within each track"
}

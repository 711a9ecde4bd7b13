package seqcount

import (
	"math"
	"math/rand/v2"
	"testing"
)

// perRequestStep draws one 20 s step of a per-request amount (CV 1, normal approximation) at rps
// over pods with lasting factors off (stable's first ns of them), stable taking share of the
// requests (all of them when gray is false: stable's history).
func perRequestStep(rng *rand.Rand, off []float64, ns int, rps, share float64, gray bool) Step {
	var st Step
	for k, f := range off {
		isStable := k < ns
		if !gray && !isStable {
			continue
		}
		w := share / float64(ns)
		if !gray {
			w = 1 / float64(ns)
		} else if !isStable {
			w = (1 - share) / float64(len(off)-ns)
		}
		req := poissonish(rng, rps*20*w)
		num := 1.4e-3 * f * (req + math.Sqrt(req)*rng.NormFloat64())
		c := Counts{Pod: string(rune('a' + k)), Num: math.Max(num, 0), Requests: req}
		tr := &st.Gray
		if isStable {
			tr = &st.Stable
		}
		tr.Pods = append(tr.Pods, c)
		tr.Num += c.Num
		tr.Requests += c.Requests
	}
	return st
}

// TestPodSpreadHistory: stable's history joins the pod spread (JudgeAfter). Its pods' pooled rates
// over 30 minutes of history and 5 of window carry far less sampling noise than over the window
// alone, so lasting offsets (sd 0.05, 4 + 1 pods at 150 req/s, CPU per request with CV 1) are
// less often read as 0 once that noise is taken off at its 95% quantile (10 of 300 draws over the
// window alone, 0 with the history), and read nearer the truth. The chi-squared scatter of 3
// degrees of freedom stays: no history adds pods. A pod that served only in the history is no pod
// of the window.
func TestPodSpreadHistory(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	const draws, sigma = 300, 0.05
	var errWindow, errBoth, meanW, meanB float64
	var zeroW, zeroB int
	for range draws {
		off := make([]float64, 5)
		for k := range off {
			off[k] = math.Exp(sigma * rng.NormFloat64())
		}
		window, both := newPodTally(PerRequest), newPodTally(PerRequest)
		for range 90 {
			both.addHistory(perRequestStep(rng, off, 4, 150, 1, false).Stable)
		}
		for range 15 {
			st := perRequestStep(rng, off, 4, 150, 0.9, true)
			window.add(st)
			both.add(st)
		}
		w, _, _ := window.spread()
		b, _, _ := both.spread()
		meanW, meanB = meanW+w/draws, meanB+b/draws
		if w == 0 {
			zeroW++
		}
		if b == 0 {
			zeroB++
		}
		errWindow += (w - sigma) * (w - sigma) / draws
		errBoth += (b - sigma) * (b - sigma) / draws
	}
	rw, rb := math.Sqrt(errWindow), math.Sqrt(errBoth)
	t.Logf("spread over the window alone: 0 in %d of %d draws, mean %.4f, root mean square error %.4f; with the history: 0 in %d, mean %.4f, error %.4f",
		zeroW, draws, meanW, rw, zeroB, meanB, rb)
	if zeroW < 5 || zeroB > zeroW/3 || !(meanB > meanW) || !(rb < rw) {
		t.Errorf("with the history the spread must read 0 in at most a third of the draws it does without (%d of %d, want at least 5), and be nearer %g on average and in square error", zeroB, zeroW, sigma)
	}

	p := newPodTally(PerRequest)
	p.addHistory(Counts{Num: 30, Requests: 30, Pods: []Counts{{Pod: "s1", Num: 10, Requests: 10}, {Pod: "s2", Num: 10, Requests: 10}, {Pod: "old", Num: 10, Requests: 10}}})
	p.add(Step{Stable: Counts{Num: 20, Requests: 20, Pods: []Counts{{Pod: "s1", Num: 10, Requests: 10}, {Pod: "s2", Num: 10, Requests: 10}}},
		Gray: Counts{Num: 5, Requests: 5, Pods: []Counts{{Pod: "g1", Num: 5, Requests: 5}}}})
	if g, s := p.counts(); g != 1 || s != 2 {
		t.Errorf("counts: %d gray and %d stable pods, want 1 and 2 (a pod of the history alone is not counted)", g, s)
	}
}

// TestPodSpreadLeavesOutHistoryOnlyPods: stable's history holds a pod of the other build (CPU per
// request 1.44 ms where the window's pods run at 1.34, as before a promotion), which no longer
// serves. It adds no degrees of freedom and no spread: with one stable and one gray pod in the
// window there is no track of two pods to estimate one from. Before, it gave 2 degrees of freedom
// and an allowance that widened the floor 3.6 times, so a gray at 3x the CPU could not FAIL (the
// kind run's Argo misuse canary, Inconclusive).
func TestPodSpreadLeavesOutHistoryOnlyPods(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := newPodTally(PerRequest)
	for range 60 {
		h := perRequestStep(rng, []float64{1.44 / 1.34, 1, 1}, 3, 30, 1, false)
		p.addHistory(h.Stable)
	}
	for range 30 {
		st := perRequestStep(rng, []float64{1, 3}, 1, 30, 0.5, true)
		st.Stable.Pods[0].Pod, st.Gray.Pods[0].Pod = "b", "g" // the history's second pod serves on
		p.add(st)
	}
	sd, df, why := p.spread()
	if sd != 0 || df != 0 {
		t.Errorf("spread %g on %d degrees of freedom (%s), want none: the window has one pod per track", sd, df, why)
	}
}

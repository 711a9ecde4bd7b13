package seqcount

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// watchWeight is the share of the FAIL e-process that watches the steps after a PASS (package
// doc, "Watching after a PASS"): the FAIL test from the rollout's start holds the rest.
const watchWeight = 0.25

// watchEvery is the watches' cadence: after the first PASS a watch starts on the step after it
// and then every watchEvery steps (200 s of 20 s steps), whatever the data, so that a regression
// that starts after a PASS has a watch started at most watchEvery steps before it.
const watchEvery = 10

// watchRunning is how many of the newest watches run: an older one stops (its e-value kept as
// it stood) when watchRunning newer ones have started, so a watch runs for watchRunning x
// watchEvery steps (10 minutes of 20 s steps) at most, and at most 1 + watchRunning judges read
// each step.
const watchRunning = 3

// watchShift shapes the watches' weights, watchWeight (m+1)/((k+m)(k+m+1)) for the k-th with
// m = watchShift: 1/5, 2/15, 2/21, 1/14, ... of watchWeight, flatter than m = 0's 1/(k(k+1))
// (1/2, 1/6, 1/12, 1/20, ...), so that the watches of a rollout's first hour weigh more and the
// first ones less.
const watchShift = 3

// watchLogWeight returns the log of the k-th watch's weight in the FAIL e-process (k = 1, 2, ...;
// they sum to watchWeight, and the k-th and later to watchWeight (m+1)/(k+m)); k = 0 is the FAIL
// test from the rollout's start, 1-watchWeight.
func watchLogWeight(k int) float64 {
	if k == 0 {
		return math.Log1p(-watchWeight)
	}
	m := float64(watchShift)
	return math.Log(watchWeight) + math.Log(m+1) - math.Log(float64(k)+m) - math.Log(float64(k)+m+1)
}

// watchedLogEF returns the log of the FAIL e-process sum_k w_k E_k of the FAIL tests logEs (the
// one from the start first, then the watches in order), the watches not yet started at 1 (their
// weights sum to watchWeight (m+1)/(n+m) after n-1 watches).
func watchedLogEF(logEs ...float64) float64 {
	terms := make([]float64, len(logEs)+1)
	for k, l := range logEs {
		terms[k] = watchLogWeight(k) + l
	}
	if n := len(logEs); n > 0 {
		m := float64(watchShift)
		terms[n] = math.Log(watchWeight) + math.Log(m+1) - math.Log(float64(n)+m)
	}
	return logSumExpAll(terms)
}

// watch goes on judging a rollout after its PASS at steps[i], to the last step. The FAIL test
// from the start goes on, and watches start on the step after the PASS and every watchEvery steps
// after it (stable's steps up to each start joining its history): judges whose FAIL tests weigh in
// the rollout's FAIL e-process (watchLogWeight). A watch stops, its e-value kept as it stood (a
// stopped e-process), when its own PASS test crosses (it has seen parity, and its sum of contrasts
// can only hold a later regression back) or when watchRunning newer watches have started. The
// rollout FAILs when the weighted sum of every FAIL test (watchedLogEF) reaches the largest of
// their bars; the first PASS stands when it never does. At parity a watch PASSes within minutes,
// so about two judges read each step, and never more than 1 + watchRunning.
func (j *judge) watch(history []Counts, steps []Step, tail *TailTest, i int) Result {
	passed := j.result()
	// watcher is one watch: its judge, its tail's FAIL test (nil without one), and whether it
	// has stopped.
	type watcher struct {
		*judge
		tailTest *TailTest
		stopped  bool
	}
	var ws []watcher
	start := func(at int) {
		hist := slices.Clip(history)
		for _, st := range steps[:at] {
			hist = append(hist, st.Stable)
		}
		var wt *TailTest
		if tail != nil {
			th := slices.Clip(tail.History)
			for _, st := range tail.Steps[:min(at, len(tail.Steps))] {
				th = append(th, st.Stable)
			}
			wt = &TailTest{Steps: tail.Steps[min(at, len(tail.Steps)):], Limits: tail.Limits, Bound: tail.Bound, History: th}
		}
		w := newJudgeTail(j.t, j.kind, j.lim, hist, steps[at:], wt)
		w.first = at
		ws = append(ws, watcher{judge: w, tailTest: wt})
	}
	start(i + 1)
	logEs := make([]float64, 0, 16)
	logE := watchedLogEF(j.logEF)
	for k := i + 1; k < len(steps); k++ {
		j.addTail(tail, k)
		if j.add(steps[k]) {
			j.evidence()
		}
		logEs, bar := append(logEs[:0], j.logEF), j.failBar
		for _, w := range ws {
			if !w.stopped {
				w.addTail(w.tailTest, k-w.first)
				if w.add(steps[k]) {
					w.look()
				}
			}
			logEs, bar = append(logEs, w.logEF), max(bar, w.failBar)
		}
		logE = watchedLogEF(logEs...)
		if logE >= math.Log(bar) {
			w := ws[len(ws)-1].judge
			for _, c := range ws {
				if c.logEF > w.logEF {
					w = c.judge // the watch with the most evidence names the effect
				}
			}
			w.out, w.at, w.failBar = Fail, steps[k].T, bar
			r := w.result()
			r.EFail, r.Passed = math.Exp(logE), passed.Rejected
			r.Note = fmt.Sprintf("FAIL after the PASS at %s: the FAIL tests since the start and %d watches since (package doc, \"Watching after a PASS\") reached e-value %s against the bar %.4g; the watch from %s, on its %d steps: %s",
				passed.Rejected.UTC().Format(time.TimeOnly), len(ws), fmtE(logE, 4), bar, steps[w.first].T.UTC().Format(time.TimeOnly), len(w.obs), r.Note)
			return r
		}
		for n := range ws {
			if w := &ws[n]; !w.stopped && w.out == Pass {
				w.stopped, w.out, w.failOnly = true, Inconclusive, true
			}
		}
		if (k-i)%watchEvery == 0 && k+1 < len(steps) {
			start(k + 1)
		}
		for n, run := len(ws)-1, 0; n >= 0; n-- {
			if !ws[n].stopped {
				if run++; run > watchRunning {
					ws[n].stopped = true
				}
			}
		}
	}
	passed.EFail = math.Exp(logE)
	passed.Note += fmt.Sprintf("; watched after the PASS: the FAIL tests since the start and %d watches since at e-value %s", len(ws), fmtE(logE, 3))
	return passed
}

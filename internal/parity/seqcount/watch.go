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

// watchMinSteps is the fewest steps a watch runs before its PASS starts the next one: five minutes
// of 20 s steps, so that a rollout at parity starts a watch every five minutes or so, not at every
// PASS (each new watch needs more evidence than the one before it, and costs a judge per step).
const watchMinSteps = 15

// watchLogWeight returns the log of the k-th watch's weight in the FAIL e-process,
// watchWeight/(k(k+1)) (k = 1, 2, ...; they sum to watchWeight); k = 0 is the FAIL test from the
// rollout's start, 1-watchWeight.
func watchLogWeight(k int) float64 {
	if k == 0 {
		return math.Log1p(-watchWeight)
	}
	return math.Log(watchWeight) - math.Log(float64(k)) - math.Log(float64(k+1))
}

// watchedLogEF returns the log of the FAIL e-process sum_k w_k E_k of the FAIL tests logEs (the
// one from the start first, then the watches in order), the watches not yet started at 1 (their
// weights sum to watchWeight/n after n-1 watches).
func watchedLogEF(logEs ...float64) float64 {
	terms := make([]float64, len(logEs)+1)
	for k, l := range logEs {
		terms[k] = watchLogWeight(k) + l
	}
	if n := len(logEs); n > 0 {
		terms[n] = math.Log(watchWeight) - math.Log(float64(n))
	}
	return logSumExpAll(terms)
}

// watch goes on judging a rollout after its PASS at steps[i], to the last step. The FAIL test
// from the start goes on, and a watch starts on the steps after the PASS (stable's steps up to it
// joining its history): a judge whose FAIL test weighs in the rollout's FAIL e-process and whose
// PASS, once it has run watchMinSteps steps, starts the next watch on the steps after it and
// stops it (its e-value is kept as it stood: a stopped e-process). The rollout FAILs when the
// weighted sum of every FAIL test (watchedLogEF) reaches the largest of their bars; the first PASS
// stands when it never does. Two judges run at each step, the one from the start and the newest
// watch, so an hour of 20 s steps costs about 7 times less than with every watch running
// (BenchmarkJudgeHour: 9.6 against 67 ms), with the same verdicts in TestLateRegressionFailsAfterThePass
// and TestTailOnlyRegressions.
func (j *judge) watch(history []Counts, steps []Step, tail *TailTest, i int) Result {
	passed := j.result()
	ws := []*judge{j}
	var wtails []*TailTest // each watch's tail test (nil without one)
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
		ws, wtails = append(ws, w), append(wtails, wt)
	}
	start(i + 1)
	logEs := make([]float64, 0, 8)
	logE := watchedLogEF(j.logEF)
	for k := i + 1; k < len(steps); k++ {
		j.addTail(tail, k)
		if j.add(steps[k]) {
			j.evidence()
		}
		logEs, bar := append(logEs[:0], j.logEF), j.failBar
		newest := len(ws) - 1
		for n, w := range ws[1:] {
			if n+1 == newest { // the older ones stopped when the next started
				w.addTail(wtails[n], k-w.first)
				if w.add(steps[k]) {
					w.look()
				}
			}
			logEs, bar = append(logEs, w.logEF), max(bar, w.failBar)
		}
		logE = watchedLogEF(logEs...)
		if logE >= math.Log(bar) {
			w := ws[newest]
			for _, c := range ws[1:] {
				if c.logEF > w.logEF {
					w = c // the watch with the most evidence names the effect
				}
			}
			w.out, w.at, w.failBar = Fail, steps[k].T, bar
			r := w.result()
			r.EFail, r.Passed = math.Exp(logE), passed.Rejected
			r.Note = fmt.Sprintf("FAIL after the PASS at %s: the FAIL tests since the start and %d watches since (package doc, \"Watching after a PASS\") reached e-value %s against the bar %.4g; the watch from %s, on its %d steps: %s",
				passed.Rejected.UTC().Format(time.TimeOnly), len(ws)-1, fmtE(logE, 4), bar, steps[w.first].T.UTC().Format(time.TimeOnly), len(w.obs), r.Note)
			return r
		}
		if nw := ws[newest]; nw.out == Pass && k+1-nw.first >= watchMinSteps {
			nw.out, nw.failOnly = Inconclusive, true // its PASS starts the next watch; it watches on
			if k+1 < len(steps) {
				start(k + 1)
			}
		}
	}
	passed.EFail = math.Exp(logE)
	passed.Note += fmt.Sprintf("; watched after the PASS: the FAIL tests since the start and %d watches since at e-value %s", len(ws)-1, fmtE(logE, 3))
	return passed
}

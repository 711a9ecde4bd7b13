package seqcount

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// result builds the Result of the last look.
func (j *judge) result() Result {
	bar := j.bar
	if j.out == Fail {
		bar = j.failBar
	}
	r := Result{Outcome: j.out, Steps: len(j.obs), Skipped: j.skipped(), Bar: bar,
		EFail: math.Exp(j.logEF), EPass: math.Exp(j.logEP), Inflation: j.infl, Rejected: j.at}
	ng, rg, ns, rs := j.pooled()
	gr, sr := ng/rg, ns/rs
	r.Diff, r.Ratio = gr-sr, math.NaN()
	if sr > 0 {
		r.Ratio = gr / sr
	}
	if len(j.obs) == 0 {
		r.Diff = math.NaN()
	}
	var parts []string
	switch j.out {
	case Fail:
		parts = append(parts, fmt.Sprintf("FAIL: e-value %s reached the bar %.4g against gray within floor %s, after %d steps", fmtE(j.logEF, 4), r.Bar, fmtBound(j.floorUsed), r.Steps))
	case Pass:
		parts = append(parts, fmt.Sprintf("PASS: e-value %s reached the bar %.4g against gray at or beyond margin %s, after %d steps", fmtE(j.logEP, 4), r.Bar, fmtBound(j.marginUsed), r.Steps))
	default:
		why := j.why
		if why == "" {
			why = "neither e-value reached the bar"
		}
		parts = append(parts, fmt.Sprintf("NO DATA: %s; FAIL e-value %s and PASS e-value %s of bar %.4g after %d steps", why, fmtE(j.logEF, 3), fmtE(j.logEP, 3), r.Bar, r.Steps))
	}
	parts = append(parts, fmt.Sprintf("gray rate %.4g vs stable %.4g (ratio %.4g, diff %+.4g), inflation %.3g", gr, sr, r.Ratio, r.Diff, r.Inflation))
	if j.failTemper > 0 {
		parts = append(parts, fmt.Sprintf("the FAIL test mixes in the one conditioned on the steps' events at weight %g (the tracks' step-to-step changes correlate %.2f, at least %g: a drift they share; tempered by %.3g; package doc, \"Rare events\")", eventsFailWeight, j.coMove, coMoveMin, j.failTemper))
	}
	if j.temper > 0 {
		parts = append(parts, fmt.Sprintf("the PASS test conditions on the steps' events (the margin allows gray %.4g x stable's rate; tempered by %.3g; package doc, \"Rare events\")", 1+j.marginUsed.Rel, j.temper))
	}
	if t := j.tail; t != nil {
		tg, rg, ts, rs := t.pooled()
		parts = append(parts, fmt.Sprintf("the tail, requests slower than %gs: FAIL e-value %s (weighted %g in the FAIL test), gray rate %.4g vs stable %.4g",
			j.tailBound, fmtE(t.logEF, 3), tailWeight, tg/rg, ts/rs))
	}
	if j.podNote != "" {
		parts = append(parts, j.podNote)
	}
	if s := j.skipNote(); s != "" {
		parts = append(parts, s)
	}
	if j.withhold {
		parts = append(parts, "PASS withheld: some steps had non-finite counts")
	}
	r.Note = strings.Join(parts, "; ")
	return r
}

// pooled returns the usable steps' counts summed: gray's numerator and requests, then stable's.
func (j *judge) pooled() (ng, rg, ns, rs float64) {
	for _, o := range j.obs {
		ng, rg, ns, rs = ng+o.ng, rg+o.rg, ns+o.ns, rs+o.rs
	}
	return ng, rg, ns, rs
}

// skipNote names every cause of a left-out step with its count.
func (j *judge) skipNote() string {
	if len(j.skips) == 0 {
		return ""
	}
	causes := make([]string, 0, len(j.skips))
	for c, n := range j.skips {
		causes = append(causes, fmt.Sprintf("%d with %s", n, c))
	}
	sort.Strings(causes)
	return fmt.Sprintf("left out %d of %d steps: %s", j.skipped(), j.seen, strings.Join(causes, ", "))
}

func fmtBound(b Bound) string {
	return fmt.Sprintf("rate_s x %.4g %+.4g", 1+b.Rel, b.Abs)
}

// fmtE formats the e-value e^logE to prec significant digits, or as "e^x" where it is beyond a
// float64 (Result's EFail and EPass are then +Inf).
func fmtE(logE float64, prec int) string {
	if logE > maxLogFloat {
		return "e^" + strconv.FormatFloat(logE, 'g', prec, 64)
	}
	return strconv.FormatFloat(math.Exp(logE), 'g', prec, 64)
}

// maxLogFloat is log(math.MaxFloat64): e-values beyond it are +Inf as a float64.
var maxLogFloat = math.Log(math.MaxFloat64)

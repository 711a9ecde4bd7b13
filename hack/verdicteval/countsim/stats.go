package countsim

import (
	"math"
	"slices"
	"time"
)

// Wilson returns the 95% Wilson score interval of k successes in n trials ([0, 1] for n <= 0; k
// is clamped to [0, n]).
func Wilson(k, n int) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	k = min(max(k, 0), n)
	const z = 1.959963984540054
	p, nf := float64(k)/float64(n), float64(n)
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return math.Max(0, mid-half), math.Min(1, mid+half)
}

// Rate is k of n with its 95% Wilson interval.
type Rate struct {
	K, N   int
	Lo, Hi float64
}

func rateOf(k, n int) Rate {
	lo, hi := Wilson(k, n)
	return Rate{K: k, N: n, Lo: lo, Hi: hi}
}

// P returns k/n (NaN for n = 0).
func (r Rate) P() float64 { return float64(r.K) / float64(r.N) }

// Summary is one judge at one look interval over one cell's runs.
type Summary struct {
	// Runs is how many runs; Fail the runs FAILed at some look; Fail10 those FAILed within ten
	// minutes; Pass those PASSed at some look before any FAIL.
	Runs               int
	Fail, Fail10, Pass Rate
	// FailMedian, FailP90, PassMedian and PassP90 are quantiles of the time to the first FAIL and
	// PASS over all runs, a run without one counting as never (+Inf).
	FailMedian, FailP90, PassMedian, PassP90 float64 // minutes
	// FailBy counts the FAILed runs by the SLI that FAILed first (Trace.FailSLI).
	FailBy map[int]int
}

// Summarize summarises the traces of one judge at one look interval.
func Summarize(tr []Trace) Summary {
	var fails, passes []float64
	var f, f10, p int
	by := map[int]int{}
	for _, t := range tr {
		fails, passes = append(fails, minutesOf(t.FailAt)), append(passes, minutesOf(t.PassAt))
		if t.FailAt >= 0 {
			f++
			by[t.FailSLI]++
			if t.FailAt <= 10*time.Minute {
				f10++
			}
		}
		if t.PassAt >= 0 {
			p++
		}
	}
	n := len(tr)
	return Summary{
		Runs: n, Fail: rateOf(f, n), Fail10: rateOf(f10, n), Pass: rateOf(p, n),
		FailMedian: Quantile(fails, 0.5), FailP90: Quantile(fails, 0.9),
		PassMedian: Quantile(passes, 0.5), PassP90: Quantile(passes, 0.9), FailBy: by,
	}
}

func minutesOf(d time.Duration) float64 {
	if d < 0 {
		return math.Inf(1)
	}
	return d.Minutes()
}

// Quantile returns the q quantile of xs (the smallest x with at least q of them at or below it);
// NaN for none.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Oracle is what a fixed-horizon one-sided z-test that knows each SLI's true mean contrast and
// the true variance of its sum over n steps needs, in minutes, at alpha/K and a power: to FAIL
// (the SLI most beyond its floor) and to PASS (every SLI within its margin). Both moments are
// estimated per horizon across the cell's simulated runs, so whatever makes the steps of a run
// dependent (lasting pod offsets, per-track drift) counts as it does for a test of that horizon:
// a lasting offset that does not average out keeps the variance of the mean from falling as 1/n.
// The FAIL test's critical value is read at the null's sd, the same sum's across the runs of a
// gray at its floor (the boundary cell) when there are such runs, and its power at the cell's
// own sd: counts of a gray beyond its floor vary more than at the floor, which the test's
// critical value does not pay. The PASS test reads both at the cell's sd (no cell holds every
// SLI at its margin); at parity that sd is the smaller, so the PASS oracle errs fast.
// +Inf when no SLI is beyond its floor, some SLI is not within its margin, or no horizon within
// the rollout reaches the power.
type Oracle struct {
	// Fail50, Fail95: minutes to FAIL at power 0.5 and 0.95; Pass50, Pass90 to PASS at 0.5, 0.9.
	Fail50, Fail95, Pass50, Pass90 float64
}

// horizonMoments returns, per horizon n (1-based: index n-1), the moments across runs of the sum
// of one SLI's first n contrasts (a step without a contrast adds nothing), for runs that have
// the SLI; contrast picks the direction.
func horizonMoments(runs []RunResult, sli int, contrast func(Contrast) []float32) []moments {
	var hs []moments
	for _, r := range runs {
		if sli >= len(r.Contrasts) {
			continue
		}
		xs := contrast(r.Contrasts[sli])
		for len(hs) < len(xs) {
			hs = append(hs, moments{})
		}
		var s float64
		for n, x := range xs {
			if v := float64(x); !math.IsNaN(v) && !math.IsInf(v, 0) {
				s += v
			}
			hs[n].add(s)
		}
	}
	return hs
}

// OracleOf computes the oracle from the runs' contrasts, at per-rollout alpha over k SLIs and
// steps of step; null holds the runs of the same model and traffic with the gray at its floor
// (nil: the FAIL test's critical value is read at the runs' own sd). It needs at least two runs of
// a horizon to estimate its variance.
func OracleOf(runs, null []RunResult, alpha float64, k int, step time.Duration) Oracle {
	nSLI := 0
	for _, r := range runs {
		nSLI = max(nSLI, len(r.Contrasts))
	}
	za := normQuantile(1 - alpha/float64(k))
	// minutes is the shortest horizon at which the test at alpha/k has the power: the sum's
	// mean, in the direction sign, at least za sds of the null's sum (h0; hs where h0 has no
	// such horizon) plus z_power sds of its own from zero.
	minutes := func(hs, h0 []moments, sign, power float64) float64 {
		zp := normQuantile(power)
		for n, m := range hs {
			d, sd, sd0 := sign*m.mean(), m.sd(), m.sd()
			if n < len(h0) && !math.IsNaN(h0[n].sd()) {
				sd0 = h0[n].sd()
			}
			if d > 0 && !math.IsNaN(sd) && za*sd0+zp*sd <= d {
				return float64(n+1) * step.Minutes()
			}
		}
		return math.Inf(1)
	}
	o := Oracle{Fail50: math.Inf(1), Fail95: math.Inf(1)}
	for i := range nSLI {
		fail := horizonMoments(runs, i, func(c Contrast) []float32 { return c.Fail })
		pass := horizonMoments(runs, i, func(c Contrast) []float32 { return c.Pass })
		fail0 := horizonMoments(null, i, func(c Contrast) []float32 { return c.Fail })
		o.Fail50, o.Fail95 = math.Min(o.Fail50, minutes(fail, fail0, 1, 0.5)), math.Min(o.Fail95, minutes(fail, fail0, 1, 0.95))
		p50, p90 := minutes(pass, nil, -1, 0.5), minutes(pass, nil, -1, 0.9)
		if i == 0 {
			o.Pass50, o.Pass90 = p50, p90
		}
		o.Pass50, o.Pass90 = math.Max(o.Pass50, p50), math.Max(o.Pass90, p90)
	}
	if nSLI == 0 {
		o.Pass50, o.Pass90 = math.Inf(1), math.Inf(1)
	}
	return o
}

package countsim

import (
	"strconv"
	"time"

	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// This file judges a run with the shipped count-based test (parity.JudgeCounts, which
// parity.Evaluate calls on what it reads from Prometheus): the simulator only draws the counters,
// and turns them into the count rules' samples as Prometheus stores them. The levels, the limits
// (at stable's level over its history before the rollout), K, the garbage checks, the steps and
// the judge are the shipped ones.

// ruleLookback is Prometheus' lookback: a rule evaluation reads a series' last sample within it.
const ruleLookback = 5 * time.Minute

// ruleSeries is one count rule's samples of a track, per pod, as the count-based test reads them
// (promread.ReadRaw) from Prometheus 3: the rule (a sum by pod of the scraped counter) is
// evaluated every step from the run's first scrape, each evaluation reading the pod's last scrape
// at or before it (none before its first scrape, or when the last is older than the lookback),
// and a range selector holds the samples after from up to end (left-open since Prometheus 3).
// le labels a bucket's series.
func ruleSeries(tm Timing, pods []PodCounters, s int, le string, step time.Duration, from, end time.Time) []promread.RawSeries {
	out := make([]promread.RawSeries, 0, len(pods))
	for _, p := range pods {
		rs := promread.RawSeries{ID: p.Name, Le: le}
		vals := p.Values[s]
		k := -1 // the pod's last scrape at or before t
		for t := tm.Start; !t.After(end); t = t.Add(step) {
			for k+1 < len(vals) && !tm.At(p.First+k+1).After(t) {
				k++
			}
			if k < 0 || t.Sub(tm.At(p.First+k)) > ruleLookback || !t.After(from) {
				continue
			}
			rs.Points = append(rs.Points, promread.Point{T: t, V: vals[k]})
		}
		if len(rs.Points) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// countsInput is the shipped test's input for one SLI of a run at the look at: the count rules'
// samples of both tracks from the run's start (stable's history, then the rollout) to at.
func (cfg Config) countsInput(run Run, s sli, at time.Time) parity.CountsInput {
	tm := cfg.Timing
	from := tm.GrayStart().Add(-parity.CountHistory) // where the count-based test's reads start
	series := func(num int, le string) parity.CountSeries {
		return parity.CountSeries{
			Stable: ruleSeries(tm, run.Stable, num, le, cfg.Step, from, at),
			Gray:   ruleSeries(tm, run.Gray, num, le, cfg.Step, from, at),
		}
	}
	in := parity.CountsInput{
		SLI: s.cat, Crit: parity.CriterionOf(s.cat), K: cfg.Test.K, Alpha: cfg.Test.Alpha,
		Since: tm.GrayStart(), At: at, Step: cfg.Step,
		Requests: series(SeriesCount, ""),
	}
	if s.q == 0 {
		in.Num = series(s.series, "")
		return in
	}
	for j, b := range Bounds {
		bs := series(j, strconv.FormatFloat(b, 'g', -1, 64))
		in.Num.Stable, in.Num.Gray = append(in.Num.Stable, bs.Stable...), append(in.Num.Gray, bs.Gray...)
	}
	inf := series(SeriesCount, "+Inf")
	in.Num.Stable, in.Num.Gray = append(in.Num.Stable, inf.Stable...), append(in.Num.Gray, inf.Gray...)
	return in
}

// shippedLooks returns the look function of the shipped count-based test on a run: each SLI
// judged once over the whole rollout gives every look's outcome (a FAIL or a PASS from the look
// of its step on; for a FAIL after a PASS, the PASS from its look until the FAIL's), as a look
// per step would (TestShippedLooksMatchJudgingEachLook). The limits are read at stable's level
// over its history, the same at every look, which is what makes one call enough.
func (cfg Config) shippedLooks(run Run, slis []sli) lookFunc {
	end := cfg.Timing.GrayStart().Add(cfg.Timing.Rollout)
	ds := make([]decided, len(slis))
	for i, s := range slis {
		ds[i] = cfg.decide(parity.JudgeCounts(cfg.countsInput(run, s, end)))
	}
	return lookOf(ds)
}

// decided is one SLI's verdict over a run, by look.
type decided struct {
	out    parity.Verdict
	at     int // the step of the verdict, 1-based: decided at looks >= at
	passAt int // for a FAIL after a PASS, the PASS's step: PASS at looks passAt..at-1; 0 for none
}

// decide turns the shipped test's result into its looks.
func (cfg Config) decide(tr parity.TestResult) decided {
	stepOf := func(t time.Time) int {
		d := t.Sub(cfg.Timing.GrayStart())
		return int((d + cfg.Step - 1) / cfg.Step)
	}
	d := decided{out: tr.Verdict}
	if (tr.Verdict == parity.Fail || tr.Verdict == parity.Pass) && !tr.Rejected.IsZero() {
		d.at = stepOf(tr.Rejected)
	} else {
		d.out = parity.NoData
	}
	if !tr.Passed.IsZero() {
		d.passAt = stepOf(tr.Passed)
	}
	return d
}

// lookOf is the look function of the SLIs' verdicts: at look j, the first SLI (in order) that
// FAILed by then, -1 for none, and whether every SLI PASSed by then (and none failed).
func lookOf(ds []decided) lookFunc {
	return func(j int) (fail int, pass bool) {
		pass = true
		for i, d := range ds {
			switch {
			case d.out == parity.Fail && d.at <= j:
				return i, false
			case d.out == parity.Pass && d.at <= j:
			case d.passAt > 0 && d.passAt <= j:
			default:
				pass = false
			}
		}
		return -1, pass
	}
}

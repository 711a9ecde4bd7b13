package countsim

import (
	"math"
	"time"
)

// Trace is when a judge first FAILed and first PASSed a run (a PASS only before any FAIL), since
// the gray's start; -1 for never. FailSLI is the index (in the judged SLIs: latency p95, p99,
// errors, CPU, heap) of the first SLI that FAILed at that look; -1 for none.
type Trace struct {
	FailAt, PassAt time.Duration
	FailSLI        int
}

// Traces are a judge's traces of one run at its two look intervals.
type Traces struct {
	// Fast looks every Step (20 s); Minute every minute.
	Fast, Minute Trace
}

// lookFunc judges the run at look j (at j Steps after the gray's start): the first SLI that FAILs
// (-1: none) and whether every SLI PASSes.
type lookFunc func(j int) (fail int, pass bool)

// traceLooks runs looks 1..n, every look for Fast and every stride-th for Minute, until both have
// FAILed.
func traceLooks(n, stride int, step time.Duration, at lookFunc) Traces {
	tr := Traces{Fast: Trace{-1, -1, -1}, Minute: Trace{-1, -1, -1}}
	for j := 1; j <= n && (tr.Fast.FailAt < 0 || tr.Minute.FailAt < 0); j++ {
		fail, pass := at(j)
		d := time.Duration(j) * step
		tr.Fast.record(fail, pass, d)
		if j%stride == 0 {
			tr.Minute.record(fail, pass, d)
		}
	}
	return tr
}

// since returns t with its times read from a late regression's start from (0: unchanged): a
// FAIL before it counts at 0 (found at once), and a PASS before it is no false PASS (-1).
func (t Trace) since(from time.Duration) Trace {
	if from <= 0 {
		return t
	}
	if t.FailAt >= 0 {
		t.FailAt = max(0, t.FailAt-from)
	}
	if t.PassAt >= 0 && t.PassAt < from {
		t.PassAt = -1
	} else if t.PassAt >= 0 {
		t.PassAt -= from
	}
	return t
}

func (t *Trace) record(fail int, pass bool, at time.Duration) {
	switch {
	case t.FailAt >= 0:
	case fail >= 0:
		t.FailAt, t.FailSLI = at, fail
	case pass && t.PassAt < 0:
		t.PassAt = at
	}
}

// moments sums a contrast's values: count, sum and sum of squares.
type moments struct{ n, sum, sq float64 }

func (m *moments) add(x float64) {
	if !math.IsNaN(x) && !math.IsInf(x, 0) {
		m.n++
		m.sum += x
		m.sq += x * x
	}
}

// mean and sd of the values summed (NaN without two).
func (m moments) mean() float64 { return m.sum / m.n }

func (m moments) sd() float64 {
	if m.n < 2 {
		return math.NaN()
	}
	v := (m.sq - m.sum*m.sum/m.n) / (m.n - 1)
	return math.Sqrt(math.Max(v, 0))
}

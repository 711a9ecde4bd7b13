package seqcount

import "time"

// Kind is what a step's numerator counts.
type Kind int

const (
	// Proportion means Num counts requests (5xx; requests slower than a bound): 0 <= Num <= Requests.
	Proportion Kind = iota + 1
	// PerRequest means Num is an amount summed over the step's requests (CPU seconds, heap bytes).
	PerRequest
)

// Counts is one track's increments over one step.
type Counts struct {
	Num, Requests float64
	// Pods optionally carries the same increments per pod, each named by Pod (entries without a name
	// are named by their index). Judge counts each track's pods from it and, with Test.PodSpread
	// left to be estimated, estimates the spread of lasting per-pod offsets from the pods within
	// each track. The contrast itself reads only Num and Requests.
	Pods []Counts
	// Pod names the pod of an entry of Pods; empty on a track's total.
	Pod string
}

// Step is one step of both tracks; T is the step's end.
type Step struct {
	T            time.Time
	Stable, Gray Counts
}

// Bound is a limit on gray's rate against stable's: rateGray <= rateStable*(1+Rel) + Abs.
type Bound struct{ Rel, Abs float64 }

// Limits holds the two boundaries of a test. Floor is the FAIL boundary (a gray worse than it is a
// regression), Margin the PASS boundary (a PASS rules out gray at or beyond it). Margin must be
// beyond Floor.
type Limits struct{ Floor, Margin Bound }

// Outcome is the outcome of a test.
type Outcome int

const (
	// Inconclusive means neither e-value reached the bar (or the data could not be judged).
	Inconclusive Outcome = iota
	// Pass means gray at or beyond the margin was ruled out.
	Pass
	// Fail means gray within the floor was ruled out: a regression.
	Fail
)

// String returns "NO DATA", "PASS" or "FAIL".
func (o Outcome) String() string {
	switch o {
	case Pass:
		return "PASS"
	case Fail:
		return "FAIL"
	default:
		return "NO DATA"
	}
}

// Test configures the judge. Zero values take documented defaults.
type Test struct {
	// Alpha is the per-rollout error rate of each kind (false FAIL; false PASS), spent over K SLIs; default 0.01.
	Alpha float64
	// K is the number of SLIs judged together; default 1.
	K int
	// MinSteps is the fewest usable steps before any verdict; default 6.
	MinSteps int
	// Lag is how many step lags the autocorrelation inflation reads; default 3.
	Lag int
	// PodSpread is a known sd of lasting per-pod log offsets of the rate, allowed for at the
	// normal's quantile. Zero (the default) or negative means estimate it from both tracks'
	// per-pod counts (Counts.Pods), allowed for at Student's t quantile on the estimate's degrees
	// of freedom for PerRequest and at the normal's for Proportion (package doc, "Pod offsets"),
	// or allow nothing for pod offsets when the steps carry no per-pod counts (the Note says so).
	PodSpread float64
}

// Result is the judgement of one SLI.
type Result struct {
	Outcome   Outcome
	Steps     int       // steps used
	Skipped   int       // steps left out (see Note)
	EFail     float64   // e-value against "gray within the floor" (FAIL at >= Bar; +Inf beyond a float64, Note gives e^x)
	EPass     float64   // e-value against "gray at or beyond the margin" (PASS at >= Bar; the same)
	Bar       float64   // K/Alpha, or 2K/Alpha when half of Alpha is spent on a pod-offset allowance
	Ratio     float64   // pooled gray rate / pooled stable rate (NaN when stable's is 0)
	Diff      float64   // pooled gray rate - pooled stable rate
	Inflation float64   // the variance inflation used (>= 1)
	Rejected  time.Time // the step at which the outcome was first reached (zero if Inconclusive)
	Passed    time.Time // for a FAIL after a PASS (package doc, "Watching after a PASS"), the PASS's step; zero otherwise
	Note      string    // why NO DATA / what was left out; for FAIL and PASS, the evidence in one line
}

// Sample is one sample of a cumulative counter.
type Sample struct {
	T time.Time
	V float64
}

// Series is one pod's cumulative counter, samples in time order.
type Series struct {
	Pod     string
	Samples []Sample
}

// Histogram is one track's bucket series: Bounds are the finite upper bounds (le), ascending;
// Buckets[j] the per-pod cumulative series of bucket le=Bounds[j]; Count the per-pod series of _count.
type Histogram struct {
	Bounds  []float64
	Buckets [][]Series
	Count   []Series
}

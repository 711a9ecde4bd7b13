package seqcount

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrHistogram is wrapped by LatencySteps' errors: histograms that cannot be judged.
var ErrHistogram = errors.New("histograms cannot be judged")

// LatencySteps turns both tracks' histograms into Proportion steps for a quantile q (0.95, 0.99).
//
// The bound b is the finite bucket bound whose stable pooled exceedance S(b) (over all the steps)
// is the smallest at or above 1-q, the bound just below stable's q-quantile; when even the first
// bound's exceedance is below 1-q it is the first bound, and when every bound's is above, the
// last (both noted). When the floor and the margin are wide against stable's latencies (a floor
// of milliseconds on a service answering in a few), a gray at either would be slower than that
// bound in nearly every request, or both scaled bounds fall where stable's survival is read flat,
// and the two cannot be told apart there: the bound is then the first higher one at which a gray
// at the margin would exceed it in at most half its requests and the margin's exceedance ratio is
// at least 1% above the floor's (judgeableBound; noted). It reads only stable, so gray cannot
// steer it. Each step's Num is the requests slower than b (the _count increase minus the le=b
// bucket's increase) and Requests the _count increase, per track (and per pod in Counts.Pods); a
// step where a track's _count has no sample has Requests 0, which Judge leaves out.
//
// The limits are in exceedance terms for a quantile ratio limit: floor and margin are latency
// ratios (margin 1.10: gray's q-quantile <= 1.10 x stable's). If gray's latencies were stable's
// scaled by m, gray's exceedance at b would be stable's at b/m, so a bound m becomes
// Bound{Rel: S(b/m)/S(b) - 1}, with S stable's pooled survival function interpolated linearly in
// log-survival against log-latency between bounds (and extrapolated along the nearest segment).
//
// Bounds that differ between the tracks, a bucket list that does not match its bounds, q outside
// (0, 1), ratios that are not finite positive numbers with margin > floor, or a stable track with
// no requests give an error and no steps.
func LatencySteps(stable, gray Histogram, edges []time.Time, q float64, floor, margin float64) (steps []Step, lim Limits, bound float64, notes []string, err error) {
	l, err := LatencyTest(stable, gray, edges, q, floor, margin)
	return l.Steps, l.Limits, l.Bound, l.Notes, err
}

// Latency is a latency quantile's test: its Proportion steps at the judged bound, their limits,
// the bound and the notes (LatencySteps), and the tail's (Tail).
type Latency struct {
	Steps  []Step
	Limits Limits
	Bound  float64
	Notes  []string
	// Tail is the same test at the next bucket bound up, where stable's exceedance is still above
	// 0 (nil when there is none, or its limits cannot be read): JudgeTail adds it to the FAIL test.
	Tail *TailTest
}

// TailTest is a second FAIL test of an SLI (JudgeTail): its steps, limits (the floor is read, and
// the margin must be beyond it) and bound, and stable's history at that bound.
type TailTest struct {
	Steps   []Step
	Limits  Limits
	Bound   float64
	History []Counts
}

// LatencyTest is LatencySteps with the tail's test: the requests slower than the bound above the
// judged one, limits read from stable's survival as the judged bound's are. A gray whose slowest
// requests alone got slower (the requests beyond the judged bound slower still) leaves the count
// at the judged bound where it was, and only a bound above sees it (package doc, "The tail").
func LatencyTest(stable, gray Histogram, edges []time.Time, q float64, floor, margin float64) (Latency, error) {
	return LatencyTestFrom(stable, gray, edges, nil, q, floor, margin)
}

// LatencyTestFrom is LatencyTest with the judged bound and the limits read from stable's
// survival over the steps of survey (edges, a prefix of edges: stable's history before the
// rollout) rather than over every step: they are then the same at every look of a rollout, so
// that a look judges only the steps up to it (nil survey: every step of edges).
func LatencyTestFrom(stable, gray Histogram, edges, survey []time.Time, q float64, floor, margin float64) (Latency, error) {
	if err := checkLatencyArgs(stable, gray, q, floor, margin); err != nil {
		return Latency{}, err
	}
	st, nst := trackIncreases("stable", stable, edges)
	gr, ngr := trackIncreases("gray", gray, edges)
	notes := append(nst, ngr...)
	surv, err := st.survival()
	if err != nil {
		return Latency{Notes: notes}, err
	}
	if len(survey) >= 2 && len(survey) < len(edges) {
		hv, _ := trackIncreases("stable", stable, survey)
		if hs, ok := hv.surveyed(stable.Bounds, q, floor, margin); ok {
			surv = hs
		} else {
			notes = append(notes, fmt.Sprintf("the judged bound read over every step, not stable's history: it has fewer than %d requests beyond the tail's bound", surveyMinTail))
		}
	}
	j, note := chooseBound(surv, q)
	if note != "" {
		notes = append(notes, note)
	}
	if k := judgeableBound(stable.Bounds, surv, j, floor, margin); k != j {
		notes = append(notes, fmt.Sprintf("judging exceedance of %gs, not %gs (the bound below stable's q=%g quantile): at %gs a gray at the floor (%.3g x stable's latencies) and one at the margin (%.3g x) cannot be told apart",
			stable.Bounds[k], stable.Bounds[j], q, stable.Bounds[j], floor, margin))
		j = k
	}
	l := Latency{Bound: stable.Bounds[j], Notes: notes, Limits: exceedanceLimits(stable.Bounds, surv, j, floor, margin), Steps: boundSteps(st, gr, edges, j)}
	if k := j + 1; k < len(surv) && surv[k] > 0 {
		if lim := exceedanceLimits(stable.Bounds, surv, k, floor, margin); checkLimits(Proportion, lim) == nil {
			l.Tail = &TailTest{Steps: boundSteps(st, gr, edges, k), Limits: lim, Bound: stable.Bounds[k]}
		}
	}
	return l, nil
}

// surveyMinTail is the fewest stable requests beyond the tail's bound (the bound above the judged
// one) in stable's history for LatencyTestFrom to read the bound and the limits there: fewer, and
// the tail's test would rest on a handful of requests, or be missing.
const surveyMinTail = 30

// surveyed returns the survival of t (stable over its history), and whether it has
// surveyMinTail requests beyond the bound above the one it would judge at q (beyond the judged one
// when it is the last).
func (t trackInc) surveyed(bounds []float64, q, floor, margin float64) ([]float64, bool) {
	surv, err := t.survival()
	if err != nil {
		return nil, false
	}
	j, _ := chooseBound(surv, q)
	j = judgeableBound(bounds, surv, j, floor, margin)
	k := min(j+1, len(surv)-1)
	return surv, t.served()*surv[k] >= surveyMinTail
}

// exceedanceLimits returns the latency ratios floor and margin as limits on the exceedance of
// bound j.
func exceedanceLimits(bounds, surv []float64, j int, floor, margin float64) Limits {
	return Limits{
		Floor:  Bound{Rel: exceedanceRatio(bounds, surv, j, floor) - 1},
		Margin: Bound{Rel: exceedanceRatio(bounds, surv, j, margin) - 1},
	}
}

// boundSteps returns both tracks' steps of the requests slower than bound j.
func boundSteps(st, gr trackInc, edges []time.Time, j int) []Step {
	steps := make([]Step, len(st.count))
	for i := range steps {
		steps[i] = Step{T: edges[i+1], Stable: st.step(i, j), Gray: gr.step(i, j)}
	}
	return steps
}

func checkLatencyArgs(stable, gray Histogram, q, floor, margin float64) error {
	if !(q > 0 && q < 1) {
		return fmt.Errorf("%w: quantile %g is not in (0, 1)", ErrHistogram, q)
	}
	if !(floor > 0) || !(margin > floor) || math.IsInf(margin, 0) {
		return fmt.Errorf("%w: latency ratios floor %g and margin %g must be finite and positive with margin > floor", ErrHistogram, floor, margin)
	}
	if err := checkBounds(stable.Bounds, gray.Bounds); err != nil {
		return err
	}
	for _, h := range []Histogram{stable, gray} {
		if len(h.Buckets) != len(h.Bounds) {
			return fmt.Errorf("%w: %d bucket series for %d bounds", ErrHistogram, len(h.Buckets), len(h.Bounds))
		}
	}
	return nil
}

// checkBounds reports whether both tracks' bucket bounds are the same finite, positive, ascending
// list.
func checkBounds(stable, gray []float64) error {
	if len(stable) != len(gray) {
		return fmt.Errorf("%w: stable has %d bucket bounds, gray %d", ErrHistogram, len(stable), len(gray))
	}
	if len(stable) == 0 {
		return fmt.Errorf("%w: no bucket bounds", ErrHistogram)
	}
	for i, b := range stable {
		if b != gray[i] {
			return fmt.Errorf("%w: bucket bound %d is %g on stable, %g on gray", ErrHistogram, i, b, gray[i])
		}
		if !(b > 0) || math.IsInf(b, 0) || (i > 0 && !(b > stable[i-1])) {
			return fmt.Errorf("%w: bucket bounds must be finite, positive and ascending (bound %d is %g)", ErrHistogram, i, b)
		}
	}
	return nil
}

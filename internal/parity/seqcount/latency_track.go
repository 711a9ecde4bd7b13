package seqcount

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// trackInc is one track's per-step increases: of _count and of each bucket, in total and per pod.
type trackInc struct {
	count   []float64
	countOK []bool
	buckets [][]float64
	pods    []podInc
}

// podInc is one pod's per-step increases of _count and of each bucket.
type podInc struct {
	name    string
	count   []float64
	buckets [][]float64
}

// trackIncreases differences a track's histogram series; notes are prefixed with the series.
func trackIncreases(track string, h Histogram, edges []time.Time) (trackInc, []string) {
	var t trackInc
	var notes []string
	prefix := func(what string, ns []string) {
		for _, n := range ns {
			notes = append(notes, fmt.Sprintf("%s %s: %s", track, what, n))
		}
	}
	var ns []string
	t.count, t.countOK, ns = Increase(h.Count, edges)
	prefix("_count", ns)
	t.buckets = make([][]float64, len(h.Buckets))
	for j, series := range h.Buckets {
		t.buckets[j], _, ns = Increase(series, edges)
		prefix(fmt.Sprintf("le=%g", h.Bounds[j]), ns)
	}
	t.pods = podIncreases(h, edges)
	return t, notes
}

// podIncreases differences each pod's series on its own (their notes are the track's).
func podIncreases(h Histogram, edges []time.Time) []podInc {
	byPod := map[string]*podInc{}
	var names []string
	for _, s := range h.Count {
		if byPod[s.Pod] != nil {
			continue
		}
		p := &podInc{name: s.Pod, buckets: make([][]float64, len(h.Buckets))}
		p.count, _, _ = Increase([]Series{s}, edges)
		byPod[s.Pod] = p
		names = append(names, s.Pod)
	}
	for j, series := range h.Buckets {
		for _, s := range series {
			if p := byPod[s.Pod]; p != nil && p.buckets[j] == nil {
				p.buckets[j], _, _ = Increase([]Series{s}, edges)
			}
		}
	}
	sort.Strings(names)
	out := make([]podInc, 0, len(names))
	for _, n := range names {
		out = append(out, *byPod[n])
	}
	return out
}

// step returns step i's Counts of the requests slower than bucket j.
func (t trackInc) step(i, j int) Counts {
	if !t.countOK[i] {
		return Counts{}
	}
	c := Counts{Num: t.count[i] - t.buckets[j][i], Requests: t.count[i]}
	for _, p := range t.pods {
		if p.buckets[j] == nil || len(p.count) <= i {
			continue
		}
		c.Pods = append(c.Pods, Counts{Pod: p.name, Num: p.count[i] - p.buckets[j][i], Requests: p.count[i]})
	}
	return c
}

// served returns the requests the track served in the steps with a count.
func (t trackInc) served() float64 {
	var total float64
	for i, c := range t.count {
		if t.countOK[i] {
			total += c
		}
	}
	return total
}

// survival returns the track's pooled exceedance S_j = 1 - bucket_j/count at each bound, made
// non-increasing.
func (t trackInc) survival() ([]float64, error) {
	total := t.served()
	if !(total > 0) || math.IsInf(total, 0) {
		return nil, fmt.Errorf("%w: stable served no requests in the window", ErrHistogram)
	}
	surv := make([]float64, len(t.buckets))
	for j, b := range t.buckets {
		var cum float64
		for i, v := range b {
			if t.countOK[i] {
				cum += v
			}
		}
		surv[j] = math.Min(math.Max(1-cum/total, 0), 1)
		if j > 0 {
			surv[j] = math.Min(surv[j], surv[j-1])
		}
	}
	return surv, nil
}

// chooseBound returns the index of the bound whose exceedance is the smallest at or above 1-q.
func chooseBound(surv []float64, q float64) (int, string) {
	j := -1
	for k, s := range surv {
		if s >= 1-q {
			j = k
		}
	}
	switch {
	case j < 0:
		return 0, fmt.Sprintf("stable's q=%g quantile is below the first bucket bound: judging exceedance of the first bound", q)
	case j == len(surv)-1:
		return j, fmt.Sprintf("stable's q=%g quantile is above the last finite bucket bound: judging exceedance of the last bound", q)
	}
	return j, ""
}

// maxMarginExceedance is the largest share of a gray at the margin's requests that may exceed the
// judged bound: beyond it, its exceedance and the floor's crowd towards all of the requests.
const maxMarginExceedance = 0.5

// minLimitGap is the least relative gap between the margin's and the floor's exceedance ratios at
// the judged bound.
const minLimitGap = 0.01

// judgeableBound returns the first bound from j up at which the floor f and the margin m can be
// told apart: stable scaled by m would exceed it in at most maxMarginExceedance of its requests,
// S(b/m) <= 1/2, and the margin's exceedance ratio is at least minLimitGap above the floor's (both
// scaled points can fall where S is read flat, between two bounds whose interpolation is held
// within their values); stable's own exceedance there is above 0. It returns j when j is such a
// bound already, or when no bound is (checkLimits then refuses the limits).
func judgeableBound(bounds, surv []float64, j int, f, m float64) int {
	for k := j; k < len(bounds); k++ {
		if !(surv[k] > 0) {
			break
		}
		rf, rm := exceedanceRatio(bounds, surv, k, f), exceedanceRatio(bounds, surv, k, m)
		if rm*surv[k] <= maxMarginExceedance && rm >= rf*(1+minLimitGap) {
			return k
		}
	}
	return j
}

// exceedanceRatio returns S(b/m)/S(b) for b = bounds[j], with log S read as a function of log
// latency through the bounds where S > 0 (see logSurvivalAt).
func exceedanceRatio(bounds, surv []float64, j int, m float64) float64 {
	var xs, ys []float64
	for k, s := range surv {
		if s > 0 {
			xs, ys = append(xs, math.Log(bounds[k])), append(ys, math.Log(s))
		}
	}
	if len(xs) < 2 || !(surv[j] > 0) {
		return m // no shape to read: treat exceedance as proportional to latency's ratio
	}
	return math.Min(math.Exp(logSurvivalAt(xs, ys, math.Log(bounds[j]/m))), 1) / surv[j]
}

// logSurvivalAt interpolates log S at log latency x: between two bounds, by the parabola through
// them and the next bound nearer to x (a linear chord misses the curvature of a log-normal's or a
// gamma's log survival by several percent over a bucket 2.5 wide), held within the two bounds'
// values so that S stays monotone; outside the bounds, along the nearest segment.
func logSurvivalAt(xs, ys []float64, x float64) float64 {
	k := sort.SearchFloat64s(xs, x) // first xs[k] >= x
	if k == 0 || k == len(xs) {
		k = min(max(k, 1), len(xs)-1)
		return ys[k-1] + (ys[k]-ys[k-1])*(x-xs[k-1])/(xs[k]-xs[k-1])
	}
	if x == xs[k] {
		return ys[k]
	}
	a, b := k-1, k
	c := b + 1
	if c == len(xs) || (a > 0 && x-xs[a] < xs[b]-x) {
		c = a - 1
	}
	if c < 0 || c == len(xs) {
		return ys[a] + (ys[b]-ys[a])*(x-xs[a])/(xs[b]-xs[a])
	}
	y := ys[a]*(x-xs[b])*(x-xs[c])/((xs[a]-xs[b])*(xs[a]-xs[c])) +
		ys[b]*(x-xs[a])*(x-xs[c])/((xs[b]-xs[a])*(xs[b]-xs[c])) +
		ys[c]*(x-xs[a])*(x-xs[b])/((xs[c]-xs[a])*(xs[c]-xs[b]))
	return math.Min(math.Max(y, ys[b]), ys[a])
}

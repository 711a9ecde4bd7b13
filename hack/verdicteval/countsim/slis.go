package countsim

import (
	"fmt"
	"math"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

// K is how many SLIs the judges spend their alpha over: the catalog's eight, of which the
// simulator judges five (latency p95 and p99, errors, CPU and heap per request).
const K = 8

// sli is one judged SLI: its catalog entry, the quantile of a latency SLI, and the series its
// numerator is read from (errors, CPU or heap; unused for latency).
type sli struct {
	cat    catalog.SLI
	q      float64
	series int
	kind   seqcount.Kind
}

// judged returns the five SLIs the simulator judges, in catalog order.
func judged() ([]sli, error) {
	cat := catalog.Default()
	want := []sli{
		{cat: catalog.SLI{ID: catalog.LatencyP95}, q: 0.95, kind: seqcount.Proportion},
		{cat: catalog.SLI{ID: catalog.LatencyP99}, q: 0.99, kind: seqcount.Proportion},
		{cat: catalog.SLI{ID: catalog.ErrorRatio}, series: SeriesErrors, kind: seqcount.Proportion},
		{cat: catalog.SLI{ID: catalog.CPUPerRequest}, series: SeriesCPU, kind: seqcount.PerRequest},
		{cat: catalog.SLI{ID: catalog.HeapAllocPerRequest}, series: SeriesHeap, kind: seqcount.PerRequest},
	}
	for i := range want {
		s, ok := cat.Get(want[i].cat.ID)
		if !ok {
			return nil, fmt.Errorf("the catalog has no SLI %s", want[i].cat.ID)
		}
		want[i].cat = s
	}
	return want, nil
}

// nominal returns stable's level of the SLI for the service: its latency quantile, error ratio,
// CPU or heap per request.
func (s sli) nominal(svc Service, t3 bool) float64 {
	switch {
	case s.q > 0:
		z := normQuantile(s.q)
		if t3 {
			z = t3Quantile(s.q)
		}
		return svc.Median * math.Exp(svc.sigma(t3)*z)
	case s.series == SeriesErrors:
		return svc.Errors
	case s.series == SeriesCPU:
		return svc.CPU
	}
	return svc.Heap
}

// limits returns the count judge's boundaries of a non-latency SLI at stable's level: the floor
// is the catalog's (FloorAt the level; for a ratio SLI relative to the level, since seqcount
// needs the margin at least the floor in both parts) and the margin the threshold; where the
// floor is as wide as the threshold (the per-minute judge then passes within the floor), the
// margin is the floor widened by 1% of the level, since seqcount needs a margin beyond the floor.
func (s sli) limits(level float64) seqcount.Limits {
	f := s.cat.FloorAt(level)
	if s.cat.Comparison.IsRatio() {
		floor, margin := f/level, s.cat.Threshold-1
		if floor >= margin {
			margin = floor + marginGap
		}
		return seqcount.Limits{Floor: seqcount.Bound{Rel: floor}, Margin: seqcount.Bound{Rel: margin}}
	}
	margin := s.cat.Threshold
	if f >= margin {
		margin = f + marginGap*level
	}
	return seqcount.Limits{Floor: seqcount.Bound{Abs: f}, Margin: seqcount.Bound{Abs: margin}}
}

// latencyRatios returns a latency SLI's floor and margin as ratios of gray's quantile to stable's
// at stable's level, as LatencySteps takes them (the margin widened as in limits).
func (s sli) latencyRatios(level float64) (floor, margin float64) {
	floor = 1 + s.cat.FloorAt(level)/level
	return floor, math.Max(s.cat.Threshold, floor+marginGap)
}

// marginGap is how far beyond the floor (a share of stable's level) the margin is put where the
// catalog's floor is as wide as its threshold.
const marginGap = 0.01

// t3Quantile is the q quantile of Student's t with 3 degrees of freedom.
func t3Quantile(q float64) float64 { return invert(t3CDF, q, 1e3) }

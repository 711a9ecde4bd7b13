package countsim

import (
	"fmt"
	"math"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

// K is how many SLIs the judges spend their alpha over: every SLI of the catalog, as the shipped
// count-based test spends it (parity.Evaluate's k), of which the simulator judges five (latency
// p95 and p99, errors, CPU and heap per request).
var K = len(catalog.Default().SLIs)

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

// limits returns the count judge's boundaries of a non-latency SLI at stable's level, as the
// shipped count-based test reads them (parity.CountLimits).
func (s sli) limits(level float64) (seqcount.Limits, error) {
	lim, err := parity.CountLimits(parity.CriterionOf(s.cat), level)
	if err != nil {
		return lim, fmt.Errorf("%s's limits at %g: %w", s.cat.ID, level, err)
	}
	return lim, nil
}

// latencyRatios returns a latency SLI's floor and margin as ratios of gray's quantile to stable's
// at stable's level, as LatencySteps takes them (parity.CountLimits, as the shipped test reads
// them).
func (s sli) latencyRatios(level float64) (floor, margin float64, err error) {
	lim, err := s.limits(level)
	return 1 + lim.Floor.Rel, 1 + lim.Margin.Rel, err
}

// t3Quantile is the q quantile of Student's t with 3 degrees of freedom.
func t3Quantile(q float64) float64 { return invert(t3CDF, q, 1e3) }

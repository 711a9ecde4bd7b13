package countsim

import (
	"fmt"
	"math"
	"time"

	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

// countSLI is one SLI's count steps over the whole rollout and its boundaries.
type countSLI struct {
	kind  seqcount.Kind
	lim   seqcount.Limits
	steps []seqcount.Step
}

// Contrast is one SLI's per-step count contrasts of a run: gray's rate less the FAIL boundary
// (Fail) and the PASS boundary (Pass) at stable's rate, summed for the oracle.
type Contrast struct {
	Fail, Pass moments
}

// series turns pod counters' series s into seqcount's per-pod series.
func podSeries(tm Timing, pods []PodCounters, s int) []seqcount.Series {
	out := make([]seqcount.Series, len(pods))
	for i, p := range pods {
		out[i].Pod = p.Name
		out[i].Samples = make([]seqcount.Sample, len(p.Values[s]))
		for k, v := range p.Values[s] {
			out[i].Samples[k] = seqcount.Sample{T: tm.At(p.First + k), V: v}
		}
	}
	return out
}

// trackCounts returns a track's per-step counts of series num over requests, per pod too.
func trackCounts(tm Timing, pods []PodCounters, num int, edges []time.Time) []seqcount.Counts {
	out := make([]seqcount.Counts, len(edges)-1)
	for _, pod := range pods {
		nums, okN, _ := seqcount.Increase(podSeries(tm, []PodCounters{pod}, num), edges)
		reqs, okR, _ := seqcount.Increase(podSeries(tm, []PodCounters{pod}, SeriesCount), edges)
		for i := range out {
			c := seqcount.Counts{Num: math.NaN(), Requests: math.NaN()}
			if i < len(nums) && i < len(reqs) && okAt(okN, i) && okAt(okR, i) {
				c = seqcount.Counts{Num: nums[i], Requests: reqs[i]}
			}
			out[i].Num += c.Num
			out[i].Requests += c.Requests
			out[i].Pods = append(out[i].Pods, c)
		}
	}
	return out
}

func okAt(ok []bool, i int) bool { return i < len(ok) && ok[i] }

// histogram returns a track's bucket and count series.
func histogram(tm Timing, pods []PodCounters) seqcount.Histogram {
	h := seqcount.Histogram{Bounds: Bounds, Count: podSeries(tm, pods, SeriesCount)}
	for j := range Bounds {
		h.Buckets = append(h.Buckets, podSeries(tm, pods, j))
	}
	return h
}

// countSteps builds every judged SLI's steps of a run at the edges.
func countSteps(su Setup, run Run, slis []sli, edges []time.Time) ([]countSLI, error) {
	out := make([]countSLI, len(slis))
	var hs, hg seqcount.Histogram
	for i, s := range slis {
		level := s.nominal(su.Service, su.Model.T3)
		if s.q > 0 {
			if hs.Count == nil {
				hs, hg = histogram(su.Timing, run.Stable), histogram(su.Timing, run.Gray)
			}
			steps, lim, _, _, err := seqcount.LatencySteps(hs, hg, edges, s.q, s.cat.FloorAt(level), s.cat.Threshold)
			if err != nil {
				return nil, fmt.Errorf("%s steps: %w", s.cat.ID, err)
			}
			out[i] = countSLI{kind: s.kind, lim: lim, steps: steps}
			continue
		}
		st, gr := trackCounts(su.Timing, run.Stable, s.series, edges), trackCounts(su.Timing, run.Gray, s.series, edges)
		steps := make([]seqcount.Step, len(st))
		for k := range st {
			steps[k] = seqcount.Step{T: edges[k+1], Stable: st[k], Gray: gr[k]}
		}
		out[i] = countSLI{kind: s.kind, lim: s.limits(level), steps: steps}
	}
	return out, nil
}

// contrasts sums each SLI's per-step contrasts against its boundaries.
func contrasts(cs []countSLI) []Contrast {
	out := make([]Contrast, len(cs))
	for i, c := range cs {
		for _, st := range c.steps {
			rs, rg := st.Stable.Num/st.Stable.Requests, st.Gray.Num/st.Gray.Requests
			out[i].Fail.add(rg - (rs*(1+c.lim.Floor.Rel) + c.lim.Floor.Abs))
			out[i].Pass.add(rg - (rs*(1+c.lim.Margin.Rel) + c.lim.Margin.Abs))
		}
	}
	return out
}

// countLooks returns the look function of the count judge over the SLIs' steps.
func countLooks(test seqcount.Test, cs []countSLI) lookFunc {
	return func(j int) (fail, pass bool) {
		pass = true
		for _, c := range cs {
			r := test.Judge(c.kind, c.lim, c.steps[:min(j, len(c.steps))])
			switch r.Outcome {
			case seqcount.Fail:
				return true, false
			case seqcount.Pass:
			default:
				pass = false
			}
		}
		return false, pass
	}
}

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
	hist  []seqcount.Counts // stable's steps before the gray's start (the lead)
	steps []seqcount.Step
	tail  *seqcount.TailTest // latency: the tail's FAIL test (seqcount.LatencyTest), its history split off as hist
}

// Contrast is one SLI's per-step count contrasts of a run, in step order: gray's rate less the
// FAIL boundary (Fail) and the PASS boundary (Pass) at stable's rate, NaN for a step without one;
// for an SLI whose limits are relative, divided by stable's level over the run.
// The oracle sums them per horizon across runs. float32 keeps a full evaluation's runs in a few
// hundred MB; the oracle needs no more digits.
type Contrast struct {
	Fail, Pass []float32
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

// podIncreases is each pod's per-step request increases (and whether each step had a sample).
type podIncreases struct {
	reqs [][]float64
	ok   [][]bool
}

func requestIncreases(tm Timing, pods []PodCounters, edges []time.Time) podIncreases {
	var p podIncreases
	for _, pod := range pods {
		reqs, ok, _ := seqcount.Increase(podSeries(tm, []PodCounters{pod}, SeriesCount), edges)
		p.reqs, p.ok = append(p.reqs, reqs), append(p.ok, ok)
	}
	return p
}

// trackCounts returns a track's per-step counts of series num over requests, per pod too; a step
// without a sample of a pod is NaN (no data, never zero).
func trackCounts(tm Timing, pods []PodCounters, num int, edges []time.Time, reqs podIncreases) []seqcount.Counts {
	out := make([]seqcount.Counts, len(edges)-1)
	for pi, pod := range pods {
		nums, okN, _ := seqcount.Increase(podSeries(tm, []PodCounters{pod}, num), edges)
		for i := range out {
			c := seqcount.Counts{Num: math.NaN(), Requests: math.NaN()}
			if i < len(nums) && i < len(reqs.reqs[pi]) && okAt(okN, i) && okAt(reqs.ok[pi], i) {
				c = seqcount.Counts{Num: nums[i], Requests: reqs.reqs[pi][i]}
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

// countSteps builds every judged SLI's steps of a run at the edges (from the gray's start), and
// stable's history over the lead before them, in steps of the same length.
func countSteps(su Setup, run Run, slis []sli, edges []time.Time) ([]countSLI, error) {
	var lead []time.Time
	if len(edges) > 1 {
		step := edges[1].Sub(edges[0])
		for t := edges[0].Add(-step); !t.Before(su.Timing.Start); t = t.Add(-step) {
			lead = append([]time.Time{t}, lead...)
		}
	}
	out, err := countStepsAt(su, run, slis, append(lead, edges...))
	if err != nil {
		return nil, err
	}
	for i, c := range out {
		for _, st := range c.steps[:len(lead)] {
			out[i].hist = append(out[i].hist, st.Stable)
		}
		out[i].steps = c.steps[len(lead):]
		if t := c.tail; t != nil {
			tail := *t
			for _, st := range t.Steps[:len(lead)] {
				tail.History = append(tail.History, st.Stable)
			}
			tail.Steps = t.Steps[len(lead):]
			out[i].tail = &tail
		}
	}
	return out, nil
}

// countStepsAt builds every judged SLI's steps of a run at the edges.
func countStepsAt(su Setup, run Run, slis []sli, edges []time.Time) ([]countSLI, error) {
	out := make([]countSLI, len(slis))
	var hs, hg seqcount.Histogram
	var rs, rg podIncreases
	for i, s := range slis {
		level := s.nominal(su.Service, su.Model.T3)
		if s.q > 0 {
			if hs.Count == nil {
				hs, hg = histogram(su.Timing, run.Stable), histogram(su.Timing, run.Gray)
			}
			floor, margin, err := s.latencyRatios(level)
			if err != nil {
				return nil, err
			}
			l, err := seqcount.LatencyTest(hs, hg, edges, s.q, floor, margin)
			if err != nil {
				return nil, fmt.Errorf("%s steps: %w", s.cat.ID, err)
			}
			out[i] = countSLI{kind: s.kind, lim: l.Limits, steps: l.Steps, tail: l.Tail}
			continue
		}
		if rs.reqs == nil {
			rs, rg = requestIncreases(su.Timing, run.Stable, edges), requestIncreases(su.Timing, run.Gray, edges)
		}
		st, gr := trackCounts(su.Timing, run.Stable, s.series, edges, rs), trackCounts(su.Timing, run.Gray, s.series, edges, rg)
		steps := make([]seqcount.Step, len(st))
		for k := range st {
			steps[k] = seqcount.Step{T: edges[k+1], Stable: st[k], Gray: gr[k]}
		}
		lim, err := s.limits(level)
		if err != nil {
			return nil, err
		}
		out[i] = countSLI{kind: s.kind, lim: lim, steps: steps}
	}
	return out, nil
}

// contrasts sums each SLI's per-step contrasts against its boundaries.
func contrasts(cs []countSLI) []Contrast {
	out := make([]Contrast, len(cs))
	for i, c := range cs {
		out[i] = Contrast{Fail: make([]float32, len(c.steps)), Pass: make([]float32, len(c.steps))}
		// Relative limits are judged relative to stable's level, so the contrasts are read on
		// that scale: a run whose level is higher (a drift shared by both tracks, another latency
		// bucket) then has the same effect, and only what varies about it counts as noise.
		scale := 1.0
		if c.lim.Floor.Abs == 0 && c.lim.Margin.Abs == 0 {
			var ns, rs float64
			for _, st := range c.steps {
				ns, rs = ns+st.Stable.Num, rs+st.Stable.Requests
			}
			if level := ns / rs; level > 0 && !math.IsInf(level, 0) {
				scale = 1 / level
			}
		}
		for k, st := range c.steps {
			rs, rg := st.Stable.Num/st.Stable.Requests, st.Gray.Num/st.Gray.Requests
			out[i].Fail[k] = float32(scale * (rg - (rs*(1+c.lim.Floor.Rel) + c.lim.Floor.Abs)))
			out[i].Pass[k] = float32(scale * (rg - (rs*(1+c.lim.Margin.Rel) + c.lim.Margin.Abs)))
		}
	}
	return out
}

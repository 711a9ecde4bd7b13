package seqcount_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

// promBounds are the http_request_duration_seconds bucket bounds.
var promBounds = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10}

// lognormalCDF is P(latency <= x) for log latency ~ N(mu, sigma^2).
func lognormalCDF(x, mu, sigma float64) float64 {
	return 0.5 * math.Erfc(-(math.Log(x)-mu)/(sigma*math.Sqrt2))
}

// lognormalHistogram is one pod's exact cumulative histogram of perStep requests per step.
func lognormalHistogram(pod string, steps int, perStep, mu, sigma float64) seqcount.Histogram {
	return cdfHistogram(pod, steps, perStep, func(x float64) float64 { return lognormalCDF(x, mu, sigma) })
}

// cdfHistogram is one pod's exact cumulative histogram of perStep requests per step whose
// latencies have the distribution function cdf.
func cdfHistogram(pod string, steps int, perStep float64, cdf func(float64) float64) seqcount.Histogram {
	h := seqcount.Histogram{Bounds: promBounds, Buckets: make([][]seqcount.Series, len(promBounds))}
	count := seqcount.Series{Pod: pod}
	buckets := make([]seqcount.Series, len(promBounds))
	for i := 0; i <= steps; i++ {
		ts := at(float64(i)*20 - 10)
		n := perStep * float64(i)
		count.Samples = append(count.Samples, seqcount.Sample{T: ts, V: n})
		for j, b := range promBounds {
			buckets[j].Pod = pod
			buckets[j].Samples = append(buckets[j].Samples, seqcount.Sample{T: ts, V: n * cdf(b)})
		}
	}
	h.Count = []seqcount.Series{count}
	for j := range buckets {
		h.Buckets[j] = []seqcount.Series{buckets[j]}
	}
	return h
}

func stepEdges(n int) []time.Time {
	edges := make([]time.Time, n+1)
	for i := range edges {
		edges[i] = at(float64(i) * 20)
	}
	return edges
}

func TestLatencyStepsAgainstLogNormal(t *testing.T) {
	mu, sigma := math.Log(0.05), 0.8
	stable := lognormalHistogram("s", 10, 3000, mu, sigma)
	gray := lognormalHistogram("g", 10, 300, mu+math.Log(1.2), sigma) // gray 20% slower
	steps, lim, bound, notes, err := seqcount.LatencySteps(stable, gray, stepEdges(10), 0.99, 1.05, 1.10)
	if err != nil || len(notes) != 0 {
		t.Fatalf("err %v, notes %q", err, notes)
	}
	// Stable's p99 is 0.05 e^(2.326 x 0.8) = 0.32 s: the bound just below it is 0.25.
	if bound != 0.25 {
		t.Errorf("bound %g, want 0.25", bound)
	}
	surv := func(x float64) float64 { return 1 - lognormalCDF(x, mu, sigma) }
	for _, tc := range []struct {
		name string
		got  float64
		m    float64
	}{{"floor", lim.Floor.Rel, 1.05}, {"margin", lim.Margin.Rel, 1.10}} {
		want := surv(bound/tc.m)/surv(bound) - 1
		// Parabolic interpolation of log S in log t through 0.1, 0.25 and 0.5 s: within 1% of the exact ratio.
		if math.Abs((1+tc.got)/(1+want)-1) > 0.01 || lim.Floor.Abs != 0 {
			t.Errorf("%s: Rel %.4f, exact log-normal %.4f", tc.name, tc.got, want)
		}
	}
	if len(steps) != 10 {
		t.Fatalf("%d steps, want 10", len(steps))
	}
	wantGray := 300 * (1 - lognormalCDF(0.25, mu+math.Log(1.2), sigma))
	for i, s := range steps {
		if math.Abs(s.Gray.Num-wantGray) > 1e-6 || s.Gray.Requests != 300 || s.Stable.Requests != 3000 || len(s.Gray.Pods) != 1 || s.Gray.Pods[0].Pod != "g" {
			t.Errorf("step %d: %+v, want gray Num %.4f of 300 with its pod", i, s, wantGray)
		}
	}
}

func TestLatencyStepsErrors(t *testing.T) {
	h := lognormalHistogram("s", 3, 100, math.Log(0.05), 0.8)
	other := lognormalHistogram("g", 3, 100, math.Log(0.05), 0.8)
	other.Bounds = append([]float64(nil), promBounds...)
	other.Bounds[4] = 0.03
	empty := lognormalHistogram("s", 3, 0, math.Log(0.05), 0.8)
	for _, tc := range []struct {
		name          string
		stable, gray  seqcount.Histogram
		q, floor, mar float64
	}{
		{"bounds differ between tracks", h, other, 0.99, 1.05, 1.1},
		{"q out of range", h, h, 1, 1.05, 1.1},
		{"margin not above floor", h, h, 0.99, 1.1, 1.1},
		{"stable served nothing", empty, h, 0.99, 1.05, 1.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps, _, _, _, err := seqcount.LatencySteps(tc.stable, tc.gray, stepEdges(3), tc.q, tc.floor, tc.mar)
			if !errors.Is(err, seqcount.ErrHistogram) || steps != nil {
				t.Errorf("err %v, %d steps; want ErrHistogram and none", err, len(steps))
			}
		})
	}
}

// TestLatencyJudged: gray's latency 20% above stable's fails a 1.10 margin's p99 judge.
func TestLatencyJudged(t *testing.T) {
	mu, sigma := math.Log(0.05), 0.8
	stable := lognormalHistogram("s", 30, 3000, mu, sigma)
	gray := lognormalHistogram("g", 30, 3000, mu+math.Log(1.3), sigma)
	steps, lim, _, _, err := seqcount.LatencySteps(stable, gray, stepEdges(30), 0.99, 1.05, 1.10)
	if err != nil {
		t.Fatal(err)
	}
	// Exact expected counts carry no noise; add a little so the variance is measured.
	for i := range steps {
		steps[i].Gray.Num += float64(i%3) - 1
	}
	if r := (seqcount.Test{}).Judge(seqcount.Proportion, lim, steps); r.Outcome != seqcount.Fail {
		t.Errorf("got %s: %s", r.Outcome, r.Note)
	}
}

// TestExceedanceRatioGrid checks the limits' exceedance ratios against the exact log-normal ones
// over medians 10-100 ms, log-sds 0.4-1.2 and q 0.95 and 0.99 on the Prometheus buckets: within
// 3.5% (the worst, 3.2%, is a narrow sd 0.4 whose chosen bound sits at the median).
func TestExceedanceRatioGrid(t *testing.T) {
	for _, med := range []float64{0.01, 0.03, 0.05, 0.1} {
		for _, sigma := range []float64{0.4, 0.8, 1.2} {
			for _, q := range []float64{0.95, 0.99} {
				mu := math.Log(med)
				h := lognormalHistogram("s", 3, 3000, mu, sigma)
				_, lim, b, _, err := seqcount.LatencySteps(h, h, stepEdges(3), q, 1.05, 1.10)
				if err != nil {
					t.Fatal(err)
				}
				surv := func(x float64) float64 { return 1 - lognormalCDF(x, mu, sigma) }
				for _, c := range []struct{ got, m float64 }{{lim.Floor.Rel, 1.05}, {lim.Margin.Rel, 1.10}} {
					want := surv(b/c.m) / surv(b)
					if e := (1+c.got)/want - 1; math.Abs(e) > 0.035 {
						t.Errorf("median %g sd %g q %g bound %g ratio %g: %.4f, exact %.4f (%+.1f%%)", med, sigma, q, b, c.m, 1+c.got, want, 100*e)
					}
				}
			}
		}
	}
}

// TestLatencyFastServiceFloor: a service answering in a few milliseconds, judged against the
// catalog's 5 ms floor (the demo's: stable's p95 2.3 ms and p99 4.2 ms, so the floor is 3.2 and
// 2.2 times stable's latency, the margin 3.3 and 2.3 times). At the bound just below stable's
// quantile a gray at either would be slower in nearly every request, or both scaled bounds fell
// where the survival curve is read flat, so the floor and the margin were the same exceedance and
// the judge said NO DATA ("bad limits") however long it ran. The bound is raised to where they
// differ; a gray at parity then PASSes and one 5 x slower FAILs.
func TestLatencyFastServiceFloor(t *testing.T) {
	mu, sigma := math.Log(0.00051), 0.91 // p95 2.3 ms, p99 4.2 ms
	for _, tc := range []struct {
		name         string
		q            float64
		floor, marg  float64
		slow         float64
		want         seqcount.Outcome
		bound, below float64
	}{
		{"p95 at parity", 0.95, 3.2, 3.3, 1, seqcount.Pass, 0.0025, 0.001},
		{"p95 5 x slower", 0.95, 3.2, 3.3, 5, seqcount.Fail, 0.0025, 0.001},
		// At p99 the bound below stable's quantile, 2.5 ms, tells them apart already: it stays.
		{"p99 at parity", 0.99, 2.2, 2.3, 1, seqcount.Pass, 0.0025, 0},
		{"p99 5 x slower", 0.99, 2.2, 2.3, 5, seqcount.Fail, 0.0025, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 30
			stable := lognormalHistogram("s", n, 1500, mu, sigma)
			gray := lognormalHistogram("g", n, 1500, mu+math.Log(tc.slow), sigma)
			steps, lim, bound, notes, err := seqcount.LatencySteps(stable, gray, stepEdges(n), tc.q, tc.floor, tc.marg)
			if err != nil {
				t.Fatal(err)
			}
			if tc.below == 0 {
				if bound != tc.bound || len(notes) != 0 {
					t.Errorf("bound %g, notes %q; want %g and no note", bound, notes, tc.bound)
				}
			} else if want := fmt.Sprintf("judging exceedance of %gs, not %gs", tc.bound, tc.below); bound != tc.bound || len(notes) != 1 || !strings.Contains(notes[0], want) {
				t.Errorf("bound %g, notes %q; want %g with a note saying %q", bound, notes, tc.bound, want)
			}
			if !(lim.Margin.Rel > lim.Floor.Rel+0.01) {
				t.Fatalf("limits %+v: the margin is not beyond the floor", lim)
			}
			for i := range steps {
				steps[i].Gray.Num += float64(i%3) - 1
				steps[i].Stable.Num += float64(i%2)*2 - 1
			}
			if r := (seqcount.Test{}).Judge(seqcount.Proportion, lim, steps); r.Outcome != tc.want {
				t.Errorf("got %s, want %s: %s", r.Outcome, tc.want, r.Note)
			}
		})
	}
}

// TestLatencyFlatSurvival: no request of stable's between 1 and 2.5 ms, so its survival is flat
// there. At the bound below its p99 (5 ms) the floor (2.2 x) and the margin (2.3 x) both scale it
// into that flat stretch and have the same exceedance ratio; the next bound (10 ms) tells them
// apart.
func TestLatencyFlatSurvival(t *testing.T) {
	bounds := []float64{0.001, 0.0025, 0.005, 0.01, 0.025}
	surv := []float64{0.2, 0.2, 0.012, 0.003, 0.0005}
	const n, per = 10, 1000.0
	hist := func(pod string) seqcount.Histogram {
		h := seqcount.Histogram{Bounds: bounds, Buckets: make([][]seqcount.Series, len(bounds))}
		count := seqcount.Series{Pod: pod}
		for i := 0; i <= n; i++ {
			count.Samples = append(count.Samples, seqcount.Sample{T: at(float64(i)*20 - 10), V: per * float64(i)})
		}
		h.Count = []seqcount.Series{count}
		for j, s := range surv {
			b := seqcount.Series{Pod: pod}
			for i := 0; i <= n; i++ {
				b.Samples = append(b.Samples, seqcount.Sample{T: at(float64(i)*20 - 10), V: per * float64(i) * (1 - s)})
			}
			h.Buckets[j] = []seqcount.Series{b}
		}
		return h
	}
	_, lim, bound, notes, err := seqcount.LatencySteps(hist("s"), hist("g"), stepEdges(n), 0.99, 2.2, 2.3)
	if err != nil {
		t.Fatal(err)
	}
	if want := "judging exceedance of 0.01s, not 0.005s"; bound != 0.01 || len(notes) != 1 || !strings.Contains(notes[0], want) {
		t.Errorf("bound %g, notes %q; want 0.01 with a note saying %q", bound, notes, want)
	}
	if !(lim.Margin.Rel > lim.Floor.Rel) {
		t.Errorf("limits %+v: the margin is not beyond the floor", lim)
	}
}

// TestLatencyTail: the slowest 2% of a gray's requests twice as slow (the 20 ms / 60 ms
// log-normal of the evaluations; p99 about doubled). The count at the bound below stable's p99
// (50 ms) does not move, since those requests were above it before and after, so the judged bound
// alone PASSes; the tail's test at the bound above (100 ms) FAILs it. A gray at parity still
// PASSes with the tail's test beside it, and a FAIL on the judged bound is still a FAIL.
func TestLatencyTail(t *testing.T) {
	mu := math.Log(0.020)
	sigma := math.Log(3) / 2.3263478740408408 // p99 60 ms
	base := func(x float64) float64 { return lognormalCDF(x, mu, sigma) }
	x98 := math.Exp(mu + 2.053748910631823*sigma)
	tailSlow := func(x float64) float64 { // the requests above x98 twice as slow
		if x < x98 {
			return base(x)
		}
		return base(max(x98, x/2))
	}
	for _, tc := range []struct {
		name     string
		gray     func(float64) float64
		noTail   seqcount.Outcome
		withTail seqcount.Outcome
	}{
		{"slowest 2% twice as slow", tailSlow, seqcount.Pass, seqcount.Fail},
		{"at parity", base, seqcount.Pass, seqcount.Pass},
		{"every request 40% slower", func(x float64) float64 { return base(x / 1.4) }, seqcount.Fail, seqcount.Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 40
			stable, gray := cdfHistogram("s", n, 3000, base), cdfHistogram("g", n, 3000, tc.gray)
			l, err := seqcount.LatencyTest(stable, gray, stepEdges(n), 0.99, 1.083, 1.1)
			if err != nil {
				t.Fatal(err)
			}
			if l.Bound != 0.05 || l.Tail == nil || l.Tail.Bound != 0.1 {
				t.Fatalf("bound %g, tail %+v; want 0.05 and a tail at 0.1", l.Bound, l.Tail)
			}
			// Exact expected counts carry no noise; add a little so the variance is measured
			// (at most half a count where stable has one a step above 100 ms).
			for _, steps := range [][]seqcount.Step{l.Steps, l.Tail.Steps} {
				for i := range steps {
					g, s := &steps[i].Gray.Num, &steps[i].Stable.Num
					*g += (float64(i%3) - 1) * min(1, *g/2)
					*s += (float64(i%2)*2 - 1) * min(1, *s/2)
				}
			}
			if r := (seqcount.Test{K: 8}).JudgeAfter(seqcount.Proportion, l.Limits, nil, l.Steps); r.Outcome != tc.noTail {
				t.Errorf("the judged bound alone: %s, want %s: %s", r.Outcome, tc.noTail, r.Note)
			}
			r := (seqcount.Test{K: 8}).JudgeTail(seqcount.Proportion, l.Limits, nil, l.Steps, l.Tail)
			if r.Outcome != tc.withTail {
				t.Errorf("with the tail: %s, want %s: %s", r.Outcome, tc.withTail, r.Note)
			}
			if !strings.Contains(r.Note, "the tail, requests slower than 0.1s") {
				t.Errorf("note %q does not name the tail's test", r.Note)
			}
		})
	}
}

// TestLatencyTestFromHistory: LatencyTestFrom reads the judged bound and the limits from stable's
// history (the survey's steps) when it holds enough requests beyond the tail's bound, so that
// stable's steps after it do not move them; with too few there (a quiet history) it reads them over
// every step, saying so, and keeps the tail's test.
func TestLatencyTestFromHistory(t *testing.T) {
	mu, sigma := math.Log(0.020), math.Log(3)/2.3263478740408408 // p99 60 ms
	base := func(x float64) float64 { return lognormalCDF(x, mu, sigma) }
	const n, lead = 60, 30
	edges := stepEdges(n)
	for _, tc := range []struct {
		name    string
		perStep float64 // stable's requests per step (about 0.03% beyond 100 ms)
		history bool    // read from the history
	}{
		{"a busy history", 20000, true},
		{"a quiet history", 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gray := drawnHistogram(rand.New(rand.NewPCG(1, 2)), "g", n, 300, base)
			limits := func(after float64) seqcount.Latency {
				// stable as in its history, then after x as slow once the rollout starts
				stable := drawnHistogramAt(rand.New(rand.NewPCG(3, 4)), "s", n, tc.perStep, func(i int) func(float64) float64 {
					if i <= lead {
						return base
					}
					return func(x float64) float64 { return base(x / after) }
				})
				l, err := seqcount.LatencyTestFrom(stable, gray, edges, edges[:lead+1], 0.99, 1.083, 1.1)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			a, b := limits(1), limits(1.3)
			same := a.Bound == b.Bound && a.Limits == b.Limits && a.Tail != nil && b.Tail != nil && a.Tail.Limits == b.Tail.Limits
			if same != tc.history {
				t.Errorf("the limits stayed when stable's steps after its history changed: %v, want %v (%g %+v against %g %+v)", same, tc.history, a.Bound, a.Limits, b.Bound, b.Limits)
			}
			if fallback := strings.Contains(strings.Join(a.Notes, "; "), "read over every step"); fallback == tc.history {
				t.Errorf("read from the history: %v, want %v (notes %q)", !fallback, tc.history, a.Notes)
			}
			if a.Tail == nil {
				t.Error("no tail test")
			}
		})
	}
}

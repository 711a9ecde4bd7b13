package countsim

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"
)

func TestWilson(t *testing.T) {
	cases := []struct {
		name   string
		k, n   int
		lo, hi float64
	}{
		{"none of ten", 0, 10, 0, 0.277533},
		{"half of ten", 5, 10, 0.236593, 0.763407},
		{"one of a hundred", 1, 100, 0.001767, 0.054487},
		{"all of twenty", 20, 20, 0.838875, 1},
		{"no trials", 0, 0, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lo, hi := Wilson(c.k, c.n)
			if math.Abs(lo-c.lo) > 1e-5 || math.Abs(hi-c.hi) > 1e-5 {
				t.Fatalf("Wilson(%d, %d) = [%.6f, %.6f], want [%.6f, %.6f]", c.k, c.n, lo, hi, c.lo, c.hi)
			}
		})
	}
}

func FuzzWilson(f *testing.F) {
	f.Add(0, 10)
	f.Add(3, 600)
	f.Add(-1, 5)
	f.Add(7, 3)
	f.Fuzz(func(t *testing.T, k, n int) {
		lo, hi := Wilson(k, n)
		if !(lo >= 0 && lo <= hi && hi <= 1) {
			t.Fatalf("Wilson(%d, %d) = [%g, %g]", k, n, lo, hi)
		}
		if n > 0 && k >= 0 && k <= n {
			if p := float64(k) / float64(n); p < lo-1e-12 || p > hi+1e-12 {
				t.Fatalf("Wilson(%d, %d) = [%g, %g] leaves out %g", k, n, lo, hi, p)
			}
		}
	})
}

func TestSummarizeCountsNeverAsInfinite(t *testing.T) {
	m := time.Minute
	tr := []Trace{{FailAt: 2 * m, PassAt: -1, FailSLI: 1}, {FailAt: 12 * m, PassAt: m, FailSLI: 3}, {FailAt: -1, PassAt: 3 * m, FailSLI: -1}, {FailAt: -1, PassAt: -1, FailSLI: -1}}
	s := Summarize(tr)
	want := Summary{Runs: 4, Fail: rateOf(2, 4), Fail10: rateOf(1, 4), Pass: rateOf(2, 4), FailMedian: 12, FailP90: math.Inf(1), PassMedian: 3, PassP90: math.Inf(1),
		FailBy: map[int]int{1: 1, 3: 1}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
}

func TestTraceLooksKeepsThePassBeforeTheFail(t *testing.T) {
	// Every SLI passes at looks 2 to 4, one fails from look 5 on.
	tr := traceLooks(12, 3, 20*time.Second, func(j int) (int, bool) {
		if j >= 5 {
			return 2, false
		}
		return -1, j >= 2
	})
	want := Traces{Fast: Trace{FailAt: 100 * time.Second, PassAt: 40 * time.Second, FailSLI: 2}, Minute: Trace{FailAt: 120 * time.Second, PassAt: 60 * time.Second, FailSLI: 2}}
	if tr != want {
		t.Fatalf("got %+v, want %+v", tr, want)
	}
}

func TestOracleFromKnownContrasts(t *testing.T) {
	// One SLI whose contrast beyond its floor has mean 1 and sd 2 per 20 s step: at power 0.5 a
	// z-test at 0.01/8 needs (z * 2 / 1)^2 steps.
	var m moments
	for _, x := range []float64{-1, 3, -1, 3} {
		m.add(x)
	}
	runs := []RunResult{{Contrasts: []Contrast{{Fail: m, Pass: m}}}}
	o := OracleOf(runs, 0.01, 8, 20*time.Second)
	z := normQuantile(1 - 0.01/8)
	if want := z * z * 4 * m.sd() * m.sd() / 4 / 3; math.Abs(o.Fail50-want) > 1e-9 {
		t.Fatalf("oracle FAIL at power 0.5: %g min, want %g", o.Fail50, want)
	}
	if !math.IsInf(o.Pass50, 1) {
		t.Fatalf("a gray beyond its margin has an oracle PASS of %g min", o.Pass50)
	}
}

func TestHistogramQuantileInterpolates(t *testing.T) {
	// 100 requests: 50 at or below 10 ms, 90 at or below 25 ms, all at or below 50 ms.
	var ts trackSums
	for s := range ts {
		ts[s] = []float64{0, 0}
	}
	cum := []float64{0, 0, 0, 50, 90, 100, 100, 100, 100, 100, 100, 100}
	for j, c := range cum {
		ts[j][1] = c
	}
	ts[SeriesCount][1] = 100
	cases := []struct {
		q, want float64
	}{{0.5, 0.01}, {0.7, 0.0175}, {0.95, 0.0375}, {0.25, 0.0075}}
	for _, c := range cases {
		if got := ts.value(sli{q: c.q}, 0, 1); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("q %g: %g, want %g", c.q, got, c.want)
		}
	}
	if got := ts.value(sli{q: 0.99}, 0, 0); !math.IsNaN(got) {
		t.Errorf("no requests: %g, want NaN", got)
	}
}

func smallConfig(workers int) Config {
	cfg := DefaultConfig()
	cfg.Models, cfg.Traffics = cfg.Models[:2], cfg.Traffics[2:]
	cfg.Scenarios = []Scenario{cfg.Scenarios[0], cfg.Scenarios[5]}
	cfg.Seeds, cfg.Runs, cfg.RegressionRuns, cfg.Workers = []uint64{1, 2}, 4, 4, workers
	cfg.Timing.Rollout = 5 * time.Minute
	return cfg
}

func TestEvaluateIsDeterministicWhateverTheWorkers(t *testing.T) {
	a, err := Evaluate(context.Background(), smallConfig(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Evaluate(context.Background(), smallConfig(3), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("one and three workers gave different results")
	}
	if len(a) != 4 || len(a[0].Runs) != 4 {
		t.Fatalf("%d cells of %d runs, want 4 of 4", len(a), len(a[0].Runs))
	}
}

func TestEvaluateRefusesAnEmptyConfig(t *testing.T) {
	cfg := smallConfig(1)
	cfg.Seeds = nil
	if _, err := Evaluate(context.Background(), cfg, nil); err == nil {
		t.Fatal("no seeds: no error")
	}
	cfg = smallConfig(1)
	cfg.Step = 7 * time.Second
	if _, err := Evaluate(context.Background(), cfg, nil); err == nil {
		t.Fatal("a step that does not divide a minute: no error")
	}
}

package countsim

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/parity/seqcount"
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

// runsOf builds runs of one SLI from per-run contrast values (the same for FAIL and PASS).
func runsOf(xs [][]float64) []RunResult {
	runs := make([]RunResult, len(xs))
	for r, vs := range xs {
		c := Contrast{Fail: make([]float32, len(vs))}
		for k, v := range vs {
			c.Fail[k] = float32(v)
		}
		c.Pass = c.Fail
		runs[r].Contrasts = []Contrast{c}
	}
	return runs
}

func TestOracleFromKnownContrasts(t *testing.T) {
	const alpha, k, steps = 0.01, 8, 180
	step := 20 * time.Second
	z := normQuantile(1 - alpha/k)
	rng := rand.New(rand.NewPCG(7, 11))
	// Independent steps, mean 1 and sd 2: at power 0.5 the z-test at 0.01/8 needs (2z)^2 steps.
	iid := make([][]float64, 4000)
	for r := range iid {
		iid[r] = make([]float64, steps)
		for n := range iid[r] {
			iid[r][n] = 1 + 2*rng.NormFloat64()
		}
	}
	// The same steps with a lasting offset per run of sd 0.2: the mean's variance falls as
	// 0.04 + 4/n, so power 0.5 needs n >= 4z^2/(1 - 0.04 z^2) (the sum's sd across runs,
	// sqrt(0.04 n^2 + 4 n), at most n/z), and power 0.95 at z + 1.645 sds never comes.
	offset := make([][]float64, len(iid))
	for r := range offset {
		u := 0.2 * rng.NormFloat64()
		offset[r] = make([]float64, steps)
		for n, x := range iid[r] {
			offset[r][n] = x + u
		}
	}
	// Two runs with lasting offsets +-3 about a mean of 1: no horizon averages them out.
	lasting := [][]float64{make([]float64, steps), make([]float64, steps)}
	for n := range steps {
		lasting[0][n], lasting[1][n] = 4, -2
	}
	// The null's steps (a gray at its floor): mean 0, sd 1. Against them the critical value is z
	// sds of 1, the power z_p sds of 2: power 0.5 needs z^2 steps, 0.95 (z + 2 z_0.95)^2.
	null := make([][]float64, len(iid))
	for r := range null {
		null[r] = make([]float64, steps)
		for n := range null[r] {
			null[r][n] = rng.NormFloat64()
		}
	}
	minutes := func(n float64) float64 { return math.Ceil(n) * step.Minutes() }
	z95 := normQuantile(0.95)
	tests := []struct {
		name           string
		runs, null     []RunResult
		fail50, fail95 float64 // want, within 15%
	}{
		{"independent steps", runsOf(iid), nil, minutes(4 * z * z), minutes(4 * (z + z95) * (z + z95))},
		{"independent steps against the null's variance", runsOf(iid), runsOf(null), minutes(z * z), minutes((z + 2*z95) * (z + 2*z95))},
		{"lasting offsets per run", runsOf(offset), nil, minutes(4 * z * z / (1 - 0.04*z*z)), math.Inf(1)},
		{"offsets that never average out", runsOf(lasting), nil, math.Inf(1), math.Inf(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := OracleOf(tt.runs, tt.null, alpha, k, step)
			for _, c := range []struct {
				what      string
				got, want float64
			}{{"FAIL at power 0.5", o.Fail50, tt.fail50}, {"FAIL at power 0.95", o.Fail95, tt.fail95}} {
				if math.IsInf(c.want, 1) != math.IsInf(c.got, 1) || (!math.IsInf(c.want, 1) && math.Abs(c.got-c.want) > 0.15*c.want) {
					t.Errorf("oracle %s: %g min, want %g", c.what, c.got, c.want)
				}
			}
			// The gray is beyond its margin in every case (mean contrast 1 > 0): no oracle PASS.
			if !math.IsInf(o.Pass50, 1) || !math.IsInf(o.Pass90, 1) {
				t.Errorf("a gray beyond its margin has an oracle PASS of %g / %g min", o.Pass50, o.Pass90)
			}
		})
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

// TestContrastsScaleFree: a z-test is free of stable's level, so the oracle reads relative limits'
// contrasts divided by it: two runs with the same relative effect at levels 10x apart give the
// same contrasts; an absolute limit's are left in rate points.
func TestContrastsScaleFree(t *testing.T) {
	steps := func(level float64) []seqcount.Step {
		var out []seqcount.Step
		for _, x := range []float64{1, 1.2, 0.9} {
			out = append(out, seqcount.Step{
				Stable: seqcount.Counts{Num: 1000 * level * x, Requests: 1000},
				Gray:   seqcount.Counts{Num: 100 * level * x * 1.05, Requests: 100},
			})
		}
		return out
	}
	rel := seqcount.Limits{Floor: seqcount.Bound{Rel: 0.02}, Margin: seqcount.Bound{Rel: 0.10}}
	abs := seqcount.Limits{Floor: seqcount.Bound{Abs: 0.001}, Margin: seqcount.Bound{Abs: 0.005}}
	low := contrasts([]countSLI{{lim: rel, steps: steps(0.01)}, {lim: abs, steps: steps(0.01)}})
	high := contrasts([]countSLI{{lim: rel, steps: steps(0.1)}, {lim: abs, steps: steps(0.1)}})
	for k := range 3 {
		if d := math.Abs(float64(low[0].Pass[k] - high[0].Pass[k])); d > 1e-6 {
			t.Errorf("relative limits, step %d: contrasts %g and %g at levels 10x apart", k, low[0].Pass[k], high[0].Pass[k])
		}
		// 1.05 x 1 - 1.02 at the first step (level 1 of the run's mean 31/30 levels): positive.
		if low[0].Fail[0] <= 0 {
			t.Errorf("relative FAIL contrast %g, want beyond a floor of 2%% at +5%%", low[0].Fail[0])
		}
		// Absolute limits: gray's rate less stable's and the bound, in rate points.
		want := 0.01*[]float64{1, 1.2, 0.9}[k]*0.05 - 0.005
		if d := math.Abs(float64(low[1].Pass[k]) - want); d > 1e-7 {
			t.Errorf("absolute limits, step %d: contrast %g, want %g", k, low[1].Pass[k], want)
		}
	}
}

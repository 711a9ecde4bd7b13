package parity_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/testtool"
)

// scipyPython returns a python3 that imports scipy (Debian's python3-scipy, installed by
// hack/install-tools.sh), or skips the test (fails it when CI=true).
func scipyPython(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if err := exec.Command(py, "-c", "import scipy").Run(); err == nil {
			return py
		}
	}
	testtool.SkipOrFail(t, "no python3 with scipy (hack/install-tools.sh python3-scipy): the sequential test's oracle cannot run")
	return ""
}

// TestMixtureLogEMatchesScipy compares the closed form of the e-value with the Bayes factor
// integrated numerically by scipy (testdata/mixture_oracle.py) over the effect and the scale.
func TestMixtureLogEMatchesScipy(t *testing.T) {
	py := scipyPython(t)
	type tcase struct {
		X   []float64 `json:"x"`
		Tau float64   `json:"tau"`
	}
	rng := rand.New(rand.NewPCG(27, 1))
	var cases []tcase
	for i := range 12 {
		n := 2 + i*3
		mu := []float64{0, 0.3, -0.5, 1.5}[i%4]
		x := make([]float64, n)
		for j := range x {
			x[j] = mu + rng.NormFloat64()*[]float64{0.01, 1, 30}[i%3]
		}
		cases = append(cases, tcase{X: x, Tau: []float64{0.5, 1, 3}[i%3]})
	}
	cases = append(cases, tcase{X: []float64{0.1, 0.3, -0.2, 0.5}, Tau: 1}, tcase{X: []float64{1, 1.1, 0.9, 1.2, 1.05}, Tau: 3})
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "testdata/mixture_oracle.py")
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the oracle: %v", err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(cases) {
		t.Fatalf("the oracle gave %d values for %d cases", len(lines), len(cases))
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("n=%d tau=%g", len(c.X), c.Tau), func(t *testing.T) {
			want, err := strconv.ParseFloat(lines[i], 64)
			if err != nil {
				t.Fatal(err)
			}
			if got := parity.MixtureLogE(c.X, c.Tau); math.Abs(got-want) > 1e-7*(1+math.Abs(want)) {
				t.Errorf("log E = %.12g, scipy %.12g", got, want)
			}
		})
	}
}

// clopperUpper is a loose upper bound on a rate of alpha seen in n runs: alpha plus four
// standard errors.
func clopperUpper(alpha float64, n int) float64 {
	return alpha + 4*math.Sqrt(alpha*(1-alpha)/float64(n))
}

// TestSequentialIsValidUnderContinuousMonitoring reads the test after every one of 240
// samples (a minute each: four hours) in 3000 equal runs: the share of runs that ever fail
// must stay at alpha, at the null's boundary (gray worse by exactly the floor) and below it.
func TestSequentialIsValidUnderContinuousMonitoring(t *testing.T) {
	const runs, looks, alpha = 3000, 240, 0.05
	crit := parity.Criterion{SLI: "x", Comparison: parity.DeltaAtMost, Threshold: 1, Floor: 0.5}
	st := parity.SequentialTest{Alpha: alpha}
	for _, tt := range []struct {
		name  string
		shift float64 // gray minus stable, in sigmas
	}{
		{"gray worse by exactly the floor", 0.5},
		{"gray equal to stable", 0},
		{"gray better", -0.5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(27, uint64(1000*tt.shift+7)))
			fails := countRuns(rng, runs, looks, tt.shift, func(p []parity.Pair) bool {
				return st.Judge(crit, p, 1).Verdict == parity.Fail
			})
			rate := float64(fails) / runs
			t.Logf("%d of %d runs failed at some look (%.2f%%)", fails, runs, 100*rate)
			if rate > clopperUpper(alpha, runs) {
				t.Errorf("false FAIL rate %.3f over %d looks, want at most alpha %.2f", rate, looks, alpha)
			}
		})
	}
}

// TestSequentialPassIsEvidence: a PASS says the gray's effect is within the SLI's margin (the
// larger of threshold and floor) at the same level as a FAIL, read at every look: a gray worse
// by exactly the margin passes at some look of a 60-look rollout in at most alpha of the runs,
// and a gray at parity passes, once its confidence sequence has narrowed.
func TestSequentialPassIsEvidence(t *testing.T) {
	const runs, looks, alpha = 2000, 60, 0.05
	crit := parity.Criterion{SLI: "x", Comparison: parity.DeltaAtMost, Threshold: 1, Floor: 0.5}
	st := parity.SequentialTest{Alpha: alpha}
	for _, tt := range []struct {
		name     string
		shift    float64 // gray minus stable, in sigmas; the margin is 1
		min, max float64 // bounds on the share of runs passed at some look
	}{
		{"gray worse by exactly the margin is rarely passed", 1, 0, clopperUpper(alpha, runs)},
		{"gray at parity is passed", 0, 0.99, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(28, uint64(1000*tt.shift+3)))
			passed := countRuns(rng, runs, looks, tt.shift, func(p []parity.Pair) bool {
				for n := 2; n <= len(p); n++ {
					if st.Judge(crit, p[:n], 1).Verdict == parity.Pass {
						return true
					}
				}
				return false
			})
			rate := float64(passed) / runs
			t.Logf("%d of %d runs passed at some look (%.2f%%)", passed, runs, 100*rate)
			if rate < tt.min || rate > tt.max {
				t.Errorf("PASS rate %.4f over %d looks, want within [%.3f, %.3f]", rate, looks, tt.min, tt.max)
			}
		})
	}
}

// countRuns draws runs rollouts of looks one-minute pairs, stable 10 and gray 10 + shift plus
// standard normal noise, and counts those for which hit is true.
func countRuns(rng *rand.Rand, runs, looks int, shift float64, hit func([]parity.Pair) bool) int {
	n := 0
	p := make([]parity.Pair, looks)
	for range runs {
		for i := range p {
			p[i] = parity.Pair{T: time.Unix(int64(60*i), 0), Stable: 10, Gray: 10 + shift + rng.NormFloat64()}
		}
		if hit(p) {
			n++
		}
	}
	return n
}

func seqPairs(stable float64, gray ...float64) []parity.Pair {
	out := make([]parity.Pair, len(gray))
	for i, g := range gray {
		out[i] = parity.Pair{T: time.Unix(int64(60*i), 0).UTC(), Stable: stable, Gray: g}
	}
	return out
}

func TestSequentialJudge(t *testing.T) {
	p99 := parity.Criterion{SLI: "latency p99", Unit: parity.Seconds, Comparison: parity.RatioAtMost, Threshold: 1.1, Floor: 0.005, RelFloor: 0.05}
	errs := parity.Criterion{SLI: "errors", Unit: parity.Ratio, Comparison: parity.DeltaAtMost, Threshold: 0.005, Floor: 0.001}
	hits := parity.Criterion{SLI: "hits", Unit: parity.Ratio, Comparison: parity.GrayAtLeast, Threshold: 0.5, Floor: 0.02}
	wobble := func(base, amp float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = base * (1 + amp*math.Sin(float64(i)*1.7))
		}
		return out
	}
	tests := []struct {
		name     string
		crit     parity.Criterion
		pairs    []parity.Pair
		want     parity.Verdict
		rejected bool
	}{
		{"two samples are too few", p99, seqPairs(0.06, 0.2, 0.2), parity.NoData, false},
		{"four samples cannot reach the bar of 8 SLIs: NO DATA, not a PASS", p99, seqPairs(0.06, wobble(0.3, 0.05, 4)...), parity.NoData, false},
		{"five samples of the same regression fail", p99, seqPairs(0.06, wobble(0.3, 0.05, 5)...), parity.Fail, true},
		{"p99 +40% for ten minutes fails", p99, seqPairs(0.06, wobble(0.084, 0.05, 10)...), parity.Fail, true},
		{"p99 4% worse stays within the 5% floor however long", p99, seqPairs(0.2, wobble(0.208, 0.001, 120)...), parity.Pass, false},
		{"p99 40% better never fails", p99, seqPairs(0.06, wobble(0.036, 0.05, 60)...), parity.Pass, false},
		{"errors +0.5 points fail", errs, seqPairs(0.001, wobble(0.006, 0.1, 12)...), parity.Fail, true},
		{"errors +0.05 points are within the floor", errs, seqPairs(0.001, wobble(0.0015, 0.01, 60)...), parity.Pass, false},
		{"a gray hit ratio far under its threshold fails", hits, seqPairs(0, wobble(0.2, 0.1, 10)...), parity.Fail, true},
		{"a gray hit ratio over its threshold passes", hits, seqPairs(0, wobble(0.9, 0.1, 30)...), parity.Pass, false},
		{"noisy equal tracks: no regression shown, none ruled out yet", p99, seqPairs(0.06, wobble(0.06, 0.3, 6)...), parity.NoData, false},
		{"noisy equal tracks pass once the bound is within the 1.1 threshold", p99, seqPairs(0.06, wobble(0.06, 0.2, 60)...), parity.Pass, false},
		{"a rejection stays when the tracks meet again", p99, append(seqPairs(0.06, wobble(0.12, 0.02, 10)...), seqPairs(0.06, wobble(0.06, 0.3, 50)...)...), parity.Fail, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parity.SequentialTest{}.Judge(tt.crit, tt.pairs, 8)
			if got.Verdict != tt.want {
				t.Errorf("verdict %s (e=%.3g, max %.3g, bar %.3g, effect %.4g, note %q), want %s", got.Verdict, got.E, got.EMax, got.Bar, got.Effect, got.Note, tt.want)
			}
			if got.Rejected.IsZero() == tt.rejected {
				t.Errorf("rejected at %v, want a rejection: %v", got.Rejected, tt.rejected)
			}
			if got.Bar != 800 {
				t.Errorf("bar %v, want 8/0.01 = 800", got.Bar)
			}
		})
	}
	// The kind run's unpooled canary (hack/kindrun, run of 2026-11-25): heap bytes per request
	// 2.1x, 1.7x, 2.2x, 1.9x stable's in 20 s samples, two SLIs judged (bar 200). Four samples
	// cannot reject (e=77) and were a PASS that promoted it; they rule nothing out either.
	t.Run("four samples of a 2x regression are not a PASS", func(t *testing.T) {
		heap := parity.Criterion{SLI: "heap", Unit: parity.Bytes, Comparison: parity.RatioAtMost, Threshold: 0.9, Floor: 1024}
		ratios := []float64{2.1, 1.7, 2.2, 1.9, 2.0}
		pairs := make([]parity.Pair, len(ratios))
		for i, r := range ratios {
			pairs[i] = parity.Pair{T: time.Unix(int64(20*i), 0), Stable: 20000, Gray: 20000 * r}
		}
		got := parity.SequentialTest{}.Judge(heap, pairs[:4], 2)
		if got.Verdict != parity.NoData || got.Worst == nil || *got.Worst <= got.Margin || !strings.Contains(got.Note, "none ruled out") {
			t.Errorf("4 samples: %s (e=%.3g, worst %v, margin %.4g, note %q), want NO DATA: nothing ruled out", got.Verdict, got.E, got.Worst, got.Margin, got.Note)
		}
		if got := (parity.SequentialTest{}).Judge(heap, pairs, 2); got.Verdict != parity.Fail {
			t.Errorf("5 samples: %s (e=%.3g, bar %.3g), want FAIL", got.Verdict, got.E, got.Bar)
		}
	})
	t.Run("a PASS's worst effect is within its margin", func(t *testing.T) {
		got := parity.SequentialTest{}.Judge(p99, seqPairs(0.06, wobble(0.06, 0.2, 60)...), 8)
		if got.Worst == nil || *got.Worst > got.Margin || got.Margin != 1.1 || *got.Worst < got.Effect {
			t.Errorf("effect %.4g, worst %v, margin %.4g: want effect <= worst <= margin 1.1", got.Effect, got.Worst, got.Margin)
		}
	})
	t.Run("the confidence sequence's bound sits on the worse side of the effect", func(t *testing.T) {
		got := parity.SequentialTest{}.Judge(p99, seqPairs(0.06, wobble(0.084, 0.05, 30)...), 8)
		if got.Bound == nil || *got.Bound >= got.Effect || *got.Bound <= 1.05 {
			t.Errorf("effect %.4g, bound %v: want a lower bound between the floor (1.05) and the effect", got.Effect, got.Bound)
		}
	})
}

// TestSequentialDecisive checks the fewest samples the test decides on against the bound
// E_n <= (1 + n tau^2)^((n-1)/2) worked by hand, and that the judge waits for them.
func TestSequentialDecisive(t *testing.T) {
	tests := []struct {
		name string
		test parity.SequentialTest
		k    int
		want int
	}{
		{"one SLI, bar 100: 37^1.5 = 225", parity.SequentialTest{}, 1, 4},
		{"two SLIs, bar 200", parity.SequentialTest{}, 2, 4},
		{"eight SLIs, bar 800: 37^1.5 = 225 is short, 46^2 = 2116 is not", parity.SequentialTest{}, 8, 5},
		{"tau 1, bar 800: 8^3 = 512 is short, 9^3.5 = 2187 is not", parity.SequentialTest{Scale: 1}, 8, 8},
		{"a larger MinSamples wins", parity.SequentialTest{MinSamples: 9}, 8, 9},
	}
	p99 := parity.Criterion{SLI: "latency p99", Unit: parity.Seconds, Comparison: parity.RatioAtMost, Threshold: 1.1, Floor: 0.005, RelFloor: 0.05}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.test.Decisive(tt.k)
			if got != tt.want {
				t.Fatalf("Decisive(%d) = %d, want %d", tt.k, got, tt.want)
			}
			// gray 10x slower, a little noise: as strong as evidence gets.
			gray := func(n int) []float64 {
				out := make([]float64, n)
				for i := range out {
					out[i] = 0.6 * (1 + 0.001*float64(i%3))
				}
				return out
			}
			if r := tt.test.Judge(p99, seqPairs(0.06, gray(got-1)...), tt.k); r.Verdict != parity.NoData {
				t.Errorf("%d samples: %s (%s), want NO DATA", got-1, r.Verdict, r.Note)
			}
			if r := tt.test.Judge(p99, seqPairs(0.06, gray(got)...), tt.k); r.Verdict != parity.Fail {
				t.Errorf("%d samples: %s (e=%.3g, bar %.3g), want FAIL", got, r.Verdict, r.E, r.Bar)
			}
		})
	}
}

// firingAlert returns goodPool with the alert name firing at severity sev.
func firingAlert(name, sev string) func() *fakeProm {
	return func() *fakeProm {
		p := goodPool()
		p.rules.Groups[1].Rules = v1.Rules{v1.AlertingRule{Name: name, Alerts: []*v1.Alert{{
			State: v1.AlertStateFiring, ActiveAt: at.Add(-time.Minute), Value: "1",
			Labels: model.LabelSet{"severity": model.LabelValue(sev), "job": "poolparity"},
		}}}}
		return p
	}
}

// TestEvaluateSequential runs the evaluator in Sequential mode on the fake Prometheus, whose
// samples are each track's instant value times 1.00 to 1.04.
func TestEvaluateSequential(t *testing.T) {
	const p99 = "job_gray_status:http_request_duration_seconds:p99_rate1m"
	opts := func(since time.Duration) parity.Options {
		return parity.Options{
			At: at, Window: "1m", Selector: `job="poolparity"`, Alerts: true, Stat: parity.StatSequential,
			StatSince: at.Add(-since), StatStep: time.Minute, SampleFamily: "1m",
		}
	}
	tests := []struct {
		name   string
		prom   func() *fakeProm
		opts   parity.Options
		want   parity.Verdict
		reason string
	}{
		{"equal tracks for 20 minutes pass", goodPool, opts(20 * time.Minute), parity.Pass, "rows pass"},
		{"gray 5x slower for 20 minutes fails", regression, opts(20 * time.Minute), parity.Fail, "gray worse, e="},
		{"a firing alert and a breach the samples do not back pass with a note", func() *fakeProm {
			p := regression()
			p.rangeValues = map[string]map[string]float64{p99: {"false": 0.0092, "true": 0.0092}, "job_gray_status:http_request_duration_seconds:p95_rate1m": {"false": 0.004, "true": 0.004}}
			return p
		}, opts(20 * time.Minute), parity.Pass, "no anytime-valid evidence"},
		{"a fault of gray's own that no SLI judges fails: the sanitizer's dirty objects", firingAlert(catalog.AlertDirtyObjects, "critical"),
			opts(20 * time.Minute), parity.Fail, "alert PoolParityDirtyObjects is firing (critical)"},
		{"a fault of gray's own that no SLI judges fails: a hoarded live heap", firingAlert(catalog.AlertLiveHeapRegression, "warning"),
			opts(20 * time.Minute), parity.Fail, "alert PoolParityLiveHeapRegression is firing (warning)"},
		{"a shared dependency's alert is a note", firingAlert(catalog.AlertRedisPoolTimeouts, "warning"),
			opts(20 * time.Minute), parity.Pass, "alert PoolParityRedisPoolTimeouts is firing"},
		{"two minutes of samples are NO DATA, not a verdict on the thresholds", regression, opts(time.Minute), parity.NoData, "too few paired samples"},
		{"warm-up excluded everywhere is NO DATA", regression, func() parity.Options {
			o := opts(20 * time.Minute)
			o.Exclude = []parity.Interval{{From: at.Add(-30 * time.Minute), To: at}}
			return o
		}(), parity.NoData, "too few paired samples"},
		{"a fresh baseline is compared instead of stable", func() *fakeProm {
			p := regression()
			for _, tr := range p.values {
				if v, ok := tr["true"]; ok {
					tr["baseline"] = v
				}
			}
			return p
		}, func() parity.Options {
			o := opts(20 * time.Minute)
			o.Alerts = false
			o.BaselineTrack = "baseline"
			return o
		}(), parity.Pass, "rows pass"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := parity.Evaluate(context.Background(), tt.prom(), catalog.Default(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != tt.want || r.Gate != parity.GateSequential {
				t.Fatalf("verdict %s gate %s (%q), want %s", r.Verdict, r.Gate, r.Reasons, tt.want)
			}
			if all := strings.Join(append(r.Reasons, r.StatReasons...), "; "); !strings.Contains(all, tt.reason) {
				t.Errorf("reasons %q lack %q", all, tt.reason)
			}
			if !strings.Contains(strings.Join(r.Notes, " "), "per-rollout alpha 0.01 over 9 SLIs") {
				t.Errorf("the notes do not state the alpha and its split: %q", r.Notes)
			}
		})
	}
}

// TestSequentialWarmupReachesTheSampleRulesRange: a warm-up span is left out of the samples
// whose rule evaluation window overlaps it: a sample at t summarises (t - range - interval, t],
// the range being the sampled rule's own (20 s for a ..._rate20s sampleRule), not the catalog's
// 1m family, and the interval the rule group's (as Prometheus reports it, else
// Options.RuleInterval, else the catalog's 30 s). Samples every 20 s for 3 minutes, the first
// minute cold.
func TestSequentialWarmupReachesTheSampleRulesRange(t *testing.T) {
	const rule20s = "job_gray_status:http_request_duration_seconds:p99_rate20s"
	tests := []struct {
		name       string
		sampleRule string
		group      float64       // the rule group's interval in seconds as Prometheus reports it; 0: none
		interval   time.Duration // Options.RuleInterval
		want       int
	}{
		{"item 4: a 20s sampleRule is warm 20 s plus the default 30 s interval after the span", rule20s, 0, 0, 4},
		{"item 4: the catalog's 1m rule is warm a minute plus 30 s after it", "", 0, 0, 2},
		{"item 4: the group's reported 20 s interval wins over the default", rule20s, 20, 0, 5},
		{"item 4: Options.RuleInterval is used when Prometheus reports none", rule20s, 0, 50 * time.Second, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := goodPool()
			p.values[rule20s] = p.values["job_gray_status:http_request_duration_seconds:p99_rate1m"]
			p.rules.Groups[0].Interval = tt.group
			p.rules.Groups[0].Rules = append(p.rules.Groups[0].Rules, v1.RecordingRule{Name: rule20s})
			o := parity.Options{
				At: at, Window: "1m", Selector: `job="poolparity"`, Stat: parity.StatSequential,
				StatSince: at.Add(-3 * time.Minute), StatStep: 20 * time.Second, SampleFamily: "1m",
				Exclude:      []parity.Interval{{From: at.Add(-3 * time.Minute), To: at.Add(-2 * time.Minute)}},
				RuleInterval: tt.interval,
			}
			if tt.sampleRule != "" {
				o.Overrides = map[catalog.ID]parity.Override{catalog.LatencyP99: {SampleRule: tt.sampleRule}}
			}
			r, err := parity.Evaluate(context.Background(), p, catalog.Default(), o)
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range r.Rows {
				if row.ID != catalog.LatencyP99 {
					continue
				}
				if row.Test == nil || row.Test.NGray != tt.want {
					t.Fatalf("test %+v, want %d paired samples", row.Test, tt.want)
				}
				return
			}
			t.Fatal("no latency p99 row")
		})
	}
}

// TestSamplesNeverRepeatARuleEvaluation: a rule group evaluated every 2 minutes, sampled every
// minute, would give each evaluation to two steps, and the tests would count it twice; its
// rules are sampled every 2 minutes instead, with a note, while the others keep the step.
func TestSamplesNeverRepeatARuleEvaluation(t *testing.T) {
	const p99 = "job_gray_status:http_request_duration_seconds:p99_rate1m"
	p := goodPool()
	p.rules.Groups[0].Interval = 120 // seconds, as Prometheus' rules API reports it
	o := parity.Options{
		At: at, Window: "1m", Selector: `job="poolparity"`, Stat: parity.StatSequential,
		StatSince: at.Add(-20 * time.Minute), StatStep: time.Minute, SampleFamily: "1m",
	}
	r, err := parity.Evaluate(context.Background(), p, catalog.Default(), o)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.steps[p99]; got != 2*time.Minute {
		t.Errorf("%s sampled every %s, want its 2m evaluation interval", p99, got)
	}
	for _, row := range r.Rows {
		if row.ID == catalog.LatencyP99 && (row.Test == nil || !strings.Contains(row.Test.Note, "is evaluated every 2m0s, less often than the 1m0s step")) {
			t.Errorf("the p99 test does not say why it samples every 2m: %+v", row.Test)
		}
	}
	o.StatStep = 3 * time.Minute
	p.steps = nil
	if _, err := parity.Evaluate(context.Background(), p, catalog.Default(), o); err != nil {
		t.Fatal(err)
	}
	if got := p.steps[p99]; got != 3*time.Minute {
		t.Errorf("with a 3m step the rule is sampled every %s, want the step", got)
	}
}

func ExampleSequentialTest_Judge() {
	p99 := parity.Criterion{SLI: "latency p99", Comparison: parity.RatioAtMost, Threshold: 1.1, Floor: 0.005, RelFloor: 0.05}
	var pairs []parity.Pair
	for i := range 8 {
		gray := 0.084 * (1 + 0.03*math.Sin(float64(i))) // +40%, a little noise
		pairs = append(pairs, parity.Pair{T: time.Unix(int64(60*i), 0), Stable: 0.060, Gray: gray})
	}
	r := parity.SequentialTest{}.Judge(p99, pairs, 8)
	fmt.Printf("%s after %d samples at minute %d: e=%.0f >= %.0f, gray/stable %.2f (at least %.2f)\n",
		r.Verdict, r.NGray, r.Rejected.Unix()/60, r.E, r.Bar, r.Effect, *r.Bound)
	// Output:
	// FAIL after 8 samples at minute 4: e=806868 >= 800, gray/stable 1.40 (at least 1.32)
}

func TestSequentialGarbageIsNeverAPass(t *testing.T) {
	c := parity.Criterion{SLI: "cpu per request", Comparison: parity.RatioAtMost, Threshold: 1.1, RelFloor: 0.05}
	pass := &parity.TestResult{Verdict: parity.Pass, Bar: 200, NGray: 30}
	fail := &parity.TestResult{Verdict: parity.Fail, Bar: 200, E: 400, EMax: 512, NGray: 9, Effect: 1.9, Bound: f(1.6), Rejected: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)}
	t.Run("a row whose track has no current value is not passed on earlier samples", func(t *testing.T) {
		rows := parity.SequentialRows([]parity.Row{{SLI: "cpu per request", Verdict: parity.NoData, Note: "no series for the gray track", Test: pass}})
		if rows[0].Verdict != parity.NoData || !strings.Contains(rows[0].Note, "no series for the gray track") {
			t.Errorf("row %+v, want NO DATA naming the missing track", rows[0])
		}
	})
	t.Run("a sequential FAIL states its evidence, not the threshold row", func(t *testing.T) {
		rows := parity.SequentialRows([]parity.Row{{SLI: "cpu per request", Comparison: parity.RatioAtMost, Threshold: 1.1, Value: f(1.02), Verdict: parity.Pass, Test: fail}})
		v, reasons := parity.Decide(parity.Decision{Rows: rows})
		got := strings.Join(reasons, "; ")
		if v != parity.Fail || !strings.Contains(got, "e-value 512 reached the bar 200") || !strings.Contains(got, "effect at least 1.6") || strings.Contains(got, "1.02") {
			t.Errorf("verdict %s, reasons %q; want the e-value, the bar and the bound, not the threshold row's ratio", v, got)
		}
	})
	t.Run("a NaN or infinite pair is left out, never pinning the e-value", func(t *testing.T) {
		var pairs []parity.Pair
		now := time.Now()
		for i := range 40 {
			p := parity.Pair{T: now.Add(time.Duration(i) * time.Minute), Stable: 1, Gray: 3} // gray three times as costly
			if i == 0 {
				p.Gray = math.NaN()
			}
			if i == 1 {
				p.Stable = math.Inf(1)
			}
			pairs = append(pairs, p)
		}
		res := parity.SequentialTest{}.Judge(c, pairs, 1)
		if res.Verdict != parity.Fail || res.NGray != 38 {
			t.Errorf("verdict %s on %d pairs, want FAIL on the 38 finite ones", res.Verdict, res.NGray)
		}
	})
}

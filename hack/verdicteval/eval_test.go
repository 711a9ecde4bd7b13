package main

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/controller"
	"github.com/poolparity/poolparity/internal/parity"
)

// TestEvaluateSeesALargeRegression runs one short run per scenario of both corpora through
// the engine and the committed rules, every judge looking every minute: the +40% p99 run must
// fail the thresholds, the sequential and the count-based judge, the cold scenario must run the judges without
// the warm-up too, and the report must render every section.
func TestEvaluateSeesALargeRegression(t *testing.T) {
	cfg := defaultConfig()
	cfg.AARuns, cfg.Runs, cfg.RecordedRuns = 1, 1, 1
	cfg.OracleRuns, cfg.OracleNullRuns = 10, 20
	cfg.Rollout = 10 * time.Minute
	cfg.RulesFile = filepath.Join("..", "..", "deploy", "prometheus", "poolparity.rules.yml")
	cfg.RecordedDir = filepath.Join("testdata", "recorded")
	res, err := evaluate(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Synthetic) != len(synthetic) || len(res.Recorded) == 0 {
		t.Fatalf("%d synthetic runs, want %d; %d recorded, want some", len(res.Synthetic), len(synthetic), len(res.Recorded))
	}
	for _, rr := range res.Synthetic {
		for _, j := range judges {
			want := 10
			if j.ColdOnly && !rr.Scenario.Cold {
				want = 0
			}
			if got := len(rr.Looks[j.Name]); got != want {
				t.Errorf("%s, %s: %d looks, want %d (one a minute of the rollout)", rr.Scenario.Name, j.Name, got, want)
			}
		}
		if rr.Scenario.Latency == 0.40 {
			for _, j := range []string{"thresholds", "sequential, warm-up excluded", "counts, warm-up excluded"} {
				if s := summarise([]runResult{rr}, j); s.detected != 1 {
					t.Errorf("+40%% p99: %s did not fail at any look: %+v", j, rr.Looks[j])
				}
			}
		}
	}
	var b strings.Builder
	if err := writeReport(&b, cfg, res, []string{"-aa-runs", "1"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## The synthetic corpus", "## The recorded corpus", "| p99 +40% | sequential, warm-up excluded | 1 of 1, 100.0% [",
		"## Targets (issue 27)", "Alerts over a day", "-ar1=0.5", "-pod-offset=0.02",
		"The synthetic corpus' latency targets of the anytime-valid judges (sequential, counts) give the oracle beside them", "10 runs per regression and 20 at the floor",
		"p99 +40% under 5 minutes, synthetic, counts, warm-up excluded: ", "at power 0.5"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestWilson(t *testing.T) {
	tests := []struct {
		name   string
		k, n   int
		lo, hi float64
	}{
		{"none of 200", 0, 200, 0, 0.01884},
		{"10 of 100", 10, 100, 0.05523, 0.17437},
		{"all of 20", 20, 20, 0.83887, 1},
		{"no runs say nothing", 0, 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi := wilson(tt.k, tt.n)
			if math.Abs(lo-tt.lo) > 5e-5 || math.Abs(hi-tt.hi) > 5e-5 {
				t.Errorf("wilson(%d, %d) = [%.5f, %.5f], want [%.5f, %.5f]", tt.k, tt.n, lo, hi, tt.lo, tt.hi)
			}
		})
	}
}

func TestTargetIsNeverMetOnNoRuns(t *testing.T) {
	if got := target(true, 0, "0 of 0"); got != "NOT met (no runs)" {
		t.Errorf("target on no runs = %q", got)
	}
	if got := target(false, 10, "3 of 10"); got != "NOT met (3 of 10)" {
		t.Errorf("a missed target = %q, want the figure", got)
	}
}

func TestMemStoreSelectsTheRange(t *testing.T) {
	st := newMemStore()
	l := mustLabels(t, `up{job="x"}`)
	for i := range 10 {
		st.append(l, int64(i*1000), float64(i))
	}
	st.append(l, 5000, 99) // out of order: dropped
	q, _ := st.Querier(2000, 4000)
	set := q.Select(context.Background(), true, nil)
	if !set.Next() {
		t.Fatal("no series")
	}
	it := set.At().Iterator(nil)
	var got []float64
	for it.Next() != 0 {
		_, v := it.At()
		got = append(got, v)
	}
	if len(got) != 3 || got[0] != 2 || got[2] != 4 {
		t.Errorf("samples %v, want [2 3 4]", got)
	}
}

func mustLabels(t *testing.T, s string) labels.Labels {
	t.Helper()
	l, err := parser.NewParser(parser.Options{}).ParseMetric(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestControllerAndCLIAgree replays runs through the real rule engine and the committed rules
// and judges each analysis window twice on the same data, per gate: as poolparity-parity does
// (the catalog, -gate confirmed, or -gate counts from the rollout's start) and as a PoolCanary on
// the matching mode (Confirm; Counts, the default, with the rollout's start as
// status.rolloutStartedAt) with the CRD's other defaults does (controller.AnalyzeWith). Every
// SLI's verdict and the statistical verdict must agree, and so must the whole verdict wherever no
// alert fires (the controller judges the rules, not the alerts).
func TestControllerAndCLIAgree(t *testing.T) {
	cfg := defaultConfig()
	cfg.Rollout = 15 * time.Minute
	cfg.RulesFile = filepath.Join("..", "..", "deploy", "prometheus", "poolparity.rules.yml")
	cat := catalog.Default()
	since := time.Unix(0, 0).UTC().Add(cfg.Lead)
	for _, gate := range []struct {
		gate parity.Gate
		mode v1alpha1.StatisticalMode
	}{
		{parity.GateConfirmed, v1alpha1.StatisticalConfirm},
		{parity.GateCounts, v1alpha1.StatisticalCounts},
	} {
		for i, sc := range []scenario{synthetic[0], synthetic[5], synthetic[7]} {
			t.Run(string(gate.gate)+"/"+sc.Name, func(t *testing.T) {
				ctx := context.Background()
				var compared, failed, whole int
				src := newSynthSource(cfg, sc, rand.New(rand.NewPCG(uint64(i+1), 7)))
				err := replay(ctx, cfg, src, func(at time.Duration, ts time.Time, q parity.Querier, _ map[string]string) error {
					if rel := at - cfg.Lead; rel < 5*time.Minute || rel%(5*time.Minute) != 0 {
						return nil
					}
					opts := parity.Options{At: ts, Window: "5m", Selector: `job="poolparity"`, Stat: gate.gate.Mode(), Alerts: true}
					if gate.gate == parity.GateCounts {
						opts.StatSince = since
					}
					cli, err := parity.Evaluate(ctx, q, cat, opts)
					if err != nil {
						return err
					}
					a := v1alpha1.Analysis{MatchLabels: map[string]string{"job": "poolparity"}, MinRequests: cat.Guard.MinRequests,
						Statistical: v1alpha1.StatisticalTest{Mode: gate.mode}}
					ctl := controller.AnalyzeWith(ctx, q, &a, controller.Input{Now: ts, Since: since})
					compared++
					cliRows := cli.GateRows()
					if len(ctl.SLIs) != len(cliRows) {
						t.Fatalf("at %s: the controller judged %d SLIs, the CLI %d (%s)", at, len(ctl.SLIs), len(cliRows), ctl.Message)
					}
					for j, row := range cliRows {
						if got := ctl.SLIs[j]; got.Name != string(row.ID) || !sameVerdict(got.Verdict, row.Verdict) {
							t.Errorf("at %s: SLI %s: controller %s %s, CLI %s", at, row.ID, got.Name, got.Verdict, row.Verdict)
						}
					}
					if ctl.Statistical == nil || !sameVerdict(ctl.Statistical.Verdict, cli.Statistical) {
						t.Errorf("at %s: statistical verdicts differ: controller %+v, CLI %s", at, ctl.Statistical, cli.Statistical)
					}
					if !slices.ContainsFunc(cli.Alerts, func(al parity.Alert) bool { return al.State == "firing" }) {
						whole++
						if !sameVerdict(ctl.Verdict, cli.Verdict) {
							t.Errorf("at %s: controller %s (%s), CLI %s (%q)", at, ctl.Verdict, ctl.Message, cli.Verdict, cli.Reasons)
						}
					}
					if cli.Verdict == parity.Fail {
						failed++
					}
					t.Logf("at %s: %s (statistical %s: %q)", at, cli.Verdict, cli.Statistical, cli.StatReasons)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if compared != 3 {
					t.Errorf("%d windows compared, want 3", compared)
				}
				if sc.aa() && whole == 0 {
					t.Error("A/A: no window without a firing alert, so no whole verdict was compared")
				}
				if sc.Latency == 0.40 && failed == 0 {
					t.Error("+40% p99 never failed: the comparison saw no regression")
				}
			})
		}
	}
}

// sameVerdict reports whether the CRD's verdict is the judge's (NoData is NO DATA).
func sameVerdict(crd v1alpha1.Verdict, v parity.Verdict) bool {
	return strings.EqualFold(string(crd), strings.ReplaceAll(string(v), " ", ""))
}

// TestParallelRunsMatchSerialOnes replays runs on two workers and one by one: each run seeds
// its own noise, so the looks must be the same. They were not while the querier read a result
// after closing its query (the engine hands the points back to a pool another run reuses).
func TestParallelRunsMatchSerialOnes(t *testing.T) {
	cfg := defaultConfig()
	cfg.Rollout = 6 * time.Minute
	cfg.RulesFile = filepath.Join("..", "..", "deploy", "prometheus", "poolparity.rules.yml")
	sc := synthetic[5] // p99 +40%: the sequential judge has e-values to get wrong
	one := func(i int) (runResult, error) {
		return oneRun(context.Background(), cfg, sc, i, newSynthSource(cfg, sc, rand.New(rand.NewPCG(1, uint64(i)))))
	}
	par, err := parallel(context.Background(), 4, one)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range par {
		s, err := one(i)
		if err != nil {
			t.Fatal(err)
		}
		for name, looks := range s.Looks {
			if !slices.Equal(looks, p.Looks[name]) {
				t.Errorf("run %d, %s: parallel %v, serial %v", i, name, p.Looks[name], looks)
			}
		}
	}
}

// TestDefaultWarmupIsTheControllers: verdict-eval measures the judges with the warm-up the
// PoolCanary controller applies by default (issue 37 item 4), not one of its own.
func TestDefaultWarmupIsTheControllers(t *testing.T) {
	for _, tt := range []struct {
		name      string
		got, want time.Duration
	}{
		{"item 4: the warm-up is the catalog's, the controller's default", defaultConfig().Warmup, catalog.DefaultWarmup},
		{"the rules are evaluated as the catalog assumes", defaultConfig().Eval, catalog.DefaultRuleInterval},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("%s, want %s", tt.got, tt.want)
			}
		})
	}
}

// TestThresholdsFalseFailIsTheDocuments keeps the rate the reports print beside the thresholds
// gate (parity.ThresholdsFalseFail) the one docs/verdict-eval.md measures: a regenerated
// document with another figure fails here until the constant follows it.
func TestThresholdsFalseFailIsTheDocuments(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "verdict-eval.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := "synthetic, A/A, thresholds: NOT met (" + parity.ThresholdsFalseFail + ")."
	if !strings.Contains(string(b), want) {
		t.Errorf("docs/verdict-eval.md has no line %q: set parity.ThresholdsFalseFail to its figure", want)
	}
}

// TestRuleGroupsRunAtTheirIntervals: the replay evaluates each rule group at its own interval, as
// Prometheus' rule manager does, so the count rules (interval 20s in the committed file) are
// stored every 20 s while the groups without one are every cfg.Eval (30 s), and the judge reads
// those intervals from the querier's Rules as it would from Prometheus' API. A group whose
// interval is not a positive duration is refused with its name.
func TestRuleGroupsRunAtTheirIntervals(t *testing.T) {
	cfg := defaultConfig()
	cfg.Rollout = 2 * time.Minute
	cfg.RulesFile = filepath.Join("..", "..", "deploy", "prometheus", "poolparity.rules.yml")
	ctx := context.Background()
	src := newSynthSource(cfg, synthetic[0], rand.New(rand.NewPCG(1, 7)))
	var ticks int
	var last time.Duration
	err := replay(ctx, cfg, src, func(at time.Duration, ts time.Time, q parity.Querier, _ map[string]string) error {
		ticks++
		last = at
		if at != cfg.Lead+cfg.Rollout {
			return nil
		}
		rules, err := q.Rules(ctx, nil)
		if err != nil {
			return err
		}
		got := map[string]float64{}
		for _, g := range rules.Groups {
			got[g.Name] = g.Interval
		}
		want := map[string]float64{"poolparity.rate5m": 30, "poolparity.rate1m": 30, "poolparity.counts": 20}
		for name, iv := range want {
			if got[name] != iv {
				t.Errorf("group %s: interval %gs in Rules, want %gs (all: %v)", name, got[name], iv, got)
			}
		}
		for _, c := range []struct {
			rule string
			want float64
		}{
			{"job_gray_status_pod:http_requests:total", 15}, // 5 minutes at 20 s
			{"job_gray_status:http_requests:rate1m", 10},    // at 30 s
			{"job_gray_status:http_requests:rate5m", 10},    // at 30 s
		} {
			qs := `max(count_over_time(` + c.rule + `[5m]))`
			v, _, _, err := q.Query(ctx, qs, ts)
			if err != nil {
				return err
			}
			vec, ok := v.(model.Vector)
			if !ok || len(vec) != 1 || float64(vec[0].Value) != c.want {
				t.Errorf("%s = %v, want %g evaluations", qs, v, c.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := int((cfg.Lead+cfg.Rollout)/(10*time.Second)) + 1; ticks != want || last != cfg.Lead+cfg.Rollout {
		t.Errorf("visited %d times up to %s, want %d (every 10 s, the intervals' greatest common divisor)", ticks, last, want)
	}

	for _, c := range []struct{ name, interval, want string }{
		{"zero", "0s", `group bad: interval "0s" is not a positive duration`},
		{"not a duration", "often", `group bad: interval "often" is not a positive duration`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rules.yml")
			body := "groups:\n- name: bad\n  interval: " + c.interval + "\n  rules:\n  - record: x\n    expr: vector(1)\n"
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := newRuleEvaluator(path, 30*time.Second, nil, nil)
			if err == nil || err.Error() != c.want {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

func TestIntervalsText(t *testing.T) {
	groups := []ruleGroup{{name: "a", interval: 30 * time.Second}, {name: "b", interval: 20 * time.Second}, {name: "c", interval: 30 * time.Second}, {name: "d", interval: 30 * time.Second}}
	if got, want := intervalsText(groups), "a, c and d every 30s; b every 20s"; got != want {
		t.Errorf("intervalsText = %q, want %q", got, want)
	}
	if got := groupInterval(groups, "b", time.Minute); got != 20*time.Second {
		t.Errorf("groupInterval(b) = %s, want 20s", got)
	}
	if got := groupInterval(groups, "zz", time.Minute); got != time.Minute {
		t.Errorf("groupInterval(zz) = %s, want the default 1m", got)
	}
}

// TestOracleOf: the synthetic corpus' oracle is simulated with the corpus' own flags at its
// traffic: a larger regression needs no longer, power 0.95 no less time than 0.5, and the
// corpus' noise (drift, pod offsets, stalls) makes the p99 +20% oracle slower than without it.
func TestOracleOf(t *testing.T) {
	cfg := defaultConfig()
	cfg.OracleRuns, cfg.OracleNullRuns = 60, 120
	noisy, err := oracleOf(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if noisy.Traffic != "40 req/s 50/50, 2+2 pods" || noisy.Runs != 60 || noisy.NullRuns != 120 || noisy.K != len(catalog.Default().SLIs) {
		t.Errorf("oracle of %q over %d + %d runs, K %d", noisy.Traffic, noisy.Runs, noisy.NullRuns, noisy.K)
	}
	p20, p40 := noisy.ByLatency[0.2], noisy.ByLatency[0.4]
	if !(p40.Fail50 <= p20.Fail50) || math.IsInf(p40.Fail50, 1) || !(p20.Fail95 >= p20.Fail50) || !(p40.Fail95 >= p40.Fail50) {
		t.Errorf("p99 +20%% %+v, +40%% %+v: want +40%% no slower, power 0.95 no faster, and +40%% found", p20, p40)
	}
	cfg.Drift, cfg.PodOffset, cfg.StallProb = 0, 0, 0
	quiet, err := oracleOf(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if q := quiet.ByLatency[0.2]; !(q.Fail50 < p20.Fail50) {
		t.Errorf("p99 +20%%: the oracle needs %v min without the corpus' noise, %v with it: want less without", q.Fail50, p20.Fail50)
	}
}

// TestBeside: a target's oracle figure says when the oracle itself is beyond the target.
func TestBeside(t *testing.T) {
	for _, tc := range []struct {
		minutes float64
		limit   time.Duration
		want    string
	}{
		{0.667, 5 * time.Minute, "; the oracle needs 0.667 min at power 0.5"},
		{17, 15 * time.Minute, "; the oracle itself needs 17 min at power 0.5, beyond the target"},
		{math.Inf(1), 15 * time.Minute, "; the oracle itself does not reach power 0.5 within the rollout, beyond the target"},
	} {
		if got := beside(tc.minutes, "0.5", tc.limit); got != tc.want {
			t.Errorf("beside(%v, %s) = %q, want %q", tc.minutes, tc.limit, got, tc.want)
		}
	}
}

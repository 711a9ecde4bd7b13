package main

import (
	"context"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/controller"
	"github.com/poolparity/poolparity/internal/parity"
)

// TestEvaluateSeesALargeRegression runs one short run per scenario through the engine and
// the committed rules: the judge must fail every window of +40% p99 and pass the A/A run's
// thresholds with the test's confirmation, and the report must render.
func TestEvaluateSeesALargeRegression(t *testing.T) {
	cfg := defaultConfig()
	cfg.AARuns, cfg.Runs = 1, 1
	cfg.Length = 25 * time.Minute
	cfg.RulesFile = filepath.Join("..", "..", "deploy", "prometheus", "poolparity.rules.yml")
	res, err := evaluate(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != len(scenarios) {
		t.Fatalf("%d runs, want %d", len(res.Runs), len(scenarios))
	}
	for _, rr := range res.Runs {
		if len(rr.Windows) != 3 {
			t.Errorf("%s: %d analysis windows, want 3 (minutes 15, 20, 25)", rr.Scenario.Name, len(rr.Windows))
		}
		if rr.Scenario.Latency == 0.40 {
			for _, w := range rr.Windows {
				if w.Threshold != parity.Fail {
					t.Errorf("+40%% p99, window at %s: thresholds %s, want FAIL", w.At, w.Threshold)
				}
			}
		}
	}
	var b strings.Builder
	if err := writeReport(&b, cfg, res, []string{"-aa-runs", "1"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| p99 +40% | judge: thresholds | 1 | 1 (100%)", "## Targets", "## Every false alarm in A/A"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
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
// and judges each analysis window twice on the same data: as poolparity-parity does (the
// catalog, the confirmed gate) and as a PoolCanary with the CRD's defaults does
// (controller.AnalyzeWith). Every SLI's verdict and the statistical verdict must agree, and
// so must the whole verdict wherever no alert fires (the controller judges the rules, not the
// alerts).
func TestControllerAndCLIAgree(t *testing.T) {
	cfg := defaultConfig()
	cfg.Length = 25 * time.Minute
	cfg.RulesFile = filepath.Join("..", "..", "deploy", "prometheus", "poolparity.rules.yml")
	cat := catalog.Default()
	for i, sc := range []scenario{scenarios[0], scenarios[4], scenarios[5]} {
		t.Run(sc.Name, func(t *testing.T) {
			ctx := context.Background()
			var compared, failed, whole int
			err := replay(ctx, cfg, sc, rand.New(rand.NewPCG(uint64(i+1), 7)), func(at time.Duration, ts time.Time, q parity.Querier, _ map[string]string) error {
				if at < cfg.Start+cfg.Window || (at-cfg.Start)%cfg.Window != 0 {
					return nil
				}
				cli, err := parity.Evaluate(ctx, q, cat, parity.Options{At: ts, Window: "5m", Selector: `job="poolparity"`, Stat: parity.GateConfirmed.Mode(), Alerts: true})
				if err != nil {
					return err
				}
				a := v1alpha1.Analysis{MatchLabels: map[string]string{"job": "poolparity"}, MinRequests: cat.Guard.MinRequests}
				ctl := controller.AnalyzeWith(ctx, q, &a, ts)
				compared++
				cliRows := parity.Confirm(cli.Rows)
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

// sameVerdict reports whether the CRD's verdict is the judge's (NoData is NO DATA).
func sameVerdict(crd v1alpha1.Verdict, v parity.Verdict) bool {
	return strings.EqualFold(string(crd), strings.ReplaceAll(string(v), " ", ""))
}

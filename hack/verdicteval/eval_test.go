package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

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

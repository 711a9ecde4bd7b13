package steps

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/judge"
	"github.com/poolparity/poolparity/internal/judge/judgetest"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/scenario"
)

// fakeProm answers queries from a map of expressions to vectors and Rules with its rules.
type fakeProm struct {
	vectors map[string]model.Vector
	rules   v1.RulesResult
	err     error
}

func (f fakeProm) Query(_ context.Context, q string, _ time.Time, _ ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	if f.err != nil {
		return nil, nil, nil, f.err
	}
	return f.vectors[q], nil, nil, nil
}

func (f fakeProm) QueryRange(context.Context, string, v1.Range, ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	return model.Matrix{}, nil, nil, f.err
}

func (f fakeProm) Rules(context.Context, []string) (v1.RulesResult, error) { return f.rules, f.err }

func sample(grayStatus string, v float64) *model.Sample {
	return &model.Sample{Metric: model.Metric{"gray_status": model.LabelValue(grayStatus)}, Value: model.SampleValue(v)}
}

func alertGroup(name string, alerts map[string]v1.AlertState) v1.RuleGroup {
	g := v1.RuleGroup{Name: name}
	for n, st := range alerts {
		g.Rules = append(g.Rules, v1.AlertingRule{Name: n, Alerts: []*v1.Alert{{State: st, Labels: model.LabelSet{"alertname": model.LabelValue(n)}}}})
	}
	return g
}

func TestParityOptionsAreWhatPoolparityParityUsedForTheKindRun(t *testing.T) {
	at := time.Unix(1700000000, 0)
	o := parityOptions("pp", "rel", at)
	want := parity.Options{At: at, Title: o.Title, Window: "1m", Selector: `namespace="pp",job="rel"`, Stat: parity.StatConfirm, Alerts: true, Pools: true}
	if o.At != want.At || o.Window != want.Window || o.Selector != want.Selector || o.Stat != want.Stat || !o.Alerts || !o.Pools || o.Title == "" {
		t.Errorf("parityOptions = %+v, want %+v", o, want)
	}
}

func TestFiringAlerts(t *testing.T) {
	tests := []struct {
		name    string
		groups  []v1.RuleGroup
		err     error
		want    []string
		wantErr bool
	}{
		{"firing poolparity alerts of every group, once each and sorted", []v1.RuleGroup{
			alertGroup("poolparity.alerts", map[string]v1.AlertState{"PoolParityLatencyRegression": v1.AlertStateFiring, "PoolParityDirtyObjects": v1.AlertStateFiring}),
			alertGroup("other", map[string]v1.AlertState{"PoolParityLatencyRegression": v1.AlertStateFiring}),
		}, nil, []string{"PoolParityDirtyObjects", "PoolParityLatencyRegression"}, false},
		{"pending alerts and other projects' alerts are left out", []v1.RuleGroup{
			alertGroup("poolparity.alerts", map[string]v1.AlertState{"PoolParityNoData": v1.AlertStatePending, "Watchdog": v1.AlertStateFiring}),
		}, nil, []string{}, false},
		{"an unreadable Prometheus is an error", nil, errors.New("connection refused"), nil, true},
		{"another release's alerts are left out", []v1.RuleGroup{{Name: "poolparity.alerts", Rules: v1.Rules{
			v1.AlertingRule{Name: "PoolParityTrackTooQuiet", Alerts: []*v1.Alert{{State: v1.AlertStateFiring, Labels: model.LabelSet{"namespace": "poolparity-example", "job": "imagesvc"}}}},
			v1.AlertingRule{Name: "PoolParityErrorRegression", Alerts: []*v1.Alert{{State: v1.AlertStateFiring, Labels: model.LabelSet{"namespace": "pp", "job": "rel"}}}},
		}}}, nil, []string{"PoolParityErrorRegression"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := firingAlerts(context.Background(), fakeProm{rules: v1.RulesResult{Groups: tt.groups}, err: tt.err}, "pp", "rel")
			if (err != nil) != tt.wantErr {
				t.Fatalf("firingAlerts error = %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && !slices.Equal(got, tt.want) {
				t.Errorf("firingAlerts = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRequestRates(t *testing.T) {
	expr := `sum by (gray_status) (rate(http_requests_total{namespace="pp",job="rel",route!~".*(healthz|readyz|metrics).*"}[1m]))`
	tests := []struct {
		name        string
		vec         model.Vector
		gray, total float64
		wantErr     error
	}{
		{"both tracks", model.Vector{sample("true", 10), sample("false", 30)}, 10, 40, nil},
		{"only stable", model.Vector{sample("false", 30)}, 0, 30, nil},
		{"no traffic yet", model.Vector{}, 0, 0, errNoRequests},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gray, total, err := requestRates(context.Background(), fakeProm{vectors: map[string]model.Vector{expr: tt.vec}}, "pp", "rel", time.Now())
			if !errors.Is(err, tt.wantErr) || gray != tt.gray || total != tt.total {
				t.Errorf("requestRates = %g, %g, %v; want %g, %g, %v", gray, total, err, tt.gray, tt.total, tt.wantErr)
			}
		})
	}
}

func TestScrapedAndRuled(t *testing.T) {
	expr := `count by (gray_status) (process_cpu_seconds_total{namespace="pp",job="rel"})`
	both := model.Vector{sample("true", 2), sample("false", 2)}
	rules := v1.RulesResult{Groups: []v1.RuleGroup{{Name: "poolparity.rules"}}}
	tests := []struct {
		name string
		prom fakeProm
		want bool
	}{
		{"both tracks scraped and rules loaded", fakeProm{vectors: map[string]model.Vector{expr: both}, rules: rules}, true},
		{"one track scraped", fakeProm{vectors: map[string]model.Vector{expr: both[:1]}, rules: rules}, false},
		{"no rules loaded yet", fakeProm{vectors: map[string]model.Vector{expr: both}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := scrapedAndRuled(context.Background(), tt.prom, "pp", "rel"); got != tt.want || err != nil {
				t.Errorf("scrapedAndRuled = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestJudgeParityFailsOnAnUnreadablePrometheus: a Prometheus that cannot be read gives an
// ERROR report and an error naming the evaluation, never a verdict.
func TestJudgeParityFailsOnAnUnreadablePrometheus(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	r, err := judgeParity(context.Background(), fakeProm{err: errors.New("connection refused")}, "pp", "rel", dir, &out)
	if err == nil || !strings.Contains(err.Error(), "evaluating parity") || r.Verdict != parity.Error {
		t.Errorf("judgeParity = %s, %v; want ERROR and an error", r.Verdict, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("judgeParity wrote %v for a failed evaluation", entries)
	}
}

// loadedRules is a rules result with every recording rule of the catalog's window w loaded.
func loadedRules(w string) v1.RulesResult {
	cat := catalog.Default()
	g := v1.RuleGroup{Name: "poolparity.rules"}
	names := []string{cat.Guard.MinTrackRule + w, cat.Guard.RequestRule + w}
	for _, s := range cat.SLIs {
		names = append(names, s.Rules(w)...)
	}
	for _, n := range names {
		g.Rules = append(g.Rules, v1.RecordingRule{Name: n})
	}
	return v1.RulesResult{Groups: []v1.RuleGroup{g}}
}

// TestJudgeParityWritesTheReport: with the rules loaded and no series yet, the verdict is NO
// DATA, never PASS, and the report is printed and written, its directory created.
func TestJudgeParityWritesTheReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "parity", "good")
	var out strings.Builder
	r, err := judgeParity(context.Background(), fakeProm{rules: loadedRules(parityWindow)}, "pp", "rel", dir, &out)
	if err != nil {
		t.Fatalf("judgeParity = %v", err)
	}
	if r.Verdict != parity.NoData || r.Gate != parity.GateConfirmed || r.Window != "1m" {
		t.Errorf("report verdict %s, gate %s, window %s; want NO DATA, confirmed, 1m", r.Verdict, r.Gate, r.Window)
	}
	for _, f := range []string{"report.txt", "report.json", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("judgeParity did not write %s: %v", f, err)
		}
	}
	if !strings.Contains(out.String(), "NO DATA") {
		t.Errorf("printed report lacks its verdict:\n%s", out.String())
	}
}

func TestKindScenariosComeFromTheScenarioList(t *testing.T) {
	if names := kindScenarios(); !slices.Equal(names, []string{scenario.Good, scenario.Regression, scenario.MisuseDirty}) {
		t.Errorf("kind scenarios %v", names)
	}
	tests := []struct {
		scenario string
		want     []string
	}{
		{scenario.Good, []string{"--set", "tracks.stable.poolMode=unpooled", "--set", "tracks.gray.poolMode=pooled"}},
		{scenario.Regression, []string{"--set", "tracks.stable.poolMode=unpooled", "--set", "tracks.gray.poolMode=pooled",
			"--set", "tracks.gray.env[0].name=FAULT_LATENCY", "--set-string", "tracks.gray.env[0].value=40ms"}},
		{scenario.MisuseDirty, []string{"--set", "tracks.stable.poolMode=unpooled", "--set", "tracks.gray.poolMode=misuse-dirty"}},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			sc, err := scenario.Lookup(tt.scenario)
			if err != nil {
				t.Fatal(err)
			}
			if got := scenarioValues(sc); !slices.Equal(got, tt.want) {
				t.Errorf("scenarioValues = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckExampleReport(t *testing.T) {
	v := func(f float64) *float64 { return &f }
	good := func() parity.Report {
		return parity.Report{
			Rows: []parity.Row{{ID: catalog.CPUPerRequest, Value: v(0.4)}, {ID: catalog.HeapAllocPerRequest, Value: v(0.08)}},
			Notes: []string{
				"GC share of CPU: not judged, neither track has go_cpu_classes_gc_total_cpu_seconds_total series",
				"Redis pool hit ratio: not judged, neither track has redis_pool_hit_total series",
			},
		}
	}
	tests := []struct {
		name   string
		mutate func(*parity.Report)
		want   string // a problem's substring; empty: none
	}{
		{"the kind run's good example", func(*parity.Report) {}, ""},
		{"Redis judged", func(r *parity.Report) { r.Rows = append(r.Rows, parity.Row{ID: catalog.RedisPoolHitRatio}) }, "Redis pool hit ratio is judged"},
		{"no note on GC share", func(r *parity.Report) { r.Notes = r.Notes[1:] }, "no note says GC share of CPU"},
		{"no CPU per request", func(r *parity.Report) { r.Rows = r.Rows[1:] }, "CPU per request has no value"},
		{"no allocation effect", func(r *parity.Report) { r.Rows[1].Value = v(0.9) }, "heap alloc per request gray/stable 0.90"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := good()
			tt.mutate(&r)
			got := strings.Join(checkExampleReport(r), "; ")
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("problems %q, want %q", got, tt.want)
			}
		})
	}
}

// TestJudgeReading: the harness's in-process reading of a Canary's hooks parses the hooks'
// metadata as the judge does, pins every query to the namespace, and says in its line what each
// SLI read; a refused request sends no query, and a failed read is an error.
func TestJudgeReading(t *testing.T) {
	meta := flaggerJudgeMeta("flagger-pooled")
	since := time.Now().Add(-10 * time.Minute)
	for _, tc := range []struct {
		name string
		mode judgetest.Mode
		meta map[string]string
		want []string // in the line, in order
		err  bool
	}{
		{"equal tracks", judgetest.Pass, meta, []string{"PASS", "heap alloc per request: stable ", "CPU per request: stable "}, false},
		{"no series", judgetest.NoData, meta, []string{"NO DATA", "heap alloc per request: stable -, gray -", "reasons: "}, false},
		{"an API error", judgetest.Error, meta, nil, true},
		{"a misspelt key", judgetest.Pass, map[string]string{"slis": "cpu-per-request", "mdoe": "Sequential"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prom := judgetest.NewProm(t, tc.mode)
			res, err := judgeReading(context.Background(), prom.URL, flaggerRunNS, tc.meta, since)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want an error: %v", err, tc.err)
			}
			if tc.meta["mdoe"] != "" {
				if !errors.Is(err, judge.ErrInvalid) || len(prom.Sent()) != 0 {
					t.Errorf("a misspelt key: err %v and %d queries sent, want ErrInvalid and none", err, len(prom.Sent()))
				}
				return
			}
			for _, q := range prom.Sent() {
				if !strings.Contains(q, `namespace="`+flaggerRunNS+`"`) {
					t.Errorf("query not pinned to %s: %s", flaggerRunNS, q)
				}
			}
			if tc.err {
				return
			}
			line, rest := readingLine(res), readingLine(res)
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("reading %q lacks %q (in order)", line, w)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

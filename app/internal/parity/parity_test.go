package parity_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/app/internal/parity"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func f(v float64) *float64 { return &v }

func TestCompare(t *testing.T) {
	tests := []struct {
		name      string
		c         parity.Comparison
		value     *float64
		threshold float64
		want      parity.Verdict
	}{
		{"a ratio under the limit passes", parity.RatioAtMost, f(1.05), 1.10, parity.Pass},
		{"a ratio on the limit passes", parity.RatioAtMost, f(1.10), 1.10, parity.Pass},
		{"a ratio over the limit fails", parity.RatioAtMost, f(4.2), 1.10, parity.Fail},
		{"a negative delta passes an at-most limit", parity.DeltaAtMost, f(-0.02), 0.005, parity.Pass},
		{"a delta over the limit fails", parity.DeltaAtMost, f(0.02), 0.005, parity.Fail},
		{"a delta above an at-least limit passes", parity.DeltaAtLeast, f(-0.05), -0.10, parity.Pass},
		{"a delta below an at-least limit fails", parity.DeltaAtLeast, f(-0.2), -0.10, parity.Fail},
		{"a gray value above its floor passes", parity.GrayAtLeast, f(0.97), 0.5, parity.Pass},
		{"a gray value below its floor fails", parity.GrayAtLeast, f(0.3), 0.5, parity.Fail},
		{"no value is no data", parity.RatioAtMost, nil, 1.10, parity.NoData},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parity.Compare(tt.c, tt.value, tt.threshold); got != tt.want {
				t.Errorf("Compare(%s, %v, %g) = %s, want %s", tt.c, tt.value, tt.threshold, got, tt.want)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	pass := parity.Row{SLI: "latency p99", Comparison: parity.RatioAtMost, Value: f(1), Threshold: 1.1, Verdict: parity.Pass}
	fail := parity.Row{SLI: "latency p99", Comparison: parity.RatioAtMost, Value: f(4), Threshold: 1.1, Verdict: parity.Fail}
	nodata := parity.Row{SLI: "CPU per request", Comparison: parity.RatioAtMost, Verdict: parity.NoData}
	firing := func(sev string) parity.Alert { return parity.Alert{Name: "X", State: "firing", Severity: sev} }
	pending := parity.Alert{Name: "X", State: "pending", Severity: "critical"}

	tests := []struct {
		name   string
		rows   []parity.Row
		alerts []parity.Alert
		want   parity.Verdict
		reason string
	}{
		{"every row passing and no alert is a pass", []parity.Row{pass, pass}, nil, parity.Pass, "2 of 2 rows pass"},
		{"one failing row fails the report", []parity.Row{pass, fail}, nil, parity.Fail, "gray/stable 4.00 > 1.10"},
		{"a failing row wins over missing data", []parity.Row{nodata, fail}, nil, parity.Fail, "CPU per request has no data"},
		{"a row without data, nothing failing, is no data", []parity.Row{pass, nodata}, nil, parity.NoData, "CPU per request has no data"},
		{"a firing critical alert fails passing rows", []parity.Row{pass}, []parity.Alert{firing("critical")}, parity.Fail, "alert X is firing (critical)"},
		{"a firing warning alert fails passing rows", []parity.Row{pass}, []parity.Alert{firing("warning")}, parity.Fail, "alert X is firing"},
		{"a firing alert without severity fails", []parity.Row{pass}, []parity.Alert{firing("")}, parity.Fail, "no severity"},
		{"a firing info alert is only a reason", []parity.Row{pass}, []parity.Alert{firing("info")}, parity.Pass, "informational"},
		{"a pending alert is only a reason", []parity.Row{pass}, []parity.Alert{pending}, parity.Pass, "alert X is pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reasons := parity.Judge(tt.rows, tt.alerts)
			if got != tt.want {
				t.Errorf("Judge = %s, want %s (reasons %q)", got, tt.want, reasons)
			}
			if !strings.Contains(strings.Join(reasons, "; "), tt.reason) {
				t.Errorf("reasons %q do not mention %q", reasons, tt.reason)
			}
		})
	}
}

// fakeProm answers instant queries from a table (the query text, exactly)
// and serves fixed rules.
type fakeProm struct {
	values map[string][]float64 // one sample per value
	pools  model.Vector
	gets   model.Vector
	rules  v1.RulesResult
	asked  []string
}

func (p *fakeProm) Query(_ context.Context, q string, ts time.Time, _ ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	p.asked = append(p.asked, q)
	switch {
	case strings.HasPrefix(q, "job_gray_status_pool:syncpool_hits:ratio_rate1m"):
		return p.pools, nil, nil, nil
	case strings.HasPrefix(q, "job_gray_status_pool:syncpool_gets:rate1m"):
		return p.gets, nil, nil, nil
	}
	var vec model.Vector
	for _, v := range p.values[q] {
		vec = append(vec, &model.Sample{Value: model.SampleValue(v), Timestamp: model.TimeFromUnixNano(ts.UnixNano())})
	}
	return vec, nil, nil, nil
}

func (p *fakeProm) QueryRange(_ context.Context, q string, r v1.Range, _ ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	var vals []model.SamplePair
	base := 0.004
	if strings.Contains(q, `gray_status="true"`) {
		base = 0.003
	}
	for i, t := 0, r.Start; !t.After(r.End); i, t = i+1, t.Add(r.Step) {
		vals = append(vals, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: model.SampleValue(base * (1 + float64(i%5)/10))})
	}
	return model.Matrix{{Metric: model.Metric{}, Values: vals}}, nil, nil, nil
}

func (p *fakeProm) Rules(context.Context, []string) (v1.RulesResult, error) { return p.rules, nil }

var at = time.Date(2026, 11, 22, 2, 30, 0, 0, time.UTC)

// goodPool is a gray track that pools well and a stable one that does not
// pool, with the values a healthy demo shows.
func goodPool() *fakeProm {
	w := "1m"
	g, s := `{job="poolparity",gray_status="true"}`, `{job="poolparity",gray_status="false"}`
	sel := `{job="poolparity"}`
	hits := func(m string) string {
		return "sum(job_gray_status_pool:syncpool_hits:ratio_rate" + w + m + " * job_gray_status_pool:syncpool_gets:rate" + w + m + ") / sum(job_gray_status_pool:syncpool_gets:rate" + w + m + ")"
	}
	return &fakeProm{
		values: map[string][]float64{
			"count(syncpool_gets_total" + g + ")":                                     {5},
			"job_gray_status:http_request_duration_seconds:p95_rate" + w + s:          {0.0041},
			"job_gray_status:http_request_duration_seconds:p95_rate" + w + g:          {0.0039},
			"job:http_request_duration_seconds_p95:gray_over_stable_rate" + w + sel:   {0.951},
			"job_gray_status:http_request_duration_seconds:p99_rate" + w + s:          {0.0092},
			"job_gray_status:http_request_duration_seconds:p99_rate" + w + g:          {0.0088},
			"job:http_request_duration_seconds_p99:gray_over_stable_rate" + w + sel:   {0.957},
			"job_gray_status:http_request_errors:ratio_rate" + w + s:                  {0},
			"job_gray_status:http_request_errors:ratio_rate" + w + g:                  {0},
			"job:http_request_errors:gray_minus_stable_rate" + w + sel:                {0},
			"job_gray_status:process_cpu_seconds_per_request:ratio_rate" + w + s:      {0.000412},
			"job_gray_status:process_cpu_seconds_per_request:ratio_rate" + w + g:      {0.000351},
			"job:process_cpu_seconds_per_request:gray_over_stable_rate" + w + sel:     {0.852},
			"job_gray_status:go_gc_heap_allocs_bytes_per_request:ratio_rate" + w + s:  {61234},
			"job_gray_status:go_gc_heap_allocs_bytes_per_request:ratio_rate" + w + g:  {14876},
			"job:go_gc_heap_allocs_bytes_per_request:gray_over_stable_rate" + w + sel: {0.243},
			"job_gray_status:go_gc_cpu:ratio_rate" + w + s:                            {0.061},
			"job_gray_status:go_gc_cpu:ratio_rate" + w + g:                            {0.022},
			hits(g): {0.987},
			"job_gray_status:redis_pool_hits:ratio_rate" + w + s: {0.999},
			"job_gray_status:redis_pool_hits:ratio_rate" + w + g: {1},
		},
		pools: model.Vector{
			{Metric: model.Metric{"gray_status": "true", "pool": "json_buffer"}, Value: 0.991},
			{Metric: model.Metric{"gray_status": "true", "pool": "report_buffer"}, Value: 0.975},
		},
		gets: model.Vector{
			{Metric: model.Metric{"gray_status": "true", "pool": "json_buffer"}, Value: 120},
			{Metric: model.Metric{"gray_status": "true", "pool": "report_buffer"}, Value: 15.5},
		},
		rules: v1.RulesResult{Groups: []v1.RuleGroup{
			{Name: "poolparity.rate1m", Rules: v1.Rules{v1.RecordingRule{Name: "job:http_requests:min_track_rate1m"}}},
			{Name: "poolparity.alerts", Rules: v1.Rules{v1.AlertingRule{Name: "PoolParityLatencyRegression"}}},
			{Name: "kubernetes", Rules: v1.Rules{v1.AlertingRule{Name: "Watchdog", Alerts: []*v1.Alert{{State: v1.AlertStateFiring}}}}},
		}},
	}
}

// regression is goodPool with gray 40ms slower and its alert firing.
func regression() *fakeProm {
	p := goodPool()
	p.values[`job_gray_status:http_request_duration_seconds:p99_rate1m{job="poolparity",gray_status="true"}`] = []float64{0.0512}
	p.values[`job:http_request_duration_seconds_p99:gray_over_stable_rate1m{job="poolparity"}`] = []float64{5.565}
	p.values[`job_gray_status:http_request_duration_seconds:p95_rate1m{job="poolparity",gray_status="true"}`] = []float64{0.0475}
	p.values[`job:http_request_duration_seconds_p95:gray_over_stable_rate1m{job="poolparity"}`] = []float64{11.585}
	p.rules.Groups[1].Rules = v1.Rules{v1.AlertingRule{Name: "PoolParityLatencyRegression", Alerts: []*v1.Alert{{
		State: v1.AlertStateFiring, ActiveAt: at.Add(-40 * time.Second), Value: "5.565e+00",
		Labels:      model.LabelSet{"severity": "critical", "job": "poolparity"},
		Annotations: model.LabelSet{"summary": "Gray p99 latency is 556.5% of stable in poolparity."},
	}}}}
	return p
}

func check(t *testing.T, p *fakeProm) parity.Report {
	t.Helper()
	c := parity.NewChecker(p, parity.WithWindow("1m"), parity.WithSelector(`job="poolparity"`))
	r, err := c.Check(context.Background(), at)
	if err != nil {
		t.Fatal(err)
	}
	r.Context = []parity.KV{{Key: "scenario", Value: "good"}, {Key: "load", Value: "18000 requests in 1m30s"}}
	r.Charts, err = c.Charts(context.Background(), at.Add(-time.Minute), at, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCheckAGoodPoolPasses(t *testing.T) {
	r := check(t, goodPool())
	if r.Verdict != parity.Pass {
		t.Fatalf("verdict %s, want PASS; reasons %q", r.Verdict, r.Reasons)
	}
	if len(r.Rows) != 8 {
		t.Errorf("%d rows, want 8", len(r.Rows))
	}
	for _, row := range r.Rows {
		if row.SLI == "sync.Pool hit ratio" && (row.Stable != nil || row.Note != "stable is unpooled") {
			t.Errorf("hit ratio row %+v: the unpooled stable track must show no value and say why", row)
		}
	}
	if len(r.Alerts) != 0 {
		t.Errorf("alerts %+v: only poolparity groups count, and nothing is active there", r.Alerts)
	}
	golden(t, "good", r)
}

func TestCheckALatencyRegressionFails(t *testing.T) {
	r := check(t, regression())
	if r.Verdict != parity.Fail {
		t.Fatalf("verdict %s, want FAIL", r.Verdict)
	}
	if len(r.Alerts) != 1 || r.Alerts[0].Name != "PoolParityLatencyRegression" || r.Alerts[0].State != "firing" {
		t.Errorf("alerts %+v, want the latency alert firing", r.Alerts)
	}
	golden(t, "regression", r)
}

func TestCheckSkipsTheHitRatioWhenGrayIsUnpooled(t *testing.T) {
	p := goodPool()
	delete(p.values, `count(syncpool_gets_total{job="poolparity",gray_status="true"})`)
	r := check(t, p)
	for _, row := range r.Rows {
		if row.SLI == "sync.Pool hit ratio" {
			t.Errorf("an unpooled gray track got a hit-ratio row: %+v", row)
		}
	}
	if len(r.Notes) == 0 || !strings.Contains(r.Notes[0], "unpooled") {
		t.Errorf("notes %q do not say why the row is missing", r.Notes)
	}
}

func TestCheckWithoutDataIsNoData(t *testing.T) {
	p := goodPool()
	p.values = map[string][]float64{}
	r := check(t, p)
	if r.Verdict != parity.NoData {
		t.Errorf("verdict %s, want NO DATA", r.Verdict)
	}
}

func TestCheckWithoutRulesIsAnError(t *testing.T) {
	p := goodPool()
	p.rules = v1.RulesResult{}
	_, err := parity.NewChecker(p, parity.WithWindow("1m")).Check(context.Background(), at)
	if err == nil || !strings.Contains(err.Error(), "min_track_rate1m") {
		t.Errorf("error %v, want ErrNoRules naming the missing rule", err)
	}
}

// golden compares the report's three renderings with testdata/NAME.*.
func golden(t *testing.T, name string, r parity.Report) {
	t.Helper()
	for _, ext := range []string{"txt", "json", "html"} {
		var buf bytes.Buffer
		var err error
		switch ext {
		case "txt":
			err = r.WriteText(&buf)
		case "json":
			err = r.WriteJSON(&buf)
		case "html":
			err = r.WriteHTML(&buf)
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", name+"."+ext)
		if *update {
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s differs from the golden file; run go test ./app/internal/parity -update and review the diff.\ngot:\n%s", path, buf.String())
		}
	}
	if html := func() string { var b bytes.Buffer; _ = r.WriteHTML(&b); return b.String() }(); strings.Contains(html, "http://") && !strings.Contains(html, `xmlns="http://www.w3.org/2000/svg"`) || strings.Contains(html, "<script") || strings.Contains(html, "<link") {
		t.Error("the HTML page must be self-contained: no script, no link, nothing fetched")
	}
}

package parity_test

import (
	"bytes"
	"context"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/render"
	"github.com/poolparity/poolparity/internal/profdiff"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func f(v float64) *float64 { return &v }

func TestEvaluate(t *testing.T) {
	ms := 0.001
	tests := []struct {
		name         string
		c            parity.Criterion
		stable, gray *float64
		want         parity.Verdict
		wantValue    *float64
	}{
		{"a ratio under the limit passes", parity.Criterion{Comparison: parity.RatioAtMost, Threshold: 1.10}, f(100), f(105), parity.Pass, f(1.05)},
		{"a ratio on the limit passes", parity.Criterion{Comparison: parity.RatioAtMost, Threshold: 1.25}, f(4), f(5), parity.Pass, f(1.25)},
		{"a ratio over the limit fails", parity.Criterion{Comparison: parity.RatioAtMost, Threshold: 1.10}, f(1), f(4.2), parity.Fail, f(4.2)},
		{"a ratio over the limit within the floor passes", parity.Criterion{Unit: parity.Seconds, Comparison: parity.RatioAtMost, Threshold: 1.10, Floor: 5 * ms}, f(4 * ms), f(4.48 * ms), parity.Pass, f(1.12)},
		{"a ratio over the limit beyond the floor fails", parity.Criterion{Unit: parity.Seconds, Comparison: parity.RatioAtMost, Threshold: 1.10, Floor: 5 * ms}, f(4 * ms), f(24 * ms), parity.Fail, f(6)},
		{"both tracks at zero are no data: a ratio of zeros is no evidence", parity.Criterion{Comparison: parity.RatioAtMost, Threshold: 1.10}, f(0), f(0), parity.NoData, nil},
		{"gray over a zero stable fails an at-most ratio, with no value", parity.Criterion{Comparison: parity.RatioAtMost, Threshold: 1.10}, f(0), f(1), parity.Fail, nil},
		{"a ratio under an at-least limit fails", parity.Criterion{Comparison: parity.RatioAtLeast, Threshold: 0.95}, f(1), f(0.9), parity.Fail, f(0.9)},
		{"a negative delta passes an at-most limit", parity.Criterion{Comparison: parity.DeltaAtMost, Threshold: 0.005}, f(0.02), f(0), parity.Pass, f(-0.02)},
		{"a delta over the limit fails", parity.Criterion{Comparison: parity.DeltaAtMost, Threshold: 0.005}, f(0), f(0.02), parity.Fail, f(0.02)},
		{"a delta below an at-least limit fails", parity.Criterion{Comparison: parity.DeltaAtLeast, Threshold: -0.10}, f(1), f(0.8), parity.Fail, nil},
		{"a gray value above its floor passes without a stable value", parity.Criterion{Comparison: parity.GrayAtLeast, Threshold: 0.5}, nil, f(0.97), parity.Pass, f(0.97)},
		{"a gray value below its floor fails", parity.Criterion{Comparison: parity.GrayAtLeast, Threshold: 0.5}, nil, f(0.3), parity.Fail, f(0.3)},
		{"no stable value is no data", parity.Criterion{Comparison: parity.RatioAtMost, Threshold: 1.10}, nil, f(1), parity.NoData, nil},
		{"an unknown comparison is an error, never a pass", parity.Criterion{Comparison: "ratio~", Threshold: 1}, f(1), f(1), parity.Error, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.c.Evaluate(tt.stable, tt.gray)
			if got.Verdict != tt.want {
				t.Errorf("verdict %s, want %s (%+v)", got.Verdict, tt.want, got)
			}
			switch {
			case tt.wantValue == nil && got.Value != nil && tt.name != "a delta below an at-least limit fails":
				t.Errorf("value %v, want none", *got.Value)
			case tt.wantValue != nil && (got.Value == nil || math.Abs(*got.Value-*tt.wantValue) > 1e-9):
				t.Errorf("value %v, want %v", got.Value, *tt.wantValue)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	pass := parity.Row{SLI: "latency p99", Comparison: parity.RatioAtMost, Value: f(1), Threshold: 1.1, Verdict: parity.Pass}
	fail := parity.Row{SLI: "latency p99", Comparison: parity.RatioAtMost, Value: f(4), Threshold: 1.1, Verdict: parity.Fail}
	nodata := parity.Row{SLI: "CPU per request", Comparison: parity.RatioAtMost, Verdict: parity.NoData}
	firing := func(sev string) parity.Alert { return parity.Alert{Name: "X", State: "firing", Severity: sev} }
	pending := parity.Alert{Name: "X", State: "pending", Severity: "critical"}

	tests := []struct {
		name   string
		d      parity.Decision
		want   parity.Verdict
		reason string
	}{
		{"every row passing and no alert is a pass", parity.Decision{Rows: []parity.Row{pass, pass}}, parity.Pass, "2 of 2 rows pass"},
		{"one failing row fails the report", parity.Decision{Rows: []parity.Row{pass, fail}}, parity.Fail, "gray/stable 4.00 > 1.10"},
		{"a failing row wins over missing data", parity.Decision{Rows: []parity.Row{nodata, fail}}, parity.Fail, "CPU per request has no data"},
		{"a row without data, nothing failing, is no data", parity.Decision{Rows: []parity.Row{pass, nodata}}, parity.NoData, "CPU per request has no data"},
		{"no rows at all is no data, never a pass", parity.Decision{}, parity.NoData, "no SLI was judged"},
		{"a failed query is an error even with a failing row", parity.Decision{Rows: []parity.Row{fail}, Errors: []string{"p99: timeout"}}, parity.Error, "p99: timeout"},
		{"a quiet track makes a breach not count", parity.Decision{Rows: []parity.Row{fail}, Quiet: "too little traffic"}, parity.NoData, "too little traffic"},
		{"a firing critical alert fails passing rows", parity.Decision{Rows: []parity.Row{pass}, Alerts: []parity.Alert{firing("critical")}}, parity.Fail, "alert X is firing (critical)"},
		{"a firing warning alert fails passing rows", parity.Decision{Rows: []parity.Row{pass}, Alerts: []parity.Alert{firing("warning")}}, parity.Fail, "alert X is firing"},
		{"a firing alert without severity fails", parity.Decision{Rows: []parity.Row{pass}, Alerts: []parity.Alert{firing("")}}, parity.Fail, "no severity"},
		{"a firing info alert is only a reason", parity.Decision{Rows: []parity.Row{pass}, Alerts: []parity.Alert{firing("info")}}, parity.Pass, "informational"},
		{"a pending alert is only a reason", parity.Decision{Rows: []parity.Row{pass}, Alerts: []parity.Alert{pending}}, parity.Pass, "alert X is pending"},
		{"one alert's series are one reason naming the pool", parity.Decision{Rows: []parity.Row{pass}, Alerts: []parity.Alert{
			{Name: "P", State: "firing", Severity: "warning", Labels: map[string]string{"pool": "json_buf", "instance": "a"}},
			{Name: "P", State: "firing", Severity: "warning", Labels: map[string]string{"pool": "json_buf", "instance": "b"}},
			{Name: "P", State: "firing", Severity: "warning", Labels: map[string]string{"pool": "json_buf", "instance": "c"}},
		}}, parity.Fail, "alert P is firing (warning): pool json_buf, 3 series"},
		{"an alert on two pools names both", parity.Decision{Rows: []parity.Row{pass}, Alerts: []parity.Alert{
			{Name: "P", State: "firing", Severity: "warning", Labels: map[string]string{"pool": "out_buf"}},
			{Name: "P", State: "firing", Severity: "warning", Labels: map[string]string{"pool": "json_buf"}},
		}}, parity.Fail, "alert P is firing (warning): pools json_buf, out_buf, 2 series"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reasons := parity.Decide(tt.d)
			if got != tt.want {
				t.Errorf("Decide = %s, want %s (reasons %q)", got, tt.want, reasons)
			}
			if !strings.Contains(strings.Join(reasons, "; "), tt.reason) {
				t.Errorf("reasons %q do not mention %q", reasons, tt.reason)
			}
			seen := map[string]bool{}
			for _, r := range reasons {
				if seen[r] {
					t.Errorf("reason %q given twice in %q", r, reasons)
				}
				seen[r] = true
			}
		})
	}
}

// fakeProm answers instant queries from a table keyed by the query text
// up to its selector, one value per track (gray_status "false", "true"),
// and serves fixed rules.
type fakeProm struct {
	values map[string]map[string]float64
	// rangeValues, when set for a rule, replaces values in its range
	// queries (the statistical test's samples).
	rangeValues map[string]map[string]float64
	pools       model.Vector
	gets        model.Vector
	rules       v1.RulesResult
	asked       []string
	// steps records each range query's rule name and step.
	steps map[string]time.Duration
	// raw answers the instant queries of a range selector (rule{...}[d]) by
	// the rule's name: the count rules' stored samples.
	raw map[string]model.Matrix
}

func (p *fakeProm) Query(_ context.Context, q string, ts time.Time, _ ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	p.asked = append(p.asked, q)
	if m, ok := p.raw[key(q)]; ok && strings.HasSuffix(q, "]") {
		return m, nil, nil, nil
	}
	switch {
	case strings.HasPrefix(q, "job_gray_status_pool:syncpool_hits:ratio_rate1m"):
		return p.pools, nil, nil, nil
	case strings.HasPrefix(q, "job_gray_status_pool:syncpool_gets:rate1m"):
		return p.gets, nil, nil, nil
	}
	var vec model.Vector
	for gs, v := range p.values[key(q)] {
		vec = append(vec, &model.Sample{Metric: model.Metric{"gray_status": model.LabelValue(gs)}, Value: model.SampleValue(v), Timestamp: model.TimeFromUnixNano(ts.UnixNano())})
	}
	return vec, nil, nil, nil
}

// key is the query up to its first selector, or the whole query when it
// names a track (the pool-mode counts).
func key(q string) string {
	if strings.Contains(q, "gray_status=") {
		return q
	}
	k, _, _ := strings.Cut(q, "{")
	return k
}

func (p *fakeProm) QueryRange(_ context.Context, q string, r v1.Range, _ ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	if p.steps == nil {
		p.steps = map[string]time.Duration{}
	}
	p.steps[key(q)] = r.Step
	tracks, ok := p.values[key(q)]
	if rv, found := p.rangeValues[key(q)]; found {
		tracks, ok = rv, true
	}
	if ok && !strings.Contains(q, "gray_status=") {
		// A row's samples: each track's instant value times 1.00, 1.01, ... 1.04, gray's
		// two steps later in the cycle than the others' (so that the tracks' ratio varies).
		var m model.Matrix
		for gs, v := range tracks {
			s := &model.SampleStream{Metric: model.Metric{"gray_status": model.LabelValue(gs)}}
			phase := 0
			if gs == "true" {
				phase = 2
			}
			for i, t := 0, r.Start; !t.After(r.End); i, t = i+1, t.Add(r.Step) {
				s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: model.SampleValue(v * (1 + float64((i+phase)%5)/100))})
			}
			m = append(m, s)
		}
		return m, nil, nil, nil
	}
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

// allRules lists every recording rule of the 1m family the Checker needs.
func allRules() v1.Rules {
	var rs v1.Rules
	for _, n := range []string{
		"job:http_requests:min_track_rate1m", "job_gray_status:http_requests:rate1m",
		"job_gray_status:http_request_duration_seconds:p95_rate1m", "job_gray_status:http_request_duration_seconds:p99_rate1m",
		"job_gray_status:http_request_errors:ratio_rate1m", "job_gray_status:process_cpu_seconds_per_request:ratio_rate1m",
		"job_gray_status:go_gc_heap_allocs_bytes_per_request:ratio_rate1m", "job_gray_status:go_gc_cpu:ratio_rate1m",
		"job_gray_status_pool:syncpool_hits:ratio_rate1m", "job_gray_status_pool:syncpool_gets:rate1m",
		"job_gray_status:redis_pool_hits:ratio_rate1m",
	} {
		rs = append(rs, v1.RecordingRule{Name: n})
	}
	return rs
}

var at = time.Date(2026, 11, 22, 2, 30, 0, 0, time.UTC)

// goodPool is a gray track that pools well and a stable one that does not
// pool, with the values a healthy demo shows.
func goodPool() *fakeProm {
	w := "1m"
	tr := func(stable, gray float64) map[string]float64 {
		return map[string]float64{"false": stable, "true": gray}
	}
	return &fakeProm{
		values: map[string]map[string]float64{
			`count(syncpool_gets_total{job="poolparity",gray_status="true"})`:         {"": 5},
			"job_gray_status:http_requests:rate" + w:                                  tr(150, 150),
			"job_gray_status:http_request_duration_seconds:p95_rate" + w:              tr(0.0041, 0.0039),
			"job_gray_status:http_request_duration_seconds:p99_rate" + w:              tr(0.0092, 0.0088),
			"job_gray_status:http_request_errors:ratio_rate" + w:                      tr(0, 0),
			"job_gray_status:process_cpu_seconds_per_request:ratio_rate" + w:          tr(0.000412, 0.000351),
			"job_gray_status:go_gc_heap_allocs_bytes_per_request:ratio_rate" + w:      tr(61234, 14876),
			"job_gray_status:go_gc_cpu:ratio_rate" + w:                                tr(0.061, 0.022),
			"sum by (gray_status) (job_gray_status_pool:syncpool_hits:ratio_rate" + w: {"true": 0.987},
			"job_gray_status:redis_pool_hits:ratio_rate" + w:                          tr(0.999, 1),
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
			{Name: "poolparity.rate1m", Rules: allRules()},
			{Name: "poolparity.alerts", Rules: v1.Rules{v1.AlertingRule{Name: "PoolParityLatencyRegression"}}},
			{Name: "kubernetes", Rules: v1.Rules{v1.AlertingRule{Name: "Watchdog", Alerts: []*v1.Alert{{State: v1.AlertStateFiring}}}}},
		}},
	}
}

// regression is goodPool with gray 40ms slower and its alert firing.
func regression() *fakeProm {
	p := goodPool()
	p.values["job_gray_status:http_request_duration_seconds:p99_rate1m"]["true"] = 0.0512
	p.values["job_gray_status:http_request_duration_seconds:p95_rate1m"]["true"] = 0.0475
	p.rules.Groups[1].Rules = v1.Rules{v1.AlertingRule{Name: "PoolParityLatencyRegression", Alerts: []*v1.Alert{{
		State: v1.AlertStateFiring, ActiveAt: at.Add(-40 * time.Second), Value: "5.565e+00",
		Labels:      model.LabelSet{"severity": "critical", "job": "poolparity"},
		Annotations: model.LabelSet{"summary": "Gray p99 latency is 556.5% of stable in poolparity."},
	}}}}
	return p
}

func check(t *testing.T, p *fakeProm) parity.Report {
	t.Helper()
	cat := catalog.Default()
	r, err := parity.Evaluate(context.Background(), p, cat, parity.Options{At: at, Window: "1m", Selector: `job="poolparity"`, Alerts: true, Pools: true})
	if err != nil {
		t.Fatal(err)
	}
	r.Context = []parity.KV{{Key: "scenario", Value: "good"}, {Key: "load", Value: "18000 requests in 1m30s"}}
	r.Charts, err = parity.Charts(context.Background(), p, cat, "1m", `job="poolparity"`, at.Add(-time.Minute), at, 10*time.Second)
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
	// The demo adds the profiles' comparison to a FAIL; the renderings show it.
	r.Profiles = []profdiff.Diff{{
		Kind: profdiff.KindCPU, Unit: catalog.Seconds, Seconds: 5, GrayRequests: 366, StableRequests: 386,
		GrayTotal: 0.00219, StableTotal: 0.000907,
		GrayFile: "out/profiles/gray.cpu.pb.gz", StableFile: "out/profiles/stable.cpu.pb.gz",
		Rows: []profdiff.Row{
			{Function: "github.com/poolparity/poolparity/internal/pools.ScrubBytes", Leaf: "runtime.memclrNoHeapPointers", Gray: 0.00158, Delta: 0.00158},
			{Function: "github.com/poolparity/poolparity/internal/termstats.(*counter).add", Stable: 0.00013, Delta: -0.00013},
		},
	}}
	golden(t, "regression", r)
}

// Another service's alert, in a Prometheus that watches several, must not
// decide this one's verdict; an alert without a job concerns every service.
func TestCheckReadsOnlyTheSelectedServicesAlerts(t *testing.T) {
	tests := []struct {
		name     string
		labels   model.LabelSet
		want     parity.Verdict
		inReport bool
	}{
		{"this service's", model.LabelSet{"severity": "critical", "job": "poolparity"}, parity.Fail, true},
		{"another service's", model.LabelSet{"severity": "critical", "job": "imagesvc"}, parity.Pass, false},
		{"one without a job", model.LabelSet{"severity": "critical"}, parity.Fail, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := goodPool()
			p.rules.Groups[1].Rules = v1.Rules{v1.AlertingRule{Name: "PoolParityErrorRegression", Alerts: []*v1.Alert{{
				State: v1.AlertStateFiring, ActiveAt: at.Add(-time.Minute), Value: "1", Labels: tt.labels,
			}}}}
			r := check(t, p)
			if r.Verdict != tt.want || (len(r.Alerts) == 1) != tt.inReport {
				t.Errorf("verdict %s with alerts %+v; want %s, the alert in the report: %v", r.Verdict, r.Alerts, tt.want, tt.inReport)
			}
		})
	}
}

func TestAnInvalidSelectorIsRefused(t *testing.T) {
	_, err := parity.Evaluate(context.Background(), goodPool(), catalog.Default(), parity.Options{At: at, Window: "1m", Selector: `job=poolparity`})
	if err == nil || !strings.Contains(err.Error(), `selector "job=poolparity"`) {
		t.Errorf("error %v, want one naming the selector", err)
	}
}

func TestCheckSkipsTheHitRatioWhenGrayIsUnpooled(t *testing.T) {
	p := goodPool()
	delete(p.values, `count(syncpool_gets_total{job="poolparity",gray_status="true"})`)
	delete(p.values, "sum by (gray_status) (job_gray_status_pool:syncpool_hits:ratio_rate1m")
	r := check(t, p)
	for _, row := range r.Rows {
		if row.SLI == "sync.Pool hit ratio" {
			t.Errorf("an unpooled gray track got a hit-ratio row: %+v", row)
		}
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "sync.Pool hit ratio: not judged, the gray track is unpooled") {
		t.Errorf("notes %q do not say why the row is missing", r.Notes)
	}
}

// TestCheckAServiceWithoutRedis: the Redis SLI is judged where the service exposes go-redis
// pool series. A service without them is left out with a note and can PASS; a rule without a
// value while a track does expose them is NO DATA, as before.
func TestCheckAServiceWithoutRedis(t *testing.T) {
	const presence = `count(redis_pool_hit_total{job="poolparity",gray_status=~"true|false"})`
	tests := []struct {
		name     string
		presence bool
		want     parity.Verdict
		rows     int
	}{
		{"no go-redis series on either track: not judged, PASS", false, parity.Pass, 7},
		{"go-redis series but no rule value: NO DATA", true, parity.NoData, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := goodPool()
			delete(p.values, "job_gray_status:redis_pool_hits:ratio_rate1m")
			if tt.presence {
				p.values[presence] = map[string]float64{"": 4}
			}
			r := check(t, p)
			if r.Verdict != tt.want || len(r.Rows) != tt.rows {
				t.Fatalf("verdict %s with %d rows (%q), want %s with %d", r.Verdict, len(r.Rows), r.Reasons, tt.want, tt.rows)
			}
			if !slices.Contains(p.asked, presence) {
				t.Errorf("the presence of go-redis series was not asked (%q)", p.asked)
			}
			noted := strings.Contains(strings.Join(r.Notes, "; "), "Redis pool hit ratio: not judged, neither track has redis_pool_hit_total series")
			if noted == tt.presence {
				t.Errorf("notes %q: want the not-judged note only without go-redis series", r.Notes)
			}
		})
	}
	t.Run("a service with Redis values is not asked", func(t *testing.T) {
		p := goodPool()
		check(t, p)
		if slices.Contains(p.asked, presence) {
			t.Error("the presence query ran although the Redis rule had values")
		}
	})
}

func TestCheckWithoutDataIsNoData(t *testing.T) {
	p := goodPool()
	p.values = map[string]map[string]float64{}
	r := check(t, p)
	if r.Verdict != parity.NoData {
		t.Errorf("verdict %s, want NO DATA", r.Verdict)
	}
}

// Rules made for other metric names (the project's http_requests_total on an
// otelhttp service) record nothing: the NO DATA names the series missing.
func TestNoDataNamesTheMissingSeries(t *testing.T) {
	tests := []struct {
		name      string
		query     string
		present   bool // the service has http_requests_total
		wantNamed bool
	}{
		{"the rule reads a series the service lacks", `sum without (instance) (rate(http_requests_total{gray_status=~"true|false"}[1m]))`, false, true},
		{"the service has it, it is only quiet", `sum without (instance) (rate(http_requests_total{gray_status=~"true|false"}[1m]))`, true, false},
		{"an unreadable query is no diagnosis", `sum(`, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := goodPool()
			p.values = map[string]map[string]float64{}
			if tt.present {
				p.values["count(http_requests_total"] = map[string]float64{"": 12}
			}
			for i, r := range p.rules.Groups[0].Rules {
				if rr, ok := r.(v1.RecordingRule); ok && rr.Name == "job_gray_status:http_requests:rate1m" {
					rr.Query = tt.query
					p.rules.Groups[0].Rules[i] = rr
				}
			}
			r := check(t, p)
			reasons := strings.Join(r.Reasons, "; ")
			named := strings.Contains(reasons, `no series of http_requests_total{job="poolparity"}, which the rule job_gray_status:http_requests:rate1m reads`)
			if r.Verdict != parity.NoData || named != tt.wantNamed {
				t.Errorf("verdict %s, reasons %q; want NO DATA, the series named: %v", r.Verdict, reasons, tt.wantNamed)
			}
		})
	}
}

func TestCheckWithoutRulesIsAnError(t *testing.T) {
	p := goodPool()
	p.rules = v1.RulesResult{}
	r, err := parity.Evaluate(context.Background(), p, catalog.Default(), parity.Options{At: at, Window: "1m", Alerts: true})
	if err == nil || !strings.Contains(err.Error(), "min_track_rate1m") {
		t.Errorf("error %v, want ErrNoRules naming the missing rule", err)
	}
	if r.Verdict != parity.Error {
		t.Errorf("verdict %s, want ERROR", r.Verdict)
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
			err = render.Text(&buf, r)
		case "json":
			err = render.JSON(&buf, r)
		case "html":
			err = render.HTML(&buf, r)
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
			t.Errorf("%s differs from the golden file; run go test ./internal/parity -update and review the diff.\ngot:\n%s", path, buf.String())
		}
	}
	if html := func() string { var b bytes.Buffer; _ = render.HTML(&b, r); return b.String() }(); strings.Contains(html, "http://") && !strings.Contains(html, `xmlns="http://www.w3.org/2000/svg"`) || strings.Contains(html, "<script") || strings.Contains(html, "<link") {
		t.Error("the HTML page must be self-contained: no script, no link, nothing fetched")
	}
}

// TestANewSLIIsOneCatalogEntry: an SLI added to a catalog (and its recording rule loaded) is
// read, judged and reported by Evaluate with no other change, and a breach of it fails the
// verdict under its display name.
func TestANewSLIIsOneCatalogEntry(t *testing.T) {
	cat := catalog.Default()
	cat.SLIs = append(cat.SLIs, catalog.SLI{
		ID: "throwaway-bytes", Name: "throwaway bytes per request", Unit: catalog.Bytes,
		Comparison: catalog.RatioAtMost, Threshold: 1.5, Rule: "job_gray_status:throwaway_bytes_per_request:ratio_rate", Judged: catalog.Always,
	})
	if err := cat.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		gray       float64
		want       parity.Verdict
		wantReason string
	}{
		{"within its threshold it passes", 1100, parity.Pass, "9 of 9 rows pass"},
		{"over its threshold it fails the verdict", 2000, parity.Fail, "throwaway bytes per request gray/stable 2.00 > 1.50"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := goodPool()
			p.values["job_gray_status:throwaway_bytes_per_request:ratio_rate1m"] = map[string]float64{"false": 1000, "true": tt.gray}
			p.rules.Groups[0].Rules = append(p.rules.Groups[0].Rules, v1.RecordingRule{Name: "job_gray_status:throwaway_bytes_per_request:ratio_rate1m"})
			r, err := parity.Evaluate(context.Background(), p, cat, parity.Options{At: at, Window: "1m", Selector: `job="poolparity"`})
			if err != nil {
				t.Fatal(err)
			}
			last := r.Rows[len(r.Rows)-1]
			if last.ID != "throwaway-bytes" || last.SLI != "throwaway bytes per request" || last.Verdict != tt.want {
				t.Errorf("last row %+v, want throwaway-bytes %s", last, tt.want)
			}
			if r.Verdict != tt.want || !strings.Contains(strings.Join(r.Reasons, "; "), tt.wantReason) {
				t.Errorf("verdict %s %q, want %s with %q", r.Verdict, r.Reasons, tt.want, tt.wantReason)
			}
		})
	}
	t.Run("its rule missing from Prometheus is an error naming it", func(t *testing.T) {
		_, err := parity.Evaluate(context.Background(), goodPool(), cat, parity.Options{At: at, Window: "1m"})
		if err == nil || !strings.Contains(err.Error(), "job_gray_status:throwaway_bytes_per_request:ratio_rate1m") {
			t.Errorf("error %v, want ErrNoRules naming the new rule", err)
		}
	})
}

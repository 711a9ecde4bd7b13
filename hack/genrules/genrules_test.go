package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

func root(t *testing.T) string {
	t.Helper()
	dir, err := repoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func render(t *testing.T, opts Options) RuleFile {
	t.Helper()
	out, err := Render(root(t), opts)
	if err != nil {
		t.Fatalf("Render(%+v): %v", opts, err)
	}
	var f RuleFile
	if err := yaml.UnmarshalStrict(out, &f); err != nil {
		t.Fatalf("parsing the rendered rules: %v", err)
	}
	return f
}

func index(f RuleFile) (records map[string]Rule, alerts map[string]Rule) {
	records, alerts = map[string]Rule{}, map[string]Rule{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				records[r.Record] = r
			} else {
				alerts[alertKey(r)] = r
			}
		}
	}
	return records, alerts
}

// alertKey names an alert rule: its alert name, and its quantile label
// when it has one (PoolParityLatencyRegression has a rule per quantile).
func alertKey(r Rule) string {
	if q := r.Labels["quantile"]; q != "" {
		return fmt.Sprintf("%s{quantile=%q}", r.Alert, q)
	}
	return r.Alert
}

// TestCommittedRulesMatchTemplate fails when a committed rules file drifts from the template.
func TestCommittedRulesMatchTemplate(t *testing.T) {
	dir := root(t)
	for _, tg := range targets {
		t.Run(tg.out, func(t *testing.T) {
			want, err := Render(dir, tg.opts)
			if err != nil {
				t.Fatal(err)
			}
			have, err := os.ReadFile(filepath.Join(dir, tg.out))
			if err != nil {
				t.Fatalf("%v: run `%s` to create it", err, fixCommand)
			}
			if !bytes.Equal(have, want) {
				t.Errorf("%s differs from %s rendered with the chart's values: run `%s` and commit the result", tg.out, templatePath, fixCommand)
			}
		})
	}
}

// TestCheckFlag runs the command the Makefile can use.
func TestCheckFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"-check"}, &out, &errOut); err != nil {
		t.Fatalf("genrules -check: %v (%s)", err, errOut.String())
	}
}

// TestDesignNames checks the recording rule names promised in docs/contracts.md section 4, for both families.
func TestDesignNames(t *testing.T) {
	names := []string{
		"job_gray_status:http_requests:rate%s",
		"job_gray_status:http_request_errors:ratio_rate%s",
		"job_gray_status:http_request_duration_seconds:p95_rate%s",
		"job_gray_status:http_request_duration_seconds:p99_rate%s",
		"job_gray_status:process_cpu_seconds_per_request:ratio_rate%s",
		"job_gray_status:go_gc_heap_allocs_bytes_per_request:ratio_rate%s",
		"job_gray_status:go_gc_cpu:ratio_rate%s",
		"job_gray_status_pool:syncpool_hits:ratio_rate%s",
		"job_gray_status:redis_pool_hits:ratio_rate%s",
		"job:http_request_duration_seconds_p99:gray_over_stable_rate%s",
		"job:http_request_duration_seconds_p95:gray_over_stable_rate%s",
		"job:process_cpu_seconds_per_request:gray_over_stable_rate%s",
		"job:go_gc_heap_allocs_bytes_per_request:gray_over_stable_rate%s",
		"job:http_request_errors:gray_minus_stable_rate%s",
	}
	records, _ := index(render(t, Options{}))
	for _, w := range []string{"5m", "1m"} {
		for _, n := range names {
			name := strings.Replace(n, "%s", w, 1)
			t.Run(name, func(t *testing.T) {
				if _, ok := records[name]; !ok {
					t.Errorf("recording rule %s is missing", name)
				}
			})
		}
	}
}

// TestEveryRuleParses parses every expression with the Prometheus parser and every annotation
// as a Go template, for the default and the demo renderings.
func TestEveryRuleParses(t *testing.T) {
	for _, tg := range targets {
		f := render(t, tg.opts)
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				name := r.Record + r.Alert
				t.Run(tg.out+"/"+g.Name+"/"+name, func(t *testing.T) {
					if _, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr); err != nil {
						t.Errorf("expr: %v\n%s", err, r.Expr)
					}
					if r.Alert == "" {
						return
					}
					for _, k := range []string{"summary", "description", "runbook_url"} {
						if r.Annotations[k] == "" {
							t.Errorf("annotation %s is missing", k)
						}
					}
					if r.Labels["severity"] == "" || r.For == "" {
						t.Errorf("severity %q, for %q: both are required", r.Labels["severity"], r.For)
					}
					funcs := template.FuncMap{}
					for _, fn := range []string{"query", "first", "value", "humanize", "humanize1024", "humanizeDuration", "humanizePercentage"} {
						funcs[fn] = func(...any) any { return nil }
					}
					for k, a := range r.Annotations {
						if _, err := template.New(k).Funcs(funcs).Parse("{{ $labels := .Labels }}{{ $value := .Value }}" + a); err != nil {
							t.Errorf("annotation %s: %v", k, err)
						}
					}
				})
			}
		}
	}
}

// TestOverrides checks the knobs the demo and users turn.
func TestOverrides(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		check func(t *testing.T, records, alerts map[string]Rule)
	}{
		{
			name: "the default alerts read the 5m family with the chart's durations",
			check: func(t *testing.T, _, alerts map[string]Rule) {
				for _, tt := range []struct{ key, family, for_ string }{
					{`PoolParityLatencyRegression{quantile="0.99"}`, "p99", "10m"},
					{`PoolParityLatencyRegression{quantile="0.95"}`, "p95", "5m"},
				} {
					a := alerts[tt.key]
					if !strings.Contains(a.Expr, "job:http_request_duration_seconds_"+tt.family+":gray_over_stable_rate5m > 1.1") ||
						!strings.Contains(a.Expr, "job:http_request_duration_seconds_"+tt.family+":gray_minus_stable_rate5m > 0.005") ||
						a.For != tt.for_ || a.Labels["severity"] != "critical" {
						t.Errorf("%s: got expr %q for %q labels %v", tt.key, a.Expr, a.For, a.Labels)
					}
				}
			},
		},
		{
			name: "-window 1m -for 30s moves every alert to the 1m family and 30s",
			opts: Options{Window: "1m", For: "30s"},
			check: func(t *testing.T, _, alerts map[string]Rule) {
				if len(alerts) != 13 {
					t.Errorf("got %d alert rules, want 13", len(alerts))
				}
				for name, a := range alerts {
					// Families end in their window: ..._rate1m, ..._avg_over_time1m, ...:increase1m.
					if a.For != "30s" || strings.Contains(a.Expr, "5m") || !strings.Contains(a.Expr, "1m") {
						t.Errorf("%s: for %q expr %q", name, a.For, a.Expr)
					}
				}
			},
		},
		{
			name: "-window 2m adds a 2m family",
			opts: Options{Window: "2m"},
			check: func(t *testing.T, records, _ map[string]Rule) {
				if _, ok := records["job:http_request_errors:gray_minus_stable_rate2m"]; !ok {
					t.Error("no 2m family")
				}
			},
		},
		{
			name: "-set changes the traffic guard and disables an alert",
			opts: Options{Sets: []string{"rules.minRequestRate=0.25", "rules.alerts.noData.enabled=false", "rules.alertLabels={team: shop}"}},
			check: func(t *testing.T, records, alerts map[string]Rule) {
				if !strings.Contains(records["job:http_requests:min_track_rate5m"].Expr, "> 0.25") {
					t.Errorf("guard: %s", records["job:http_requests:min_track_rate5m"].Expr)
				}
				if _, ok := alerts["PoolParityNoData"]; ok {
					t.Error("PoolParityNoData still rendered")
				}
				if alerts["PoolParityErrorRegression"].Labels["team"] != "shop" {
					t.Errorf("labels %v", alerts["PoolParityErrorRegression"].Labels)
				}
			},
		},
		{
			name: "the response size reads the project's histogram by default, with the catalog's floor",
			check: func(t *testing.T, records, alerts map[string]Rule) {
				r := records["job_gray_status:http_response_size_bytes_per_request:ratio_rate5m"].Expr
				if !strings.Contains(r, "rate(http_response_size_bytes_sum{") || !strings.Contains(r, "rate(http_response_size_bytes_count{") {
					t.Errorf("per-track rule %q", r)
				}
				a := alerts["PoolParityResponseSizeRegression"].Expr
				for _, want := range []string{
					"job:http_response_size_bytes_per_request:gray_over_stable_rate5m > 1.25",
					"job:http_response_size_bytes_per_request:gray_minus_stable_rate5m > 64",
					`job:http_response_size_bytes_per_request:gray_minus_stable_rate5m > ignoring (gray_status) 0.1 * job_gray_status:http_response_size_bytes_per_request:ratio_rate5m{gray_status="false"}`,
				} {
					if !strings.Contains(a, want) {
						t.Errorf("alert expr %q lacks %q", a, want)
					}
				}
			},
		},
		{
			name: "semconv reads otelhttp's response body size, its attributes summed away",
			opts: Options{Sets: semconvSets},
			check: func(t *testing.T, records, _ map[string]Rule) {
				r := records["job_gray_status:http_response_size_bytes_per_request:ratio_rate5m"].Expr
				if !strings.Contains(r, "rate(http_server_response_body_size_bytes_sum{") || !strings.Contains(r, "http_route, http_response_status_code") {
					t.Errorf("per-track rule %q", r)
				}
				if c := records["job_gray_status_pod:http_response_size_bytes_count:total"].Expr; !strings.Contains(c, "http_server_response_body_size_bytes_count{") {
					t.Errorf("count rule %q", c)
				}
			},
		},
		{
			name: "custom reads rules.http.responseSizeHistogram",
			opts: Options{Sets: []string{"rules.http.metrics=custom", "rules.http.requestsTotal=app_requests_total", "rules.http.durationHistogram=app_latency_seconds",
				"rules.http.codeLabel=status", "rules.http.requestLabels=[path, status]", "rules.http.responseSizeHistogram=app_response_bytes"}},
			check: func(t *testing.T, records, alerts map[string]Rule) {
				r := records["job_gray_status:http_response_size_bytes_per_request:ratio_rate5m"].Expr
				if !strings.Contains(r, "rate(app_response_bytes_sum{") || !strings.Contains(r, "path, status") {
					t.Errorf("per-track rule %q", r)
				}
				if _, ok := alerts["PoolParityResponseSizeRegression"]; !ok {
					t.Error("no PoolParityResponseSizeRegression")
				}
			},
		},
		{
			name: "custom without a response-size histogram records no response SLI and no alert",
			opts: Options{Sets: []string{"rules.http.metrics=custom", "rules.http.requestsTotal=app_requests_total", "rules.http.durationHistogram=app_latency_seconds",
				"rules.http.codeLabel=status", "rules.http.requestLabels=[path, status]"}},
			check: func(t *testing.T, records, alerts map[string]Rule) {
				for name := range records {
					if strings.Contains(name, "response_size") {
						t.Errorf("%s recorded", name)
					}
				}
				if _, ok := alerts["PoolParityResponseSizeRegression"]; ok {
					t.Error("PoolParityResponseSizeRegression rendered without its series")
				}
				if _, ok := records["job:http_request_duration_seconds_p99:gray_minus_stable_rate5m"]; !ok {
					t.Error("the latency floor rule is gone too")
				}
			},
		},
		{
			name: "the latency alert can compare one quantile only",
			opts: Options{Sets: []string{"rules.alerts.latencyRegression.quantiles=[{quantile: p95, for: 3m}]"}},
			check: func(t *testing.T, _, alerts map[string]Rule) {
				a, ok := alerts[`PoolParityLatencyRegression{quantile="0.95"}`]
				if !ok || !strings.Contains(a.Expr, "job:http_request_duration_seconds_p95:gray_over_stable_rate5m") || a.For != "3m" {
					t.Errorf("p95 rule %v: %q for %q", ok, a.Expr, a.For)
				}
				if _, ok := alerts[`PoolParityLatencyRegression{quantile="0.99"}`]; ok {
					t.Error("the p99 rule is still rendered")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			records, alerts := index(render(t, tt.opts))
			tt.check(t, records, alerts)
		})
	}
}

// TestBadOverrides checks that mistakes fail loudly instead of rendering broken rules.
func TestBadOverrides(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"an alerting window outside rules.windows", Options{Sets: []string{"rules.alerting.window=3m"}}, "must be one of rules.windows"},
		{"an unknown key", Options{Sets: []string{"rules.minRequestRates=2"}}, "unknown key"},
		{"a set without a value", Options{Sets: []string{"rules.minRequestRate"}}, "want key=value"},
		{"an unknown latency quantile", Options{Sets: []string{"rules.alerts.latencyRegression.quantiles=[{quantile: p90, for: 5m}]"}}, "must be p95 or p99"},
		{"no latency quantile", Options{Sets: []string{"rules.alerts.latencyRegression.quantiles=[]"}}, "must list at least one"},
		{"a missing values file", Options{ValuesFiles: []string{"does-not-exist.yaml"}}, "reading values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Render(root(t), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestValuesFile merges a values file over the chart's like helm -f.
func TestValuesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, []byte("rules:\n  alerts:\n    errorRegression:\n      threshold: 0.02\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, alerts := index(render(t, Options{ValuesFiles: []string{path}}))
	if got := alerts["PoolParityErrorRegression"]; !strings.Contains(got.Expr, "> 0.02") || got.For != "5m" {
		t.Errorf("got expr %q for %q: want the threshold merged and the other values kept", got.Expr, got.For)
	}
}

package dashboards_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/dashboards"
)

// builtin are series Prometheus itself writes.
var builtin = map[string]bool{"ALERTS": true, "ALERTS_FOR_STATE": true, "up": true}

// wantUIDs pins each dashboard's uid: links and bookmarks depend on them.
var wantUIDs = map[string]string{
	"poolparity-parity.json":  "poolparity-parity",
	"poolparity-pools.json":   "poolparity-pools",
	"poolparity-runtime.json": "poolparity-runtime",
}

// ruleWindows are the rule families a dashboard's $window variable can select.
var ruleWindows = []string{"5m", "1m"}

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Record      string            `json:"record"`
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// catalog is what a query may reference: the service's series and the recorded series.
type catalog struct {
	service  map[string]bool
	recorded map[string]bool
	rules    map[string]ruleFile // by path
}

func loadCatalog(t *testing.T) catalog {
	t.Helper()
	series, err := dashboards.ServiceSeries()
	if err != nil {
		t.Fatalf("loading the service series: %v", err)
	}
	c := catalog{service: map[string]bool{}, recorded: map[string]bool{}, rules: map[string]ruleFile{}}
	for _, s := range series {
		for _, n := range s.Names() {
			c.service[n] = true
		}
	}
	paths, err := filepath.Glob("../deploy/prometheus/*.rules.yml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no generated rules files under deploy/prometheus (err %v): run `go run ./hack/genrules`", err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var f ruleFile
		if err := yaml.Unmarshal(data, &f); err != nil {
			t.Fatalf("parsing %s: %v", p, err)
		}
		c.rules[p] = f
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Record != "" {
					c.recorded[r.Record] = true
				}
			}
		}
	}
	return c
}

func (c catalog) known(name string) bool {
	return c.service[name] || c.recorded[name] || builtin[name]
}

// selectedNames parses expr and returns the metric names its selectors reference.
func selectedNames(expr string) ([]string, error) {
	node, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	var bad error
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.Name != "" {
			names = append(names, vs.Name)
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				names = append(names, m.Value)
				return nil
			}
		}
		bad = fmt.Errorf("selector %s names no metric: the cross-check cannot verify it", vs)
		return nil
	})
	return names, bad
}

// TestServiceSeriesList checks the contract file itself.
func TestServiceSeriesList(t *testing.T) {
	series, err := dashboards.ServiceSeries()
	if err != nil {
		t.Fatal(err)
	}
	otel, err := dashboards.OTelServiceSeries()
	if err != nil {
		t.Fatal(err)
	}
	series = append(series, otel...)
	valid := regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	for _, s := range series {
		t.Run(s.Name, func(t *testing.T) {
			if !valid.MatchString(s.Name) {
				t.Errorf("%q is not a valid metric name (no colons: those are for recording rules)", s.Name)
			}
			if s.Type == "counter" && !strings.HasSuffix(s.Name, "_total") {
				t.Errorf("counter %s does not end in _total", s.Name)
			}
		})
	}
	tests := []struct {
		name    string
		text    string
		wantErr string
	}{
		{"a line without a type", "http_requests_total\n", "want"},
		{"an unknown type", "x_total countr\n", "unknown type"},
		{"a duplicate", "a gauge\na gauge\n", "twice"},
		{"comments and blanks only", "# nothing\n\n", ""},
	}
	for _, tt := range tests {
		t.Run("ParseSeries/"+tt.name, func(t *testing.T) {
			_, err := dashboards.ParseSeries(tt.text)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestRulesReferenceKnownSeries parses every rule expression, and every series an alert annotation
// queries, and checks each referenced series is exposed by the service or recorded by a rule.
func TestRulesReferenceKnownSeries(t *testing.T) {
	c := loadCatalog(t)
	otel, err := dashboards.OTelServiceSeries()
	if err != nil {
		t.Fatal(err)
	}
	otelNames := map[string]bool{}
	for _, s := range otel {
		for _, n := range s.Names() {
			otelNames[n] = true
		}
	}
	annotationQuery := regexp.MustCompile(`printf "([a-zA-Z_:][a-zA-Z0-9_:]*)\{`)
	for path, f := range c.rules {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				t.Run(filepath.Base(path)+"/"+g.Name+"/"+r.Record+r.Alert, func(t *testing.T) {
					names, err := selectedNames(r.Expr)
					if err != nil {
						t.Fatalf("%v\n%s", err, r.Expr)
					}
					for _, a := range r.Annotations {
						for _, m := range annotationQuery.FindAllStringSubmatch(a, -1) {
							names = append(names, m[1])
						}
					}
					// The semconv rules are an OpenTelemetry-instrumented service's: its request
					// and runtime series are listed apart.
					semconv := strings.Contains(filepath.Base(path), "semconv")
					for _, n := range names {
						if !c.service[n] && !c.recorded[n] && !(semconv && otelNames[n]) {
							t.Errorf("%s is neither in dashboards/testdata/service-series.txt (nor, for the semconv rules, otel-service-series.txt) nor recorded by a rule", n)
						}
					}
				})
			}
		}
	}
}

// grafanaVars are the values substituted for Grafana's variables before parsing; $window is set per family.
var grafanaVars = map[string]string{
	"namespace":       "shop",
	"job":             "poolparity",
	"__rate_interval": "1m",
	"__interval":      "30s",
	"__range":         "1h",
}

var varRef = regexp.MustCompile(`\$\{(\w+)(?::[a-z]+)?\}|\$(\w+)`)

// substitute replaces Grafana variables in expr; an unknown variable is an error.
func substitute(expr, window string) (string, error) {
	var err error
	out := varRef.ReplaceAllStringFunc(expr, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		name := m[1] + m[2]
		if name == "window" {
			return window
		}
		v, ok := grafanaVars[name]
		if !ok {
			err = fmt.Errorf("unknown Grafana variable $%s", name)
		}
		return v
	})
	return out, err
}

var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*\w+\s*\)\s*$`)

// queries returns every PromQL expression in a dashboard: panel targets (also inside rows) and
// query variables (label_values(selector, label) yields the selector).
func queries(v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok && k == "expr" {
				out = append(out, s)
				continue
			}
			if k == "query" && x["type"] == "query" {
				q := val
				if m, ok := val.(map[string]any); ok {
					q = m["query"]
				}
				if s, ok := q.(string); ok {
					if m := labelValues.FindStringSubmatch(s); m != nil {
						s = m[1]
					}
					out = append(out, s)
				}
				continue
			}
			out = append(out, queries(val)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, queries(e)...)
		}
	}
	return out
}

type dashboard struct {
	file string
	raw  map[string]any
}

func loadDashboards(t *testing.T) []dashboard {
	t.Helper()
	paths, err := filepath.Glob("*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no dashboards (err %v)", err)
	}
	var out []dashboard
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var raw map[string]any
		if err := json.Unmarshal(data, &raw); err != nil {
			t.Fatalf("%s is not valid JSON: %v", p, err)
		}
		out = append(out, dashboard{file: p, raw: raw})
	}
	return out
}

// TestDashboardsReferenceKnownSeries parses every PromQL expression in the dashboards, for each rule
// family $window can select, and checks each series is exposed by the service or recorded by a rule.
func TestDashboardsReferenceKnownSeries(t *testing.T) {
	c := loadCatalog(t)
	for _, d := range loadDashboards(t) {
		qs := queries(d.raw)
		if len(qs) == 0 {
			t.Errorf("%s has no queries", d.file)
		}
		for i, q := range qs {
			for _, w := range ruleWindows {
				t.Run(fmt.Sprintf("%s/query%02d/%s", d.file, i, w), func(t *testing.T) {
					expr, err := substitute(q, w)
					if err != nil {
						t.Fatalf("%v in %s", err, q)
					}
					names, err := selectedNames(expr)
					if err != nil {
						t.Fatalf("%v\n%s", err, expr)
					}
					for _, n := range names {
						if !c.known(n) {
							t.Errorf("%s is neither in dashboards/testdata/service-series.txt nor recorded by a rule (query %s)", n, q)
						}
					}
				})
			}
		}
	}
}

// TestEveryServiceSeriesIsUsed keeps the contract list to what the rules and dashboards need.
func TestEveryServiceSeriesIsUsed(t *testing.T) {
	c := loadCatalog(t)
	used := map[string]bool{}
	for _, f := range c.rules {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				names, _ := selectedNames(r.Expr)
				for _, n := range names {
					used[n] = true
				}
			}
		}
	}
	for _, d := range loadDashboards(t) {
		for _, q := range queries(d.raw) {
			expr, _ := substitute(q, "5m")
			names, _ := selectedNames(expr)
			for _, n := range names {
				used[n] = true
			}
		}
	}
	series, err := dashboards.ServiceSeries()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range series {
		t.Run(s.Name, func(t *testing.T) {
			for _, n := range s.Names() {
				if used[n] {
					return
				}
			}
			t.Errorf("%s is listed but no rule or dashboard queries it: drop it or use it", s.Name)
		})
	}
}

// TestDashboardStructure checks what provisioning and users rely on: stable uids, the variables,
// the datasource variable on every panel and query, unique panel ids and sane grid positions.
func TestDashboardStructure(t *testing.T) {
	uids := map[string]string{}
	for _, d := range loadDashboards(t) {
		t.Run(d.file, func(t *testing.T) {
			uid, _ := d.raw["uid"].(string)
			if want, ok := wantUIDs[d.file]; !ok || uid != want {
				t.Errorf("uid %q, want %q (add new dashboards to wantUIDs; never change a uid)", uid, want)
			}
			if other, dup := uids[uid]; dup {
				t.Errorf("uid %q is also used by %s", uid, other)
			}
			uids[uid] = d.file
			if title, _ := d.raw["title"].(string); !strings.HasPrefix(title, "poolparity / ") {
				t.Errorf("title %q should start with \"poolparity / \"", title)
			}

			vars := map[string]map[string]any{}
			templ, _ := d.raw["templating"].(map[string]any)
			list, _ := templ["list"].([]any)
			for _, v := range list {
				m, _ := v.(map[string]any)
				name, _ := m["name"].(string)
				vars[name] = m
			}
			for _, want := range []string{"datasource", "namespace", "job", "window"} {
				if vars[want] == nil {
					t.Errorf("variable $%s is missing", want)
				}
			}
			if ds := vars["datasource"]; ds != nil && (ds["type"] != "datasource" || ds["query"] != "prometheus") {
				t.Errorf("$datasource must be a prometheus datasource variable, got %v", ds)
			}

			ids := map[float64]bool{}
			var walk func(panels []any)
			walk = func(panels []any) {
				for _, p := range panels {
					panel, _ := p.(map[string]any)
					title, _ := panel["title"].(string)
					id, _ := panel["id"].(float64)
					if ids[id] {
						t.Errorf("panel id %v is used twice (panel %q)", id, title)
					}
					ids[id] = true
					if grid, ok := panel["gridPos"].(map[string]any); ok {
						x, _ := grid["x"].(float64)
						w, _ := grid["w"].(float64)
						if x+w > 24 {
							t.Errorf("panel %q overflows the 24-column grid", title)
						}
					}
					if panel["type"] == "row" {
						sub, _ := panel["panels"].([]any)
						walk(sub)
						continue
					}
					checkDatasource(t, title, panel["datasource"])
					targets, _ := panel["targets"].([]any)
					if len(targets) == 0 {
						t.Errorf("panel %q has no targets", title)
					}
					for _, tg := range targets {
						m, _ := tg.(map[string]any)
						checkDatasource(t, title, m["datasource"])
					}
				}
			}
			panels, _ := d.raw["panels"].([]any)
			walk(panels)
		})
	}
	var missing []string
	for file := range wantUIDs {
		if _, ok := uids[wantUIDs[file]]; !ok {
			missing = append(missing, file)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("dashboards missing: %v", missing)
	}
}

func checkDatasource(t *testing.T, panel string, ds any) {
	t.Helper()
	m, _ := ds.(map[string]any)
	if m["uid"] != "${datasource}" || m["type"] != "prometheus" {
		t.Errorf("panel %q: datasource %v, want {type: prometheus, uid: ${datasource}}", panel, ds)
	}
}

// TestSubstitute pins the variable handling the cross-check depends on.
func TestSubstitute(t *testing.T) {
	tests := []struct {
		name, in, window, want, wantErr string
	}{
		{"plain and braced variables", `rate(x{job=~"$job",namespace=~"${namespace}"}[$__rate_interval])`, "5m", `rate(x{job=~"poolparity",namespace=~"shop"}[1m])`, ""},
		{"the window picks a rule family", `job:a:b_rate$window`, "1m", `job:a:b_rate1m`, ""},
		{"a format suffix is dropped", `x{job=~"${job:regex}"}`, "5m", `x{job=~"poolparity"}`, ""},
		{"an unknown variable fails", `x{env="$env"}`, "5m", "", "unknown Grafana variable $env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := substitute(tt.in, tt.window)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("got error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

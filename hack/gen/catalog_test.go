package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/deploy/render"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/testtool"
)

// TestCommittedFilesAreTheCatalogs fails when a file written from the catalog (the chart's
// values and parity checks, the dashboards, docs/contracts.md) differs from what hack/gen makes
// of catalog.Default.
func TestCommittedFilesAreTheCatalogs(t *testing.T) {
	files, err := catalogFiles(repo, catalog.Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(f.Path, func(t *testing.T) {
			have, err := os.ReadFile(filepath.Join(repo, f.Path))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(have, f.Data) {
				t.Errorf("%s differs from internal/catalog: run make generate and commit", f.Path)
			}
		})
	}
}

// throwaway is an SLI that exists only in these tests: a parity rule and an alert of its own.
var throwaway = catalog.SLI{
	ID: "throwaway-ratio", Name: "throwaway ratio", Unit: catalog.Ratio, Comparison: catalog.RatioAtMost, Threshold: 1.25,
	Rule:       "job_gray_status:throwaway:ratio_rate",
	ParityRule: "job:throwaway:gray_over_stable_rate",
	Alert:      &catalog.Alert{Name: "PoolParityThrowawayRegression", ValuesKey: "throwawayRegression"},
	Judged:     catalog.Always,
	Doc:        "a test's SLI",
}

// withThrowaway returns the default catalog plus the throwaway SLI.
func withThrowaway() catalog.Catalog {
	c := catalog.Default()
	c.SLIs = append(c.SLIs, throwaway)
	return c
}

// catalogFile returns the file at path among catalogFiles(repo, c).
func catalogFile(t *testing.T, c catalog.Catalog, path string) []byte {
	t.Helper()
	files, err := catalogFiles(repo, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Path == path {
			return f.Data
		}
	}
	t.Fatalf("catalogFiles wrote no %s", path)
	return nil
}

// changedLines returns the lines of b that a lacks (a multiset difference) and how many of a's
// lines b lacks.
func changedLines(a, b []byte) (added []string, removed int) {
	count := map[string]int{}
	for _, l := range strings.Split(string(a), "\n") {
		count[l]++
	}
	for _, l := range strings.Split(string(b), "\n") {
		if count[l] > 0 {
			count[l]--
			continue
		}
		added = append(added, l)
	}
	for _, n := range count {
		removed += n
	}
	return added, removed
}

// TestAddingAnSLIIsOneCatalogEntry adds one SLI to the catalog and checks that every generated
// file picks it up, with nothing else to edit by hand.
func TestAddingAnSLIIsOneCatalogEntry(t *testing.T) {
	c := withThrowaway()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}

	t.Run("values.yaml gains the alert's threshold and keeps every other line", func(t *testing.T) {
		orig, err := os.ReadFile(filepath.Join(repo, valuesPath))
		if err != nil {
			t.Fatal(err)
		}
		got := catalogFile(t, c, valuesPath)
		var v struct {
			Rules struct {
				Alerts map[string]map[string]any `json:"alerts"`
			} `json:"rules"`
		}
		if err := yaml.Unmarshal(got, &v); err != nil {
			t.Fatalf("the edited values do not parse: %v", err)
		}
		if th := v.Rules.Alerts["throwawayRegression"]["threshold"]; th != 1.25 {
			t.Errorf("rules.alerts.throwawayRegression.threshold = %v, want 1.25", th)
		}
		if _, removed := changedLines(orig, got); removed != 0 {
			t.Errorf("adding an alert changed %d existing lines of values.yaml", removed)
		}
	})

	t.Run("the Argo Rollouts and Flagger checks gain it", func(t *testing.T) {
		var checks []parityCheck
		if err := yaml.UnmarshalStrict(catalogFile(t, c, parityChecksPath), &checks); err != nil {
			t.Fatal(err)
		}
		want := parityCheck{Name: "throwaway-ratio", ValuesKey: "throwawayRegression", ParityRule: throwaway.ParityRule}
		if len(checks) == 0 || checks[len(checks)-1] != want {
			t.Errorf("checks = %+v, want the last to be %+v", checks, want)
		}
	})

	t.Run("the docs table gains its row", func(t *testing.T) {
		doc := string(catalogFile(t, c, contractsPath))
		row := "| `throwaway-ratio` | throwaway ratio | ratio | `ratio<=` | 1.25 | - | `PoolParityThrowawayRegression` (`throwawayRegression`) |"
		if !strings.Contains(doc, row) {
			t.Errorf("docs/contracts.md has no row starting %q", row)
		}
	})

	t.Run("a dashboard panel reading its parity rule draws its threshold", func(t *testing.T) {
		src := []byte(`{
  "panels": [
    {"title": "throwaway", "description": "Alert above 2.00 (rules.alerts.throwawayRegression.threshold).",
     "targets": [{"expr": "job:throwaway:gray_over_stable_rate$window{job=~\"$job\"}"}],
     "fieldConfig": {"defaults": {"thresholds": {"mode": "absolute", "steps": [{"color": "green", "value": null}, {"color": "red", "value": 2}]}}}},
    {"title": "other", "description": "Alert above 2.00.",
     "targets": [{"expr": "job:throwaway_other:gray_over_stable_rate$window"}],
     "fieldConfig": {"defaults": {"thresholds": {"mode": "absolute", "steps": [{"color": "red", "value": 2}]}}}}
  ]
}`)
		got, err := editDashboard(src, c)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(strings.Replace(string(src), `"value": 2}]}}}},`, `"value": 1.25}]}}}},`, 1),
			"Alert above 2.00 (rules", "Alert above 1.25 (rules", 1)
		if string(got) != want {
			t.Errorf("edited dashboard:\n%s\nwant:\n%s", got, want)
		}
	})

	t.Run("the chart renders its Argo Rollouts and Flagger checks", func(t *testing.T) {
		helm := filepath.Join(repo, "bin", "helm")
		if _, err := os.Stat(helm); err != nil {
			testtool.SkipOrFail(t, "bin/helm not found (run make tools): %v", err)
		}
		root := t.TempDir()
		chart := filepath.Join(root, render.ChartPath)
		if err := os.CopyFS(chart, os.DirFS(filepath.Join(repo, render.ChartPath))); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{valuesPath, parityChecksPath} {
			if err := os.WriteFile(filepath.Join(root, p), catalogFile(t, c, p), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out, err := render.Run(context.Background(), "", helm, "template", "p", chart,
			"--set", "controller.argoRollouts.enabled=true,controller.flagger.enabled=true",
			"--show-only", "templates/controller-integrations.yaml")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"- name: throwaway-ratio\n",
			`successCondition: "len(result) > 0 && result[0] <= 1.25"`,
			`query: "job:throwaway:gray_over_stable_rate5m{namespace=\"{{args.namespace}}\",job=\"{{args.job}}\"}"`,
			`query: "job:throwaway:gray_over_stable_rate5m{namespace=\"{{ namespace }}\"}"`,
			"name: p-poolparity-throwaway-ratio\n",
		} {
			if !bytes.Contains(out, []byte(want)) {
				t.Errorf("the rendering lacks %q:\n%s", want, out)
			}
		}
	})
}

// TestAThresholdChangeRewritesOnlyItsScalars changes one threshold of the default catalog and
// checks that the committed values and dashboards change in those places only.
func TestAThresholdChangeRewritesOnlyItsScalars(t *testing.T) {
	c, err := catalog.Default().WithThreshold(catalog.CPUPerRequest, 1.3)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want []string // the changed lines, trimmed
	}{
		{valuesPath, []string{"threshold: 1.30"}},
		{render.DashboardsPath + "/poolparity-parity.json", []string{
			`"description": "Alert above 1.30 (rules.alerts.cpuPerRequestRegression.threshold).",`,
			`"value": 1.3`,
			`"value": 1.3`,
		}},
		{parityChecksPath, nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			orig, err := os.ReadFile(filepath.Join(repo, tt.path))
			if err != nil {
				t.Fatal(err)
			}
			added, removed := changedLines(orig, catalogFile(t, c, tt.path))
			for i := range added {
				added[i] = strings.TrimSpace(added[i])
			}
			if strings.Join(added, "\n") != strings.Join(tt.want, "\n") || removed != len(tt.want) {
				t.Errorf("changed lines %q (%d removed), want %q", added, removed, tt.want)
			}
		})
	}
}

func TestEditValuesNamesWhatIsMissing(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"no rules", "x: 1\n", "no rules: mapping"},
		{"no minRequestRate", "rules:\n  alerts:\n    a: {}\n", "no rules.minRequestRate"},
		{"a mapping in flow style", "rules:\n  minRequestRate: 1\n  alerts:\n    latencyRegression: {threshold: 1.1}\n", "cannot find threshold's value"},
		{"an alert without its threshold", "rules:\n  minRequestRate: 1\n  alerts:\n    latencyRegression:\n      enabled: true\n", "no rules.alerts.latencyRegression.threshold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := editValues([]byte(tt.src), catalog.Default())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("editValues: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestJSONLeavesLocateEachLiteral(t *testing.T) {
	src := `{"a": [1, {"b": "x\"y"}], "c" :  null, "d": {"e": [true, 2.50]}}`
	leaves, err := jsonLeaves([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ path, raw string }{
		{"a/0", "1"}, {"a/1/b", `"x\"y"`}, {"c", "null"}, {"d/e/0", "true"}, {"d/e/1", "2.50"},
	}
	if len(leaves) != len(want) {
		t.Fatalf("got %d leaves, want %d", len(leaves), len(want))
	}
	for i, w := range want {
		t.Run(w.path, func(t *testing.T) {
			l := leaves[i]
			if got := strings.Join(l.path, "/"); got != w.path {
				t.Errorf("path %s, want %s", got, w.path)
			}
			if got := src[l.start:l.end]; got != w.raw {
				t.Errorf("literal %q, want %q", got, w.raw)
			}
		})
	}
}

func TestFormatNumber(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		want string
	}{{1.1, "1.10"}, {0.005, "0.005"}, {1, "1"}, {-0.1, "-0.10"}, {1.15, "1.15"}} {
		t.Run(tt.want, func(t *testing.T) {
			if got := formatNumber(tt.v); got != tt.want {
				t.Errorf("formatNumber(%v) = %s, want %s", tt.v, got, tt.want)
			}
		})
	}
}

func TestReplaceBlock(t *testing.T) {
	doc := "a\n<!-- BEGIN generated: catalog (hack/gen) -->\nold\n<!-- END generated -->\nb\n"
	got, err := replaceBlock([]byte(doc), "catalog", "new\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\n<!-- BEGIN generated: catalog (hack/gen) -->\nnew\n<!-- END generated -->\nb\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := replaceBlock([]byte("a\n"), "catalog", ""); err == nil {
		t.Error("a document without the markers passed")
	}
}

// TestTheFlaggerExampleTakesTheCatalogsThresholds edits deploy/flagger/canary.yaml with changed
// catalogs: a metric's thresholdRange.max follows its SLI's threshold and no other line moves; a
// metric that names no parity check, or has no max, is an error.
func TestTheFlaggerExampleTakesTheCatalogsThresholds(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join(repo, flaggerPath))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a changed threshold changes its metric's max and only that line", func(t *testing.T) {
		c := catalog.Default()
		for i := range c.SLIs {
			if c.SLIs[i].ID == catalog.LatencyP99 {
				c.SLIs[i].Threshold = 1.3
			}
		}
		got, err := editFlaggerCanary(orig, c)
		if err != nil {
			t.Fatal(err)
		}
		added, removed := changedLines(orig, got)
		if removed != 1 || len(added) != 1 || strings.TrimSpace(added[0]) != "max: 1.3" {
			t.Errorf("changed lines %q (%d removed), want the one line max: 1.3", added, removed)
		}
		canaryJSON, err := yaml.YAMLToJSON(got[:bytes.Index(got, []byte("\n---\n"))])
		if err != nil {
			t.Fatal(err)
		}
		var canary struct {
			Spec struct {
				Analysis struct {
					Metrics []struct {
						Name           string
						ThresholdRange struct{ Max float64 } `json:"thresholdRange"`
					}
				}
			}
		}
		if err := yaml.Unmarshal(canaryJSON, &canary); err != nil {
			t.Fatal(err)
		}
		for _, m := range canary.Spec.Analysis.Metrics {
			s, _ := c.Get(catalog.ID(m.Name))
			if m.ThresholdRange.Max != s.Threshold {
				t.Errorf("metric %s: max %v, want the catalog's %v", m.Name, m.ThresholdRange.Max, s.Threshold)
			}
		}
	})
	for _, tt := range []struct{ name, from, to, wantErr string }{
		{"a metric that names no catalog SLI is refused", "- name: error-ratio", "- name: request-rate", `named "request-rate", not a catalog SLI`},
		{"a metric without thresholdRange.max is refused", "max: 0.005", "min: 0.005", "has no thresholdRange.max"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := bytes.Replace(orig, []byte(tt.from), []byte(tt.to), 1)
			if bytes.Equal(src, orig) {
				t.Fatalf("the example has no %q to replace", tt.from)
			}
			_, err := editFlaggerCanary(src, catalog.Default())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

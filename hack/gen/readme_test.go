package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/catalog"
)

// TestCommittedReadmeIsGenerated fails when the chart's README.md differs from what hack/gen
// renders of its template, Chart.yaml and the catalog's values.yaml, and checks that every value
// of values.yaml has a row.
func TestCommittedReadmeIsGenerated(t *testing.T) {
	files, err := catalogFiles(repo, catalog.Default())
	if err != nil {
		t.Fatal(err)
	}
	want, err := readmeFrom(repo, files)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(filepath.Join(repo, readmePath))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want.Data) {
		t.Errorf("%s differs from its sources: run make generate and commit", readmePath)
	}
	if stale, err := staleReadme(repo, catalog.Default()); err != nil || stale {
		t.Errorf("staleReadme = %v, %v; want false", stale, err)
	}
	for _, key := range []string{"redis.auth.enabled", "redis.auth.existingSecret", "redis.networkPolicy.extraIngressFrom",
		"controller.watchNamespace", "controller.prometheus.endpoints", "controller.prometheus.maxResponseBytes", "controller.reconcileTimeout"} {
		if !bytes.Contains(have, []byte("| `"+key+"` |")) {
			t.Errorf("the values table has no row for %s", key)
		}
	}
}

// TestValueRows: each documented key is one row (a documented map as a whole, an undocumented
// map walked into), with its type, its default as JSON and the comment from "# --" on; an
// undocumented value is an error naming it.
func TestValueRows(t *testing.T) {
	const values = `# The file's own comment.

# -- A name.
name: ""
# A section, no row of its own.
image:
  # Said of the repository only.
  # -- Repository of the image,
  # on two lines.
  repository: example/app
  # -- Tag; empty means <appVersion>.
  tag: "1.0"
# -- Resources as a whole | with a pipe.
resources:
  limits: {memory: 64Mi}
# -- Hosts, e.g. release=<its release name>; the http_* series, '.*(healthz|readyz).*' and __meta_x.
hosts: [a.example, b.example]
# -- A fraction.
fraction: 0.9
# -- A count.
count: 3
# -- A switch.
on: true
`
	rows, err := valueRows([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	want := []valueRow{
		{"name", "string", `""`, "A name."},
		{"image.repository", "string", `"example/app"`, "Repository of the image, on two lines."},
		{"image.tag", "string", `"1.0"`, "Tag; empty means <appVersion>."},
		{"resources", "object", `{"limits":{"memory":"64Mi"}}`, "Resources as a whole | with a pipe."},
		{"hosts", "list", `["a.example","b.example"]`, "Hosts, e.g. release=<its release name>; the http_* series, '.*(healthz|readyz).*' and __meta_x."},
		{"fraction", "float", "0.9", "A fraction."},
		{"count", "int", "3", "A count."},
		{"on", "bool", "true", "A switch."},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %+v, want %+v", rows, want)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
	}
	table := valuesTable(rows)
	for _, line := range []string{
		"| `image.tag` | string | `\"1.0\"` | Tag; empty means `<appVersion>`. |",
		"| `resources` | object | `{\"limits\":{\"memory\":\"64Mi\"}}` | Resources as a whole \\| with a pipe. |",
		"| `hosts` | list | `[\"a.example\",\"b.example\"]` | Hosts, e.g. release=`<its release name>`; the http_\\* series, '.\\*(healthz\\|readyz).\\*' and \\_\\_meta_x. |",
	} {
		if !strings.Contains(table, line+"\n") {
			t.Errorf("the table lacks the line\n%s\nin\n%s", line, table)
		}
	}

	_, err = valueRows([]byte("# -- Documented.\na: 1\nsection:\n  b: 2\n  # -- Documented.\n  c: 3\nd: []\n"))
	if err == nil || !strings.Contains(err.Error(), "section.b, d") {
		t.Errorf("undocumented values: err = %v, want one naming section.b and d", err)
	}
}

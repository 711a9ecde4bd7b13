package rulesgen_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/deploy"
	"github.com/poolparity/poolparity/internal/rulesgen"
)

// tiny is a template and values small enough to read in a test.
func tiny(tmpl, values string) rulesgen.Source {
	return rulesgen.Source{Template: []byte(tmpl), Values: []byte(values), TemplatePath: "t.tmpl", ValuesPath: "v.yaml", Generator: "test"}
}

const tinyTemplate = `groups:
- name: g
  rules:
  - record: r
    expr: sum(rate(x[{{ .Values.rules.window }}]))
`

func TestRender(t *testing.T) {
	dir := t.TempDir()
	extra := filepath.Join(dir, "extra.yaml")
	if err := os.WriteFile(extra, []byte("rules:\n  window: 2m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, tmpl, values string
		opts               rulesgen.Options
		want, wantErr      string
	}{
		{name: "values", tmpl: tinyTemplate, values: "rules:\n  window: 5m\n", want: "rate(x[5m])"},
		{name: "a set overrides", tmpl: tinyTemplate, values: "rules:\n  window: 5m\n", opts: rulesgen.Options{Sets: []string{"rules.window=1m"}}, want: "rate(x[1m])"},
		{name: "a values file merges", tmpl: tinyTemplate, values: "rules:\n  window: 5m\n", opts: rulesgen.Options{ValuesFiles: []string{extra}}, want: "rate(x[2m])"},
		{name: "the header names the overrides", tmpl: tinyTemplate, values: "rules:\n  window: 5m\n", opts: rulesgen.Options{Sets: []string{"rules.window=1m"}}, want: "# Overrides: -set rules.window=1m"},
		{name: "no rules mapping", tmpl: tinyTemplate, values: "other: 1\n", wantErr: "no rules: mapping"},
		{name: "a missing key is an error, not <no value>", tmpl: tinyTemplate, values: "rules:\n  other: 1\n", wantErr: "rendering the rules template"},
		{name: "an unknown set key", tmpl: tinyTemplate, values: "rules:\n  window: 5m\n", opts: rulesgen.Options{Sets: []string{"rules.nope=1"}}, wantErr: "unknown key rules.nope"},
		{name: "not a rules file", tmpl: "groups: []\n", values: "rules:\n  window: 5m\n", wantErr: "no groups"},
		{name: "a rule with neither record nor alert", tmpl: "groups:\n- name: g\n  rules:\n  - expr: up\n", values: "rules: {}\n", wantErr: "exactly one of record/alert"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rulesgen.Render(tiny(tt.tmpl, tt.values), tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(got), tt.want) {
				t.Errorf("rendered\n%s\nwant it to hold %q", got, tt.want)
			}
		})
	}
}

func TestBindFlags(t *testing.T) {
	var o rulesgen.Options
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"-set", "a=1", "-set", "b=2", "-values", "v.yaml", "-window", "1m", "-for", "30s"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.Sets, []string{"a=1", "b=2"}) || !slices.Equal(o.ValuesFiles, []string{"v.yaml"}) || o.Window != "1m" || o.For != "30s" {
		t.Errorf("parsed %+v", o)
	}
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "rules.yml")
	if err := rulesgen.WriteFile(path, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "x" {
		t.Errorf("read back %q, %v", got, err)
	}
	if err := rulesgen.WriteFile(filepath.Join(path, "under-a-file"), []byte("x")); err == nil {
		t.Error("writing under a regular file succeeded")
	}
}

// Rules for a service instrumented with otelhttp, alerting on the 1m family for a run of minutes,
// rendered from the chart's template and values compiled into the binary.
func ExampleRender() {
	out, err := rulesgen.Render(deploy.RulesSource("example"), rulesgen.Options{
		Sets:   []string{"rules.http.metrics=semconv"},
		Window: "1m", For: "30s",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.Contains(string(out), "http_server_request_duration_seconds_bucket"))
	// Output: true
}

// TestResponseSizeSwitch renders the compiled-in chart rules (what `poolparity-parity rules`
// writes) for each rules.http.metrics mode: the response-size SLI reads the mode's histogram, and
// custom metrics without rules.http.responseSizeHistogram record neither it nor its alert.
func TestResponseSizeSwitch(t *testing.T) {
	custom := []string{"rules.http.metrics=custom", "rules.http.requestsTotal=app_requests_total", "rules.http.durationHistogram=app_seconds",
		"rules.http.codeLabel=status", "rules.http.requestLabels=[path, status]"}
	for _, tt := range []struct {
		name         string
		sets         []string
		want, reject string
	}{
		{"poolparity reads the service's histogram", nil, "rate(http_response_size_bytes_sum{", ""},
		{"semconv reads otelhttp's", []string{"rules.http.metrics=semconv"}, "rate(http_server_response_body_size_bytes_sum{", ""},
		{"custom reads the one named", append(slices.Clone(custom), "rules.http.responseSizeHistogram=app_response_bytes"), "rate(app_response_bytes_sum{", ""},
		{"custom without one records no response SLI", custom, "job_gray_status:http_requests:rate5m", "http_response_size_bytes_per_request"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := rulesgen.Render(deploy.RulesSource("test"), rulesgen.Options{Sets: tt.sets})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("the rules lack %q", tt.want)
			}
			if tt.reject != "" && (strings.Contains(string(out), tt.reject) || strings.Contains(string(out), "PoolParityResponseSizeRegression")) {
				t.Errorf("the rules hold %q or its alert", tt.reject)
			}
		})
	}
}

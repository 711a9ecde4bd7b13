package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/catalog"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string // substring of the error; empty: valid
	}{
		{"an http URL is valid", func(*Config) {}, ""},
		{"an https URL with a path prefix is valid", func(c *Config) { c.PrometheusURL = "https://prom.example/prometheus" }, ""},
		{"a missing URL is refused", func(c *Config) { c.PrometheusURL = "" }, "PROMETHEUS_URL is required"},
		{"a URL without a scheme is refused", func(c *Config) { c.PrometheusURL = "127.0.0.1:9090" }, "PROMETHEUS_URL must be an http or https URL"},
		{"a URL of another scheme is refused", func(c *Config) { c.PrometheusURL = "ftp://prom:9090" }, "PROMETHEUS_URL must be an http or https URL"},
		{"a URL without a host is refused", func(c *Config) { c.PrometheusURL = "http://" }, "PROMETHEUS_URL must be an http or https URL"},
		{"a window that is no duration is refused", func(c *Config) { c.Window = "five" }, "WINDOW"},
		{"an empty output directory is refused", func(c *Config) { c.OutDir = "" }, "OUT"},
		{"the thresholds gate is valid", func(c *Config) { c.Gate = "thresholds" }, ""},
		{"an unknown gate is refused", func(c *Config) { c.Gate = "strict" }, "GATE: unknown gate"},
		{"the counts gate from a rollout's start is valid", func(c *Config) { c.Gate, c.Since = "counts", "2026-01-05T10:00:00Z" }, ""},
		{"the retired sequential gate is refused, naming counts", func(c *Config) { c.Gate = "sequential" }, "gate sequential was retired: use counts"},
		{"a since that is no RFC 3339 time is refused", func(c *Config) { c.Gate, c.Since = "counts", "10 minutes ago" }, "SINCE must be an RFC 3339 time"},
		{"a since without an anytime-valid gate is refused", func(c *Config) { c.Since, c.Gate = "2026-01-05T10:00:00Z", "confirmed" }, "SINCE applies to the anytime-valid gates only"},
		{"a since in the future is refused", func(c *Config) {
			c.Gate, c.Since = "counts", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		}, "is in the future"},
		{"a list of catalog SLIs is valid", func(c *Config) { c.SLIs = "latency-p99, error-ratio,heap-alloc-per-request" }, ""},
		{"an unknown SLI is refused, naming the known ones", func(c *Config) { c.SLIs = "latency-p99,p99" }, "SLIS: "},
		{"an empty entry in the list is refused", func(c *Config) { c.SLIs = "latency-p99,," }, "SLIS: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaultConfig()
			c.PrometheusURL = "http://127.0.0.1:9090"
			tt.mutate(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, errInvalid)):
				t.Errorf("Validate() = %v, want an errInvalid naming %s", err, tt.want)
			}
		})
	}
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantURL    string
		wantWindow string
		wantSel    string
		wantOut    string
	}{
		{"the kind harness's command line", []string{"-prometheus-url", "http://127.0.0.1:40123", "-window", "1m", "-selector", `namespace="p",job="p"`, "-out", "o/parity"},
			nil, "http://127.0.0.1:40123", "1m", `namespace="p",job="p"`, "o/parity"},
		{"the window defaults to the chart's 5m family", nil,
			map[string]string{"PROMETHEUS_URL": "http://prom:9090"}, "http://prom:9090", "5m", "", "out"},
		{"PARITY_ variables are read", nil,
			map[string]string{"PROMETHEUS_URL": "http://prom:9090", "PARITY_WINDOW": "1m", "PARITY_SELECTOR": `job="x"`, "PARITY_OUT": "r"}, "http://prom:9090", "1m", `job="x"`, "r"},
		{"a flag wins over PROMETHEUS_URL", []string{"-prometheus-url", "http://a:9090"},
			map[string]string{"PROMETHEUS_URL": "http://b:9090"}, "http://a:9090", "5m", "", "out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig("parity", tt.args, env(tt.env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if c.PrometheusURL != tt.wantURL || c.Window != tt.wantWindow || c.Selector != tt.wantSel || c.OutDir != tt.wantOut {
				t.Errorf("got %+v; want URL %q, window %q, selector %q, out %q", c, tt.wantURL, tt.wantWindow, tt.wantSel, tt.wantOut)
			}
		})
	}
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"the gate defaults to counts", nil, nil, "counts"},
		{"PARITY_GATE is read", nil, map[string]string{"PARITY_GATE": "thresholds"}, "thresholds"},
		{"-gate wins", []string{"-gate", "confirmed"}, map[string]string{"PARITY_GATE": "thresholds"}, "confirmed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := map[string]string{"PROMETHEUS_URL": "http://p:9090"}
			for k, v := range tt.env {
				e[k] = v
			}
			c, err := parseConfig("parity", tt.args, env(e), io.Discard)
			if err != nil || c.Gate != tt.want {
				t.Errorf("gate %q (%v), want %q", c.Gate, err, tt.want)
			}
		})
	}
	if _, err := parseConfig("parity", nil, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "PROMETHEUS_URL is required") {
		t.Errorf("no URL gave %v", err)
	}
	if _, err := parseConfig("parity", []string{"stray"}, env(map[string]string{"PROMETHEUS_URL": "http://p:9090"}), io.Discard); err == nil {
		t.Error("a stray argument was accepted")
	}
}

func TestCatalogKeepsTheListedSLIsInOrder(t *testing.T) {
	c := Config{SLIs: "error-ratio, latency-p99"}
	cat, err := c.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(cat.IDs()); got != "[error-ratio latency-p99]" {
		t.Errorf("judged %s, want [error-ratio latency-p99]", got)
	}
	if all, _ := (Config{}).Catalog(); len(all.SLIs) != len(catalog.Default().SLIs) {
		t.Errorf("an empty list judges %d SLIs, want the catalog's %d", len(all.SLIs), len(catalog.Default().SLIs))
	}
}

package demo_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/app/internal/demo"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParseDefaults(t *testing.T) {
	c, err := demo.Parse("demo", nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Scenario != "good" || c.Duration != 3*time.Minute || c.GrayWeight != 50 || c.Window != "1m" {
		t.Errorf("defaults %+v", c)
	}
	if c.StablePort != 0 || c.PrometheusPort != 0 {
		t.Errorf("ports default to 0 (a free port): %+v", c)
	}
}

func TestParseReadsTheMakefileVariablesAndPrefixedOnes(t *testing.T) {
	c, err := demo.Parse("demo", []string{"-rps", "120"}, env(map[string]string{
		"SCENARIO": "regression", "DURATION": "75s", "GRAY_WEIGHT": "30",
		"DEMO_RPS": "90", "DEMO_STABLE_PORT": "18081", "DEMO_FAULT_LATENCY": "60ms",
		// A service variable in the caller's environment must not reach the demo.
		"REDIS_ADDR": "127.0.0.1:1", "RPS": "5",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Scenario != "regression" || c.Duration != 75*time.Second || c.GrayWeight != 30 {
		t.Errorf("SCENARIO/DURATION/GRAY_WEIGHT not read: %+v", c)
	}
	if c.RPS != 120 {
		t.Errorf("rps %g: a flag must win over DEMO_RPS", c.RPS)
	}
	if c.StablePort != 18081 || c.FaultLatency != 60*time.Millisecond {
		t.Errorf("DEMO_ variables not read: %+v", c)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*demo.Config)
		want   string // substring of the error; empty: valid
	}{
		{"the defaults are valid", func(*demo.Config) {}, ""},
		{"an unknown scenario is refused", func(c *demo.Config) { c.Scenario = "canary" }, "SCENARIO"},
		{"a duration too short for the rules is refused", func(c *demo.Config) { c.Duration = 5 * time.Second }, "DURATION"},
		{"a weight that starves a track is refused", func(c *demo.Config) { c.GrayWeight = 100 }, "GRAY_WEIGHT"},
		{"a weight of zero is refused", func(c *demo.Config) { c.GrayWeight = 0 }, "GRAY_WEIGHT"},
		{"an unbounded rate is refused", func(c *demo.Config) { c.RPS = 1e6 }, "RPS"},
		{"no workers is refused", func(c *demo.Config) { c.Concurrency = 0 }, "CONCURRENCY"},
		{"a port out of range is refused", func(c *demo.Config) { c.GrayPort = 70000 }, "GRAY_PORT"},
		{"one port for two things is refused", func(c *demo.Config) { c.StablePort, c.GrayPort = 18080, 18080 }, "configured twice"},
		{"an unknown redis mode is refused", func(c *demo.Config) { c.Redis = "cluster" }, "REDIS"},
		{"an error rate above one is refused", func(c *demo.Config) { c.FaultErrorRate = 2 }, "FAULT_ERROR_RATE"},
		{"a missing binary path is refused", func(c *demo.Config) { c.ServiceBin = "" }, "SERVICE_BIN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := demo.Default()
			tt.mutate(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, demo.ErrInvalid)):
				t.Errorf("Validate() = %v, want an ErrInvalid naming %s", err, tt.want)
			}
		})
	}
}

func TestParseRejectsBadValuesAndArguments(t *testing.T) {
	if _, err := demo.Parse("demo", nil, env(map[string]string{"DURATION": "three minutes"}), io.Discard); err == nil || !strings.Contains(err.Error(), "DURATION") {
		t.Errorf("a bad DURATION gave %v", err)
	}
	if _, err := demo.Parse("demo", []string{"extra"}, env(nil), io.Discard); err == nil {
		t.Error("a stray argument was accepted")
	}
}

func TestValidateReportOnly(t *testing.T) {
	reportOnly := func(c *demo.Config) {
		c.ReportOnly, c.PrometheusURL, c.Window = true, "http://127.0.0.1:9090", "5m"
	}
	tests := []struct {
		name   string
		mutate func(*demo.Config)
		want   string // substring of the error; empty: valid
	}{
		{"an http URL is valid", func(*demo.Config) {}, ""},
		{"an https URL with a path prefix is valid", func(c *demo.Config) { c.PrometheusURL = "https://prom.example/prometheus" }, ""},
		{"a missing URL is refused", func(c *demo.Config) { c.PrometheusURL = "" }, "PROMETHEUS_URL is required"},
		{"a URL without a scheme is refused", func(c *demo.Config) { c.PrometheusURL = "127.0.0.1:9090" }, "PROMETHEUS_URL must be an http or https URL"},
		{"a URL of another scheme is refused", func(c *demo.Config) { c.PrometheusURL = "ftp://prom:9090" }, "PROMETHEUS_URL must be an http or https URL"},
		{"a URL without a host is refused", func(c *demo.Config) { c.PrometheusURL = "http://" }, "PROMETHEUS_URL must be an http or https URL"},
		{"a window that is no duration is refused", func(c *demo.Config) { c.Window = "five" }, "WINDOW"},
		{"an empty output directory is refused", func(c *demo.Config) { c.OutDir = "" }, "OUT"},
		{"the local-demo settings are ignored", func(c *demo.Config) {
			c.Scenario, c.Duration, c.GrayWeight, c.RPS, c.ServiceBin, c.Redis = "canary", time.Second, 0, 0, "", "cluster"
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := demo.Default()
			reportOnly(&c)
			tt.mutate(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, demo.ErrInvalid)):
				t.Errorf("Validate() = %v, want an ErrInvalid naming %s", err, tt.want)
			}
		})
	}
}

func TestParseReportOnly(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantURL    string
		wantWindow string
		wantSel    string
	}{
		{"the kind script's command line reads PROMETHEUS_URL", []string{"-report-only", "-window", "5m"},
			map[string]string{"PROMETHEUS_URL": "http://127.0.0.1:40123"}, "http://127.0.0.1:40123", "5m", ""},
		{"the window defaults to the chart's 5m family", []string{"-report-only", "-prometheus-url", "http://prom:9090"},
			nil, "http://prom:9090", "5m", ""},
		{"DEMO_WINDOW still chooses the window", nil,
			map[string]string{"DEMO_REPORT_ONLY": "true", "PROMETHEUS_URL": "http://prom:9090", "DEMO_WINDOW": "1m"}, "http://prom:9090", "1m", ""},
		{"a flag wins over PROMETHEUS_URL and the selector is read", []string{"-report-only", "-prometheus-url", "http://a:9090", "-selector", `job="poolparity"`},
			map[string]string{"PROMETHEUS_URL": "http://b:9090"}, "http://a:9090", "5m", `job="poolparity"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := demo.Parse("demo", tt.args, env(tt.env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if !c.ReportOnly || c.PrometheusURL != tt.wantURL || c.Window != tt.wantWindow || c.Selector != tt.wantSel {
				t.Errorf("got report-only %v, URL %q, window %q, selector %q; want true, %q, %q, %q",
					c.ReportOnly, c.PrometheusURL, c.Window, c.Selector, tt.wantURL, tt.wantWindow, tt.wantSel)
			}
		})
	}
	if c, err := demo.Parse("demo", nil, env(map[string]string{"PROMETHEUS_URL": "http://prom:9090"}), io.Discard); err != nil || c.ReportOnly || c.Window != "1m" {
		t.Errorf("without -report-only: %+v, %v; want the local demo with its 1m window", c, err)
	}
	if _, err := demo.Parse("demo", []string{"-report-only"}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "PROMETHEUS_URL is required") {
		t.Errorf("-report-only without a URL gave %v", err)
	}
}

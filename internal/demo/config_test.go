package demo_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/demo"
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
	if c.StablePort != 0 || c.GrayPort != 0 || c.RulesFile != "" || c.Requests != "" {
		t.Errorf("ports default to 0 (a free port), the rules and the requests to the scenario's: %+v", c)
	}
}

func TestParseReadsTheMakefileVariablesAndPrefixedOnes(t *testing.T) {
	c, err := demo.Parse("demo", []string{"-rps", "120"}, env(map[string]string{
		"SCENARIO": "regression", "DURATION": "75s", "GRAY_WEIGHT": "30",
		"DEMO_RPS": "90", "DEMO_STABLE_PORT": "18081", "DEMO_FAULT_LATENCY": "60ms", "DEMO_GATE": "counts",
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
	if c.StablePort != 18081 || c.FaultLatency != 60*time.Millisecond || c.Gate != "counts" {
		t.Errorf("DEMO_ variables not read: %+v", c)
	}
}

func TestParseExampleServiceDefaults(t *testing.T) {
	tests := []struct {
		name            string
		env             map[string]string
		wantBin, wantRs string
	}{
		{"the example's own binary, its rules rendered", map[string]string{"SERVICE": "example", "SCENARIO": "misuse-cap"}, demo.ExampleServiceBin, ""},
		{"set ones are kept", map[string]string{"SERVICE": "example", "DEMO_SERVICE_BIN": "/x/imagesvc", "DEMO_RULES": "r.yml"}, "/x/imagesvc", "r.yml"},
		{"the reference service keeps its own", nil, demo.Default().ServiceBin, ""},
		{"the reference rules, asked for, on the example", map[string]string{"SERVICE": "example", "DEMO_RULES": "deploy/prometheus/poolparity-demo.rules.yml"}, demo.ExampleServiceBin, "deploy/prometheus/poolparity-demo.rules.yml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := demo.Parse("demo", nil, env(tt.env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if c.ServiceBin != tt.wantBin || c.RulesFile != tt.wantRs {
				t.Errorf("binary %q, rules %q; want %q, %q", c.ServiceBin, c.RulesFile, tt.wantBin, tt.wantRs)
			}
		})
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
		{"an unknown service is refused", func(c *demo.Config) { c.Service = "shop" }, "SERVICE must be one of poolparity, example"},
		{"the example's misuse is refused on the reference service", func(c *demo.Config) { c.Scenario = "misuse-cap" }, "SCENARIO must be one of good, regression"},
		{"a reference misuse is refused on the example service", func(c *demo.Config) { c.Service, c.Scenario = "example", "misuse-dirty" },
			"SCENARIO must be one of good, aa, misuse-cap with SERVICE=example"},
		{"the example's misuse runs on the example service", func(c *demo.Config) { c.Service, c.Scenario = "example", "misuse-cap" }, ""},
		{"a duration too short for the rules is refused", func(c *demo.Config) { c.Duration = 5 * time.Second }, "DURATION"},
		{"an unknown gate is refused naming the gates", func(c *demo.Config) { c.Gate = "strict" }, `DEMO_GATE: unknown gate "strict": want counts, confirmed or thresholds`},
		{"a weight that starves a track is refused", func(c *demo.Config) { c.GrayWeight = 100 }, "GRAY_WEIGHT"},
		{"a weight of zero is refused", func(c *demo.Config) { c.GrayWeight = 0 }, "GRAY_WEIGHT"},
		{"an unbounded rate is refused", func(c *demo.Config) { c.RPS = 1e6 }, "RPS"},
		{"no workers is refused", func(c *demo.Config) { c.Concurrency = 0 }, "CONCURRENCY"},
		{"a port out of range is refused", func(c *demo.Config) { c.GrayPort = 70000 }, "GRAY_PORT"},
		{"one port for two things is refused", func(c *demo.Config) { c.StablePort, c.GrayPort = 18080, 18080 }, "configured twice"},
		{"an unknown redis mode is refused", func(c *demo.Config) { c.Redis = "cluster" }, "REDIS"},
		{"an error rate above one is refused", func(c *demo.Config) { c.FaultErrorRate = 2 }, "FAULT_ERROR_RATE"},
		{"a missing binary path is refused", func(c *demo.Config) { c.ServiceBin = "" }, "SERVICE_BIN"},
		{"a differential sample too large is refused", func(c *demo.Config) { c.DiffSample = 1 << 30 }, "DIFF_SAMPLE"},
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

func TestParseRefusesTheMovedReportOnlyMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"the -report-only flag", []string{"-report-only"}, nil},
		{"DEMO_REPORT_ONLY", nil, map[string]string{"DEMO_REPORT_ONLY": "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := demo.Parse("demo", tc.args, env(tc.env), io.Discard)
			if !errors.Is(err, demo.ErrReportOnlyMoved) || !strings.Contains(err.Error(), "poolparity-parity") {
				t.Errorf("Parse = %v, want ErrReportOnlyMoved naming poolparity-parity", err)
			}
		})
	}
	if c, err := demo.Parse("demo", nil, env(map[string]string{"PROMETHEUS_URL": "http://prom:9090"}), io.Discard); err != nil || c.Window != "1m" {
		t.Errorf("PROMETHEUS_URL in the environment: %+v, %v; want the local demo with its 1m window", c, err)
	}
}

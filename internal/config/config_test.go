package config_test

import (
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParseReadsEnvAndFlagsWin(t *testing.T) {
	c, err := config.Parse("t", []string{"-pool-mode=pooled", "-shutdown-delay=1s"}, env(map[string]string{
		"POOL_MODE": "unpooled", "GRAY_STATUS": "true", "REDIS_ADDR": "127.0.0.1:1", "FAULT_ERROR_RATE": "0.25",
		"FAULT_LATENCY": "15ms", "REDIS_POOL_SIZE": "7",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.PoolMode != "pooled" || c.GrayStatus != "true" || c.RedisAddr != "127.0.0.1:1" || c.FaultErrorRate != 0.25 ||
		c.FaultLatency != 15*time.Millisecond || c.RedisPoolSize != 7 || c.ShutdownDelay != time.Second ||
		c.ShutdownTimeout != 20*time.Second || c.HTTPAddr != ":8080" {
		t.Fatalf("got %+v", c)
	}
}

func TestParsePoison(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  string
		args []string
		want bool
	}{
		{"unset is off", "", nil, false},
		{"1 turns it on", "1", nil, true},
		{"true turns it on", "true", nil, true},
		{"TRUE turns it on", "TRUE", nil, true},
		{"0 leaves it off", "0", nil, false},
		{"false leaves it off", "false", nil, false},
		{"the flag wins over the variable", "true", []string{"-poolparity-poison=false"}, false},
		{"the flag alone turns it on", "", []string{"-poolparity-poison"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Parse("t", tt.args, env(map[string]string{"POOLPARITY_POISON": tt.env}), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if c.Poison != tt.want {
				t.Fatalf("POOLPARITY_POISON=%q %v gave Poison %v, want %v", tt.env, tt.args, c.Poison, tt.want)
			}
		})
	}
}

func TestParseGrayStatusSpellings(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"true", "true"}, {"1", "true"}, {"T", "true"}, {"false", "false"}, {"0", "false"}, {"baseline", "baseline"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			c, err := config.Parse("t", nil, env(map[string]string{"GRAY_STATUS": tt.in}), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if c.GrayStatus != tt.want {
				t.Fatalf("GRAY_STATUS=%s gave gray_status %q, want %q", tt.in, c.GrayStatus, tt.want)
			}
		})
	}
}

func TestParseRejectsBadSettings(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"an unknown pool mode is rejected", map[string]string{"POOL_MODE": "sometimes"}, nil, "POOL_MODE"},
		{"a gray status other than true, false or baseline is rejected", map[string]string{"GRAY_STATUS": "maybe"}, nil, "GRAY_STATUS"},
		{"a baseline in the wrong case is rejected", map[string]string{"GRAY_STATUS": "Baseline"}, nil, "GRAY_STATUS"},
		{"an error rate above 1 is rejected", map[string]string{"FAULT_ERROR_RATE": "1.5"}, nil, "FAULT_ERROR_RATE"},
		{"a negative delay is rejected", nil, []string{"-shutdown-delay=-1s"}, "SHUTDOWN_DELAY"},
		{"a zero shutdown timeout is rejected", map[string]string{"SHUTDOWN_TIMEOUT": "0s"}, nil, "SHUTDOWN_TIMEOUT"},
		{"a bad duration is rejected", map[string]string{"REDIS_READ_TIMEOUT": "soon"}, nil, "REDIS_READ_TIMEOUT"},
		{"an unknown log level is rejected", map[string]string{"LOG_LEVEL": "loud"}, nil, "LOG_LEVEL"},
		{"stray arguments are rejected", nil, []string{"extra"}, "unexpected arguments"},
		{"a negative heavy in-flight bound is rejected", map[string]string{"HEAVY_MAX_IN_FLIGHT": "-1"}, nil, "HEAVY_MAX_IN_FLIGHT"},
		{"a negative read budget is rejected", nil, []string{"-heavy-max-read-bytes=-5"}, "HEAVY_MAX_READ_BYTES"},
		{"a non-numeric held budget is rejected", map[string]string{"HEAVY_MAX_HELD_BYTES": "32MiB"}, nil, "HEAVY_MAX_HELD_BYTES"},
		{"a negative queue wait is rejected", map[string]string{"HEAVY_QUEUE_WAIT": "-1s"}, nil, "HEAVY_QUEUE_WAIT"},
		{"a zero Redis health interval is rejected", map[string]string{"REDIS_HEALTH_INTERVAL": "0s"}, nil, "REDIS_HEALTH_INTERVAL"},
		{"a pprof address without a port is rejected", map[string]string{"PPROF_ADDR": "localhost"}, nil, "PPROF_ADDR"},
		{"a pprof address on the API's port is rejected", map[string]string{"PPROF_ADDR": ":8080"}, nil, "same as HTTP_ADDR"},
		{"a GOGC the runtime would ignore is rejected", map[string]string{"GOGC": "fast"}, nil, `GOGC="fast": want a whole number or off`},
		{"a negative GOGC is rejected (off is spelt off)", nil, []string{"-gogc=-1"}, "GOGC"},
		{"a GOGC with a unit is rejected", map[string]string{"GOGC": "100%"}, nil, "GOGC"},
		{"a poison setting that is no boolean is rejected", map[string]string{"POOLPARITY_POISON": "yes"}, nil, `POOLPARITY_POISON="yes"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("t", tt.args, env(tt.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one mentioning %s", err, tt.want)
			}
		})
	}
}

// everySetting gives each setting a valid value that differs from its
// default. TestFlagAndEnvAgree fails when a setting is missing here.
var everySetting = map[string]string{
	"HTTP_ADDR":                           "127.0.0.1:9999",
	"GRAY_STATUS":                         "true",
	"POOL_MODE":                           "pooled",
	"POOL_CHECK_EVERY":                    "3",
	"POOLPARITY_POISON":                   "true",
	"LOG_LEVEL":                           "debug",
	"GOGC":                                "400",
	"PPROF_ADDR":                          "127.0.0.1:6060",
	"REDIS_ADDR":                          "127.0.0.1:1",
	"REDIS_PASSWORD":                      "secret",
	"REDIS_DB":                            "3",
	"REDIS_POOL_SIZE":                     "7",
	"REDIS_DIAL_TIMEOUT":                  "3s",
	"REDIS_READ_TIMEOUT":                  "4s",
	"REDIS_WRITE_TIMEOUT":                 "5s",
	"REDIS_POOL_TIMEOUT":                  "6s",
	"REDIS_HEALTH_INTERVAL":               "7s",
	"SHUTDOWN_DELAY":                      "1s",
	"SHUTDOWN_TIMEOUT":                    "9s",
	"HEAVY_MAX_IN_FLIGHT":                 "4",
	"HEAVY_QUEUE_WAIT":                    "2s",
	"HEAVY_MAX_READ_BYTES":                "134217728",
	"HEAVY_MAX_HELD_BYTES":                "16777216",
	"FAULT_LATENCY":                       "15ms",
	"FAULT_ERROR_RATE":                    "0.25",
	"OTEL_EXPORTER_OTLP_ENDPOINT":         "http://127.0.0.1:4318",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":  "http://127.0.0.1:4319/t",
	"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "https://collector.example:4318/m",
	"OTEL_EXPORTER_OTLP_PROTOCOL":         "grpc",
	"OTEL_EXPORTER_OTLP_HEADERS":          "authorization=Bearer%20x,tenant=a",
	"OTEL_EXPORTER_OTLP_TIMEOUT":          "2500",
	"OTEL_METRIC_EXPORT_INTERVAL":         "5000",
}

// TestFlagAndEnvAgree sets each setting once through its variable and
// once through its flag, and checks that both give the same Config. It
// also checks that the table covers every flag Parse defines.
func TestFlagAndEnvAgree(t *testing.T) {
	var usage strings.Builder
	if _, err := config.Parse("t", []string{"-h"}, env(nil), &usage); err == nil {
		t.Fatal("-h: want flag.ErrHelp")
	}
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`).FindAllStringSubmatch(usage.String(), -1) {
		if _, ok := everySetting[strings.ToUpper(strings.ReplaceAll(m[1], "-", "_"))]; !ok {
			t.Errorf("flag -%s is not in everySetting", m[1])
		}
	}
	for name, value := range everySetting {
		t.Run(name, func(t *testing.T) {
			fromEnv, err := config.Parse("t", nil, env(map[string]string{name: value}), io.Discard)
			if err != nil {
				t.Fatalf("env %s=%s: %v", name, value, err)
			}
			flagName := "-" + strings.ToLower(strings.ReplaceAll(name, "_", "-"))
			fromFlag, err := config.Parse("t", []string{flagName + "=" + value}, env(nil), io.Discard)
			if err != nil {
				t.Fatalf("flag %s=%s: %v", flagName, value, err)
			}
			if !reflect.DeepEqual(fromEnv, fromFlag) {
				t.Fatalf("env and flag differ:\nenv:  %+v\nflag: %+v", fromEnv, fromFlag)
			}
			if reflect.DeepEqual(fromEnv, config.Default()) {
				t.Fatalf("%s=%s left the default configuration unchanged", name, value)
			}
			if !reflect.DeepEqual(fromEnv.OTLP(), fromFlag.OTLP()) {
				t.Fatalf("resolved OTLP settings differ: %+v vs %+v", fromEnv.OTLP(), fromFlag.OTLP())
			}
		})
	}
}

func TestFlagWinsOverOTELVariable(t *testing.T) {
	c, err := config.Parse("t", []string{"-otel-exporter-otlp-endpoint=http://flag:4318"},
		env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o := c.OTLP()
	if o.TracesURL() != "http://flag:4318/v1/traces" || o.MetricsURL() != "http://flag:4318/v1/metrics" {
		t.Fatalf("traces %s, metrics %s: want the flag's endpoint", o.TracesURL(), o.MetricsURL())
	}
}

func TestParseRejectsBadOTELSettings(t *testing.T) {
	for _, tt := range []struct{ name, value string }{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://host:21"},
		{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "::"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "novalue"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "k=%zz"},
		{"OTEL_EXPORTER_OTLP_TIMEOUT", "-1"},
		{"OTEL_EXPORTER_OTLP_TIMEOUT", "10s"},
		{"OTEL_METRIC_EXPORT_INTERVAL", "0"},
	} {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			_, err := config.Parse("t", nil, env(map[string]string{tt.name: tt.value}), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.name) {
				t.Fatalf("err = %v, want one naming %s", err, tt.name)
			}
		})
	}
}

func TestGCPercent(t *testing.T) {
	for _, tt := range []struct {
		gogc    string
		percent int
		set     bool
	}{
		{"", 0, false},
		{"off", -1, true},
		{"0", 0, true},
		{"400", 400, true},
	} {
		t.Run("GOGC="+tt.gogc, func(t *testing.T) {
			c, err := config.Parse("t", nil, env(map[string]string{"GOGC": tt.gogc}), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			percent, set, err := c.GCPercent()
			if err != nil || percent != tt.percent || set != tt.set {
				t.Errorf("GCPercent() = %d, %v, %v; want %d, %v", percent, set, err, tt.percent, tt.set)
			}
		})
	}
}

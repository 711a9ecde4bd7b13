package main

import (
	"context"
	"io"
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/cli"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{name: "defaults are valid", check: func(t *testing.T, c Config) {
			if c != DefaultConfig() {
				t.Errorf("got %+v, want the defaults", c)
			}
		}},
		{name: "environment variables set the config", env: map[string]string{
			"METRICS_ADDR": ":9090", "LEADER_ELECT": "false", "WATCH_NAMESPACE": "shop", "MAX_CONCURRENT_RECONCILES": "4", "LEASE_DURATION": "30s",
		}, check: func(t *testing.T, c Config) {
			if c.MetricsAddr != ":9090" || c.LeaderElect || c.WatchNamespace != "shop" || c.MaxConcurrentReconciles != 4 || c.LeaseDuration != 30*time.Second {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "a flag wins over its variable", args: []string{"-log-level", "debug"}, env: map[string]string{"LOG_LEVEL": "warn"},
			check: func(t *testing.T, c Config) {
				if c.LogLevel != "debug" {
					t.Errorf("log level %q, want debug", c.LogLevel)
				}
			}},
		{name: "an unparsable variable is an error", env: map[string]string{"LEADER_ELECT": "maybe"}, wantErr: `LEADER_ELECT="maybe"`},
		{name: "an unknown log level is an error", env: map[string]string{"LOG_LEVEL": "loud"}, wantErr: "LOG_LEVEL"},
		{name: "leader election timings must nest", env: map[string]string{"RENEW_DEADLINE": "20s"}, wantErr: "LEASE_DURATION (15s) > RENEW_DEADLINE (20s)"},
		{name: "leader election timings do not matter without leader election", env: map[string]string{"LEADER_ELECT": "false", "RENEW_DEADLINE": "20s"}},
		{name: "zero concurrent reconciles is an error", args: []string{"-max-concurrent-reconciles=0"}, wantErr: "MAX_CONCURRENT_RECONCILES"},
		{name: "a stall time under a second is an error", env: map[string]string{"PROMETHEUS_STALL_AFTER": "500ms"}, wantErr: "PROMETHEUS_STALL_AFTER=500ms: must be at least 1s"},
		{name: "the container's memory limit is read", env: map[string]string{"MEMORY_LIMIT_BYTES": "268435456", "PROMETHEUS_STALL_AFTER": "2s"},
			check: func(t *testing.T, c Config) {
				if c.MemoryLimitBytes != 256<<20 || c.PrometheusStallAfter != 2*time.Second {
					t.Errorf("memory limit %d, stall after %s", c.MemoryLimitBytes, c.PrometheusStallAfter)
				}
			}},
		{name: "a negative memory limit is an error", env: map[string]string{"MEMORY_LIMIT_BYTES": "-1"}, wantErr: "MEMORY_LIMIT_BYTES"},
		{name: "stray arguments are an error", args: []string{"extra"}, wantErr: "unexpected arguments"},
		{name: "every invalid setting is reported at once", env: map[string]string{"HEALTH_ADDR": "", "LOG_LEVEL": "x", "MAX_CONCURRENT_RECONCILES": "-1"},
			wantErr: "MAX_CONCURRENT_RECONCILES=-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			c, err := ParseConfig(tt.args, getenv, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		want       int
		wantStderr string
		notStderr  string
	}{
		{"-h prints the usage and exits 0", []string{"-h"}, 0, "-metrics-addr", "help requested"},
		{"-help prints the usage and exits 0", []string{"-help"}, 0, "-leader-elect", "help requested"},
		{"an unknown flag exits 2", []string{"-bogus"}, 2, "flag provided but not defined", ""},
		{"an invalid setting exits 2 and says why", []string{"-health-addr", ""}, 2, "poolparity-controller: HEALTH_ADDR is empty", ""},
		{"every invalid setting is a line of its own", []string{"-health-addr", "", "-log-level", "loud"}, 2, "poolparity-controller: LOG_LEVEL=\"loud\": want debug, info, warn or error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			got := cli.Exit(&stderr, "poolparity-controller", run(context.Background(), tt.args, func(string) string { return "" }, io.Discard, &stderr))
			if got != tt.want {
				t.Errorf("exit %d, want %d; stderr:\n%s", got, tt.want, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.wantStderr, stderr.String())
			}
			if tt.notStderr != "" && strings.Contains(stderr.String(), tt.notStderr) {
				t.Errorf("stderr contains %q:\n%s", tt.notStderr, stderr.String())
			}
		})
	}
}

// TestSetMemoryLimit: the soft limit is 90% of the container's, and a limit already set
// (GOMEMLIMIT) or no container limit leaves it alone.
func TestSetMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	debug.SetMemoryLimit(math.MaxInt64)
	if _, set := setMemoryLimit(0); set {
		t.Error("no container limit set a soft limit")
	}
	limit, set := setMemoryLimit(256 << 20)
	if !set || limit != 241591905 || debug.SetMemoryLimit(-1) != 241591905 {
		t.Errorf("got %d (set %t), runtime %d; want 90%% of 256 MiB, 241591905", limit, set, debug.SetMemoryLimit(-1))
	}
	if _, set := setMemoryLimit(512 << 20); set || debug.SetMemoryLimit(-1) != 241591905 {
		t.Errorf("a limit already set was replaced: %d", debug.SetMemoryLimit(-1))
	}
}

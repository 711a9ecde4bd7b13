package demo

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/localmode"
	"github.com/poolparity/poolparity/internal/targets"
)

func TestScenarioTracks(t *testing.T) {
	base := Default()
	base.StablePort, base.GrayPort = 18081, 18082
	tests := []struct {
		name                 string
		mutate               func(*Config)
		wantStable, wantGray string // pool modes
		wantGrayExtra        []string
		wantStableExtra      []string
	}{
		{"good: an unpooled stable against a pooled gray", func(*Config) {}, "unpooled", "pooled", nil, nil},
		{"aa: both unpooled", func(c *Config) { c.Scenario = ScenarioAA }, "unpooled", "unpooled", nil, nil},
		{"regression: the latency fault on gray only", func(c *Config) { c.Scenario = ScenarioRegression },
			"unpooled", "pooled", []string{"FAULT_LATENCY=40ms"}, nil},
		{"regression with errors: both faults on gray", func(c *Config) { c.Scenario, c.FaultErrorRate = ScenarioRegression, 0.05 },
			"unpooled", "pooled", []string{"FAULT_LATENCY=40ms", "FAULT_ERROR_RATE=0.05"}, nil},
		{"misuse-dirty: the mode on gray only", func(c *Config) { c.Scenario = ScenarioMisuseDirty },
			"unpooled", "misuse-dirty", nil, nil},
		{"misuse-retain: the mode on gray, the same GOGC on both", func(c *Config) { c.Scenario = ScenarioMisuseRetain },
			"unpooled", "misuse-retain", []string{"GOGC=400"}, []string{"GOGC=400"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.mutate(&c)
			stable, gray := scenarioTracks(c)
			if stable.name != "stable" || stable.port != 18081 || stable.mode != tt.wantStable || !slices.Equal(stable.extra, tt.wantStableExtra) {
				t.Errorf("stable %+v, want %s on 18081 with %q", stable, tt.wantStable, tt.wantStableExtra)
			}
			if gray.name != "gray" || gray.port != 18082 || gray.mode != tt.wantGray || !slices.Equal(gray.extra, tt.wantGrayExtra) {
				t.Errorf("gray %+v, want %s on 18082 with %q", gray, tt.wantGray, tt.wantGrayExtra)
			}
		})
	}
}

func TestTrackSettings(t *testing.T) {
	tr := trackSpec{name: "gray", mode: "pooled", port: 18082, extra: []string{"FAULT_LATENCY=40ms"}}
	got := trackSettings(tr, "127.0.0.1:6379", 6060)
	want := []string{"POOL_MODE=pooled", "REDIS_ADDR=127.0.0.1:6379", "PPROF_ADDR=127.0.0.1:6060", "FAULT_LATENCY=40ms"}
	if !slices.Equal(got, want) {
		t.Errorf("trackSettings = %q, want %q", got, want)
	}
	if got := trackSettings(tr, "", 0); slices.ContainsFunc(got, func(kv string) bool {
		return strings.HasPrefix(kv, "REDIS_ADDR=") || strings.HasPrefix(kv, "PPROF_ADDR=")
	}) {
		t.Errorf("trackSettings without Redis or profiles = %q, want neither set", got)
	}
}

// TestLocalConfig checks what each scenario becomes in the local mode: the
// tracks' commands, pool modes and environment, the requests file, the load's
// shape and the rules.
func TestLocalConfig(t *testing.T) {
	base := Default()
	base.Root = ""
	tests := []struct {
		name   string
		mutate func(*Config)
		check  func(lc localmode.Config) string
	}{
		{"good: the reference mix, the project's names, the count-based gate", func(*Config) {}, func(lc localmode.Config) string {
			if lc.RequestsFile != ReferenceRequests || lc.DiffRequestsFile != ReferenceDiffRequests || !lc.Random || lc.Burst != 0 || lc.Concurrency != 8 || lc.GrayWeight != 0.5 || lc.RPS != 150 {
				return "load " + lc.RequestsFile
			}
			if len(lc.Rules.Sets) != 0 || lc.RulesFile != "" || lc.Rules.Window != "1m" || lc.Rules.For != "30s" || lc.Job != "poolparity" || lc.Gate != "counts" {
				return "rules or judge"
			}
			if lc.Stable.Mode != "unpooled" || lc.Gray.Mode != "pooled" || !slices.Contains(lc.Gray.Env, "REDIS_ADDR=127.0.0.1:6379") ||
				!slices.Contains(lc.Stable.Env, "POOL_MODE=unpooled") || lc.Stable.Cmd != "HTTP_ADDR=127.0.0.1:$PORT LOG_LEVEL=warn SHUTDOWN_DELAY=0s SHUTDOWN_TIMEOUT=5s exec bin/poolparity" {
				return "tracks"
			}
			if lc.Stable.PprofURL != "http://127.0.0.1:6060/debug/pprof/" || lc.Gray.PprofURL != "http://127.0.0.1:6061/debug/pprof/" || lc.ProfileSeconds != 5 {
				return "profiles"
			}
			if !slices.Contains(lc.ClearEnv, "REDIS_") {
				return "the caller's service variables are passed through"
			}
			return ""
		}},
		{"misuse-retain: the large bodies, in waves of 128", func(c *Config) { c.Scenario = ScenarioMisuseRetain }, func(lc localmode.Config) string {
			if lc.RequestsFile != ReferenceLargeRequests || lc.Burst != RetainWave || lc.Concurrency != RetainWave {
				return "load"
			}
			return ""
		}},
		{"misuse-hold: the large bodies, evenly spaced", func(c *Config) { c.Scenario = ScenarioMisuseHold }, func(lc localmode.Config) string {
			if lc.RequestsFile != ReferenceLargeRequests || lc.Burst != 0 {
				return "load"
			}
			return ""
		}},
		{"the example: thumbnails, OpenTelemetry's names, no Redis", func(c *Config) { c.Service, c.ServiceBin = ServiceExample, ExampleServiceBin }, func(lc localmode.Config) string {
			if lc.RequestsFile != ExampleRequests || !slices.Equal(lc.Rules.Sets, semconvRules) || lc.Job != "imagesvc" {
				return "load or rules"
			}
			if slices.ContainsFunc(lc.Gray.Env, func(kv string) bool { return strings.HasPrefix(kv, "REDIS_ADDR=") }) {
				return "the example got a Redis"
			}
			return ""
		}},
		{"a rules file and a requests file of one's own win", func(c *Config) { c.RulesFile, c.Requests = "my.rules.yml", "my.txt" }, func(lc localmode.Config) string {
			if lc.RulesFile != "my.rules.yml" || lc.RequestsFile != "my.txt" || lc.DiffRequestsFile != "" {
				return "files"
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.mutate(&c)
			redis := "127.0.0.1:6379"
			if c.Service == ServiceExample {
				redis = ""
			}
			lc := LocalConfig(c, c.ServiceBin, redis, [2]int{6060, 6061})
			if msg := tt.check(lc); msg != "" {
				t.Errorf("%s: %+v", msg, lc)
			}
			if err := lc.Validate(); err != nil {
				t.Errorf("the local mode refuses it: %v", err)
			}
		})
	}
}

// TestScenarioRequestsFiles reads the committed requests files as the local
// mode does, and checks the reference mix's shares and the large bodies.
func TestScenarioRequestsFiles(t *testing.T) {
	count := func(ts []targets.Target) map[string]int {
		n := map[string]int{}
		for _, tg := range ts {
			path, _, query := strings.Cut(strings.TrimPrefix(tg.URL, "/api/v1/"), "?")
			key := tg.Method + " " + strings.SplitN(path, "/", 2)[0]
			if query {
				key += "?"
			}
			n[key]++
		}
		return n
	}
	for _, tc := range []struct {
		file  string
		check func(ts []targets.Target) string
	}{
		{ReferenceRequests, func(ts []targets.Target) string {
			// loadgen.DefaultMix's shares of 400: 40% GET of an item or a list
			// (15%), 25% PUT, 15% report, 5% DELETE.
			n := count(ts)
			if len(ts) != 400 || n["GET items"] != 160 || n["GET items?"] != 60 || n["PUT items"] != 100 || n["GET report?"] != 60 || n["DELETE items"] != 20 {
				return fmt.Sprintf("the mix %v", n)
			}
			return ""
		}},
		{ReferenceLargeRequests, func(ts []targets.Target) string {
			large := 0
			for _, tg := range ts {
				if len(tg.Body) >= RetainLargeBodyBytes {
					large++
				}
			}
			if large != 100/16 {
				return "large bodies"
			}
			return ""
		}},
		{ReferenceDiffRequests, func(ts []targets.Target) string {
			for _, tg := range ts {
				if tg.Method != "GET" {
					return "a write: " + tg.Method + " " + tg.URL
				}
			}
			if len(ts) != 280 {
				return "not the mix's reads"
			}
			return ""
		}},
		{ExampleRequests, func(ts []targets.Target) string {
			if len(ts) != 200 || !strings.HasPrefix(ts[0].URL, "/thumbnail/img-") {
				return "thumbnails"
			}
			return ""
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			ts, err := localmode.ReadRequests(filepath.Join("..", "..", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if msg := tc.check(ts); msg != "" {
				t.Errorf("%s: %d requests", msg, len(ts))
			}
		})
	}
}

// TestCommandLine checks the local mode's command line printed for a
// scenario: every setting of the loop as its flag, quoted for sh.
func TestCommandLine(t *testing.T) {
	c := Default()
	c.Scenario, c.Root = ScenarioRegression, ""
	got := CommandLine(LocalConfig(c, "bin/poolparity", "127.0.0.1:6379", [2]int{}))
	for _, want := range []string{
		"poolparity-parity local -stable-cmd 'HTTP_ADDR=127.0.0.1:$PORT LOG_LEVEL=warn SHUTDOWN_DELAY=0s SHUTDOWN_TIMEOUT=5s exec bin/poolparity' -stable-mode unpooled -stable-env POOL_MODE=unpooled",
		"-gray-mode pooled", "-gray-env FAULT_LATENCY=40ms", "-clear-env HTTP_ADDR,GRAY_STATUS,POOL_MODE,LOG_LEVEL,REDIS_,", "-requests examples/requests/poolparity.txt",
		"-rps 150 -duration 3m0s -concurrency 8 -seed 1 -random", "-job poolparity -gate counts -scrape-interval 2s",
		"-prometheus bin/prometheus",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("command line\n%s\nlacks %q", got, want)
		}
	}
	if strings.Contains(got, "-pprof") || strings.Contains(got, "-profile-seconds") {
		t.Errorf("command line %s names profile ports none was given", got)
	}
}

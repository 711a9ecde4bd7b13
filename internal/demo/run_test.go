package demo

import (
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
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
			if stable.name != "stable" || stable.gray != "false" || stable.port != 18081 || stable.mode != tt.wantStable || !slices.Equal(stable.extra, tt.wantStableExtra) {
				t.Errorf("stable %+v, want %s on 18081 with %q", stable, tt.wantStable, tt.wantStableExtra)
			}
			if gray.name != "gray" || gray.gray != "true" || gray.port != 18082 || gray.mode != tt.wantGray || !slices.Equal(gray.extra, tt.wantGrayExtra) {
				t.Errorf("gray %+v, want %s on 18082 with %q", gray, tt.wantGray, tt.wantGrayExtra)
			}
		})
	}
}

func TestScenarioLoad(t *testing.T) {
	base := Default()
	tests := []struct {
		scenario string
		want     loadShape
		desc     string
	}{
		{ScenarioGood, loadShape{concurrency: base.Concurrency}, "open loop, at most 16 in flight"},
		{ScenarioMisuseHold, loadShape{concurrency: base.Concurrency, largeBodyBytes: RetainLargeBodyBytes},
			"open loop, at most 16 in flight, one PUT in 16 of 768 KiB"},
		{ScenarioMisuseRetain, loadShape{concurrency: RetainWave, burst: RetainWave, largeBodyBytes: RetainLargeBodyBytes},
			"open loop, at most 128 in flight, in waves of 128, one PUT in 16 of 768 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			c := base
			c.Scenario = tt.scenario
			got := scenarioLoad(c)
			if got.path != nil || got.concurrency != tt.want.concurrency || got.burst != tt.want.burst || got.largeBodyBytes != tt.want.largeBodyBytes || got.String() != tt.desc {
				t.Errorf("scenarioLoad = %+v (%q), want %+v (%q)", got, got, tt.want, tt.desc)
			}
		})
	}
	t.Run("the example service asks for thumbnails", func(t *testing.T) {
		c := base
		c.Service, c.Scenario = ServiceExample, ScenarioGood
		got := scenarioLoad(c)
		if got.path == nil || got.String() != "open loop, at most 16 in flight, GET /thumbnail/{id}?w=32-256" {
			t.Fatalf("scenarioLoad = %q, want thumbnails", got)
		}
		rnd := rand.New(rand.NewPCG(1, 2))
		sides := map[string]bool{}
		for range 200 {
			p := got.path(7, rnd)
			u, err := url.Parse(p)
			if err != nil || u.Path != "/thumbnail/img-7" {
				t.Fatalf("path %q, want /thumbnail/img-7?w=N", p)
			}
			sides[u.Query().Get("w")] = true
		}
		if len(sides) != 4 || !sides["32"] || !sides["256"] {
			t.Errorf("sides asked for: %v, want 32, 64, 128 and 256", sides)
		}
	})
	t.Run("more workers than a wave keep their number", func(t *testing.T) {
		c := base
		c.Scenario, c.Concurrency = ScenarioMisuseRetain, 2*RetainWave
		if got := scenarioLoad(c); got.concurrency != 2*RetainWave || got.burst != 2*RetainWave {
			t.Errorf("scenarioLoad = %+v, want waves of all %d workers", got, 2*RetainWave)
		}
	})
}

func TestTrackSettings(t *testing.T) {
	tr := trackSpec{name: "gray", mode: "pooled", gray: "true", port: 18082, extra: []string{"FAULT_LATENCY=40ms"}}
	got := trackSettings(tr, "127.0.0.1:6379")
	want := []string{"HTTP_ADDR=127.0.0.1:18082", "GRAY_STATUS=true", "POOL_MODE=pooled", "LOG_LEVEL=warn",
		"SHUTDOWN_DELAY=0s", "SHUTDOWN_TIMEOUT=5s", "REDIS_ADDR=127.0.0.1:6379", "FAULT_LATENCY=40ms"}
	if !slices.Equal(got, want) {
		t.Errorf("trackSettings = %q, want %q", got, want)
	}
	if tr.url() != "http://127.0.0.1:18082" {
		t.Errorf("url %q", tr.url())
	}
}

func TestPrometheusConfig(t *testing.T) {
	type promConf struct {
		Global struct {
			ScrapeInterval     string `json:"scrape_interval"`
			ScrapeTimeout      string `json:"scrape_timeout"`
			EvaluationInterval string `json:"evaluation_interval"`
		} `json:"global"`
		RuleFiles     []string `json:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `json:"job_name"`
			StaticConfigs []struct {
				Targets []string `json:"targets"`
			} `json:"static_configs"`
			MetricRelabel []map[string]string `json:"metric_relabel_configs"`
		} `json:"scrape_configs"`
	}
	for _, tc := range []struct {
		name      string
		telemetry string
		relabel   bool
	}{
		{"metrics: the tracks scraped as they are", TelemetryMetrics, false},
		{"otlp: the collectors' exported job and instance dropped", TelemetryOTLP, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Default()
			cfg.Telemetry, cfg.ScrapeInterval = tc.telemetry, 3*time.Second
			text := prometheusConfig(cfg, "/abs/rules.yml", []string{"127.0.0.1:1", "127.0.0.1:2"})
			var c promConf
			if err := yaml.UnmarshalStrict([]byte(text), &c); err != nil {
				t.Fatalf("not valid YAML of the expected shape: %v\n%s", err, text)
			}
			if c.Global.ScrapeInterval != "3s" || c.Global.ScrapeTimeout != "3s" || c.Global.EvaluationInterval != "3s" {
				t.Errorf("intervals %+v, want 3s", c.Global)
			}
			if !slices.Equal(c.RuleFiles, []string{"/abs/rules.yml"}) {
				t.Errorf("rule files %q", c.RuleFiles)
			}
			if len(c.ScrapeConfigs) != 1 || c.ScrapeConfigs[0].JobName != "poolparity" || len(c.ScrapeConfigs[0].StaticConfigs) != 1 ||
				!slices.Equal(c.ScrapeConfigs[0].StaticConfigs[0].Targets, []string{"127.0.0.1:1", "127.0.0.1:2"}) {
				t.Fatalf("scrape configs %+v, want job poolparity on the two targets", c.ScrapeConfigs)
			}
			rl := c.ScrapeConfigs[0].MetricRelabel
			if got := len(rl) == 1 && rl[0]["action"] == "labeldrop" && strings.Contains(rl[0]["regex"], "exported_"); got != tc.relabel {
				t.Errorf("metric_relabel_configs %v, want the exported_ labeldrop: %v", rl, tc.relabel)
			}
		})
	}
}

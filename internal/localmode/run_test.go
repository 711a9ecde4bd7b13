package localmode_test

import (
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/internal/diffcheck"
	"github.com/poolparity/poolparity/internal/localmode"
	"github.com/poolparity/poolparity/internal/parity"
)

func TestPrometheusConfig(t *testing.T) {
	type staticConfig struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	var c struct {
		Global struct {
			ScrapeInterval     string `json:"scrape_interval"`
			EvaluationInterval string `json:"evaluation_interval"`
			ScrapeTimeout      string `json:"scrape_timeout"`
		} `json:"global"`
		RuleFiles     []string `json:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string              `json:"job_name"`
			MetricsPath   string              `json:"metrics_path"`
			HonorLabels   bool                `json:"honor_labels"`
			StaticConfigs []staticConfig      `json:"static_configs"`
			MetricRelabel []map[string]string `json:"metric_relabel_configs"`
		} `json:"scrape_configs"`
	}
	text := localmode.PrometheusConfig(5*time.Second, "/abs/rules.yml", "/internal/metrics", "127.0.0.1:1", "127.0.0.1:2")
	if err := yaml.UnmarshalStrict([]byte(text), &c); err != nil {
		t.Fatalf("not valid YAML of the expected shape: %v\n%s", err, text)
	}
	if c.Global.ScrapeInterval != "5s" || c.Global.EvaluationInterval != "5s" || c.Global.ScrapeTimeout != "5s" {
		t.Errorf("intervals %+v, want 5s", c.Global)
	}
	if !slices.Equal(c.RuleFiles, []string{"/abs/rules.yml"}) || len(c.ScrapeConfigs) != 1 {
		t.Fatalf("rule files %q, scrape configs %+v", c.RuleFiles, c.ScrapeConfigs)
	}
	sc := c.ScrapeConfigs[0]
	if sc.JobName != localmode.Job || sc.MetricsPath != "/internal/metrics" || sc.HonorLabels {
		t.Errorf("job %q path %q honor_labels %v, want %s at /internal/metrics, the target's labels winning", sc.JobName, sc.MetricsPath, sc.HonorLabels, localmode.Job)
	}
	want := []staticConfig{
		{Targets: []string{"127.0.0.1:1"}, Labels: map[string]string{"gray_status": "false"}},
		{Targets: []string{"127.0.0.1:2"}, Labels: map[string]string{"gray_status": "true"}},
	}
	if len(sc.StaticConfigs) != 2 {
		t.Fatalf("static configs %+v, want %+v", sc.StaticConfigs, want)
	}
	for i, w := range want {
		got := sc.StaticConfigs[i]
		if !slices.Equal(got.Targets, w.Targets) || got.Labels["gray_status"] != w.Labels["gray_status"] || len(got.Labels) != 1 {
			t.Errorf("static config %d = %+v, want %+v", i, got, w)
		}
	}
	if len(sc.MetricRelabel) != 1 || sc.MetricRelabel[0]["action"] != "labeldrop" || sc.MetricRelabel[0]["regex"] != "exported_gray_status" {
		t.Errorf("metric_relabel_configs %v, want the service's own gray_status dropped", sc.MetricRelabel)
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		name string
		in   diffcheck.Outcome
		want parity.Verdict
	}{
		{"PASS", diffcheck.Pass, parity.Pass},
		{"FAIL", diffcheck.Fail, parity.Fail},
		{"INCONCLUSIVE", diffcheck.Inconclusive, parity.DiffInconclusive},
		{"NO DATA", diffcheck.NoData, parity.NoData},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := diffcheck.Report{Compared: 10, Skipped: 1, Mismatches: 2, Rate: 0.2, Low: 0.05, High: 0.5, MaxMismatchRate: 0.01,
				Outcome: tt.in, OneStable: true, Notes: []string{"n"},
				Paths: []diffcheck.PathReport{{Endpoint: "GET /x", Pattern: "$.a", Kind: "value", Requests: 2, Request: "GET /x, line 1",
					Example: diffcheck.Diff{Path: "$.a", A: "1", B: "2"}}}}
			s := localmode.Summary(d)
			if s.Outcome != tt.want || s.Compared != 10 || s.Skipped != 1 || s.Mismatches != 2 || s.Rate != 0.2 || s.Low != 0.05 || s.High != 0.5 ||
				s.MaxMismatchRate != 0.01 || !s.OneStable || len(s.Notes) != 1 {
				t.Errorf("Summary = %+v, want %s with the counts", s, tt.want)
			}
			if len(s.Paths) != 1 || s.Paths[0] != (parity.DiffPath{Endpoint: "GET /x", Pattern: "$.a", Kind: "value", Requests: 2, Request: "GET /x, line 1", Stable: "1", Gray: "2"}) {
				t.Errorf("paths %+v", s.Paths)
			}
		})
	}
}

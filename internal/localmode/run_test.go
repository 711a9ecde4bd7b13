package localmode_test

import (
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/internal/localmode"
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
	text := localmode.PrometheusConfig(localmode.Job, 5*time.Second, "/abs/rules.yml", "/internal/metrics", "127.0.0.1:1", "127.0.0.1:2")
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
	if len(sc.MetricRelabel) != 1 || sc.MetricRelabel[0]["action"] != "labeldrop" || sc.MetricRelabel[0]["regex"] != "exported_(gray_status|job|instance)" {
		t.Errorf("metric_relabel_configs %v, want the service's own gray_status (and a collector's job and instance) dropped", sc.MetricRelabel)
	}
}

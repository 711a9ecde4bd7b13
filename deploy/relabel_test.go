package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/deploy/deploytest"
	"github.com/poolparity/poolparity/deploy/render"
)

// relabel is one relabeling of a ServiceMonitor endpoint (prometheus-operator's RelabelConfig),
// as the operator copies it into Prometheus' configuration.
type relabel struct {
	SourceLabels []string `json:"sourceLabels,omitempty"`
	Regex        string   `json:"regex,omitempty"`
	TargetLabel  string   `json:"targetLabel,omitempty"`
	Replacement  *string  `json:"replacement,omitempty"`
	Action       string   `json:"action,omitempty"`
}

// promConfig returns the relabeling in Prometheus' configuration keys.
func (r relabel) promConfig() map[string]any {
	out := map[string]any{}
	if len(r.SourceLabels) > 0 {
		out["source_labels"] = r.SourceLabels
	}
	if r.Regex != "" {
		out["regex"] = r.Regex
	}
	if r.TargetLabel != "" {
		out["target_label"] = r.TargetLabel
	}
	if r.Replacement != nil {
		out["replacement"] = *r.Replacement
	}
	if r.Action != "" {
		out["action"] = strings.ToLower(r.Action)
	}
	return out
}

// serviceMonitorRelabelings returns the relabelings and metric relabelings of the first
// endpoint of the first ServiceMonitor or PodMonitor in the manifests, skipping the
// controller's.
func serviceMonitorRelabelings(t *testing.T, manifests []byte) (target, metric []relabel) {
	t.Helper()
	type endpoint struct {
		Relabelings       []relabel `json:"relabelings"`
		MetricRelabelings []relabel `json:"metricRelabelings"`
	}
	for doc := range strings.SplitSeq(string(manifests), "\n---") {
		if !strings.Contains(doc, "kind: ServiceMonitor") && !strings.Contains(doc, "kind: PodMonitor") || strings.Contains(doc, "component: controller") {
			continue
		}
		var sm struct {
			Spec struct {
				Endpoints    []endpoint `json:"endpoints"`
				PodEndpoints []endpoint `json:"podMetricsEndpoints"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &sm); err != nil {
			t.Fatalf("decoding the monitor: %v", err)
		}
		eps := append(sm.Spec.Endpoints, sm.Spec.PodEndpoints...)
		if len(eps) == 0 {
			t.Fatal("the monitor has no endpoint")
		}
		return eps[0].Relabelings, eps[0].MetricRelabelings
	}
	t.Fatal("no ServiceMonitor or PodMonitor in the manifests")
	return nil, nil
}

// TestTrackFollowsThePodLabel runs the real Prometheus with the relabelings of a
// ServiceMonitor on targets whose processes all say gray_status="true", and checks each
// target's series: with the chart's ServiceMonitor or PodMonitor (serviceMonitor.trackFromPodLabel,
// the kind values) a pod whose poolparity.dev/gray-status label says "false" (relabelled in place at an
// Argo Rollouts promotion) is on the stable track with no exported copy of the process's label
// left, and a pod without the label keeps the process's; with the Flagger example
// (deploy/flagger/canary.yaml) the track is the Service's label and job and service are the
// target's, whichever Service a pod is scraped through. Kubernetes meta labels are given as
// static target labels, since no Kubernetes service discovery runs here.
func TestTrackFollowsThePodLabel(t *testing.T) {
	prom := deploytest.Tool(t, "prometheus")
	const podMeta = "__meta_kubernetes_pod_label_poolparity_dev_gray_status"
	const svcMeta = "__meta_kubernetes_service_label_poolparity_dev_gray_status"
	flagger, err := os.ReadFile(filepath.Join(deploytest.Root(t), "deploy", "flagger", "canary.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		manifests []byte
		targets   []map[string]string // static labels per target; "pod" names it
		want      map[string]map[string]string
	}{
		{"the chart's ServiceMonitor", deploytest.HelmTemplate(t, render.ValueSet{Name: "kind", Files: []string{"values-kind.yaml"}}),
			[]map[string]string{{podMeta: "false", "pod": "promoted"}, {podMeta: "true", "pod": "canary"}, {"pod": "unlabelled"}},
			map[string]map[string]string{"promoted": {"gray_status": "false"}, "canary": {"gray_status": "true"}, "unlabelled": {"gray_status": "true"}}},
		{"the chart's PodMonitor", deploytest.HelmTemplate(t, render.ValueSet{Name: "kind", Files: []string{"values-kind.yaml"}}, "--set", "serviceMonitor.kind=PodMonitor"),
			[]map[string]string{{podMeta: "false", "pod": "promoted"}, {podMeta: "true", "pod": "canary"}, {"pod": "unlabelled"}},
			map[string]map[string]string{"promoted": {"gray_status": "false"}, "canary": {"gray_status": "true"}, "unlabelled": {"gray_status": "true"}}},
		{"the Flagger example's ServiceMonitor", flagger,
			[]map[string]string{{svcMeta: "false", "pod": "primary"}, {svcMeta: "true", "pod": "canary"}},
			map[string]map[string]string{
				"primary": {"gray_status": "false", "job": "imagesvc", "service": "imagesvc"},
				"canary":  {"gray_status": "true", "job": "imagesvc", "service": "imagesvc"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target, metric := serviceMonitorRelabelings(t, tt.manifests)
			got := scrapeWith(t, prom, target, metric, tt.targets)
			if len(got) != len(tt.want) {
				t.Fatalf("series of %d pods, want %d: %v", len(got), len(tt.want), got)
			}
			for pod, want := range tt.want {
				for k, v := range want {
					if got[pod][k] != v {
						t.Errorf("pod %s: %s=%q, want %q (labels %v)", pod, k, got[pod][k], v, got[pod])
					}
				}
				if v, ok := got[pod]["exported_gray_status"]; ok {
					t.Errorf("pod %s keeps the process's label as exported_gray_status=%q", pod, v)
				}
			}
		})
	}
}

// scrapeWith runs Prometheus with the relabelings on one target per label set, each serving
// poolparity_probe_total{gray_status="true"}, and returns the labels of each target's series
// by its "pod" label once every target has been scraped.
func scrapeWith(t *testing.T, prom string, target, metric []relabel, targets []map[string]string) map[string]map[string]string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "# TYPE poolparity_probe_total counter")
		fmt.Fprintln(w, `poolparity_probe_total{gray_status="true"} 1`)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	var targetCfg, metricCfg []map[string]any
	for _, r := range target {
		targetCfg = append(targetCfg, r.promConfig())
	}
	for _, r := range metric {
		metricCfg = append(metricCfg, r.promConfig())
	}
	// The targets share one server: a query parameter tells them apart.
	var static []any
	for i, ls := range targets {
		l := map[string]string{"__param_p": fmt.Sprint(i)}
		for k, v := range ls {
			l[k] = v
		}
		static = append(static, map[string]any{"targets": []string{host}, "labels": l})
	}
	cfg := map[string]any{
		"global": map[string]any{"scrape_interval": "1s", "scrape_timeout": "1s"},
		"scrape_configs": []any{map[string]any{
			"job_name": "poolparity", "static_configs": static,
			"relabel_configs": targetCfg, "metric_relabel_configs": metricCfg,
		}},
	}
	dir := t.TempDir()
	y, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), y, 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.Command(prom, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=warn")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", prom, err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var last string
	for ctx.Err() == nil {
		got, err := probeSeries(ctx, port)
		last = fmt.Sprint(got, err)
		if err == nil && len(got) == len(targets) {
			return got
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("Prometheus did not scrape the %d targets within 90 s (last: %s)\n%s", len(targets), last, logs.String())
	return nil
}

// probeSeries returns the labels of every poolparity_probe_total series by pod.
func probeSeries(ctx context.Context, port int) (map[string]map[string]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/api/v1/query?query=poolparity_probe_total", port), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for _, r := range body.Data.Result {
		out[r.Metric["pod"]] = r.Metric
	}
	return out, nil
}

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
// endpoint of the chart's ServiceMonitor, rendered with the value set vs.
func serviceMonitorRelabelings(t *testing.T, vs render.ValueSet) (target, metric []relabel) {
	t.Helper()
	for doc := range strings.SplitSeq(string(deploytest.HelmTemplate(t, vs)), "\n---") {
		if !strings.Contains(doc, "kind: ServiceMonitor") || strings.Contains(doc, "component: controller") {
			continue
		}
		var sm struct {
			Spec struct {
				Endpoints []struct {
					Relabelings       []relabel `json:"relabelings"`
					MetricRelabelings []relabel `json:"metricRelabelings"`
				} `json:"endpoints"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &sm); err != nil {
			t.Fatalf("decoding the ServiceMonitor: %v", err)
		}
		if len(sm.Spec.Endpoints) == 0 {
			t.Fatal("the ServiceMonitor has no endpoint")
		}
		return sm.Spec.Endpoints[0].Relabelings, sm.Spec.Endpoints[0].MetricRelabelings
	}
	t.Fatalf("value set %s renders no ServiceMonitor", vs.Name)
	return nil, nil
}

// TestTrackFollowsThePodLabel runs the real Prometheus with the chart's ServiceMonitor
// relabelings (serviceMonitor.trackFromPodLabel, the kind values) on three targets whose
// processes all say gray_status="true": a pod whose poolparity.dev/gray-status label says
// "false" (relabelled in place at an Argo Rollouts promotion) is on the stable track with no
// exported copy of the process's label left; a pod without the label keeps the process's.
// The pod label reaches Prometheus as __meta_kubernetes_pod_label_poolparity_dev_gray_status,
// given here as a static target label since no Kubernetes service discovery runs.
func TestTrackFollowsThePodLabel(t *testing.T) {
	prom := deploytest.Tool(t, "prometheus")
	target, metric := serviceMonitorRelabelings(t, render.ValueSet{Name: "kind", Files: []string{"values-kind.yaml"}})
	const meta = "__meta_kubernetes_pod_label_poolparity_dev_gray_status"
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
	// Three targets on one server: a query string tells them apart.
	cfg := map[string]any{
		"global": map[string]any{"scrape_interval": "1s", "scrape_timeout": "1s"},
		"scrape_configs": []any{map[string]any{
			"job_name": "poolparity",
			"static_configs": []any{
				map[string]any{"targets": []string{host}, "labels": map[string]string{meta: "false", "pod": "promoted", "__param_p": "1"}},
				map[string]any{"targets": []string{host}, "labels": map[string]string{meta: "true", "pod": "canary", "__param_p": "2"}},
				map[string]any{"targets": []string{host}, "labels": map[string]string{"pod": "unlabelled", "__param_p": "3"}},
			},
			"relabel_configs":        targetCfg,
			"metric_relabel_configs": metricCfg,
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
	cmd := exec.CommandContext(ctx, prom, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=warn")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", prom, err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })

	want := map[string]string{"promoted": "false", "canary": "true", "unlabelled": "true"}
	var last string
	for ctx.Err() == nil {
		got, err := probeSeries(ctx, port)
		last = fmt.Sprint(got, err)
		if err == nil && len(got) == len(want) {
			for pod, labels := range got {
				if labels["gray_status"] != want[pod] {
					t.Errorf("pod %s: gray_status %q, want %q (labels %v)", pod, labels["gray_status"], want[pod], labels)
				}
				if v, ok := labels["exported_gray_status"]; ok {
					t.Errorf("pod %s keeps the process's label as exported_gray_status=%q", pod, v)
				}
			}
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("Prometheus did not scrape the three targets within 90 s (last: %s)\n%s", last, logs.String())
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

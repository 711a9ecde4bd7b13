package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/images"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/testtool"
	"github.com/prometheus/common/model"
)

// TestKEDAManifest renders KEDA's config/minimal from the pinned module with bin/kustomize, as
// kind-deps does, and checks what the offline cluster changes in it.
func TestKEDAManifest(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	kustomize := filepath.Join(root, "bin", "kustomize")
	if _, err := os.Stat(kustomize); err != nil {
		testtool.SkipOrFail(t, "bin/kustomize is missing (hack/install-tools.sh kustomize): %v", err)
	}
	cmd := exec.Command("go", "mod", "download", "-json", kedaModule+"@"+images.KEDAVersion)
	cmd.Dir, cmd.Env = os.TempDir(), append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		testtool.SkipOrFail(t, "go mod download %s@%s: %v", kedaModule, images.KEDAVersion, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	rendered, err := exec.Command(kustomize, "build", filepath.Join(mod.Dir, "config", "minimal")).Output()
	if err != nil {
		t.Fatalf("kustomize build config/minimal: %v", err)
	}
	m, err := kedaManifest(rendered)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(m, []byte("ghcr.io/")) {
		t.Error("an upstream image is left in the manifest")
	}
	objs, err := kube.DecodeObjects(m)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string][]string{}
	deps := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		kinds[o.GetKind()] = append(kinds[o.GetKind()], o.GetName())
		if o.GetKind() == "Deployment" {
			deps[o.GetName()] = o
		}
	}
	if len(kinds["ValidatingWebhookConfiguration"]) > 0 || len(kinds["MutatingWebhookConfiguration"]) > 0 {
		t.Errorf("config/minimal has admission webhooks: %v", kinds)
	}
	if !slices.Contains(kinds["APIService"], kedaAPIService) || !slices.Contains(kinds["CustomResourceDefinition"], "scaledobjects.keda.sh") {
		t.Errorf("want the APIService %s and the ScaledObject CRD, got %v", kedaAPIService, kinds)
	}
	for name, image := range map[string]string{kedaOperator: images.KEDAImage, kedaMetricsAPI: images.KEDAAdapterImage} {
		d, ok := deps[name]
		if !ok {
			t.Errorf("no Deployment %s", name)
			continue
		}
		cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		c := cs[0].(map[string]any)
		if c["image"] != image || c["imagePullPolicy"] != "IfNotPresent" {
			t.Errorf("%s runs %v (pull %v), want %s (IfNotPresent)", name, c["image"], c["imagePullPolicy"], image)
		}
		if cpu, _, _ := unstructured.NestedString(c, "resources", "requests", "cpu"); cpu != "20m" {
			t.Errorf("%s requests %s CPU, want 20m", name, cpu)
		}
		if name == kedaOperator && !slices.Contains(toStrings(c["args"]), "--enable-webhook-patching=false") {
			t.Errorf("the operator's args %v lack --enable-webhook-patching=false", c["args"])
		}
	}
	if _, err := kedaManifest([]byte("kind: Deployment\n")); err == nil {
		t.Error("a manifest without KEDA's images must be refused, not installed half-local")
	}
}

func toStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// kedaHPA is an HPA as KEDA makes it for a track: CPU and the latency trigger (metricType Value).
func kedaHPA(target string, desired int32, cpu int32, latency string) autoscalingv2.HorizontalPodAutoscaler {
	return autoscalingv2.HorizontalPodAutoscaler{
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: target},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 5,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "s1-prometheus"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(resource.MustParse("500m"))},
			}}},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			DesiredReplicas: desired,
			CurrentMetrics: []autoscalingv2.MetricStatus{
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To(cpu)}}},
				{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{Current: autoscalingv2.MetricValueStatus{Value: ptr.To(resource.MustParse(latency))}}},
			},
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue}},
		},
	}
}

func TestHPASampleOfReadsKEDAsHPA(t *testing.T) {
	d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "poolparity-gray", Labels: map[string]string{trackLabel: "gray"}},
		Status: appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 1}}
	other := kedaHPA("poolparity-stable", 5, 99, "2")
	got := hpaSampleOf(d, []autoscalingv2.HorizontalPodAutoscaler{other, kedaHPA("poolparity-gray", 3, 40, "612m")})
	want := hpaSample{Track: "gray", Ready: 1, Replicas: 2, Min: 1, Desired: 3, CPU: 40, Latency: 0.612, Target: 0.5, Active: true}
	if got != want {
		t.Errorf("hpaSampleOf = %+v, want %+v", got, want)
	}
	if got := hpaSampleOf(d, nil); got.Min != 0 || got.CPU != -1 || got.Latency != -1 {
		t.Errorf("a track without an HPA (group A): %+v, want no HPA, no readings", got)
	}
}

func TestWithBefore(t *testing.T) {
	samples := []hpaSample{{Track: "gray", Replicas: 1}, {Track: "stable", Replicas: 2}, {Track: "gray", Replicas: 3}, {Track: "stable", Replicas: 5}}
	withBefore(samples)
	var got []int
	for _, s := range samples {
		got = append(got, s.Before)
	}
	if !slices.Equal(got, []int{1, 2, 1, 2}) {
		t.Errorf("Before = %v, want each track's previous replicas [1 2 1 2]", got)
	}
}

func TestLatencyScaledAndScaleOut(t *testing.T) {
	s := func(at int, phase string, replicas, ready, desired int, latency float64) hpaSample {
		return hpaSample{At: time.Duration(at) * time.Second, Phase: phase, Track: "gray", Replicas: replicas, Ready: ready,
			Min: 1, Desired: desired, CPU: 50, Latency: latency, Target: 0.5}
	}
	tests := []struct {
		name          string
		samples       []hpaSample
		scaled        bool
		at            time.Duration
		wanted, ready time.Duration
	}{
		{"latency above target and the HPA wanting more: scaled by latency",
			[]hpaSample{s(10, "low", 1, 1, 1, 0.02), s(40, "high", 1, 1, 1, 0.3), s(50, "high", 1, 1, 2, 0.8), s(60, "high", 2, 2, 3, 0.7)},
			true, 50 * time.Second, 20 * time.Second, 30 * time.Second},
		{"more replicas wanted while latency is under target: CPU, not latency",
			[]hpaSample{s(40, "high", 1, 1, 3, 0.4), s(50, "high", 3, 1, 3, 0.45)},
			false, 0, 10 * time.Second, -1},
		{"latency within the HPA's 10% tolerance of its target: latency alone asks nothing",
			[]hpaSample{s(40, "high", 1, 1, 2, 0.54)},
			false, 0, 10 * time.Second, -1},
		{"latency above target at the minimum: not scaled yet",
			[]hpaSample{s(40, "high", 1, 1, 1, 0.9)},
			false, 0, -1, -1},
		{"latency above target during the low step only: not the high step's doing",
			[]hpaSample{s(10, "low", 1, 1, 2, 0.9), s(40, "high", 2, 2, 2, 0.1)},
			false, 0, -1, -1},
		{"no latency reading (group B): never scaled by latency",
			[]hpaSample{{At: 40 * time.Second, Phase: "high", Track: "gray", Replicas: 1, Ready: 1, Min: 1, Desired: 4, CPU: 200, Latency: -1}},
			false, 0, 10 * time.Second, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := latencyScaled(tt.samples, "high")
			if ok != tt.scaled || (ok && got.At != tt.at) {
				t.Errorf("latencyScaled = %v at %s, want %v at %s", ok, got.At, tt.scaled, tt.at)
			}
			wanted, ready := scaleOut(tt.samples, "gray", 30*time.Second)
			if wanted != tt.wanted || ready != tt.ready {
				t.Errorf("scaleOut = wanted %s ready %s, want %s and %s", wanted, ready, tt.wanted, tt.ready)
			}
		})
	}
}

func TestWantsFor(t *testing.T) {
	for _, tt := range []struct {
		replicas int
		ratio    float64
		want     int
	}{{1, 1.6, 2}, {2, 1.6, 4}, {1, 3.33, 4}, {3, 1.05, 3}, {3, 0.2, 1}, {1, 0, 0}} {
		if got := wantsFor(tt.replicas, tt.ratio); got != tt.want {
			t.Errorf("wantsFor(%d, %g) = %d, want %d", tt.replicas, tt.ratio, got, tt.want)
		}
	}
}

func TestHPAGroupsSettings(t *testing.T) {
	gs := hpaGroups("http://prometheus-operated.monitoring.svc:9090")
	names := []string{}
	for _, g := range gs {
		names = append(names, g.Name)
	}
	if strings.Join(names, "") != "ABC" {
		t.Fatalf("groups %v, want A, B, C", names)
	}
	if !slices.Contains(gs[0].Set, "autoscaling.enabled=false") {
		t.Errorf("group A %v must run without an HPA", gs[0].Set)
	}
	if !slices.Contains(gs[1].Set, "autoscaling.mode=hpa") || !slices.Contains(gs[2].Set, "autoscaling.mode=keda") {
		t.Errorf("group B %v must use the chart's HPA, group C %v KEDA", gs[1].Set, gs[2].Set)
	}
	for _, g := range gs[1:] {
		if !slices.Contains(g.Set, "autoscaling.minReplicas=1") || !slices.Contains(g.Set, "autoscaling.maxReplicas=5") {
			t.Errorf("group %s %v must scale 1-5", g.Name, g.Set)
		}
	}
	var short time.Duration
	for _, p := range hpaProfile(false) {
		short += p.D
	}
	if short > 150*time.Second {
		t.Errorf("the CI profile has %s of load; keep group C's cluster time within 3 minutes", short)
	}
	phases := []string{}
	for _, p := range hpaProfile(true) {
		phases = append(phases, p.Name)
	}
	if strings.Join(phases, ",") != "low,high,low2" {
		t.Errorf("the full profile is %v, want low, high, low", phases)
	}
}

func TestReleaseNeededAfter(t *testing.T) {
	for _, tt := range []struct {
		steps []string
		want  bool
	}{
		{defaultNames(t), false},
		{[]string{"hpa-groups"}, false},
		{[]string{"helm-install", "hpa-groups", "scenarios", "kind-down"}, true},
	} {
		env := harness.NewEnv(harness.Config{Steps: tt.steps}, io.Discard)
		if got := releaseNeededAfter(env, "hpa-groups"); got != tt.want {
			t.Errorf("steps %v: releaseNeededAfter = %v, want %v", tt.steps, got, tt.want)
		}
	}
}

func TestIdleNote(t *testing.T) {
	if got := idleNote([]hpaSample{{Track: "gray"}, {Track: "stable"}}); !strings.Contains(got, "no latency data reads 0 and CPU decides") {
		t.Errorf("idle tracks with no latency data: %q", got)
	}
	if got := idleNote([]hpaSample{{Track: "gray", Latency: 0.088}, {Track: "stable"}}); strings.Contains(got, "no latency data") || !strings.Contains(got, "gray 0.088s") {
		t.Errorf("a track with recent latency data: %q", got)
	}
}

// defaultNames are the steps `all` runs.
func defaultNames(t *testing.T) []string {
	t.Helper()
	r, err := Registry()
	if err != nil {
		t.Fatal(err)
	}
	return r.Default()
}

// TestHPATrackStatsReadsTheCatalogsSLIs: each figure is the catalog's per-track rule of the
// track's gray_status, averaged over the step; no figure is defined here.
func TestHPATrackStatsReadsTheCatalogsSLIs(t *testing.T) {
	cat := catalog.Default()
	want := map[catalog.ID]float64{catalog.LatencyP95: 0.2, catalog.LatencyP99: 0.4, catalog.ErrorRatio: 0.01, catalog.CPUPerRequest: 0.003}
	for _, track := range []string{"stable", "gray"} {
		t.Run(track, func(t *testing.T) {
			sel := `namespace="pp",job="rel",gray_status="` + map[string]string{"stable": "false", "gray": "true"}[track] + `"`
			vectors := map[string]model.Vector{}
			for id, v := range want {
				sli, _ := cat.Get(id)
				vectors["avg_over_time(("+sli.TrackQuery("1m", sel)+")[100s:10s])"] = model.Vector{sample("", v)}
			}
			st, err := hpaTrackStats(context.Background(), fakeProm{vectors: vectors}, "pp", "rel", track, 100*time.Second, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			got := map[catalog.ID]float64{}
			for id, p := range hpaSLIs(&st) {
				got[id] = *p
			}
			if !maps.Equal(got, want) {
				t.Errorf("stats %+v: SLIs %v, want the catalog's queries' values %v", st, got, want)
			}
		})
	}
}

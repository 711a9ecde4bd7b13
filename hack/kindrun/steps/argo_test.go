package steps

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	plugintypes "github.com/argoproj/argo-rollouts/utils/plugin/types"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/hack/kindrun/images"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
	"github.com/poolparity/poolparity/internal/testenv"
	"github.com/poolparity/poolparity/internal/testtool"
)

const testProm = "http://prometheus-operated.monitoring.svc:9090"

// argoInstall reads Argo Rollouts' manifests/install.yaml at the pinned version.
func argoInstall(t *testing.T) []byte {
	t.Helper()
	if images.ArgoRolloutsVersion != testenv.ArgoRolloutsVersion {
		t.Fatalf("the kind cluster runs Argo Rollouts %s, the envtest CRDs (and go.mod's plugin) are %s", images.ArgoRolloutsVersion, testenv.ArgoRolloutsVersion)
	}
	dir, err := testenv.ModuleDir(testenv.ArgoRolloutsModule, testenv.ArgoRolloutsVersion)
	if err != nil {
		testtool.SkipOrFail(t, "Argo Rollouts' module: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifests", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// objectOf returns the object kind/name of a manifest, decoded strictly into out (only the
// documents of that kind are decoded).
func objectOf(t *testing.T, manifest []byte, kind, name string, out any) {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, doc := range yamlDocs(manifest) {
		if docKind(doc) != kind {
			continue
		}
		o, err := kube.DecodeObjects(doc)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o...)
	}
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			y, err := yaml.Marshal(u.Object)
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.UnmarshalStrict(y, out); err != nil {
				t.Fatalf("decoding %s %s strictly: %v", kind, name, err)
			}
			return
		}
	}
	t.Fatalf("no %s %s in the manifest", kind, name)
}

// TestArgoManifest edits the real install.yaml as the argo step does: the controller runs the
// image built here from the upstream image's working directory, an init container installs the
// plugin from the service image onto a volume the controller mounts, and the ConfigMap names the
// plugin as Argo's own config type reads it.
func TestArgoManifest(t *testing.T) {
	m, err := argoManifest(argoInstall(t), images.ArgoRolloutsImage, images.ServiceTag, testProm)
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	objectOf(t, m, "Deployment", argoController, &d)
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	if c.Image != images.ArgoRolloutsImage || c.ImagePullPolicy != corev1.PullIfNotPresent || c.WorkingDir != argoWorkDir {
		t.Errorf("controller container: image %s, pull %s, workingDir %s", c.Image, c.ImagePullPolicy, c.WorkingDir)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(v corev1.VolumeMount) bool { return v.MountPath == argoWorkDir+"/plugin-bin" }) {
		t.Errorf("the controller has no plugin-bin under its working directory: %+v", c.VolumeMounts)
	}
	if len(spec.InitContainers) != 1 {
		t.Fatalf("init containers %+v, want the plugin's", spec.InitContainers)
	}
	ic := spec.InitContainers[0]
	if ic.Image != images.ServiceTag || strings.Join(ic.Command, " ") != "/poolparity-argo-plugin install "+argoPluginDir {
		t.Errorf("init container runs %s %v", ic.Image, ic.Command)
	}
	mounted := func(mounts []corev1.VolumeMount) bool {
		return slices.ContainsFunc(mounts, func(v corev1.VolumeMount) bool { return v.Name == "poolparity-plugins" && v.MountPath == argoPluginDir })
	}
	if !mounted(ic.VolumeMounts) || !mounted(c.VolumeMounts) {
		t.Errorf("the plugin volume is not mounted on %s in both containers", argoPluginDir)
	}
	var cm corev1.ConfigMap
	objectOf(t, m, "ConfigMap", argoConfig, &cm)
	var plugins []plugintypes.PluginItem
	if err := yaml.UnmarshalStrict([]byte(cm.Data["metricProviderPlugins"]), &plugins); err != nil {
		t.Fatalf("metricProviderPlugins: %v", err)
	}
	want := plugintypes.PluginItem{Name: "poolparity/judge", Location: "file://" + argoPluginDir + "/poolparity-argo-plugin", Args: []string{"-prometheus-endpoints=" + testProm}}
	if len(plugins) != 1 || plugins[0].Name != want.Name || plugins[0].Location != want.Location || !slices.Equal(plugins[0].Args, want.Args) {
		t.Errorf("metricProviderPlugins %+v, want [%+v]", plugins, want)
	}
	if strings.Contains(string(m), argoUpstreamImage) {
		t.Errorf("the upstream image is still in the manifest")
	}
}

// TestArgoManifestRefusesAChangedInstall: an install.yaml without what the step edits is an
// error naming it, not a half-local install.
func TestArgoManifestRefusesAChangedInstall(t *testing.T) {
	dep := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: argo-rollouts}\nspec:\n  template:\n    spec:\n      containers:\n        - {name: argo-rollouts, image: " + argoUpstreamImage + "}\n"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argo-rollouts-config}\n"
	tests := []struct {
		name, install, want string
	}{
		{"no upstream image", cm, "is not in install.yaml"},
		{"no ConfigMap", dep, "no ConfigMap argo-rollouts-config"},
		{"no Deployment", cm + "---\n" + strings.Replace(dep, "kind: Deployment", "kind: StatefulSet", 1), "no Deployment argo-rollouts"},
		{"another container name", cm + "---\n" + strings.Replace(dep, "{name: argo-rollouts,", "{name: controller,", 1), "no container argo-rollouts"},
		{"an edited object that is not YAML", "kind: ConfigMap\nmetadata: {name: [\n# " + argoUpstreamImage + "\n", "reading install.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := argoManifest([]byte(tt.install), images.ArgoRolloutsImage, images.ServiceTag, testProm)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := argoManifest([]byte(cm+"---\n"+dep), images.ArgoRolloutsImage, images.ServiceTag, testProm); err != nil {
		t.Errorf("the minimal install: %v", err)
	}
}

// TestArgoRollout decodes the step's Rollout strictly into Argo's own type: the judge's template
// as an analysis step after the 50% step, the tracks as pod labels, the pool mode, and the pod
// labels the chart's PodMonitor selects, with no Service beside it.
func TestArgoRollout(t *testing.T) {
	for _, mode := range []string{"pooled", "misuse-reset"} {
		t.Run(mode, func(t *testing.T) {
			y, err := argoRollout(images.ServiceTag, mode)
			if err != nil {
				t.Fatal(err)
			}
			full := fullnameOf(argoRelease)
			var ro v1alpha1.Rollout
			objectOf(t, y, "Rollout", full, &ro)
			c := ro.Spec.Strategy.Canary
			if c == nil || len(c.Steps) != 2 || c.Steps[0].SetWeight == nil || *c.Steps[0].SetWeight != 50 || c.Steps[1].Analysis == nil {
				t.Fatalf("canary steps %+v, want setWeight 50 then an analysis", c)
			}
			if tpl := c.Steps[1].Analysis.Templates; len(tpl) != 1 || tpl[0].TemplateName != full+"-judge" {
				t.Errorf("analysis templates %+v, want the chart's %s-judge", tpl, full)
			}
			if c.CanaryMetadata.Labels["poolparity.dev/gray-status"] != "true" || c.StableMetadata.Labels["poolparity.dev/gray-status"] != "false" {
				t.Errorf("track labels: canary %v, stable %v", c.CanaryMetadata.Labels, c.StableMetadata.Labels)
			}
			env := ro.Spec.Template.Spec.Containers[0].Env
			if !slices.ContainsFunc(env, func(e corev1.EnvVar) bool { return e.Name == "POOL_MODE" && e.Value == mode }) {
				t.Errorf("env %+v, want POOL_MODE=%s", env, mode)
			}
			if got := ro.Spec.Template.Labels; got["app.kubernetes.io/instance"] != argoRelease || got["app.kubernetes.io/component"] != "app" {
				t.Errorf("the pods' labels %v do not match the chart's PodMonitor (instance %s, component app)", got, argoRelease)
			}
			if n := len(yamlDocs(y)); n != 1 {
				t.Errorf("%d objects, want the Rollout alone: the chart's PodMonitor scrapes the pods, and a Service with poolparity.dev/track would scrape them twice", n)
			}
		})
	}
}

// TestArgoJudgeTemplate renders the chart with the step's values and decodes the judge's
// AnalysisTemplate strictly: the name the Rollout references, the judge's options.
func TestArgoJudgeTemplate(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	helm := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		testtool.SkipOrFail(t, "helm is not installed (hack/install-tools.sh helm): %v", err)
	}
	chart := filepath.Join(root, "deploy", "helm", "poolparity")
	args := append([]string{"template", argoRelease, chart, "-n", argoAppNS, "-f", filepath.Join(chart, "values-kind.yaml"),
		"-f", filepath.Join(root, "hack", "kindrun", "values-test.yaml")}, argoJudgeValues()...)
	out, err := exec.Command(helm, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var at v1alpha1.AnalysisTemplate
	objectOf(t, out, "AnalysisTemplate", fullnameOf(argoRelease)+"-judge", &at)
	m := at.Spec.Metrics[0]
	if m.Interval != "20s" || m.Provider.Plugin == nil {
		t.Fatalf("metric %+v", m)
	}
	var cfg map[string]string
	if err := yaml.Unmarshal(m.Provider.Plugin["poolparity/judge"], &cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"mode": "Counts", "slis": "heap-alloc-per-request,cpu-per-request", "window": "1m", "warmup": "20s", "selector": "job={{args.job}}",
		"step": "20s", "sample": "20s"}
	for k, v := range want {
		if cfg[k] != v {
			t.Errorf("plugin config %s=%q, want %q", k, cfg[k], v)
		}
	}
	objs, err := kube.DecodeObjects(out)
	if err != nil {
		t.Fatal(err)
	}
	var podMonitor bool
	for _, u := range objs {
		if k := u.GetKind(); k == "Deployment" || k == "HorizontalPodAutoscaler" {
			t.Errorf("the release renders %s %s: the Rollout is its only service", k, u.GetName())
		}
		podMonitor = podMonitor || u.GetKind() == "PodMonitor"
		if u.GetKind() == "ServiceMonitor" && u.GetLabels()["app.kubernetes.io/component"] == "" {
			t.Errorf("the release renders the ServiceMonitor %s: the Rollout's pods are scraped by the PodMonitor", u.GetName())
		}
	}
	if !podMonitor {
		t.Error("no PodMonitor: a pod Argo relabels in place would keep its old track for minutes")
	}
}

// TestYAMLDocs splits streams as install.yaml and the step's templates write them.
func TestYAMLDocs(t *testing.T) {
	tests := []struct {
		name, in string
		kinds    []string
	}{
		{"separators before and between", "---\nkind: A\n---\nkind: B\n", []string{"A", "B"}},
		{"no leading separator, an empty document", "kind: A\n---\n\n---\nkind: \"B\"\n", []string{"A", "B"}},
		{"a nested kind is not the document's", "metadata:\n  kind: X\n", []string{""}},
		{"a separator with a comment", "kind: A\n--- # next\nkind: B\n", []string{"A", "B"}},
		{"nothing", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var kinds []string
			for _, d := range yamlDocs([]byte(tt.in)) {
				kinds = append(kinds, docKind(d))
			}
			if !slices.Equal(kinds, tt.kinds) {
				t.Errorf("kinds %q, want %q", kinds, tt.kinds)
			}
		})
	}
}

// rolloutObj is a Rollout with the given status fields, at generation 3.
func rolloutObj(status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "r", "generation": int64(3)}, "status": status}}
	return u
}

// TestRolloutState reads Rollout statuses as Argo writes them.
func TestRolloutState(t *testing.T) {
	tests := []struct {
		name            string
		status          map[string]any
		prev            string
		promoted, abort bool
		step            int64
	}{
		{"a promoted revision", map[string]any{"phase": "Healthy", "currentPodHash": "b", "stableRS": "b", "observedGeneration": "3", "currentStepIndex": int64(2)}, "a", true, false, 2},
		{"the old revision, not yet observed", map[string]any{"phase": "Healthy", "currentPodHash": "a", "stableRS": "a", "observedGeneration": "2"}, "a", false, false, -1},
		{"observed, still the previous stable", map[string]any{"phase": "Healthy", "currentPodHash": "a", "stableRS": "a", "observedGeneration": "3"}, "a", false, false, -1},
		{"the canary at its analysis", map[string]any{"phase": "Paused", "currentPodHash": "b", "stableRS": "a", "observedGeneration": "3", "currentStepIndex": int64(1)}, "a", false, false, 1},
		{"aborted", map[string]any{"phase": "Degraded", "currentPodHash": "b", "stableRS": "a", "observedGeneration": "3", "abort": true, "message": "RolloutAborted: metric parity failed"}, "a", false, true, -1},
		{"no status yet", nil, "", false, false, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := rolloutStateOf(rolloutObj(tt.status))
			if s.promoted(tt.prev) != tt.promoted || s.Aborted != tt.abort || s.Step != tt.step {
				t.Errorf("state %+v: promoted %v aborted %v step %d, want %v %v %d", s, s.promoted(tt.prev), s.Aborted, s.Step, tt.promoted, tt.abort, tt.step)
			}
		})
	}
}

// TestAnalysisOf reads an AnalysisRun's measurements and the plugin's verdicts.
func TestAnalysisOf(t *testing.T) {
	ms := func(pairs ...string) []any {
		var out []any
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, map[string]any{"phase": pairs[i], "metadata": map[string]any{"verdict": pairs[i+1]}})
		}
		return out
	}
	tests := []struct {
		name, phase, counts string
		status              map[string]any
	}{
		{"evidence then a PASS", "Successful", "NO DATA x2, PASS x1",
			map[string]any{"phase": "Successful", "metricResults": []any{map[string]any{"name": "parity", "measurements": ms("Inconclusive", "NO DATA", "Inconclusive", "NO DATA", "Successful", "PASS")}}}},
		{"a FAIL", "Failed", "FAIL x1", map[string]any{"phase": "Failed", "metricResults": []any{map[string]any{"measurements": ms("Failed", "FAIL")}}}},
		{"an Error has no verdict", "Running", "Error x1", map[string]any{"phase": "Running", "metricResults": []any{map[string]any{"measurements": []any{map[string]any{"phase": "Error"}}}}}},
		{"nothing measured", "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			phase, got := analysisOf(rolloutObj(tt.status))
			if phase != tt.phase || verdictCounts(got) != tt.counts {
				t.Errorf("got %s %q, want %s %q", phase, verdictCounts(got), tt.phase, tt.counts)
			}
		})
	}
}

// TestAnalysisLine: a canary that outlasts the step's bound is reported with its AnalysisRun's
// verdicts and the reasons of the judge's last measurement.
func TestAnalysisLine(t *testing.T) {
	m := func(verdict, reasons string) map[string]any {
		return map[string]any{"phase": "Inconclusive", "metadata": map[string]any{"verdict": verdict, "reasons": reasons}}
	}
	for _, tt := range []struct {
		name   string
		status map[string]any
		want   string
	}{
		{"still measuring", map[string]any{"phase": "Running", "metricResults": []any{map[string]any{"measurements": []any{
			m("NO DATA", "too little traffic"), m("NO DATA", "CPU per request has no data (worst not ruled out 1.4)")}}}},
			"AnalysisRun r Running (NO DATA x2); the judge's last measurement: NO DATA CPU per request has no data (worst not ruled out 1.4)"},
		{"no measurement yet", map[string]any{"phase": "Pending"}, "AnalysisRun r Pending ()"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := analysisLine(rolloutObj(tt.status)); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestTrackOfPods reads the track of each promoted pod from up{...} by pod, as Prometheus answers.
func TestTrackOfPods(t *testing.T) {
	up := func(pod, g string) *model.Sample {
		return &model.Sample{Metric: model.Metric{"pod": model.LabelValue(pod), "gray_status": model.LabelValue(g)}, Value: 1}
	}
	tests := []struct {
		name string
		v    model.Vector
		want bool
	}{
		{"both promoted pods relabelled", model.Vector{up("r-b-1", "false"), up("r-b-2", "false"), up("r-a-1", "false")}, true},
		{"one still on the gray track", model.Vector{up("r-b-1", "true"), up("r-b-2", "false")}, false},
		{"one pod not scraped yet", model.Vector{up("r-b-1", "false")}, false},
		{"a pod with both series (mid-relabel)", model.Vector{up("r-b-1", "false"), up("r-b-1", "true"), up("r-b-2", "false")}, false},
		{"nothing", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tracks := trackOfPods(tt.v, "r-b-")
			if got := allOnTrack(tracks, 2, "false"); got != tt.want {
				t.Errorf("tracks %v: all on false %v, want %v", tracks, got, tt.want)
			}
		})
	}
}

// TestArgoTable prints a run's times and verdicts.
func TestArgoTable(t *testing.T) {
	r := ArgoResult{Controller: "Argo Rollouts v1.10.1", Runs: []ArgoRun{
		{Name: "argo-pooled", Modes: "unpooled -> pooled", Want: "Promoted", Got: "Promoted", After: 250 * time.Second, Analysis: "Successful",
			Measurements: []measurement{{Phase: "Inconclusive", Verdict: "NO DATA"}, {Phase: "Successful", Verdict: "PASS"}}, PodRelabel: time.Second, SeriesRelabel: 7 * time.Second, OK: true},
	}}
	got := r.Table(nil)
	for _, want := range []string{"argo-pooled", "4m10s", "Successful", "1s", "7s", "NO DATA x1, PASS x1", "as expected"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

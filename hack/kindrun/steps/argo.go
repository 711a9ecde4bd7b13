package steps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/images"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// Argo Rollouts in the offline cluster: the controller of github.com/argoproj/argo-rollouts
// (hack/tools/argo-rollouts), from the module's own manifests/install.yaml, with the metric
// plugin poolparity/judge (app/cmd/poolparity-argo-plugin) copied out of the service image by an
// init container, as docs/argo-rollouts.md installs it.
const (
	argoModule = "github.com/argoproj/argo-rollouts"
	// argoNS is the controller's namespace: install.yaml's ClusterRoleBinding names it.
	argoNS         = "argo-rollouts"
	argoController = "argo-rollouts"
	argoConfig     = "argo-rollouts-config"
	// argoUpstreamImage is the controller's image in install.yaml.
	argoUpstreamImage = "quay.io/argoproj/argo-rollouts:latest"
	// argoPluginDir is where the init container installs the plugin and the controller reads it.
	argoPluginDir = "/poolparity-plugins"
	// argoWorkDir is the upstream image's working directory: the controller keeps its plugins
	// in plugin-bin there (install.yaml mounts a volume on it).
	argoWorkDir = "/home/argo-rollouts"
	// argoAppNS holds the Rollout, its release (Redis, rules, ServiceMonitor, the judge's
	// AnalysisTemplate) and its load: its own namespace, so that the step can run beside the
	// PoolCanaries' and Flagger's.
	argoAppNS = "poolparity-argo"
	// argoRelease is the chart's release in argoAppNS, with no tracks of its own: its
	// ServiceMonitor's job, and the Rollout's instance label.
	argoRelease = "argo"
	// argoReplicas is the Rollout's: one canary pod and one stable pod at 50%.
	argoReplicas = 2
	// argoWatch bounds one canary of the step. The judge samples the 20s rules every 20 s and
	// decides on its fifth sample at the earliest; the rollouts end after 2-4 minutes, and the
	// bound leaves room for a slow verdict (as flaggerWatch); one that outlasts it is reported
	// with the judge's last measurement.
	argoWatch = 15 * time.Minute
	// argoRelabelWatch bounds the wait for the promoted pods' series to carry gray_status="false".
	argoRelabelWatch = 4 * time.Minute
)

// argoJudgeValues are the chart values of the release in argoAppNS: no tracks (the Rollout is
// the service), a PodMonitor over the Rollout's pods (their track follows the pod label Argo
// changes in place at promotion), its rules and the plugin's AnalysisTemplate for the judge's
// options as the canary step's PoolCanaries use them: Counts, heap bytes allocated and CPU
// per request (the misuse shows in CPU), 20 s of warm-up, the 20s rules sampled every 20 s, a
// measurement every 20 s. The threshold family is the 1m one (values-test.yaml).
func argoJudgeValues() []string {
	return []string{
		"--set", "tracks.stable.enabled=false", "--set", "tracks.gray.enabled=false",
		"--set", "serviceMonitor.kind=PodMonitor",
		"--set", "redis.resources.requests.cpu=10m",
		"--set", "controller.argoRollouts.plugin.step=20s",
		"--set", "controller.argoRollouts.plugin.sample=20s",
		"--set", "controller.argoRollouts.plugin.enabled=true",
		"--set", "controller.argoRollouts.plugin.mode=Counts",
		"--set", `controller.argoRollouts.plugin.slis=heap-alloc-per-request\,cpu-per-request`,
		"--set", "controller.argoRollouts.plugin.window=1m",
		"--set", "controller.argoRollouts.plugin.warmup=20s",
		"--set", "controller.argoRollouts.plugin.interval=20s",
		"--set", "controller.argoRollouts.plugin.count=42", // 14 minutes of measurements, inside argoWatch
	}
}

// argoPlugins is the argo-rollouts-config ConfigMap's metricProviderPlugins: the judge at the
// file the init container installs, allowed to read only prom (the cluster's Prometheus).
func argoPlugins(prom string) string {
	return "- name: poolparity/judge\n" +
		"  location: file://" + argoPluginDir + "/poolparity-argo-plugin\n" +
		"  args:\n" +
		"    - -prometheus-endpoints=" + prom + "\n"
}

// argoManifest edits Argo's install.yaml for the offline cluster: the controller image built
// here (never pulled), the plugin's ConfigMap, and the init container that copies the plugin out
// of pluginImage onto a volume the controller reads. It fails when an object or the upstream
// image it edits is not there (a changed install.yaml must not install half-local).
func argoManifest(install []byte, controllerImage, pluginImage, prom string) ([]byte, error) {
	if !bytes.Contains(install, []byte(argoUpstreamImage)) {
		return nil, fmt.Errorf("image %s is not in install.yaml", argoUpstreamImage)
	}
	var out bytes.Buffer
	seen := map[string]bool{}
	// Only the two objects edited are decoded: the CRDs are 39,000 lines of YAML.
	for _, doc := range yamlDocs(install) {
		edit := docKind(doc)
		if edit != "ConfigMap" && edit != "Deployment" {
			out.WriteString("---\n")
			out.Write(doc)
			continue
		}
		objs, err := kube.DecodeObjects(doc)
		if err != nil {
			return nil, fmt.Errorf("reading install.yaml: %w", err)
		}
		for _, u := range objs {
			switch {
			case u.GetKind() == "ConfigMap" && u.GetName() == argoConfig:
				if err := unstructured.SetNestedStringMap(u.Object, map[string]string{"metricProviderPlugins": argoPlugins(prom)}, "data"); err != nil {
					return nil, err
				}
				seen["ConfigMap"] = true
			case u.GetKind() == "Deployment" && u.GetName() == argoController:
				if err := argoDeployment(u, controllerImage, pluginImage); err != nil {
					return nil, fmt.Errorf("the Deployment %s: %w", argoController, err)
				}
				seen["Deployment"] = true
			}
			y, err := yaml.Marshal(u.Object)
			if err != nil {
				return nil, err
			}
			out.WriteString("---\n")
			out.Write(y)
		}
	}
	for _, k := range []string{"ConfigMap", "Deployment"} {
		if !seen[k] {
			return nil, fmt.Errorf("install.yaml has no %s %s", k, map[string]string{"ConfigMap": argoConfig, "Deployment": argoController}[k])
		}
	}
	return out.Bytes(), nil
}

// yamlDocs splits a multi-document YAML stream at its "---" lines, dropping empty documents.
func yamlDocs(b []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		if len(bytes.TrimSpace(cur.Bytes())) > 0 {
			docs = append(docs, bytes.Clone(cur.Bytes()))
		}
		cur.Reset()
	}
	for line := range bytes.Lines(b) {
		if t := bytes.TrimRight(line, "\r\n"); bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) {
			flush()
			continue
		}
		cur.Write(line)
	}
	flush()
	return docs
}

// docKind is the top-level kind of one YAML document, read from its "kind:" line ("" when it
// has none there).
func docKind(doc []byte) string {
	for line := range bytes.Lines(doc) {
		if k, ok := bytes.CutPrefix(line, []byte("kind:")); ok {
			return strings.Trim(string(bytes.TrimSpace(k)), `"'`)
		}
	}
	return ""
}

// argoDeployment edits the controller's Deployment: its image, its working directory (the
// upstream image's, where plugin-bin is mounted), the plugin volume and the init container.
func argoDeployment(u *unstructured.Unstructured, controllerImage, pluginImage string) error {
	spec, ok, err := unstructured.NestedMap(u.Object, "spec", "template", "spec")
	if err != nil || !ok {
		return fmt.Errorf("no pod spec (%v)", err)
	}
	containers, _ := spec["containers"].([]any)
	i := slices.IndexFunc(containers, func(c any) bool {
		m, _ := c.(map[string]any)
		return m["name"] == argoController
	})
	if i < 0 {
		return fmt.Errorf("no container %s", argoController)
	}
	c := containers[i].(map[string]any)
	if c["image"] != argoUpstreamImage {
		return fmt.Errorf("container %s runs %v, want %s", argoController, c["image"], argoUpstreamImage)
	}
	mount := map[string]any{"name": "poolparity-plugins", "mountPath": argoPluginDir, "readOnly": true}
	c["image"], c["imagePullPolicy"], c["workingDir"] = controllerImage, "IfNotPresent", argoWorkDir
	mounts, _ := c["volumeMounts"].([]any)
	c["volumeMounts"] = append(mounts, mount)
	// 2 cores hold the control plane, Prometheus and the tracks.
	c["resources"] = map[string]any{"requests": map[string]any{"cpu": "20m", "memory": "64Mi"}, "limits": map[string]any{"ephemeral-storage": "1Gi"}}
	volumes, _ := spec["volumes"].([]any)
	spec["volumes"] = append(volumes, map[string]any{"name": "poolparity-plugins", "emptyDir": map[string]any{}})
	spec["initContainers"] = []any{map[string]any{
		"name": "poolparity-plugin", "image": pluginImage, "imagePullPolicy": "IfNotPresent",
		"command":      []any{"/poolparity-argo-plugin", "install", argoPluginDir},
		"volumeMounts": []any{map[string]any{"name": "poolparity-plugins", "mountPath": argoPluginDir}},
		"securityContext": map[string]any{
			"runAsNonRoot": true, "runAsUser": int64(999), "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
			"capabilities": map[string]any{"drop": []any{"ALL"}}, "seccompProfile": map[string]any{"type": "RuntimeDefault"},
		},
	}}
	return unstructured.SetNestedMap(u.Object, spec, "spec", "template", "spec")
}

// argoRolloutTmpl is the Rollout of the reference service: the poolparity image, the basic
// canary (replica counts: one canary pod of two at 50%), the judge's AnalysisTemplate as an
// analysis step, and the track as the pods' label poolparity.dev/gray-status (canaryMetadata,
// stableMetadata), which the chart's PodMonitor makes the series' gray_status. The chart's
// split Service, which the load targets, selects the pods of both.
const argoRolloutTmpl = `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: {{.Name}}
spec:
  replicas: {{.Replicas}}
  revisionHistoryLimit: 2
  selector:
    matchLabels: {app.kubernetes.io/name: poolparity, app.kubernetes.io/instance: {{.Release}}, app.kubernetes.io/component: app}
  strategy:
    canary:
      canaryMetadata:
        labels: {poolparity.dev/gray-status: "true"}
      stableMetadata:
        labels: {poolparity.dev/gray-status: "false"}
      steps:
        - setWeight: 50
        - analysis:
            templates: [{templateName: {{.Template}}}]
            args: [{name: job, value: {{.Release}}}]
  template:
    metadata:
      labels: {app.kubernetes.io/name: poolparity, app.kubernetes.io/instance: {{.Release}}, app.kubernetes.io/component: app}
    spec:
{{template "servicePod" .}}`

// argoRollout renders the step's Rollout running poolMode.
func argoRollout(image, poolMode string) ([]byte, error) {
	full := fullnameOf(argoRelease)
	return renderWithServicePod("Rollout", argoRolloutTmpl, map[string]any{
		"Name": full, "Release": argoRelease, "Replicas": argoReplicas, "Template": full + "-judge",
		"Image": image, "PoolMode": poolMode, "Redis": full + "-redis:6379", "RedisSecret": full + "-redis",
	})
}

// rolloutState is the part of a Rollout's status the step follows.
type rolloutState struct {
	Phase    string `json:"phase"`
	Step     int64  `json:"step"` // status.currentStepIndex (-1 when none)
	Aborted  bool   `json:"aborted"`
	Current  string `json:"current_hash"` // status.currentPodHash: the newest revision's
	Stable   string `json:"stable_hash"`  // status.stableRS
	Message  string `json:"message,omitempty"`
	Observed bool   `json:"observed"` // status.observedGeneration is the spec's
}

// rolloutStateOf reads a Rollout's status.
func rolloutStateOf(u *unstructured.Unstructured) rolloutState {
	s := rolloutState{Step: -1}
	s.Phase, _, _ = unstructured.NestedString(u.Object, "status", "phase")
	if i, ok, _ := unstructured.NestedInt64(u.Object, "status", "currentStepIndex"); ok {
		s.Step = i
	}
	s.Aborted, _, _ = unstructured.NestedBool(u.Object, "status", "abort")
	s.Current, _, _ = unstructured.NestedString(u.Object, "status", "currentPodHash")
	s.Stable, _, _ = unstructured.NestedString(u.Object, "status", "stableRS")
	s.Message, _, _ = unstructured.NestedString(u.Object, "status", "message")
	og, _, _ := unstructured.NestedString(u.Object, "status", "observedGeneration")
	s.Observed = og == fmt.Sprint(u.GetGeneration())
	return s
}

// promoted reports whether a revision other than prev (the stable one before the update, "" for
// none) is the stable one and the Rollout is Healthy.
func (s rolloutState) promoted(prev string) bool {
	return s.Observed && !s.Aborted && s.Phase == "Healthy" && s.Current != "" && s.Current != prev && s.Current == s.Stable
}

// String is the state as the progress log shows it.
func (s rolloutState) String() string {
	out := fmt.Sprintf("%s step %d stable %s current %s", s.Phase, s.Step, s.Stable, s.Current)
	if s.Aborted {
		out += " aborted"
	}
	if s.Message != "" {
		out += ": " + s.Message
	}
	return out
}

// measurement is one measurement of the judge's AnalysisRun.
type measurement struct {
	Phase   string `json:"phase"`
	Verdict string `json:"verdict"` // the plugin's metadata
	Reasons string `json:"reasons,omitempty"`
}

// analysisOf reads an AnalysisRun's phase and its first metric's measurements.
func analysisOf(u *unstructured.Unstructured) (string, []measurement) {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	results, _, _ := unstructured.NestedSlice(u.Object, "status", "metricResults")
	var ms []measurement
	for _, r := range results {
		rm, _ := r.(map[string]any)
		raw, _, _ := unstructured.NestedSlice(rm, "measurements")
		for _, x := range raw {
			xm, _ := x.(map[string]any)
			m := measurement{}
			m.Phase, _, _ = unstructured.NestedString(xm, "phase")
			m.Verdict, _, _ = unstructured.NestedString(xm, "metadata", "verdict")
			m.Reasons, _, _ = unstructured.NestedString(xm, "metadata", "reasons")
			ms = append(ms, m)
		}
	}
	return phase, ms
}

// verdictCounts summarises measurements as "NO DATA x5, PASS x1".
func verdictCounts(ms []measurement) string {
	var order []string
	n := map[string]int{}
	for _, m := range ms {
		v := m.Verdict
		if v == "" {
			v = m.Phase
		}
		if n[v] == 0 {
			order = append(order, v)
		}
		n[v]++
	}
	parts := make([]string, len(order))
	for i, v := range order {
		parts[i] = fmt.Sprintf("%s x%d", v, n[v])
	}
	return strings.Join(parts, ", ")
}

// trackOfPods maps each pod whose name starts with prefix to the gray_status its series carry in
// v (a vector of up{...} by pod); a pod with two values (mid-relabel) gets them joined.
func trackOfPods(v model.Vector, prefix string) map[string]string {
	out := map[string]string{}
	for _, s := range v {
		pod := string(s.Metric["pod"])
		if !strings.HasPrefix(pod, prefix) {
			continue
		}
		g := string(s.Metric["gray_status"])
		if old, ok := out[pod]; ok && old != g {
			g = strings.Join(slices.Sorted(slices.Values([]string{old, g})), "+")
		}
		out[pod] = g
	}
	return out
}

// allOnTrack reports whether n pods are in tracks, each on track alone.
func allOnTrack(tracks map[string]string, n int, track string) bool {
	if len(tracks) != n {
		return false
	}
	for _, g := range tracks {
		if g != track {
			return false
		}
	}
	return true
}

// ArgoRun is one canary of the Argo Rollout, watched to its end.
type ArgoRun struct {
	Name  string `json:"name"`
	Modes string `json:"pool_modes"` // stable -> canary
	Want  string `json:"want"`       // Promoted or Aborted
	Got   string `json:"got"`
	// After is from the template's update to the promotion or the abort.
	After time.Duration `json:"after_ns"`
	// Analysis is the judge's AnalysisRun phase and its measurements' verdicts.
	Analysis     string        `json:"analysis"`
	Measurements []measurement `json:"measurements"`
	// PodRelabel and SeriesRelabel are, after a promotion, how long until the promoted pods
	// carried poolparity.dev/gray-status=false, and until their series carried
	// gray_status="false" in Prometheus (0 when not promoted).
	PodRelabel    time.Duration `json:"pod_relabel_ns,omitempty"`
	SeriesRelabel time.Duration `json:"series_relabel_ns,omitempty"`
	// GrayGone is, after a promotion, how long until the 1m rules the judge reads had no gray
	// track left (the last one's rate window past): the next canary starts only then.
	GrayGone time.Duration  `json:"gray_gone_ns,omitempty"`
	States   []rolloutState `json:"states"`
	OK       bool           `json:"ok"`
}

// ArgoResult is the argo step's canaries.
type ArgoResult struct {
	Controller string    `json:"controller"`
	Runs       []ArgoRun `json:"runs"`
}

// Table implements harness.Result.
func (r ArgoResult) Table(harness.Results) string {
	var w strings.Builder
	fmt.Fprintf(&w, "\n== Argo Rollouts (%s): the judge's metric plugin, %d pods, basic canary at 50%%\n", r.Controller, argoReplicas)
	fmt.Fprintf(&w, "  %-14s %-24s %-9s %-9s %8s  %-10s %9s %9s %9s  %s\n", "canary", "pool modes", "want", "got", "after", "analysis", "pod lbl", "series", "no gray", "measurements")
	for _, c := range r.Runs {
		rel := func(d time.Duration) string {
			if d == 0 {
				return "-"
			}
			return d.Round(time.Second).String()
		}
		fmt.Fprintf(&w, "  %-14s %-24s %-9s %-9s %8s  %-10s %9s %9s %9s  %s%s\n", c.Name, c.Modes, c.Want, c.Got, c.After.Round(time.Second), c.Analysis,
			rel(c.PodRelabel), rel(c.SeriesRelabel), rel(c.GrayGone), verdictCounts(c.Measurements), okText(c.OK))
	}
	return w.String()
}

// argoStep installs Argo Rollouts with the judge's plugin and rolls the reference service out
// twice: a pooled canary over an unpooled stable (promoted on the plugin's Successful), then a
// pool misuse, misuse-reset, over the promoted pooled stable (aborted on its Failed). At its end
// it deletes its namespaces.
type argoStep struct{}

// argoDef declares the "argo" step.
func argoDef() harness.Def {
	return harness.Def{Step: argoStep{}, Needs: []string{"env", "helm-install"}, Default: true, Beside: SideBySide,
		Doc: "Argo Rollouts with the judge's metric plugin: a pooled canary promoted, a pool misuse aborted, and the promoted pods' track relabel timed."}
}

// Name implements Step.
func (argoStep) Name() string { return "argo" }

// Run implements Step.
func (s argoStep) Run(ctx context.Context, env *harness.Env) (harness.Outcome, error) {
	k, err := env.Kube()
	if err != nil {
		return harness.Outcome{}, err
	}
	// The Rollout's pods, Redis and the controller hold CPU and memory requests the steps after
	// this one need.
	return thenDeleteNamespaces(ctx, env, k, "argo", func() (harness.Outcome, error) { return s.run(ctx, env, k) }, argoAppNS, argoNS)
}

// run is the step's work, before the clean-up.
func (argoStep) run(ctx context.Context, env *harness.Env, k *kube.Kube) (harness.Outcome, error) {
	prom := fmt.Sprintf("http://%s.%s.svc:9090", promServiceOf(env), monitoringNS)
	controller, err := installArgo(ctx, env, k, prom)
	if err != nil {
		return harness.Outcome{}, err
	}
	args := append(append(append([]string{}, argoJudgeValues()...), rulesInNamespace(argoAppNS)...), chartValues(env)...)
	if err := helmInstallIn(ctx, env, argoAppNS, argoRelease, nil, args...); err != nil {
		return harness.Outcome{}, err
	}
	ps, err := openProm(ctx, env, k)
	if err != nil {
		return harness.Outcome{}, err
	}
	defer ps.stop()
	o := outcome[ArgoResult]{Result: ArgoResult{Controller: controller}}
	// The first revision has no canary: it is stable at once.
	first := ArgoRun{Name: "initial", Modes: "-> unpooled", Want: "Promoted"}
	if first, err = rollArgo(ctx, env, k, first, "unpooled", ""); err != nil {
		return o.done(), err
	}
	stable := first.States[len(first.States)-1].Stable
	full := fullnameOf(argoRelease)
	job, err := startLoadIn(ctx, env, k, argoAppNS, argoRelease, fmt.Sprintf("http://%s:80", full), 2*argoWatch+argoRelabelWatch, rolloutLoadRPS)
	if err != nil {
		return o.done(), err
	}
	defer func() {
		if err := k.DeleteJob(context.WithoutCancel(ctx), argoAppNS, job); err != nil {
			env.Logf("%v", err)
		}
	}()
	runs := []struct {
		run  ArgoRun
		mode string
	}{
		{ArgoRun{Name: "argo-pooled", Modes: "unpooled -> pooled", Want: "Promoted"}, "pooled"},
		{ArgoRun{Name: "argo-misuse", Modes: "pooled -> misuse-reset", Want: "Aborted"}, "misuse-reset"},
	}
	var failed []string
	for _, r := range runs {
		run, err := rollArgo(ctx, env, k, r.run, r.mode, stable)
		if err == nil && run.Got == "Promoted" {
			stable = run.States[len(run.States)-1].Stable
			run, err = timeRelabel(ctx, env, k, ps.q, run)
		}
		o.Result.Runs = append(o.Result.Runs, run)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", run.Name, err))
			break
		}
		if !run.OK {
			failed = append(failed, fmt.Sprintf("%s ended %s, want %s (analysis %s: %s)", run.Name, run.Got, run.Want, run.Analysis, verdictCounts(run.Measurements)))
			break
		}
	}
	env.Print(o.Result.Table(nil))
	if len(failed) > 0 {
		return o.done(), errors.New(strings.Join(failed, "; "))
	}
	o.Note = "promoted the pooled canary on the judge's Successful, aborted the pool misuse on its Failed"
	return o.done(), nil
}

// installArgo applies Argo's install.yaml with the controller image built here and the judge's
// plugin, and waits for its CRDs and its controller.
func installArgo(ctx context.Context, env *harness.Env, k *kube.Kube, prom string) (string, error) {
	dir, err := images.ModuleDir(ctx, env, argoModule+"@"+images.ArgoRolloutsVersion)
	if err != nil {
		return "", err
	}
	install, err := os.ReadFile(filepath.Join(dir, "manifests", "install.yaml"))
	if err != nil {
		return "", fmt.Errorf("reading Argo Rollouts' install.yaml: %w", err)
	}
	m, err := argoManifest(install, images.ArgoRolloutsImage, images.ServiceImage(env), prom)
	if err != nil {
		return "", err
	}
	nsYAML := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + argoNS + "\n"
	if err := k.Apply(ctx, []byte(nsYAML), ""); err != nil {
		return "", fmt.Errorf("creating namespace %s: %w", argoNS, err)
	}
	if err := k.Apply(ctx, m, argoNS); err != nil {
		return "", fmt.Errorf("applying Argo Rollouts' install.yaml: %w", err)
	}
	if err := k.WaitEstablished(ctx, time.Minute, "rollouts.argoproj.io", "analysistemplates.argoproj.io", "analysisruns.argoproj.io"); err != nil {
		return "", err
	}
	if err := k.WaitDeployment(ctx, argoNS, argoController, 3*time.Minute); err != nil {
		return "", err
	}
	return "Argo Rollouts " + images.ArgoRolloutsVersion + " (manifests/install.yaml)", nil
}

// rolloutResource and analysisRunResource are Argo's resources.
func rolloutResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}
}

func analysisRunResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "analysisruns"}
}

// rollArgo sets the Rollout's pool mode (creating it the first time) and follows it until a
// revision other than prev (the stable one before) is promoted or the rollout aborts; it records how long that took and the judge's
// AnalysisRun.
func rollArgo(ctx context.Context, env *harness.Env, k *kube.Kube, r ArgoRun, mode, prev string) (ArgoRun, error) {
	y, err := argoRollout(images.ServiceImage(env), mode)
	if err != nil {
		return r, err
	}
	start := time.Now()
	if err := k.Apply(ctx, y, argoAppNS); err != nil {
		return r, fmt.Errorf("applying the Rollout (%s): %w", mode, err)
	}
	name := fullnameOf(argoRelease)
	last := ""
	err = kube.Until(ctx, 2*time.Second, argoWatch, "the Rollout's "+mode+" revision to be promoted or aborted", func(ctx context.Context) (bool, error) {
		u, err := k.Dyn.Resource(rolloutResource()).Namespace(argoAppNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := rolloutStateOf(u)
		if seen := s.String(); seen != last {
			env.Logf("%s (%s): %s", r.Name, r.Modes, seen)
			r.States = append(r.States, s)
			last = seen
		}
		switch {
		case s.Aborted:
			r.Got = "Aborted"
		case s.promoted(prev):
			r.Got = "Promoted"
		default:
			return false, nil
		}
		r.After = time.Since(start)
		return true, nil
	})
	if err != nil {
		if ctx.Err() == nil && r.Name != "initial" {
			err = fmt.Errorf("%w; %s", err, argoStuck(ctx, k, start))
		}
		return r, err
	}
	r.OK = r.Got == r.Want
	if r.Name == "initial" {
		return r, nil
	}
	newest, err := newestAnalysis(ctx, k, start)
	if err != nil {
		return r, err
	}
	r.Analysis, r.Measurements = analysisOf(newest)
	want := map[string]string{"Promoted": "Successful", "Aborted": "Failed"}[r.Want]
	r.OK = r.OK && r.Analysis == want
	env.Logf("%s: AnalysisRun %s %s (%s)", r.Name, newest.GetName(), r.Analysis, verdictCounts(r.Measurements))
	return r, nil
}

// newestAnalysis returns the newest AnalysisRun of the step's namespace, which must have been
// created since start (the revision's).
func newestAnalysis(ctx context.Context, k *kube.Kube, start time.Time) (*unstructured.Unstructured, error) {
	runs, err := k.Dyn.Resource(analysisRunResource()).Namespace(argoAppNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing AnalysisRuns: %w", err)
	}
	var newest *unstructured.Unstructured
	for i := range runs.Items {
		if u := &runs.Items[i]; newest == nil || u.GetCreationTimestamp().After(newest.GetCreationTimestamp().Time) {
			newest = u
		}
	}
	if newest == nil || newest.GetCreationTimestamp().Time.Before(start.Add(-time.Second)) {
		return nil, fmt.Errorf("no AnalysisRun of this revision")
	}
	return newest, nil
}

// argoStuck says why a revision begun at start is neither promoted nor aborted: its AnalysisRun's
// phase, the judge's verdicts so far and its last measurement's reasons.
func argoStuck(ctx context.Context, k *kube.Kube, start time.Time) string {
	u, err := newestAnalysis(ctx, k, start)
	if err != nil {
		return err.Error()
	}
	return analysisLine(u)
}

// analysisLine is an AnalysisRun in one line: its name, phase, the judge's verdicts so far, and
// the verdict and reasons of its last measurement.
func analysisLine(u *unstructured.Unstructured) string {
	phase, ms := analysisOf(u)
	out := fmt.Sprintf("AnalysisRun %s %s (%s)", u.GetName(), phase, verdictCounts(ms))
	if n := len(ms); n > 0 {
		out += fmt.Sprintf("; the judge's last measurement: %s %s", ms[n-1].Verdict, ms[n-1].Reasons)
	}
	return out
}

// timeRelabel measures, after r's promotion, how long until the promoted revision's pods carry
// poolparity.dev/gray-status=false, until their series in Prometheus carry gray_status="false"
// (the chart's ServiceMonitor reads the pod label at every scrape), and until the rules the
// judge reads have no gray track left: the next canary's evidence cannot mix the promoted pods
// into its gray track.
func timeRelabel(ctx context.Context, env *harness.Env, k *kube.Kube, q promread.Querier, r ArgoRun) (ArgoRun, error) {
	promotedAt := time.Now()
	hash := r.States[len(r.States)-1].Current
	prefix := fullnameOf(argoRelease) + "-" + hash + "-"
	sel := "rollouts-pod-template-hash=" + hash
	expr := fmt.Sprintf(`up{namespace=%q,job=%q}`, argoAppNS, argoRelease)
	err := kube.Until(ctx, time.Second, argoRelabelWatch, "the promoted pods' series to carry gray_status=\"false\"", func(ctx context.Context) (bool, error) {
		if r.PodRelabel == 0 {
			pods, err := k.CS.CoreV1().Pods(argoAppNS).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return false, err
			}
			tracks := map[string]string{}
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil {
					tracks[p.Name] = p.Labels["poolparity.dev/gray-status"]
				}
			}
			if allOnTrack(tracks, argoReplicas, "false") {
				r.PodRelabel = max(time.Since(promotedAt), time.Millisecond)
			}
		}
		v, err := promread.Vector(ctx, q, expr, time.Now())
		if err != nil {
			return false, nil // Prometheus answers again next time
		}
		if allOnTrack(trackOfPods(v, prefix), argoReplicas, "false") {
			r.SeriesRelabel = max(time.Since(promotedAt), time.Millisecond)
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return r, err
	}
	// The judge reads the 1m rules: a gray track stays there until the relabelled pods' last
	// gray samples leave the rate window.
	gray := fmt.Sprintf(`job_gray_status:http_requests:rate1m{namespace=%q,job=%q,gray_status="true"}`, argoAppNS, argoRelease)
	err = kube.Until(ctx, time.Second, argoRelabelWatch, "the 1m rules to have no gray track", func(ctx context.Context) (bool, error) {
		v, err := promread.Vector(ctx, q, gray, time.Now())
		if err != nil {
			return false, nil
		}
		if len(v) == 0 {
			r.GrayGone = time.Since(promotedAt)
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return r, err
	}
	env.Logf("%s: the promoted pods carried gray-status=false %s after the promotion, their series %s after; the rules had no gray track %s after", r.Name,
		r.PodRelabel.Round(time.Second), r.SeriesRelabel.Round(time.Second), r.GrayGone.Round(time.Second))
	return r, nil
}

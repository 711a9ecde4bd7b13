package deploy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	argov1 "github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/poolparity/poolparity/deploy/deploytest"
	"github.com/poolparity/poolparity/deploy/render"
	"github.com/poolparity/poolparity/internal/judge"
	"github.com/poolparity/poolparity/internal/judge/argoplugin"
	"github.com/poolparity/poolparity/internal/testenv"
	"github.com/poolparity/poolparity/internal/testtool"
)

// judgeExamples are the documented examples of the judge's callers, each shown whole in its
// document.
var judgeExamples = map[string]string{
	"deploy/flagger/canary-judge.yaml":       "docs/flagger.md",
	"deploy/argo-rollouts/analysis-web.yaml": "docs/argo-rollouts.md",
}

// judgeObjects renders the chart with the judge and the plugin's AnalysisTemplate and returns
// the objects they add: the judge's (component=judge), its helm test pod and the
// AnalysisTemplate <fullname>-judge.
func judgeObjects(t *testing.T, extra ...string) []*unstructured.Unstructured {
	t.Helper()
	args := append([]string{"--set", "judge.enabled=true", "--set", "judge.serviceMonitor.enabled=true",
		"--set", "controller.argoRollouts.plugin.enabled=true"}, extra...)
	objs, err := deploytest.Decode(deploytest.HelmTemplate(t, render.ValueSet{Name: "default"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	var ours []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetLabels()["app.kubernetes.io/component"] == "judge" || strings.HasSuffix(o.GetName(), "-test-judge") ||
			o.GetKind() == "AnalysisTemplate" && strings.HasSuffix(o.GetName(), "-judge") {
			ours = append(ours, o)
		}
	}
	return ours
}

func TestJudgeChartObjects(t *testing.T) {
	objs := judgeObjects(t)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	want := map[string]int{"Deployment": 1, "Service": 1, "ServiceMonitor": 1, "NetworkPolicy": 1, "Pod": 1, "AnalysisTemplate": 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("rendered %d %s, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
	t.Run("the judge is off by default", func(t *testing.T) {
		all, err := deploytest.Decode(deploytest.HelmTemplate(t, render.ValueSet{Name: "default"}))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range all {
			if o.GetLabels()["app.kubernetes.io/component"] == "judge" || o.GetKind() == "AnalysisTemplate" {
				t.Errorf("default values render %s %s", o.GetKind(), o.GetName())
			}
		}
	})
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
				t.Fatal(err)
			}
			spec := d.Spec.Template.Spec
			if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
				t.Error("the judge mounts a service account token: it never calls the API server")
			}
			env := map[string]string{}
			for _, e := range spec.Containers[0].Env {
				env[e.Name] = e.Value
			}
			for k, v := range map[string]string{"PROMETHEUS_ENDPOINTS": "http://prometheus-operated.monitoring.svc:9090", "JUDGE_TIMEOUT": "8s", "ADDR": ":8080", "HEALTH_ADDR": ":8081",
				"NAMESPACES": render.Namespace} {
				if env[k] != v {
					t.Errorf("env %s=%q, want %q", k, env[k], v)
				}
			}
			if got := spec.Containers[0].Command; len(got) != 1 || got[0] != "/poolparity-judge" {
				t.Errorf("command %v", got)
			}
		case "AnalysisTemplate":
			checkPluginTemplate(t, o)
		}
	}
}

// checkPluginTemplate checks the plugin's AnalysisTemplate against Argo's own rules for a
// metric (utils/analysis.ValidateMetric's counts and limits), and that the plugin accepts its
// config once Argo has substituted the args.
func checkPluginTemplate(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	var at argov1.AnalysisTemplate
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &at); err != nil {
		t.Fatal(err)
	}
	if len(at.Spec.Metrics) != 1 {
		t.Fatalf("%d metrics, want 1", len(at.Spec.Metrics))
	}
	m := at.Spec.Metrics[0]
	count, fail, succ, inconc := m.Count.IntValue(), m.FailureLimit.IntValue(), m.ConsecutiveSuccessLimit.IntValue(), m.InconclusiveLimit.IntValue()
	if fail != 0 || succ != 1 || inconc != count || count < fail+succ || m.Interval == "" {
		t.Errorf("count %d failureLimit %d consecutiveSuccessLimit %d inconclusiveLimit %d interval %q: want one FAIL to fail, one PASS to succeed, NO DATA allowed up to count", count, fail, succ, inconc, m.Interval)
	}
	raw, ok := m.Provider.Plugin[argoplugin.Name]
	if !ok {
		t.Fatalf("no %s plugin config: %v", argoplugin.Name, m.Provider.Plugin)
	}
	// Argo substitutes {{args.job}} before the plugin reads the config.
	m.Provider.Plugin[argoplugin.Name] = json.RawMessage(strings.ReplaceAll(string(raw), "{{args.job}}", "poolparity"))
	run := &argov1.AnalysisRun{}
	run.Namespace = "shop"
	req, err := argoplugin.Request(run, m)
	if err != nil {
		t.Fatalf("the plugin refuses the chart's config %s: %v", raw, err)
	}
	if req.MatchLabels["job"] != "poolparity" || req.Mode != "Counts" || req.Window != "5m" {
		t.Errorf("the chart's config reads as %+v", req)
	}
}

// TestJudgePluginSampling: the plugin's step and sample values reach its config, and the plugin
// reads them as the 20 s sampling.
func TestJudgePluginSampling(t *testing.T) {
	for _, o := range judgeObjects(t, "--set", "controller.argoRollouts.plugin.step=20s", "--set", "controller.argoRollouts.plugin.sample=20s") {
		if o.GetKind() != "AnalysisTemplate" {
			continue
		}
		var at argov1.AnalysisTemplate
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &at); err != nil {
			t.Fatal(err)
		}
		run := &argov1.AnalysisRun{}
		run.Namespace = "shop"
		req, err := argoplugin.Request(run, at.Spec.Metrics[0])
		if err != nil {
			t.Fatal(err)
		}
		if req.Step != 20*time.Second || req.Sample != "20s" {
			t.Errorf("step %s sample %q, want 20s and 20s", req.Step, req.Sample)
		}
		return
	}
	t.Fatal("no AnalysisTemplate rendered")
}

// TestJudgeChartObjectsOnAPIServer creates the judge's objects (its NetworkPolicy too) and the plugin's AnalysisTemplate
// on a real kube-apiserver with Argo Rollouts' AnalysisTemplate CRD, Flagger's and the Prometheus
// operator's, with strict field validation, and dry-runs the judge's pod and its helm test pod in
// a namespace that enforces the restricted Pod Security Standard. The documented examples of the
// judge's callers (judgeExamples) are created there too.
func TestJudgeChartObjectsOnAPIServer(t *testing.T) {
	objs := judgeObjects(t, "--set", "controller.argoRollouts.plugin.warmup=90s", "--set", "controller.argoRollouts.plugin.slis=latency-p99")
	crds, err := testenv.RolloutToolCRDs()
	if err != nil {
		testtool.SkipOrFail(t, "unavailable: %v", err)
	}
	env := testenv.Start(t, testenv.WithCRDPaths(crds...), testenv.WithPrometheusOperatorCRDs())
	t.Logf("envtest started in %s", env.StartDuration.Round(time.Millisecond))
	ctx := context.Background()
	if err := env.CreateNamespace(ctx, render.Namespace, testenv.RestrictedLabels()); err != nil {
		t.Fatal(err)
	}
	created := map[string]bool{}
	for _, o := range objs {
		obj := o.DeepCopy()
		if obj.GetNamespace() == "" {
			obj.SetNamespace(render.Namespace)
		}
		if obj.GetKind() == "Pod" {
			var pod corev1.Pod
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &pod); err != nil {
				t.Fatal(err)
			}
			if err := env.DryRunCreate(ctx, &pod); err != nil {
				t.Errorf("the judge's helm test pod is not admitted under restricted PodSecurity: %v", err)
			}
			continue
		}
		if err := env.Client.Create(ctx, obj, client.FieldValidation("Strict")); err != nil {
			t.Errorf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
			continue
		}
		created[obj.GetKind()] = true
		if obj.GetKind() == "Deployment" {
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &d); err != nil {
				t.Fatal(err)
			}
			if err := env.DryRunCreate(ctx, testenv.PodFromTemplate("judge-template", render.Namespace, d.Spec.Template)); err != nil {
				t.Errorf("the judge's pod template is not admitted under restricted PodSecurity: %v", err)
			}
		}
	}
	for _, kind := range []string{"Deployment", "Service", "ServiceMonitor", "NetworkPolicy", "AnalysisTemplate"} {
		if !created[kind] {
			t.Errorf("the judge's %s was not created", kind)
		}
	}
	root := deploytest.Root(t)
	for _, ns := range []string{"img", "shop"} {
		if err := env.CreateNamespace(ctx, ns, nil); err != nil {
			t.Fatal(err)
		}
	}
	for file := range judgeExamples {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				t.Fatal(err)
			}
			objs, err := deploytest.Decode(b)
			if err != nil || len(objs) == 0 {
				t.Fatalf("decoding: %v (%d objects)", err, len(objs))
			}
			for _, o := range objs {
				if err := env.Client.Create(ctx, o, client.FieldValidation("Strict")); err != nil {
					t.Errorf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
				}
			}
		})
	}
}

// TestJudgeExamplesAreInTheDocs: each example is shown whole in its document, so that what a
// reader copies is what the API server admitted.
func TestJudgeExamplesAreInTheDocs(t *testing.T) {
	root := deploytest.Root(t)
	for file, doc := range judgeExamples {
		ex, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		md, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(md), "```yaml\n"+string(ex)+"```\n") {
			t.Errorf("%s does not show %s whole in a yaml block", doc, file)
		}
	}
}

func TestJudgeValuesSchemaRejectsBadValues(t *testing.T) {
	helm := deploytest.Tool(t, "helm")
	chart := deploytest.ChartDir(t)
	for _, tc := range []struct {
		name, set, want string
	}{
		{"two judge replicas", "judge.replicas=2", "judge/replicas"},
		{"no Prometheus endpoint for the judge", "judge.prometheus.endpoints=null", "judge/prometheus"},
		{"a judge endpoint with a password", "judge.prometheus.endpoints={http://a:b@p:9090}", "judge/prometheus/endpoints/0"},
		{"a judgement bound that is no duration", "judge.judgeTimeout=soon", "judge/judgeTimeout"},
		{"a misspelt judge key", "judge.replica=1", "judge"},
		{"a judge namespace that is no namespace name", "judge.namespaces={Shop}", "judge/namespaces/0"},
		{"every namespace beside a name", "judge.namespaces={*,shop}", "judge/namespaces"},
		{"a misspelt judge NetworkPolicy key", "judge.networkPolicy.ingressFrom=null", "judge/networkPolicy"},
		{"an unknown plugin mode", "controller.argoRollouts.plugin.mode=sequential", "controller/argoRollouts/plugin/mode"},
		{"a plugin count of 0", "controller.argoRollouts.plugin.count=0", "controller/argoRollouts/plugin/count"},
		{"a plugin warm-up that is no duration", "controller.argoRollouts.plugin.warmup=a while", "controller/argoRollouts/plugin/warmup"},
		{"a plugin step that is no duration", "controller.argoRollouts.plugin.step=20", "controller/argoRollouts/plugin/step"},
		{"a plugin sample that is no rule family", "controller.argoRollouts.plugin.sample=20 s", "controller/argoRollouts/plugin/sample"},
		{"a plugin Prometheus with a query", "controller.argoRollouts.plugin.prometheus=http://p:9090/?x=1", "controller/argoRollouts/plugin/prometheus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := render.Run(ctx, "", helm, render.HelmTemplateArgs(chart, render.ValueSet{Name: "default"}, "--set", tc.set)...)
			if err == nil || !strings.Contains(err.Error(), "values don't meet the specifications of the schema") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("helm template --set %s: %v, want a schema error at %s", tc.set, err, tc.want)
			}
		})
	}
}

// judgeEnv returns the judge container's environment of the rendered Deployment, values from
// fields as "fieldRef:<path>".
func judgeEnv(t *testing.T, objs []*unstructured.Unstructured) (map[string]string, *appsv1.Deployment) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			env[e.Name] = e.Value
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				env[e.Name] = "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
			}
		}
		return env, &d
	}
	t.Fatal("no judge Deployment")
	return nil, nil
}

// TestJudgeNamespaces: the judge answers for the release's namespace unless judge.namespaces
// lists others, and the binary's own parser accepts what the chart renders.
func TestJudgeNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"by default the release's namespace alone", nil, render.Namespace},
		{"the listed namespaces", []string{"--set", "judge.namespaces={img,shop}"}, "img,shop"},
		{"every namespace, asked for", []string{"--set", "judge.namespaces={*}"}, "*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, _ := judgeEnv(t, judgeObjects(t, tc.set...))
			if env["NAMESPACES"] != tc.want || env["POD_NAMESPACE"] != "fieldRef:metadata.namespace" {
				t.Fatalf("NAMESPACES=%q POD_NAMESPACE=%q, want %q and the pod's namespace", env["NAMESPACES"], env["POD_NAMESPACE"], tc.want)
			}
			if n, err := judge.ParseNamespaces(env["NAMESPACES"]); err != nil || n.String() != tc.want {
				t.Errorf("the judge reads NAMESPACES=%q as %v, %v", env["NAMESPACES"], n, err)
			}
		})
	}
}

// peer is a pod somewhere in the cluster, as a NetworkPolicy sees it.
type peer struct {
	namespace string
	labels    map[string]string
}

// admits says whether np lets p reach the selected pods' named port. It reads the peer kinds
// the chart renders (namespaceSelector, podSelector, both in one item); a namespace's labels
// are its kubernetes.io/metadata.name, as the API server sets it.
func admits(t *testing.T, np *networkingv1.NetworkPolicy, port string, p peer) bool {
	t.Helper()
	for _, rule := range np.Spec.Ingress {
		if !slices.ContainsFunc(rule.Ports, func(pp networkingv1.NetworkPolicyPort) bool { return pp.Port != nil && pp.Port.String() == port }) {
			continue
		}
		for _, from := range rule.From {
			if from.IPBlock != nil {
				t.Fatalf("an ipBlock peer %v: the judge's policy names pods and namespaces", from.IPBlock)
			}
			nsOK := p.namespace == np.Namespace
			if from.NamespaceSelector != nil {
				nsOK = match(t, from.NamespaceSelector, map[string]string{"kubernetes.io/metadata.name": p.namespace})
			}
			if nsOK && (from.PodSelector == nil || match(t, from.PodSelector, p.labels)) {
				return true
			}
		}
	}
	return false
}

// TestJudgeNetworkPolicy: on by default, the judge's NetworkPolicy selects its pods and lets
// only Flagger's and Argo's controllers (and this release's helm test) call the hooks, and only
// Prometheus (and the helm test) scrape the metrics port; no tenant's pod reaches either.
func TestJudgeNetworkPolicy(t *testing.T) {
	objs := judgeObjects(t)
	var np *networkingv1.NetworkPolicy
	var testPod peer
	for _, o := range objs {
		switch o.GetKind() {
		case "NetworkPolicy":
			np = new(networkingv1.NetworkPolicy)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, np); err != nil {
				t.Fatal(err)
			}
		case "Pod":
			testPod = peer{render.Namespace, o.GetLabels()}
		}
	}
	if np == nil {
		t.Fatal("no NetworkPolicy for the judge by default")
	}
	_, d := judgeEnv(t, objs)
	if !match(t, &np.Spec.PodSelector, d.Spec.Template.Labels) || match(t, &np.Spec.PodSelector, map[string]string{"app.kubernetes.io/name": "poolparity", "app.kubernetes.io/instance": render.Release, "app.kubernetes.io/component": "app"}) {
		t.Errorf("the policy selects %v: want the judge's pods (%v) and no other", np.Spec.PodSelector, d.Spec.Template.Labels)
	}
	ports := map[string]bool{}
	for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = true
	}
	if !ports["http"] || !ports["health"] || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("container ports %v, policy types %v: want the policy's ports http and health, Ingress", ports, np.Spec.PolicyTypes)
	}
	other := func(ns string, l ...string) peer {
		m := map[string]string{}
		for i := 0; i+1 < len(l); i += 2 {
			m[l[i]] = l[i+1]
		}
		return peer{ns, m}
	}
	for _, tc := range []struct {
		what           string
		p              peer
		hooks, metrics bool
	}{
		{"Flagger's controller", other("flagger-system", "app.kubernetes.io/name", "flagger"), true, false},
		{"Argo Rollouts' controller (the web provider)", other("argo-rollouts", "app.kubernetes.io/name", "argo-rollouts"), true, false},
		{"Prometheus", other("monitoring", "app.kubernetes.io/name", "prometheus"), false, true},
		{"this release's helm test pod", testPod, true, true},
		{"a tenant's pod", other("shop", "app", "shop"), false, false},
		{"a tenant's pod labelled as a helm test of this release", other("shop", "app.kubernetes.io/name", "poolparity", "app.kubernetes.io/instance", render.Release, "app.kubernetes.io/component", "test"), false, false},
		{"the service's own pods, beside the judge", other(render.Namespace, "app.kubernetes.io/name", "poolparity", "app.kubernetes.io/instance", render.Release, "app.kubernetes.io/component", "app"), false, false},
		{"another release's helm test pod", other(render.Namespace, "app.kubernetes.io/name", "poolparity", "app.kubernetes.io/instance", "other", "app.kubernetes.io/component", "test"), false, false},
	} {
		t.Run(tc.what, func(t *testing.T) {
			if got := admits(t, np, "http", tc.p); got != tc.hooks {
				t.Errorf("hooks port: admitted %v, want %v", got, tc.hooks)
			}
			if got := admits(t, np, "health", tc.p); got != tc.metrics {
				t.Errorf("metrics port: admitted %v, want %v", got, tc.metrics)
			}
		})
	}
	t.Run("the peers are values", func(t *testing.T) {
		objs := judgeObjects(t, "--set-json", `judge.networkPolicy.hooksFrom=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"delivery"}}}]`,
			"--set-json", "judge.networkPolicy.metricsFrom=[]")
		for _, o := range objs {
			if o.GetKind() != "NetworkPolicy" {
				continue
			}
			var np networkingv1.NetworkPolicy
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &np); err != nil {
				t.Fatal(err)
			}
			if !admits(t, &np, "http", other("delivery")) || admits(t, &np, "http", other("flagger-system")) || admits(t, &np, "health", other("monitoring")) {
				t.Errorf("hooksFrom [delivery], metricsFrom none: %+v", np.Spec.Ingress)
			}
			return
		}
		t.Fatal("no NetworkPolicy")
	})
	t.Run("turned off", func(t *testing.T) {
		for _, o := range judgeObjects(t, "--set", "judge.networkPolicy.enabled=false") {
			if o.GetKind() == "NetworkPolicy" {
				t.Errorf("judge.networkPolicy.enabled=false still renders %s", o.GetName())
			}
		}
	})
}

// match says whether sel selects set.
func match(t *testing.T, sel *metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatalf("selector %v: %v", sel, err)
	}
	return s.Matches(labels.Set(set))
}

package controller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/deploy/deploytest"
	"github.com/poolparity/poolparity/deploy/render"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/controller"
	"github.com/poolparity/poolparity/internal/parity/promread"
	"github.com/poolparity/poolparity/internal/testenv"
	"github.com/poolparity/poolparity/internal/testtool"
)

// TestChartControllerObjectsOnAPIServer renders the chart with the controller, the Argo Rollouts
// AnalysisTemplate and the Flagger MetricTemplates enabled, and creates every object those
// options add on a real kube-apiserver that has the PoolCanary, Argo Rollouts and Flagger CRDs,
// with strict field validation: an unknown or misplaced field fails.
func TestChartControllerObjectsOnAPIServer(t *testing.T) {
	rendered := deploytest.HelmTemplate(t, render.ValueSet{Name: "controller"},
		"--set", "controller.enabled=true",
		"--set", "controller.argoRollouts.enabled=true",
		"--set", "controller.argoRollouts.count=5",
		"--set", `controller.argoRollouts.matchers=service="poolparity"`,
		"--set", "controller.flagger.enabled=true",
	)
	objs, err := deploytest.Decode(rendered)
	if err != nil {
		t.Fatal(err)
	}
	var ours []*unstructured.Unstructured
	for _, o := range objs {
		if isControllerObject(o) {
			ours = append(ours, o)
		}
	}
	kinds := map[string]int{}
	for _, o := range ours {
		kinds[o.GetKind()]++
	}
	// One MetricTemplate per parity check (files/parity-checks.yaml: each catalog SLI with a
	// parity rule and an alert: the latency ratio of each alerted quantile, the error delta, the
	// CPU ratio, the response bytes ratio). Three ClusterRoles: the controller's, and the
	// PoolCanary view and edit rules aggregated into the default user roles.
	checks := 0
	for _, s := range catalog.Default().SLIs {
		if s.ParityRule != "" && s.Alert != nil {
			checks++
		}
	}
	want := map[string]int{"Deployment": 1, "Service": 1, "ServiceAccount": 1, "ClusterRole": 3, "ClusterRoleBinding": 1,
		"Role": 1, "RoleBinding": 1, "AnalysisTemplate": 1, "MetricTemplate": checks}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("rendered %d %s objects from the controller options, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}

	crds, err := testenv.RolloutToolCRDs()
	if err != nil {
		testtool.SkipOrFail(t, "unavailable: %v", err)
	}
	env := testenv.Start(t, testenv.WithCRDPaths(append([]string{crdDir(t)}, crds...)...), testenv.WithPrometheusOperatorCRDs())
	t.Logf("envtest with the PoolCanary, Argo Rollouts and Flagger CRDs started in %s", env.StartDuration.Round(time.Millisecond))
	ctx := context.Background()
	if err := env.CreateNamespace(ctx, render.Namespace, testenv.RestrictedLabels()); err != nil {
		t.Fatal(err)
	}
	for _, o := range ours {
		obj := o.DeepCopy()
		if ns, _ := env.Client.IsObjectNamespaced(obj); ns && obj.GetNamespace() == "" {
			obj.SetNamespace(render.Namespace)
		}
		if err := env.Client.Create(ctx, obj, client.FieldValidation("Strict")); err != nil {
			t.Errorf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
			continue
		}
		if obj.GetKind() == "Deployment" {
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &d); err != nil {
				t.Fatal(err)
			}
			pod := testenv.PodFromTemplate("controller-template", render.Namespace, d.Spec.Template)
			if err := env.DryRunCreate(ctx, pod); err != nil {
				t.Errorf("the controller's pod template is not admitted under restricted PodSecurity: %v", err)
			}
		}
	}

	// The Flagger example (a Canary and the ServiceMonitor that gives its series their track) is
	// admitted as it is documented.
	t.Run("deploy/flagger/canary.yaml", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(deploytest.Root(t), "deploy", "flagger", "canary.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := deploytest.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := env.CreateNamespace(ctx, "img", nil); err != nil {
			t.Fatal(err)
		}
		kinds := map[string]bool{}
		for _, o := range objs {
			kinds[o.GetKind()] = true
			if err := env.Client.Create(ctx, o, client.FieldValidation("Strict")); err != nil {
				t.Errorf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
		if !kinds["Canary"] || !kinds["ServiceMonitor"] {
			t.Errorf("the example holds %v, want a Canary and a ServiceMonitor", kinds)
		}
	})

	// The PoolCanary that Chart.yaml shows on Artifact Hub is admitted as it is written.
	t.Run("Chart.yaml's artifacthub.io/crdsExamples", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(deploytest.ChartDir(t), "Chart.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var chart struct {
			Annotations map[string]string `json:"annotations"`
		}
		if err := yaml.Unmarshal(b, &chart); err != nil {
			t.Fatal(err)
		}
		var examples []map[string]any
		if err := yaml.Unmarshal([]byte(chart.Annotations["artifacthub.io/crdsExamples"]), &examples); err != nil || len(examples) == 0 {
			t.Fatalf("artifacthub.io/crdsExamples: %v (%d examples)", err, len(examples))
		}
		if err := env.CreateNamespace(ctx, "artifacthub", nil); err != nil {
			t.Fatal(err)
		}
		for _, e := range examples {
			o := &unstructured.Unstructured{Object: e}
			o.SetNamespace("artifacthub")
			if err := env.Client.Create(ctx, o, client.FieldValidation("Strict")); err != nil {
				t.Errorf("creating the example %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	})

	if !t.Failed() {
		t.Run("the chart's RBAC lets the controller run a rollout as its ServiceAccount", func(t *testing.T) {
			runAsServiceAccount(t, env, "")
		})
	}

	// The templates carry the chart's alert thresholds and the parity rules of the alert window.
	for _, o := range ours {
		switch o.GetKind() {
		case "AnalysisTemplate":
			metrics, _, _ := unstructured.NestedSlice(o.Object, "spec", "metrics")
			var queries []string
			for _, m := range metrics {
				q, _, _ := unstructured.NestedString(m.(map[string]any), "provider", "prometheus", "query")
				queries = append(queries, q)
			}
			// The latency ratio counts only above the effect-size floor, as in the alert; every query
			// reads the service the AnalysisRun's args name, then the extra matchers.
			const m = `{namespace="{{args.namespace}}",job="{{args.job}}",service="poolparity"}`
			want := `job:http_request_duration_seconds_p99:gray_over_stable_rate5m` + m + ` * (job:http_request_duration_seconds_p99:gray_minus_stable_rate5m` + m + ` > bool 0.005)`
			if !slices.Contains(queries, want) {
				t.Errorf("AnalysisTemplate queries %q: want the p99 parity rule with the args, the matchers and the floor, %q", queries, want)
			}
			args, _, _ := unstructured.NestedSlice(o.Object, "spec", "args")
			if fmt.Sprint(args) != fmt.Sprintf("[map[name:namespace value:%s] map[name:job value:%s]]", render.Namespace, render.Release) {
				t.Errorf("AnalysisTemplate args %v: want namespace and job, defaulting to the release's", args)
			}
		case "MetricTemplate":
			q, _, _ := unstructured.NestedString(o.Object, "spec", "query")
			if !strings.HasPrefix(q, "job:") || !strings.Contains(q, `gray_`) || !strings.Contains(q, `{namespace="{{ namespace }}"}`) ||
				(strings.Contains(q, "duration_seconds") && !strings.Contains(q, `gray_minus_stable_rate5m{namespace="{{ namespace }}"} > bool 0.005`)) {
				t.Errorf("MetricTemplate %s query %q: want a parity rule with Flagger's namespace variable", o.GetName(), q)
			}
		}
	}
}

// isControllerObject reports whether a rendered object comes from the controller options.
func isControllerObject(o *unstructured.Unstructured) bool {
	switch o.GetKind() {
	case "AnalysisTemplate", "MetricTemplate":
		return true
	}
	return o.GetLabels()["app.kubernetes.io/component"] == "controller"
}

// TestChartControllerNamespacedRBAC renders the controller with controller.watchNamespace (the
// controller-namespaced value set) and checks that the controller's rules become a Role and a
// RoleBinding in that namespace, the same rules as the cluster-wide ClusterRole (one source: the
// +kubebuilder:rbac markers), with nothing cluster-scoped left. On a real kube-apiserver it then
// runs a promotion in that namespace as the chart's ServiceAccount, with the manager's cache
// confined to it as WATCH_NAMESPACE confines it, and finds the ServiceAccount refused anywhere else.
func TestChartControllerNamespacedRBAC(t *testing.T) {
	const watched = "shop" // ci/controller-namespaced-values.yaml's controller.watchNamespace
	var scoped, wide render.ValueSet
	for _, vs := range render.ValueSets {
		switch vs.Name {
		case "controller-namespaced":
			scoped = vs
		case "controller":
			wide = vs
		}
	}
	if scoped.Name == "" || wide.Name == "" {
		t.Fatal("render.ValueSets has no controller and controller-namespaced value sets")
	}
	objs, err := deploytest.Decode(deploytest.HelmTemplate(t, scoped))
	if err != nil {
		t.Fatal(err)
	}
	wideObjs, err := deploytest.Decode(deploytest.HelmTemplate(t, wide))
	if err != nil {
		t.Fatal(err)
	}
	var ours []*unstructured.Unstructured
	where := map[string]string{} // kind/name -> namespace
	var roleRules, clusterRules []any
	for _, o := range objs {
		if !isControllerObject(o) {
			continue
		}
		ours = append(ours, o)
		where[o.GetKind()+"/"+o.GetName()] = o.GetNamespace()
		if o.GetKind() == "Role" && o.GetName() == render.Release+"-controller" {
			roleRules, _, _ = unstructured.NestedSlice(o.Object, "rules")
		}
	}
	for _, o := range wideObjs {
		if o.GetKind() == "ClusterRole" && o.GetName() == render.Release+"-controller" {
			clusterRules, _, _ = unstructured.NestedSlice(o.Object, "rules")
		}
	}
	want := map[string]string{
		"ServiceAccount/poolparity-controller":              render.Namespace,
		"Deployment/poolparity-controller":                  render.Namespace,
		"Service/poolparity-controller-metrics":             render.Namespace,
		"Role/poolparity-controller":                        watched,
		"RoleBinding/poolparity-controller":                 watched,
		"Role/poolparity-controller-leader-election":        render.Namespace,
		"RoleBinding/poolparity-controller-leader-election": render.Namespace,
	}
	if fmt.Sprint(where) != fmt.Sprint(want) {
		t.Errorf("controller objects (kind/name: namespace) %v, want %v: no ClusterRole or ClusterRoleBinding", where, want)
	}
	if len(roleRules) == 0 || fmt.Sprint(roleRules) != fmt.Sprint(clusterRules) {
		t.Errorf("the Role's rules %v differ from the cluster-wide ClusterRole's %v", roleRules, clusterRules)
	}

	env := testenv.Start(t, testenv.WithCRDPaths(crdDir(t)))
	t.Logf("envtest with the PoolCanary CRD started in %s", env.StartDuration.Round(time.Millisecond))
	ctx := context.Background()
	for _, ns := range []string{render.Namespace, watched} {
		if err := env.CreateNamespace(ctx, ns, testenv.RestrictedLabels()); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range ours {
		obj := o.DeepCopy()
		if obj.GetNamespace() == "" {
			obj.SetNamespace(render.Namespace)
		}
		if err := env.Client.Create(ctx, obj, client.FieldValidation("Strict")); err != nil {
			t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}

	t.Run("the Role lets the controller run a rollout in its namespace", func(t *testing.T) {
		runAsServiceAccount(t, env, watched)
	})
	t.Run("the ServiceAccount may not touch PoolCanaries or Deployments elsewhere", func(t *testing.T) {
		c, err := client.New(serviceAccountConfig(env), client.Options{Scheme: testScheme(t)})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			what string
			list client.ObjectList
			opts []client.ListOption
		}{
			{"PoolCanaries of every namespace", &v1alpha1.PoolCanaryList{}, nil},
			{"PoolCanaries of the release namespace", &v1alpha1.PoolCanaryList{}, []client.ListOption{client.InNamespace(render.Namespace)}},
			{"Deployments of kube-system", &appsv1.DeploymentList{}, []client.ListOption{client.InNamespace("kube-system")}},
		} {
			if err := c.List(ctx, tc.list, tc.opts...); !apierrors.IsForbidden(err) {
				t.Errorf("listing %s: %v, want Forbidden", tc.what, err)
			}
		}
		if err := c.List(ctx, &v1alpha1.PoolCanaryList{}, client.InNamespace(watched)); err != nil {
			t.Errorf("listing PoolCanaries of %s: %v, want allowed", watched, err)
		}
	})
}

// serviceAccountConfig is env's admin config impersonating the chart's controller ServiceAccount.
func serviceAccountConfig(env *testenv.Env) *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + render.Namespace + ":" + render.Release + "-controller",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + render.Namespace, "system:authenticated"},
	}
	return cfg
}

// runAsServiceAccount runs the manager (with leader election in the release namespace) as the
// chart's controller ServiceAccount, bound by the rendered RBAC only, through a whole
// promotion: the generated roles must cover PoolCanaries, their status, Deployments, Events
// and the Lease. With watch set, the manager's cache holds that namespace only (as the binary's
// WATCH_NAMESPACE makes it) and the canary runs there; empty, it runs in a new namespace.
func runAsServiceAccount(t *testing.T, env *testenv.Env, watch string) {
	cfg := serviceAccountConfig(env)
	scheme := testScheme(t)
	opts := ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                true,
		LeaderElectionID:              "poolparity-controller.poolparity.dev",
		LeaderElectionNamespace:       render.Namespace,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if watch != "" {
		byObject, err := controller.CacheByObject()
		if err != nil {
			t.Fatal(err)
		}
		opts.Cache = cache.Options{ByObject: byObject, DefaultNamespaces: map[string]cache.Config{watch: {}}}
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The canary's fake Prometheus is the one allowed endpoint, as PROMETHEUS_ENDPOINTS makes it.
	fake := newFakeProm(t, "good")
	endpoints, err := promread.NewClients([]string{fake.srv.URL}, false, promread.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := &controller.PoolCanaryReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("poolparity-controller"), Prometheus: endpoints}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := watch
	if ns == "" {
		ns = newNamespace(t, c, "rbac")
	}
	pc := newCanary(ns, "shop", fake.srv.URL)
	pc.Spec.Steps = []int32{50}
	if err := c.Create(ctx, pc); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "phase Promoted under the chart's RBAC", func() (bool, string) {
		cur := getCanary(ctx, t, c, ns, "shop")
		return cur.Status.Phase == v1alpha1.PhasePromoted, fmt.Sprintf("phase %q, conditions %v", cur.Status.Phase, cur.Status.Conditions)
	})
	waitEvent(ctx, t, c, ns, "shop", v1alpha1.ReasonPromoted)
	var lease coordinationv1.Lease
	if err := c.Get(ctx, types.NamespacedName{Namespace: render.Namespace, Name: "poolparity-controller.poolparity.dev"}, &lease); err != nil {
		t.Errorf("the leader election Lease: %v", err)
	}
}

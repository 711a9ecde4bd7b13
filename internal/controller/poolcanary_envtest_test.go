package controller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/controller"
	"github.com/poolparity/poolparity/internal/controller/controllertest"
	"github.com/poolparity/poolparity/internal/profdiff/profdifftest"
	"github.com/poolparity/poolparity/internal/testenv"
)

// crdDir is the chart's crds/ folder, where hack/gen-controller.sh writes the PoolCanary CRD.
func crdDir(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("..", "..", "deploy", "helm", "poolparity", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPoolCanaryOnAPIServer runs the reconciler in a manager against a real kube-apiserver and
// etcd (envtest), with a fake Prometheus per scenario. There is no kube-controller-manager, so
// Deployments never get pods: the tests read the replica counts the controller sets.
func TestPoolCanaryOnAPIServer(t *testing.T) {
	scheme := testScheme(t)
	env := testenv.Start(t, testenv.WithScheme(scheme), testenv.WithCRDPaths(crdDir(t)), testenv.WithGatewayAPICRDs())
	t.Logf("envtest control plane started in %s", env.StartDuration.Round(time.Millisecond))

	reg := prometheus.NewRegistry()
	// Pods in envtest never run: the rollback profiles reach the pprof servers a test
	// registers for a pod (namespace/name) here, and other pods at their IP, as in a cluster.
	var pprofAddrs sync.Map
	controllertest.Start(t, env.Config, scheme, reg, func(r *controller.PoolCanaryReconciler) {
		r.PodAddr = func(pod *corev1.Pod, port int32) string {
			if a, ok := pprofAddrs.Load(pod.Namespace + "/" + pod.Name); ok {
				return a.(string)
			}
			return controller.PodIPAddr(pod, port)
		}
	})
	ctx := context.Background()
	c := env.Client

	t.Run("the CRD refuses invalid canaries", func(t *testing.T) {
		ns := newNamespace(t, c, "invalid")
		pc := newCanary(ns, "bad", "http://127.0.0.1:1")
		pc.Spec.Steps = []int32{50, 10}
		if err := c.Create(ctx, pc); err == nil || !strings.Contains(err.Error(), "steps must be increasing") {
			t.Errorf("decreasing steps: got %v, want a validation error", err)
		}
		pc = newCanary(ns, "bad", "http://127.0.0.1:1")
		pc.Spec.Analysis.SLIs[0].MaxDelta = ptr.To("0.1")
		if err := c.Create(ctx, pc); err == nil || !strings.Contains(err.Error(), "at most one of") {
			t.Errorf("two thresholds on one SLI: got %v, want a validation error", err)
		}
		pc = newCanary(ns, "bad", "http://127.0.0.1:1")
		pc.Spec.Analysis.SLIs[0].Name = "p99"
		if err := c.Create(ctx, pc); err == nil || !strings.Contains(err.Error(), "latency-p99") {
			t.Errorf("an SLI name outside the catalog: got %v, want a validation error listing the catalog's IDs", err)
		}
		// A ratio limit of 0 has no margin on the judges' log scale: once admitted, it passed a
		// +20% gray.
		for _, zero := range []string{"0", "0.0", "0.000"} {
			pc = newCanary(ns, "bad", "http://127.0.0.1:1")
			pc.Spec.Analysis.SLIs[0].MaxRatio = ptr.To(zero)
			if err := c.Create(ctx, pc); err == nil || !strings.Contains(err.Error(), "maxRatio") {
				t.Errorf("maxRatio %q: got %v, want a validation error naming maxRatio", zero, err)
			}
		}
	})

	t.Run("each track runs its own Go runtime settings, which the CRD checks", func(t *testing.T) {
		ns := newNamespace(t, c, "goruntime")
		for _, bad := range []struct {
			name, want string
			g          v1alpha1.GoRuntime
		}{
			{"a GOGC that is no number", "gogc", v1alpha1.GoRuntime{GOGC: "fast"}},
			{"a GOMEMLIMIT without a unit the runtime knows", "gomemlimit", v1alpha1.GoRuntime{GOMEMLIMIT: "200M"}},
			{"bytes and a percent at once", "set gomemlimit or gomemlimitPercent, not both", v1alpha1.GoRuntime{GOMEMLIMIT: "200MiB", GOMEMLIMITPercent: 90}},
			{"a percent above 100", "gomemlimitPercent", v1alpha1.GoRuntime{GOMEMLIMITPercent: 150}},
		} {
			pc := newCanary(ns, "bad", "http://127.0.0.1:1")
			pc.Spec.GoRuntime = &v1alpha1.TrackGoRuntimes{Gray: &bad.g}
			if err := c.Create(ctx, pc); err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("%s: got %v, want a validation error naming %s", bad.name, err, bad.want)
			}
		}

		pc := newCanary(ns, "tuned", "http://127.0.0.1:1")
		pc.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}
		pc.Spec.GoRuntime = &v1alpha1.TrackGoRuntimes{
			Stable: &v1alpha1.GoRuntime{GOGC: "100", GOMEMLIMIT: "200MiB"},
			Gray:   &v1alpha1.GoRuntime{GOGC: "400", GOMEMLIMITPercent: 90},
		}
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		want := map[string]map[string]string{
			"stable": {"GOGC": "100", "GOMEMLIMIT": "200MiB"},
			"gray":   {"GOGC": "400", "GOMEMLIMIT": "241591910"},
		}
		waitFor(t, 20*time.Second, "each track's GOGC and GOMEMLIMIT on its Deployment", func() (bool, string) {
			got := map[string]map[string]string{}
			for track := range want {
				var d appsv1.Deployment
				if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "tuned-" + track}, &d); err != nil {
					return false, err.Error()
				}
				got[track] = map[string]string{}
				for _, e := range d.Spec.Template.Spec.Containers[0].Env {
					if e.Name == "GOGC" || e.Name == "GOMEMLIMIT" {
						got[track][e.Name] = e.Value
					}
				}
			}
			return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprint(got)
		})

		// A percent needs a memory limit: TracksReady turns False and names the container.
		pc = newCanary(ns, "nolimit", "http://127.0.0.1:1")
		pc.Spec.GoRuntime = &v1alpha1.TrackGoRuntimes{Gray: &v1alpha1.GoRuntime{GOMEMLIMITPercent: 90}}
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "TracksReady False naming the container without a memory limit", func() (bool, string) {
			cond := meta.FindStatusCondition(getCanary(ctx, t, c, ns, "nolimit").Status.Conditions, v1alpha1.ConditionTracksReady)
			if cond == nil {
				return false, "no TracksReady condition"
			}
			return cond.Status == metav1.ConditionFalse && strings.Contains(cond.Message, `needs a memory limit on container "poolparity"`), cond.Message
		})
	})

	t.Run("the CRD checks the sequential, warm-up and baseline settings", func(t *testing.T) {
		ns := newNamespace(t, c, "seqcrd")
		pc := newCanary(ns, "ok", "http://127.0.0.1:1")
		pc.Spec.Analysis.Statistical = v1alpha1.StatisticalTest{Mode: v1alpha1.StatisticalCounts, Alpha: "0.05"}
		pc.Spec.Analysis.Baseline = v1alpha1.BaselineFresh
		pc.Spec.Analysis.Warmup = &metav1.Duration{Duration: 3 * time.Minute}
		if err := c.Create(ctx, pc); err != nil {
			t.Errorf("a Counts canary with an alpha, a Fresh baseline and a warm-up: %v", err)
		}
		dflt := newCanary(ns, "defaults", "http://127.0.0.1:1")
		if err := c.Create(ctx, dflt); err != nil {
			t.Fatal(err)
		}
		got := getCanary(ctx, t, c, ns, "defaults")
		if got.Spec.Analysis.Baseline != v1alpha1.BaselineConcurrent || got.Spec.Analysis.Warmup == nil || got.Spec.Analysis.Warmup.Duration != 2*time.Minute {
			t.Errorf("defaults: baseline %q, warmup %v; want Concurrent, 2m", got.Spec.Analysis.Baseline, got.Spec.Analysis.Warmup)
		}
		for _, bad := range []struct {
			name, want string
			edit       func(*v1alpha1.PoolCanary)
		}{
			{"an alpha of 1", "alpha", func(p *v1alpha1.PoolCanary) { p.Spec.Analysis.Statistical.Alpha = "1" }},
			{"an unknown baseline", "baseline", func(p *v1alpha1.PoolCanary) { p.Spec.Analysis.Baseline = "Yesterday" }},
			{"an unknown mode", "mode", func(p *v1alpha1.PoolCanary) { p.Spec.Analysis.Statistical.Mode = "Often" }},
			{"the retired mode Gate", "statistical mode Gate was retired: use Counts", func(p *v1alpha1.PoolCanary) {
				p.Spec.Analysis.Statistical.Mode = v1alpha1.StatisticalGate
			}},
			{"a 55-character name with a Fresh baseline", "at most 54", func(p *v1alpha1.PoolCanary) {
				p.Name = strings.Repeat("a", 55)
				p.Spec.Analysis.Baseline = v1alpha1.BaselineFresh
			}},
		} {
			p := newCanary(ns, "bad", "http://127.0.0.1:1")
			bad.edit(p)
			if err := c.Create(ctx, p); err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("%s: got %v, want a validation error naming %s", bad.name, err, bad.want)
			}
		}
	})

	t.Run("the CRD takes a canary without slis and one naming an SLI only", func(t *testing.T) {
		ns := newNamespace(t, c, "catalog")
		pc := newCanary(ns, "all", "http://127.0.0.1:1")
		pc.Spec.Analysis.SLIs = nil
		if err := c.Create(ctx, pc); err != nil {
			t.Errorf("no slis (the whole catalog): %v", err)
		}
		pc = newCanary(ns, "one", "http://127.0.0.1:1")
		pc.Spec.Analysis.SLIs = []v1alpha1.SLI{{Name: "cpu-per-request"}}
		if err := c.Create(ctx, pc); err != nil {
			t.Errorf("an SLI by name only (the catalog's rule and threshold): %v", err)
		}
	})

	t.Run("the CRD refuses a trafficRouting without one router, or whose Services could not exist", func(t *testing.T) {
		ns := newNamespace(t, c, "routecrd")
		for _, bad := range []struct {
			name, want string
			edit       func(*v1alpha1.PoolCanary)
		}{
			{"no router", "set exactly one router", func(p *v1alpha1.PoolCanary) { p.Spec.TrafficRouting = &v1alpha1.TrafficRouting{} }},
			{"no route name", "httpRoute", func(p *v1alpha1.PoolCanary) {
				p.Spec.TrafficRouting.GatewayAPI.HTTPRoute, p.Spec.TrafficRouting.GatewayAPI.StableService = "", "web-stable"
			}},
			{"one Service for both tracks", "different names", func(p *v1alpha1.PoolCanary) {
				p.Spec.TrafficRouting.GatewayAPI.StableService, p.Spec.TrafficRouting.GatewayAPI.GrayService = "web", "web"
			}},
			{"a gray Service named as the default stable one", "different names", func(p *v1alpha1.PoolCanary) {
				p.Spec.TrafficRouting.GatewayAPI.GrayService = "bad-stable"
			}},
			{"a Service name that is no DNS label", "grayService", func(p *v1alpha1.PoolCanary) { p.Spec.TrafficRouting.GatewayAPI.GrayService = "Web.Gray" }},
			{"a dotted canary name with the default Service names", "DNS-1035", func(p *v1alpha1.PoolCanary) { p.Name = "bad.v2" }},
		} {
			p := newCanary(ns, "bad", "http://127.0.0.1:1")
			p.Spec.TrafficRouting = &v1alpha1.TrafficRouting{GatewayAPI: v1alpha1.GatewayAPIRouting{HTTPRoute: "web"}}
			bad.edit(p)
			if err := c.Create(ctx, p); err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("%s: got %v, want a validation error naming %s", bad.name, err, bad.want)
			}
		}
		p := newCanary(ns, "ok.v2", "http://127.0.0.1:1")
		p.Spec.TrafficRouting = &v1alpha1.TrafficRouting{GatewayAPI: v1alpha1.GatewayAPIRouting{HTTPRoute: "web", StableService: "web-stable", GrayService: "web-gray"}}
		if err := c.Create(ctx, p); err != nil {
			t.Errorf("a dotted canary name with its Services named: %v", err)
		}
	})

	t.Run("the CRD refuses a sampleRule that is no rule name", func(t *testing.T) {
		ns := newNamespace(t, c, "invalid")
		pc := newCanary(ns, "bad", "http://127.0.0.1:1")
		pc.Spec.Analysis.SLIs[0].SampleRule = "rate(x[1m])"
		if err := c.Create(ctx, pc); err == nil || !strings.Contains(err.Error(), "sampleRule") {
			t.Errorf("sampleRule %q: got %v, want a validation error", pc.Spec.Analysis.SLIs[0].SampleRule, err)
		}
	})

	t.Run("the documented PoolCanary examples apply and default the step to 1m", func(t *testing.T) {
		ns := newNamespace(t, c, "docs")
		for _, doc := range []string{"README.md", "docs/controller.md"} {
			canaries := documentedCanaries(t, filepath.Join("..", "..", doc))
			if len(canaries) == 0 {
				t.Errorf("%s: no PoolCanary example found", doc)
			}
			for i, u := range canaries {
				// Created as written (unstructured, as kubectl sends it), so that the API
				// server's defaults fill what the example leaves out.
				name := fmt.Sprintf("doc%d-%s", i, strings.ToLower(strings.TrimSuffix(filepath.Base(doc), ".md")))
				u.SetNamespace(ns)
				u.SetName(name)
				if err := c.Create(ctx, u); err != nil {
					t.Errorf("%s example %d: %v", doc, i, err)
					continue
				}
				got := getCanary(ctx, t, c, ns, name)
				st := got.Spec.Analysis.Statistical
				if st.Step.Duration != time.Minute && !strings.Contains(fmt.Sprint(u.Object), "step:") {
					t.Errorf("%s example %d: statistical.step defaulted to %s, want 1m", doc, i, st.Step.Duration)
				}
				for _, sli := range got.Spec.Analysis.SLIs {
					if strings.HasSuffix(sli.SampleRule, "5m") || (sli.SampleRule == "" && strings.HasSuffix(sli.Rule, "5m")) {
						t.Errorf("%s example %d: SLI %s samples %q (rule %q), want a 1m rule (the catalog's, by default)", doc, i, sli.Name, sli.SampleRule, sli.Rule)
					}
				}
			}
		}
	})

	// The scenarios run in parallel, each in its own namespace with its own fake Prometheus;
	// the group returns when all of them have.
	t.Run("scenarios", func(t *testing.T) {
		runScenarios(ctx, t, c, &pprofAddrs)
		runRouteScenarios(ctx, t, c)
	})

	if t.Failed() {
		return
	}
	// The controller's own metrics are on the registry it was given.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	for _, want := range []string{"poolparity_canary_analyses_total", "poolparity_canary_rollouts_total", "poolparity_canary_weight_percent", "poolparity_canary_phase"} {
		if !slices.Contains(names, want) {
			t.Errorf("metric %s missing from the registry (have %v)", want, names)
		}
	}
}

func runScenarios(ctx context.Context, t *testing.T, c client.Client, pprofAddrs *sync.Map) {
	t.Run("parity holding through every step promotes the gray pool mode", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "promote")
		prom := newFakeProm(t, "good")
		pc := newCanary(ns, "shop", prom.srv.URL)
		pc.Spec.Replicas = ptr.To[int32](10)
		begin := time.Now()
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		// The first step: 10% of 10 replicas is one gray pod.
		waitFor(t, 20*time.Second, "the first step's split (9 stable + 1 gray)", func() (bool, string) {
			s, g := deployReplicas(ctx, t, c, ns, "shop")
			return s == 9 && g == 1, fmt.Sprintf("stable %d, gray %d", s, g)
		})
		checkTrackDeployment(ctx, t, c, ns, "shop-gray", "gray", "true", "pooled")
		checkTrackDeployment(ctx, t, c, ns, "shop-stable", "stable", "false", "unpooled")

		var weights []int32
		waitFor(t, 30*time.Second, "phase Promoted", func() (bool, string) {
			cur := getCanary(ctx, t, c, ns, "shop")
			if n := len(weights); n == 0 || weights[n-1] != cur.Status.CurrentWeight {
				weights = append(weights, cur.Status.CurrentWeight)
			}
			return cur.Status.Phase == v1alpha1.PhasePromoted, fmt.Sprintf("phase %s, weight %d", cur.Status.Phase, cur.Status.CurrentWeight)
		})
		t.Logf("promoted in %s through weights %v", time.Since(begin).Round(time.Millisecond), weights)
		got := getCanary(ctx, t, c, ns, "shop")
		if want := []int32{10, 25, 50, 0}; !isSubsequence(want, weights) || weights[len(weights)-1] != 0 {
			t.Errorf("weights seen %v, want them to step through %v", weights, want)
		}
		if got.Status.StablePoolMode != v1alpha1.PoolModePooled || got.Status.CurrentWeight != 0 {
			t.Errorf("after promotion: stable pool mode %q, weight %d; want pooled, 0", got.Status.StablePoolMode, got.Status.CurrentWeight)
		}
		if la := got.Status.LastAnalysis; la == nil || la.Verdict != v1alpha1.VerdictPass || la.Weight != 50 || len(la.SLIs) != 2 || la.SLIs[0].Stable == "" || la.SLIs[0].Ratio != "1" {
			t.Errorf("last analysis %+v: want a Pass at weight 50 with both tracks' values", la)
		}
		waitFor(t, 10*time.Second, "every replica on a pooled stable track", func() (bool, string) {
			s, g := deployReplicas(ctx, t, c, ns, "shop")
			return s == 10 && g == 0, fmt.Sprintf("stable %d, gray %d", s, g)
		})
		checkTrackDeployment(ctx, t, c, ns, "shop-stable", "stable", "false", "pooled")
		waitEvent(ctx, t, c, ns, "shop", v1alpha1.ReasonPromoted)
		if n := countEvents(ctx, t, c, ns, "shop", controller.EventStepAdvanced); n < 2 {
			t.Errorf("%d StepAdvanced events, want 2", n)
		}
	})

	t.Run("a change to spec.replicas through the scale subresource keeps the split", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "scale")
		prom := newFakeProm(t, "good")
		pc := newCanary(ns, "shop", prom.srv.URL)
		pc.Spec.Replicas = ptr.To[int32](10)
		pc.Spec.Steps = []int32{25}
		pc.Spec.StepInterval = metav1.Duration{Duration: time.Hour} // hold the step
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "25% of 10 (7 stable + 3 gray)", func() (bool, string) {
			s, g := deployReplicas(ctx, t, c, ns, "shop")
			return s == 7 && g == 3, fmt.Sprintf("stable %d, gray %d", s, g)
		})

		// An HPA can target the canary: the API server resolves its scale subresource.
		hpa := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "poolparity.dev/v1alpha1", Kind: "PoolCanary", Name: "shop"},
				MinReplicas:    ptr.To[int32](2),
				MaxReplicas:    20,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](60)},
				}}},
			},
		}
		if err := c.Create(ctx, hpa); err != nil {
			t.Fatalf("creating an HPA that targets the PoolCanary: %v", err)
		}

		// Scale as the HPA controller does: read and update the scale subresource.
		scale := &autoscalingv1.Scale{}
		if err := c.SubResource("scale").Get(ctx, getCanary(ctx, t, c, ns, "shop"), scale); err != nil {
			t.Fatalf("reading /scale: %v", err)
		}
		wantSel := "app.kubernetes.io/component=app,app.kubernetes.io/instance=shop,app.kubernetes.io/name=poolparity"
		if scale.Spec.Replicas != 10 || scale.Status.Selector != wantSel {
			t.Errorf("/scale: spec.replicas %d, status.selector %q; want 10, %q", scale.Spec.Replicas, scale.Status.Selector, wantSel)
		}
		for _, step := range []struct{ replicas, stable, gray int32 }{{4, 3, 1}, {17, 12, 5}, {2, 1, 1}} {
			// Like the HPA controller: read /scale, set spec.replicas, write it; retry on conflict.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				pc := getCanary(ctx, t, c, ns, "shop")
				if err := c.SubResource("scale").Get(ctx, pc, scale); err != nil {
					return err
				}
				scale.Spec.Replicas = step.replicas
				return c.SubResource("scale").Update(ctx, pc, client.WithSubResourceBody(scale))
			})
			if err != nil {
				t.Fatalf("writing /scale: %v", err)
			}
			waitFor(t, 10*time.Second, fmt.Sprintf("25%% of %d (%d stable + %d gray)", step.replicas, step.stable, step.gray), func() (bool, string) {
				s, g := deployReplicas(ctx, t, c, ns, "shop")
				return s == step.stable && g == step.gray, fmt.Sprintf("stable %d, gray %d", s, g)
			})
		}
		if cur := getCanary(ctx, t, c, ns, "shop"); cur.Status.CurrentWeight != 25 || cur.Status.Phase != v1alpha1.PhaseProgressing {
			t.Errorf("scaling changed the rollout: weight %d, phase %s", cur.Status.CurrentWeight, cur.Status.Phase)
		}

		// status.replicas (the scale subresource's current count) adds up both Deployments' pods.
		for _, name := range []string{"shop-stable", "shop-gray"} {
			var d appsv1.Deployment
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &d); err != nil {
				t.Fatal(err)
			}
			d.Status.Replicas = *d.Spec.Replicas
			if err := c.Status().Update(ctx, &d); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, 10*time.Second, "/scale status.replicas = 2", func() (bool, string) {
			if err := c.SubResource("scale").Get(ctx, getCanary(ctx, t, c, ns, "shop"), scale); err != nil {
				t.Fatal(err)
			}
			return scale.Status.Replicas == 2, fmt.Sprintf("status.replicas %d", scale.Status.Replicas)
		})
	})

	t.Run("a regression rolls back after failureLimit breaches", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "rollback")
		prom := newFakeProm(t, "regression")
		pc := newCanary(ns, "shop", prom.srv.URL)
		pc.Spec.Replicas = ptr.To[int32](4)
		begin := time.Now()
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "phase RolledBack", func() (bool, string) {
			cur := getCanary(ctx, t, c, ns, "shop")
			return cur.Status.Phase == v1alpha1.PhaseRolledBack, fmt.Sprintf("phase %s, failed analyses %d", cur.Status.Phase, cur.Status.FailedAnalyses)
		})
		t.Logf("rolled back in %s", time.Since(begin).Round(time.Millisecond))
		got := getCanary(ctx, t, c, ns, "shop")
		if got.Status.FailedAnalyses != 2 || got.Status.CurrentWeight != 0 || got.Status.StablePoolMode != v1alpha1.PoolModeUnpooled {
			t.Errorf("after rollback: %d failed analyses, weight %d, stable %s; want 2, 0, unpooled", got.Status.FailedAnalyses, got.Status.CurrentWeight, got.Status.StablePoolMode)
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionParity); c == nil || c.Status != metav1.ConditionFalse {
			t.Errorf("Parity condition %+v, want False", c)
		}
		waitFor(t, 10*time.Second, "gray at 0", func() (bool, string) {
			s, g := deployReplicas(ctx, t, c, ns, "shop")
			return s == 4 && g == 0, fmt.Sprintf("stable %d, gray %d", s, g)
		})
		waitEvent(ctx, t, c, ns, "shop", v1alpha1.ReasonRolledBack)
		if n := countEvents(ctx, t, c, ns, "shop", controller.EventAnalysisFailed); n != 2 {
			t.Errorf("%d AnalysisFailed events, want 2", n)
		}
		// The rollout has ended: no more analyses.
		n := prom.count("job_gray_status:http_request_duration_seconds:p99_rate5m")
		time.Sleep(2500 * time.Millisecond)
		if m := prom.count("job_gray_status:http_request_duration_seconds:p99_rate5m"); m != n {
			t.Errorf("%d more analyses after the rollback", m-n)
		}
	})

	t.Run("a rollback profiles a Ready gray and stable pod", func(t *testing.T) {
		t.Parallel()
		gray, stable := profdifftest.Misuse(t)
		down := downPromURL(t) // refuses connections, like a pod without the pprof port open

		ns := newNamespace(t, c, "profiles")
		// The CRD bounds the port and the seconds.
		for _, bad := range []struct {
			p    v1alpha1.ProfilesSpec
			want string
		}{
			{v1alpha1.ProfilesSpec{Port: 0, CPUSeconds: 5}, "port"},
			{v1alpha1.ProfilesSpec{Port: 65536, CPUSeconds: 5}, "port"},
			{v1alpha1.ProfilesSpec{Port: 6060, CPUSeconds: 31}, "cpuSeconds"},
		} {
			pc := newCanary(ns, "bad", "http://127.0.0.1:1")
			pc.Spec.Analysis.Profiles = &bad.p
			if err := c.Create(ctx, pc); err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("profiles %+v: got %v, want a validation error naming %s", bad.p, err, bad.want)
			}
		}

		for _, tc := range []struct {
			name, canary, stableAddr string
			wantReason               string
		}{
			{"both pods answer: the diff is in the status and an Event", "shop", strings.TrimPrefix(stable.URL, "http://"), controller.EventProfileDiff},
			{"a stable pod that does not answer is a Warning, and the rollback stands", "mute", strings.TrimPrefix(down, "http://"), controller.EventProfileFailed},
		} {
			t.Run(tc.name, func(t *testing.T) {
				prom := newFakeProm(t, "regression")
				pc := newCanary(ns, tc.canary, prom.srv.URL)
				pc.Spec.Analysis.Warmup = &metav1.Duration{}
				pc.Spec.Analysis.Profiles = &v1alpha1.ProfilesSpec{Port: 6060, CPUSeconds: 1}
				// One Ready pod per track, as their Deployments would make them.
				for track, addr := range map[string]string{"gray": strings.TrimPrefix(gray.URL, "http://"), "stable": tc.stableAddr} {
					name := tc.canary + "-" + track + "-x"
					pod := &corev1.Pod{
						ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
							"app.kubernetes.io/name": "poolparity", "app.kubernetes.io/instance": tc.canary, "app.kubernetes.io/component": "app",
							"poolparity.dev/track": track,
						}},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "poolparity", Image: "ghcr.io/poolparity/poolparity:test"}}},
					}
					if err := c.Create(ctx, pod); err != nil {
						t.Fatal(err)
					}
					pod.Status.PodIP = "10.0.0.5"
					pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
					if err := c.Status().Update(ctx, pod); err != nil {
						t.Fatal(err)
					}
					pprofAddrs.Store(ns+"/"+name, addr)
				}
				if err := c.Create(ctx, pc); err != nil {
					t.Fatal(err)
				}
				waitFor(t, 30*time.Second, "phase RolledBack", func() (bool, string) {
					cur := getCanary(ctx, t, c, ns, tc.canary)
					return cur.Status.Phase == v1alpha1.PhaseRolledBack, fmt.Sprintf("phase %s", cur.Status.Phase)
				})
				ev := waitEvent(ctx, t, c, ns, tc.canary, tc.wantReason)
				if tc.wantReason == controller.EventProfileFailed {
					if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, "stable track: fetching") {
						t.Errorf("%s event %q (%s), want a Warning naming the stable track's fetch", tc.wantReason, ev.Note, ev.Type)
					}
					if n := countEvents(ctx, t, c, ns, tc.canary, controller.EventProfileDiff); n != 0 {
						t.Errorf("%d ProfileDiff events without profiles", n)
					}
					return
				}
				if !strings.Contains(ev.Note, "gray pod shop-gray-x against stable pod shop-stable-x") || !strings.Contains(ev.Note, "cpu pools.ScrubBytes 450µs vs 0s") {
					t.Errorf("ProfileDiff note %q, want the pods and pools.ScrubBytes' CPU per request", ev.Note)
				}
				got := waitFor(t, 10*time.Second, "status.rollbackProfile", func() (bool, *v1alpha1.ProfileStatus) {
					p := getCanary(ctx, t, c, ns, tc.canary).Status.RollbackProfile
					return p != nil, p
				})
				// The fake Prometheus says 20 requests per second per track, and each track has
				// one Ready pod: 20 requests in the 1 s window.
				want := []v1alpha1.ProfileFunction{
					{Kind: "cpu", Function: "pools.ScrubBytes", GrayPerRequest: "450µs", StablePerRequest: "0s"},
					{Kind: "cpu", Function: "server.(*Server).item", GrayPerRequest: "150µs", StablePerRequest: "150µs"},
					{Kind: "alloc_space", Function: "server.(*Server).item", GrayPerRequest: "51.2KiB", StablePerRequest: "102.4KiB"},
				}
				if fmt.Sprint(got.Functions) != fmt.Sprint(want) || got.GrayPod != "shop-gray-x" || got.StablePod != "shop-stable-x" {
					t.Errorf("rollbackProfile %+v\nwant functions %+v", got, want)
				}
				for _, u := range append(gray.Requests(), stable.Requests()...) {
					if !strings.HasSuffix(u, "?seconds=1") {
						t.Errorf("profile request %s, want both kinds over cpuSeconds 1", u)
					}
				}
			})
		}
	})

	t.Run("no data holds the step and never promotes", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "nodata")
		prom := newFakeProm(t, "nodata")
		pc := newCanary(ns, "shop", prom.srv.URL)
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "two inconclusive analyses", func() (bool, string) {
			// One read of an SLI's rule per analysis (the request-rate rule is read twice: by
			// the traffic guard and for the measured share).
			n := prom.count("job_gray_status:http_request_duration_seconds:p99_rate5m")
			return n >= 2, fmt.Sprintf("%d analyses", n)
		})
		cur := getCanary(ctx, t, c, ns, "shop")
		if cur.Status.Phase != v1alpha1.PhaseProgressing || cur.Status.CurrentWeight != 10 || cur.Status.FailedAnalyses != 0 {
			t.Errorf("no data moved the rollout: phase %s, weight %d, failed %d", cur.Status.Phase, cur.Status.CurrentWeight, cur.Status.FailedAnalyses)
		}
		if la := cur.Status.LastAnalysis; la == nil || la.Verdict != v1alpha1.VerdictNoData {
			t.Errorf("last analysis %+v, want NoData", la)
		}
		if c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionParity); c == nil || c.Status != metav1.ConditionUnknown {
			t.Errorf("Parity condition %+v, want Unknown", c)
		}
		waitEvent(ctx, t, c, ns, "shop", controller.EventAnalysisInconclusive)

		// Data arrives: the rollout resumes and promotes.
		prom.setMode("good")
		waitFor(t, 30*time.Second, "phase Promoted once data arrives", func() (bool, string) {
			cur := getCanary(ctx, t, c, ns, "shop")
			return cur.Status.Phase == v1alpha1.PhasePromoted, fmt.Sprintf("phase %s, weight %d", cur.Status.Phase, cur.Status.CurrentWeight)
		})
	})

	t.Run("Counts: a conclusive regression rolls back long before the step ends (anytime-valid)", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "sequential")
		prom := newFakeProm(t, "regression", withCounts(countStep, time.Now(), countLead))
		pc := newCanary(ns, "shop", prom.srv.URL)
		pc.Spec.Replicas = ptr.To[int32](4)
		pc.Spec.StepInterval = metav1.Duration{Duration: time.Hour} // only an interim look can end it
		pc.Spec.Analysis.Statistical.Mode = v1alpha1.StatisticalCounts
		begin := time.Now()
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "phase RolledBack within the first step", func() (bool, string) {
			cur := getCanary(ctx, t, c, ns, "shop")
			return cur.Status.Phase == v1alpha1.PhaseRolledBack, fmt.Sprintf("phase %s, failed analyses %d", cur.Status.Phase, cur.Status.FailedAnalyses)
		})
		t.Logf("rolled back in %s of an hour-long step", time.Since(begin).Round(time.Millisecond))
		got := getCanary(ctx, t, c, ns, "shop")
		if got.Status.RolloutStartedAt == nil || got.Status.RolloutStartedAt.Time.Before(begin.Add(-time.Second)) {
			t.Errorf("rolloutStartedAt %v, want the rollout's start (after %s)", got.Status.RolloutStartedAt, begin)
		}
		if la := got.Status.LastAnalysis; la == nil || la.Statistical == nil || la.Statistical.Mode != v1alpha1.StatisticalCounts || la.Statistical.Verdict != v1alpha1.VerdictFail {
			t.Errorf("last analysis %+v: want a Counts Fail", la)
		}
	})

	t.Run("Counts: parity promotes, and interim (anytime-valid) looks do not advance a step", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "seqgood")
		prom := newFakeProm(t, "good", withCounts(countStep, time.Now(), countLead))
		pc := newCanary(ns, "shop", prom.srv.URL)
		pc.Spec.StepInterval = metav1.Duration{Duration: 4 * time.Second}
		pc.Spec.Analysis.Statistical.Mode = v1alpha1.StatisticalCounts
		begin := time.Now()
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 40*time.Second, "phase Promoted", func() (bool, string) {
			cur := getCanary(ctx, t, c, ns, "shop")
			return cur.Status.Phase == v1alpha1.PhasePromoted, fmt.Sprintf("phase %s, weight %d", cur.Status.Phase, cur.Status.CurrentWeight)
		})
		// Three steps of 4 s each (less up to 1 s each: the status keeps a step's start to the
		// second): promoting sooner would mean an interim Pass, one a second, advanced a step.
		took := time.Since(begin)
		t.Logf("promoted after %s (three steps of 4 s)", took.Round(100*time.Millisecond))
		if took < 9*time.Second {
			t.Errorf("promoted after %s, before three 4 s steps could end", took)
		}
		if n := prom.count("job_gray_status:http_request_duration_seconds:p99_rate5m"); n < 6 {
			t.Errorf("%d analyses, want interim looks every second besides the three step ends", n)
		}
	})

	// Issue 59, "No interim looks after a passed step": the requeue after a passed step was the
	// step interval, so in the anytime-valid modes every step after the first was read only at
	// its end unless a watch event woke the canary (a regression from step 2's start was rolled
	// back 16 s into a 15 s step, not 2 s).
	t.Run("Counts: a regression from the second step's start rolls back long before that step ends (anytime-valid)", func(t *testing.T) {
		t.Parallel()
		const (
			step     = 15 * time.Second
			interval = time.Second // testAnalysis's
		)
		ns := newNamespace(t, c, "seqstep2")
		prom := newFakeProm(t, "good", withCounts(countStep, time.Now(), countLead))
		pc := newCanary(ns, "shop", prom.srv.URL)
		// Two replicas split 1+1 at both weights: the step changes no Deployment, so no watch
		// event wakes the canary in step 2, only the requeue the controller asked for.
		pc.Spec.Steps = []int32{10, 50}
		pc.Spec.StepInterval = metav1.Duration{Duration: step}
		pc.Spec.Analysis.Statistical.Mode = v1alpha1.StatisticalCounts
		if mode := pc.Spec.Analysis.Statistical.Mode; mode != v1alpha1.StatisticalCounts || pc.Spec.Analysis.Interval.Duration != interval {
			t.Fatalf("mode %s, interval %s: the test wants an anytime-valid mode read every %s", pc.Spec.Analysis.Statistical.Mode, pc.Spec.Analysis.Interval.Duration, interval)
		}
		begin := time.Now()
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		// The first step passes at its end; gray regresses from the second step's start on.
		waitFor(t, step+20*time.Second, "the second step (weight 50)", func() (bool, string) {
			cur := getCanary(ctx, t, c, ns, "shop")
			if cur.Status.CurrentWeight == 50 {
				prom.setMode("regression")
				return true, ""
			}
			return false, fmt.Sprintf("phase %s, weight %d", cur.Status.Phase, cur.Status.CurrentWeight)
		})
		step2 := time.Now()
		if failed := countEvents(ctx, t, c, ns, "shop", controller.EventAnalysisFailed); failed != 0 {
			t.Fatalf("%d AnalysisFailed events before the regression", failed)
		}
		waitFor(t, step+15*time.Second, "phase RolledBack", func() (bool, string) {
			cur := getCanary(ctx, t, c, ns, "shop")
			return cur.Status.Phase == v1alpha1.PhaseRolledBack, fmt.Sprintf("phase %s, weight %d, failed analyses %d", cur.Status.Phase, cur.Status.CurrentWeight, cur.Status.FailedAnalyses)
		})
		took := time.Since(step2)
		t.Logf("step 2 began %s into the rollout; rolled back %s after it began (steps of %s, analysis every %s)",
			step2.Sub(begin).Round(100*time.Millisecond), took.Round(100*time.Millisecond), step, interval)
		if took > 5*interval {
			t.Errorf("rolled back %s after step 2 began: want within a few analysis intervals (%s each), not at the %s step's end", took.Round(100*time.Millisecond), interval, step)
		}
		got := getCanary(ctx, t, c, ns, "shop")
		if got.Status.FailedAnalyses != 2 {
			t.Errorf("%d failed analyses, want 2 (failureLimit)", got.Status.FailedAnalyses)
		}
		// Both failures were interim looks of step 2, before its end.
		la := got.Status.LastAnalysis
		if la == nil || la.Weight != 50 || la.Verdict != v1alpha1.VerdictFail {
			t.Fatalf("last analysis %+v, want a Fail at weight 50", la)
		}
		if end := got.Status.StepStartedAt.Add(step); !la.Time.Time.Before(end) {
			t.Errorf("the last analysis at %s, not before step 2's end %s", la.Time, end)
		}
		waitFor(t, 10*time.Second, "an AnalysisFailed event per failed analysis of step 2", func() (bool, string) {
			n := countEvents(ctx, t, c, ns, "shop", controller.EventAnalysisFailed)
			return n >= 2, fmt.Sprintf("%d events", n)
		})
	})

	t.Run("the warm-up holds the analysis until every gray pod has been Ready for it", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "warmup")
		prom := newFakeProm(t, "good")
		pc := newCanary(ns, "shop", prom.srv.URL)
		pc.Spec.Steps = []int32{50}
		pc.Spec.Analysis.Warmup = &metav1.Duration{Duration: 6 * time.Second}
		// A gray pod as its Deployment would make it (envtest runs no controller-manager),
		// Ready from now on.
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "shop-gray-x", Namespace: ns, Labels: map[string]string{
				"app.kubernetes.io/name": "poolparity", "app.kubernetes.io/instance": "shop", "app.kubernetes.io/component": "app",
				"poolparity.dev/track": "gray", "poolparity.dev/gray-status": "true", "poolparity.dev/pool-mode": "pooled",
			}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "poolparity", Image: "ghcr.io/poolparity/poolparity:test"}}},
		}
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		readyAt := time.Now().Truncate(time.Second)
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readyAt)}}
		if err := c.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		held := waitFor(t, 20*time.Second, "the Parity condition WarmingUp", func() (bool, *v1alpha1.PoolCanary) {
			cur := getCanary(ctx, t, c, ns, "shop")
			cond := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionParity)
			return cond != nil && cond.Reason == controller.EventWarmingUp, cur
		})
		if w := held.Status.Warmup; w == nil || w.WarmAt == nil || !w.WarmAt.Time.Equal(readyAt.Add(6*time.Second)) || !strings.Contains(w.Message, "shop-gray-x (ready") {
			t.Errorf("warm-up status %+v: want warmAt = Ready + 6s and the pod named", w)
		}
		if n := prom.count("job_gray_status:http_request_duration_seconds:p99_rate5m"); n != 0 || held.Status.LastAnalysis != nil {
			t.Errorf("%d analyses (last %+v) while the gray pod was warming up, want none", n, held.Status.LastAnalysis)
		}
		waitEvent(ctx, t, c, ns, "shop", controller.EventWarmingUp)
		got := waitFor(t, 30*time.Second, "phase Promoted once the pod is warm", func() (bool, *v1alpha1.PoolCanary) {
			cur := getCanary(ctx, t, c, ns, "shop")
			return cur.Status.Phase == v1alpha1.PhasePromoted, cur
		})
		if la := got.Status.LastAnalysis; la == nil || la.Time.Time.Before(readyAt.Add(6*time.Second)) {
			t.Errorf("last analysis at %v, before the pod was warm at %s", la, readyAt.Add(6*time.Second))
		}
		ex := got.Status.Warmup.Excluded
		if len(ex) != 1 || !ex[0].To.Time.Equal(readyAt.Add(6*time.Second)) || ex[0].From.Time.Before(got.Status.RolloutStartedAt.Time) {
			t.Errorf("excluded spans %+v: want one, from the rollout's start to the pod's warm time %s", ex, readyAt.Add(6*time.Second))
		}
	})

	t.Run("a Fresh baseline runs beside gray, is judged instead of stable, and ends with the rollout", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "fresh")
		prom := newFakeProm(t, "fresh") // stable twice as fast as gray and the baseline
		pc := newCanary(ns, "shop", prom.srv.URL)
		pc.Spec.Replicas = ptr.To[int32](10)
		pc.Spec.Analysis.Baseline = v1alpha1.BaselineFresh
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		baselineReplicas := func() int32 {
			var d appsv1.Deployment
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop-baseline"}, &d); err != nil {
				return -1
			}
			return ptr.Deref(d.Spec.Replicas, -1)
		}
		waitFor(t, time.Minute, "the first step with a baseline as large as gray (9 + 1 + 1)", func() (bool, string) {
			s, g := deployReplicas(ctx, t, c, ns, "shop")
			b := baselineReplicas()
			return s == 9 && g == 1 && b == 1, fmt.Sprintf("stable %d, gray %d, baseline %d", s, g, b)
		})
		checkTrackDeployment(ctx, t, c, ns, "shop-baseline", "baseline", "baseline", "unpooled")
		waitFor(t, 30*time.Second, "phase Promoted (gray equals its fresh baseline)", func() (bool, string) {
			cur := getCanary(ctx, t, c, ns, "shop")
			return cur.Status.Phase == v1alpha1.PhasePromoted, fmt.Sprintf("phase %s, weight %d", cur.Status.Phase, cur.Status.CurrentWeight)
		})
		waitFor(t, 10*time.Second, "the baseline at 0 after the rollout", func() (bool, string) {
			b := baselineReplicas()
			return b == 0, fmt.Sprintf("baseline %d", b)
		})
	})

	t.Run("a Concurrent canary creates no baseline Deployment", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "concurrent")
		prom := newFakeProm(t, "good")
		pc := newCanary(ns, "shop", prom.srv.URL)
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "phase Promoted", func() (bool, string) {
			cur := getCanary(ctx, t, c, ns, "shop")
			return cur.Status.Phase == v1alpha1.PhasePromoted, string(cur.Status.Phase)
		})
		var d appsv1.Deployment
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop-baseline"}, &d); err == nil {
			t.Errorf("a Concurrent canary made a baseline Deployment")
		}
	})

	t.Run("an operator's promote request skips the remaining steps and analyses", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "manualpromote")
		pc := newCanary(ns, "shop", downPromURL(t))
		pc.Spec.Replicas = ptr.To[int32](10)
		pc.Spec.StepInterval = metav1.Duration{Duration: time.Hour} // the first step would hold
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "the first step's split (9 stable + 1 gray)", func() (bool, string) {
			s, g := deployReplicas(ctx, t, c, ns, "shop")
			return s == 9 && g == 1, fmt.Sprintf("stable %d, gray %d", s, g)
		})
		annotate(ctx, t, c, ns, "shop", v1alpha1.AnnotationPromote, "p1")
		got := waitFor(t, 20*time.Second, "phase Promoted", func() (bool, *v1alpha1.PoolCanary) {
			cur := getCanary(ctx, t, c, ns, "shop")
			return cur.Status.Phase == v1alpha1.PhasePromoted, cur
		})
		if got.Status.StablePoolMode != v1alpha1.PoolModePooled || got.Status.CurrentWeight != 0 || got.Status.LastAnalysis != nil {
			t.Errorf("after a promote request: stable pool mode %q, weight %d, last analysis %+v; want pooled, 0 and no analysis", got.Status.StablePoolMode, got.Status.CurrentWeight, got.Status.LastAnalysis)
		}
		if h := got.Status.HandledRequests; h == nil || h.Promote != "p1" {
			t.Errorf("handled requests %+v, want promote p1 recorded", h)
		}
		waitFor(t, 10*time.Second, "every replica on a pooled stable track", func() (bool, string) {
			s, g := deployReplicas(ctx, t, c, ns, "shop")
			return s == 10 && g == 0, fmt.Sprintf("stable %d, gray %d", s, g)
		})
		checkTrackDeployment(ctx, t, c, ns, "shop-stable", "stable", "false", "pooled")
		if ev := waitEvent(ctx, t, c, ns, "shop", v1alpha1.ReasonPromoted); !strings.Contains(ev.Note, "promoted by poolparity.dev/promote=p1 at weight 10") {
			t.Errorf("Promoted event %q, want it to name the request and the weight", ev.Note)
		}
		// A promoted canary refuses an abort, and says so.
		annotate(ctx, t, c, ns, "shop", v1alpha1.AnnotationAbort, "a1")
		if ev := waitEvent(ctx, t, c, ns, "shop", controller.EventRequestIgnored); !strings.Contains(ev.Note, `abort request "a1" ignored: the rollout has ended (Promoted`) {
			t.Errorf("RequestIgnored event %q, want it to say the rollout was promoted", ev.Note)
		}
		if cur := getCanary(ctx, t, c, ns, "shop"); cur.Status.Phase != v1alpha1.PhasePromoted || cur.Status.HandledRequests.Abort != "a1" {
			t.Errorf("after an abort of a promoted canary: phase %s, handled %+v; want Promoted with a1 recorded", cur.Status.Phase, cur.Status.HandledRequests)
		}
	})

	t.Run("an operator's abort rolls back at once while Prometheus is unreachable, and acts once", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "abort")
		pc := newCanary(ns, "shop", downPromURL(t))
		pc.Spec.Replicas = ptr.To[int32](4)
		pc.Spec.Steps = []int32{50}
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitEvent(ctx, t, c, ns, "shop", controller.EventPrometheusUnavailable)
		if s, g := deployReplicas(ctx, t, c, ns, "shop"); s != 2 || g != 2 {
			t.Fatalf("split while Prometheus is down: stable %d, gray %d; want 2 + 2", s, g)
		}
		annotate(ctx, t, c, ns, "shop", v1alpha1.AnnotationAbort, "a1")
		got := waitFor(t, 20*time.Second, "phase RolledBack", func() (bool, *v1alpha1.PoolCanary) {
			cur := getCanary(ctx, t, c, ns, "shop")
			return cur.Status.Phase == v1alpha1.PhaseRolledBack, cur
		})
		prog := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
		if prog == nil || prog.Reason != v1alpha1.ReasonAborted || got.Status.CurrentWeight != 0 || got.Status.StablePoolMode != v1alpha1.PoolModeUnpooled {
			t.Errorf("after an abort: Progressing %+v, weight %d, stable pool mode %q; want reason Aborted, 0, unpooled", prog, got.Status.CurrentWeight, got.Status.StablePoolMode)
		}
		waitFor(t, 10*time.Second, "gray at 0 and stable carrying every replica", func() (bool, string) {
			s, g := deployReplicas(ctx, t, c, ns, "shop")
			return s == 4 && g == 0, fmt.Sprintf("stable %d, gray %d", s, g)
		})
		waitEvent(ctx, t, c, ns, "shop", v1alpha1.ReasonAborted)

		// A new trigger starts a new rollout; the abort request left on the object was handled
		// and does not abort it again.
		cur := getCanary(ctx, t, c, ns, "shop")
		cur.Spec.Trigger = "again"
		if err := c.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "a new rollout at weight 50", func() (bool, string) {
			cur := getCanary(ctx, t, c, ns, "shop")
			return cur.Status.Phase == v1alpha1.PhaseProgressing && cur.Status.CurrentWeight == 50, fmt.Sprintf("phase %s, weight %d", cur.Status.Phase, cur.Status.CurrentWeight)
		})
		time.Sleep(2 * time.Second) // several analyses and reconciles
		if cur := getCanary(ctx, t, c, ns, "shop"); cur.Status.Phase != v1alpha1.PhaseProgressing {
			t.Errorf("the handled abort request acted again: phase %s", cur.Status.Phase)
		}
	})

	t.Run("the status shows the share the split gives and the share measured beside the weight", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "share")
		prom := newFakeProm(t, "quiet") // too few requests to judge: the step holds, analysed every second
		pc := newCanary(ns, "shop", prom.srv.URL)
		pc.Spec.Steps = []int32{10}
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		got := waitFor(t, 20*time.Second, "a measured share", func() (bool, *v1alpha1.PoolCanary) {
			cur := getCanary(ctx, t, c, ns, "shop")
			return cur.Status.MeasuredShare != "", cur
		})
		// Weight 10 on 2 replicas is 1 + 1: half the pods, and (equal rates) half the requests.
		if st := got.Status; st.CurrentWeight != 10 || st.ReplicaShare != "50" || st.MeasuredShare != "50" || st.LastAnalysis.MeasuredShare != "50" {
			t.Errorf("weight %d, replica share %q, measured share %q (last analysis %q); want 10, 50, 50, 50", st.CurrentWeight, st.ReplicaShare, st.MeasuredShare, st.LastAnalysis.MeasuredShare)
		}
		annotate(ctx, t, c, ns, "shop", v1alpha1.AnnotationAbort, "a1")
		got = waitFor(t, 20*time.Second, "phase RolledBack", func() (bool, *v1alpha1.PoolCanary) {
			cur := getCanary(ctx, t, c, ns, "shop")
			return cur.Status.Phase == v1alpha1.PhaseRolledBack, cur
		})
		if st := got.Status; st.ReplicaShare != "0" || st.MeasuredShare != "" {
			t.Errorf("after the rollback: replica share %q, measured share %q; want 0 and unknown (the measurement was of another split)", st.ReplicaShare, st.MeasuredShare)
		}
	})

	t.Run("an unreachable Prometheus holds the step with an Event", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "promdown")
		pc := newCanary(ns, "shop", downPromURL(t))
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		ev := waitEvent(ctx, t, c, ns, "shop", controller.EventPrometheusUnavailable)
		if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, "holding weight 10") {
			t.Errorf("event %s %q, want a Warning saying the weight is held", ev.Type, ev.Note)
		}
		time.Sleep(2 * time.Second)
		cur := getCanary(ctx, t, c, ns, "shop")
		if cur.Status.Phase != v1alpha1.PhaseProgressing || cur.Status.CurrentWeight != 10 || cur.Status.FailedAnalyses != 0 {
			t.Errorf("an unreachable Prometheus moved the rollout: phase %s, weight %d, failed %d", cur.Status.Phase, cur.Status.CurrentWeight, cur.Status.FailedAnalyses)
		}
		if la := cur.Status.LastAnalysis; la == nil || la.Verdict != v1alpha1.VerdictError {
			t.Errorf("last analysis %+v, want Error", la)
		}
		s, g := deployReplicas(ctx, t, c, ns, "shop")
		if s != 1 || g != 1 {
			t.Errorf("split while holding: stable %d, gray %d; want 1 + 1", s, g)
		}
	})

	t.Run("a Deployment the canary does not own is not taken over", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "conflict")
		other := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "shop-gray", Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "other"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
				},
			},
		}
		if err := c.Create(ctx, other); err != nil {
			t.Fatal(err)
		}
		pc := newCanary(ns, "shop", "http://127.0.0.1:1")
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "phase Failed", func() (bool, string) {
			cur := getCanary(ctx, t, c, ns, "shop")
			return cur.Status.Phase == v1alpha1.PhaseFailed, fmt.Sprintf("phase %s", cur.Status.Phase)
		})
		waitEvent(ctx, t, c, ns, "shop", controller.EventOwnershipConflict)
	})
}

// newCanary returns a canary with 2 replicas, steps 10/25/50 of 1s each, analysis every second
// and failureLimit 2.
func newCanary(ns, name, promURL string) *v1alpha1.PoolCanary {
	return &v1alpha1.PoolCanary{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.PoolCanarySpec{
			Replicas: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name:  "poolparity",
				Image: "ghcr.io/poolparity/poolparity:test",
			}}}},
			PoolModes:    v1alpha1.TrackPoolModes{Stable: v1alpha1.PoolModeUnpooled, Gray: v1alpha1.PoolModePooled},
			Steps:        []int32{10, 25, 50},
			StepInterval: metav1.Duration{Duration: time.Second},
			Analysis:     testAnalysis(promURL),
		},
	}
}

// countStep is the count rules' evaluation interval in the fake Prometheus of the Counts
// canaries (withCounts), the count-based test's step: a second, for rollouts of seconds.
const countStep = time.Second

// countLead is how long before a Counts canary's creation the fake Prometheus has evaluated the
// count rules: stable's history before the rollout, less than the parity.CountHistory the test
// asks for (1800 steps of 1 s), which keeps each analysis's reads small.
const countLead = time.Minute

var (
	newNamespace = controllertest.NewNamespace
	getCanary    = controllertest.GetCanary
)

// deployReplicas returns spec.replicas of the canary's two Deployments (-1 when absent).
func deployReplicas(ctx context.Context, t *testing.T, c client.Client, ns, canary string) (stable, gray int32) {
	t.Helper()
	get := func(track string) int32 {
		var d appsv1.Deployment
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: canary + "-" + track}, &d); err != nil {
			return -1
		}
		return ptr.Deref(d.Spec.Replicas, -1)
	}
	return get("stable"), get("gray")
}

// checkTrackDeployment checks a track's labels, selector and Downward API env.
func checkTrackDeployment(ctx context.Context, t *testing.T, c client.Client, ns, name, track, grayStatus, poolMode string) {
	t.Helper()
	var d appsv1.Deployment
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &d); err != nil {
		t.Fatal(err)
	}
	pod := d.Spec.Template.Labels
	want := map[string]string{
		"app.kubernetes.io/name": "poolparity", "app.kubernetes.io/instance": "shop", "app.kubernetes.io/component": "app",
		"poolparity.dev/track": track, "poolparity.dev/gray-status": grayStatus, "poolparity.dev/pool-mode": poolMode,
	}
	for k, v := range want {
		if pod[k] != v {
			t.Errorf("%s pod label %s=%q, want %q", name, k, pod[k], v)
		}
	}
	if d.Spec.Selector.MatchLabels["poolparity.dev/track"] != track || d.Spec.Selector.MatchLabels["poolparity.dev/pool-mode"] != "" {
		t.Errorf("%s selector %v: want the track and no pool mode", name, d.Spec.Selector.MatchLabels)
	}
	if len(d.OwnerReferences) != 1 || d.OwnerReferences[0].Kind != "PoolCanary" || !ptr.Deref(d.OwnerReferences[0].Controller, false) {
		t.Errorf("%s owner references %+v, want the PoolCanary as controller", name, d.OwnerReferences)
	}
	env := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if env["GRAY_STATUS"] != "metadata.labels['poolparity.dev/gray-status']" || env["POOL_MODE"] != "metadata.labels['poolparity.dev/pool-mode']" {
		t.Errorf("%s env from the Downward API: %v", name, env)
	}
}

// waitFor polls cond every 50ms until it holds or timeout passes, then fails with its last note.
func waitFor[T any](t *testing.T, timeout time.Duration, what string, cond func() (bool, T)) T {
	t.Helper()
	return controllertest.WaitFor(t, timeout, what, cond)
}

func canaryEvents(ctx context.Context, t *testing.T, c client.Client, ns, name, reason string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "PoolCanary" && e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// countEvents counts occurrences (an events.k8s.io series counts each repeat).
func countEvents(ctx context.Context, t *testing.T, c client.Client, ns, name, reason string) int {
	t.Helper()
	n := 0
	for _, e := range canaryEvents(ctx, t, c, ns, name, reason) {
		if e.Series != nil {
			n += int(e.Series.Count)
		} else {
			n++
		}
	}
	return n
}

func waitEvent(ctx context.Context, t *testing.T, c client.Client, ns, name, reason string) eventsv1.Event {
	t.Helper()
	return waitFor(t, 15*time.Second, "a "+reason+" event", func() (bool, eventsv1.Event) {
		evs := canaryEvents(ctx, t, c, ns, name, reason)
		if len(evs) == 0 {
			return false, eventsv1.Event{}
		}
		return true, evs[0]
	})
}

// annotate sets an annotation on a canary, as kubectl annotate (or kubectl poolcanary) does.
func annotate(ctx context.Context, t *testing.T, c client.Client, ns, name, key, value string) {
	t.Helper()
	pc := getCanary(ctx, t, c, ns, name)
	patch := client.MergeFrom(pc.DeepCopy())
	if pc.Annotations == nil {
		pc.Annotations = map[string]string{}
	}
	pc.Annotations[key] = value
	if err := c.Patch(ctx, pc, patch); err != nil {
		t.Fatal(err)
	}
}

func isSubsequence[T comparable](want, got []T) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// documentedCanaries returns the PoolCanary objects of the yaml blocks of the Markdown file
// at path, as written; each must also decode strictly into the CRD types (a field they do not
// have fails the test).
func documentedCanaries(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	blocks := strings.Split(string(b), "```")
	for i := 1; i < len(blocks); i += 2 {
		body, ok := strings.CutPrefix(blocks[i], "yaml\n")
		if !ok {
			continue
		}
		for _, doc := range strings.Split(body, "\n---\n") {
			if !strings.Contains(doc, "kind: PoolCanary\n") {
				continue
			}
			var pc v1alpha1.PoolCanary
			if err := yaml.UnmarshalStrict([]byte(doc), &pc); err != nil {
				t.Errorf("%s: a PoolCanary example does not decode: %v", path, err)
				continue
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			out = append(out, u)
		}
	}
	return out
}

package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/controller"
	"github.com/poolparity/poolparity/internal/controller/trafficrouting/gatewayapi"
)

// runRouteScenarios runs the canaries with spec.trafficRouting against the Gateway API's own
// HTTPRoute CRD (the pinned module's standard channel), in parallel like runScenarios.
func runRouteScenarios(ctx context.Context, t *testing.T, c client.Client) {
	t.Run("routing: each step sets the route's weights and a promotion leaves stable 100, other rules untouched", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "route")
		prom := newFakeProm(t, "good")
		// A rule of another service, and the canary's rule with its own match and filter: only
		// the two track backends' weights may change.
		other := rule(map[string]any{"matches": []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/docs"}}}}, backend("docs", 9))
		split := rule(map[string]any{
			"matches": []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/"}}},
			"filters": []any{map[string]any{"type": "RequestHeaderModifier", "requestHeaderModifier": map[string]any{"set": []any{map[string]any{"name": "x-canary", "value": "shop"}}}}},
		}, backend("shop-stable", -1), backend("shop-gray", -1), backend("mirror", 0))
		created := createRoute(ctx, t, c, ns, "web", other, split)
		pc := newCanary(ns, "shop", prom.srv.URL)
		pc.Spec.Replicas = ptr.To[int32](10)
		pc.Spec.Steps = []int32{10, 25}
		pc.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8081}}
		pc.Spec.TrafficRouting = &v1alpha1.TrafficRouting{GatewayAPI: v1alpha1.GatewayAPIRouting{HTTPRoute: "web"}}
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitPromotedThrough(ctx, t, c, ns, "the route", func() (string, error) { return routeWeights(ctx, t, c, ns, "web", 1), nil },
			[]string{"10/90", "25/75", "0/100"})
		got := getCanary(ctx, t, c, ns, "shop")
		if got.Status.RouteWeight == nil || *got.Status.RouteWeight != 0 || got.Status.StablePoolMode != v1alpha1.PoolModePooled {
			t.Errorf("after promotion: routeWeight %v, stable pool mode %s; want 0 and pooled", got.Status.RouteWeight, got.Status.StablePoolMode)
		}
		if d := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionDegraded); d == nil || d.Status != metav1.ConditionFalse || !strings.Contains(d.Message, "HTTPRoute web: shop-gray 0, shop-stable 100") {
			t.Errorf("Degraded %+v, want False with the weights set", d)
		}
		if s, g := deployReplicas(ctx, t, c, ns, "shop"); s != 10 || g != 0 {
			t.Errorf("after promotion: stable %d, gray %d; want 10 + 0", s, g)
		}
		// The rest of the route is as the API server stored it at creation (with its defaults):
		// only the two track backends' weights were added.
		rules, _, _ := unstructured.NestedSlice(getRoute(ctx, t, c, ns, "web").Object, "spec", "rules")
		want, _, _ := unstructured.NestedSlice(created.Object, "spec", "rules")
		wantRefs := want[1].(map[string]any)["backendRefs"].([]any) // shop-stable, shop-gray, mirror
		wantRefs[0].(map[string]any)["weight"] = int64(100)
		wantRefs[1].(map[string]any)["weight"] = int64(0)
		if !equality.Semantic.DeepEqual(rules, want) {
			t.Errorf("the route's rules are\n%v\nwant\n%v", rules, want)
		}
		// One ClusterIP Service per track, on the template's http port, selecting the track.
		for _, track := range []string{"stable", "gray"} {
			var svc corev1.Service
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop-" + track}, &svc); err != nil {
				t.Fatalf("the %s Service: %v", track, err)
			}
			wantSel := map[string]string{
				"app.kubernetes.io/name": "poolparity", "app.kubernetes.io/instance": "shop", "app.kubernetes.io/component": "app",
				"poolparity.dev/track": track,
			}
			if !equality.Semantic.DeepEqual(svc.Spec.Selector, wantSel) || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8081 || svc.Spec.Ports[0].TargetPort.IntValue() != 8081 ||
				svc.Spec.Type != corev1.ServiceTypeClusterIP || !metav1.IsControlledBy(&svc, got) {
				t.Errorf("Service shop-%s: selector %v, ports %+v, type %s, owners %+v; want the track's pods on 8081, ClusterIP, owned by the canary", track, svc.Spec.Selector, svc.Spec.Ports, svc.Spec.Type, svc.OwnerReferences)
			}
		}
		waitEvent(ctx, t, c, ns, "shop", controller.EventRouteWeights)
	})

	t.Run("routing: a rollback leaves gray 0 on the route", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "routeback")
		prom := newFakeProm(t, "regression")
		createRoute(ctx, t, c, ns, "web", rule(nil, backend("shop-stable", 1), backend("shop-gray", 1)))
		pc := newCanary(ns, "shop", prom.srv.URL)
		pc.Spec.Replicas = ptr.To[int32](4)
		pc.Spec.TrafficRouting = &v1alpha1.TrafficRouting{GatewayAPI: v1alpha1.GatewayAPIRouting{HTTPRoute: "web"}}
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "phase RolledBack and the route at 0/100", func() (bool, string) {
			cur := getCanary(ctx, t, c, ns, "shop")
			w := routeWeights(ctx, t, c, ns, "web", 0)
			return cur.Status.Phase == v1alpha1.PhaseRolledBack && w == "0/100" && ptr.Deref(cur.Status.RouteWeight, -1) == 0,
				fmt.Sprintf("phase %s, route %s, routeWeight %v", cur.Status.Phase, w, cur.Status.RouteWeight)
		})
		if s, g := deployReplicas(ctx, t, c, ns, "shop"); s != 4 || g != 0 {
			t.Errorf("after rollback: stable %d, gray %d; want 4 + 0", s, g)
		}
	})

	t.Run("routing: an abort while Prometheus is unreachable leaves gray 0 on the route", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "routeabort")
		createRoute(ctx, t, c, ns, "web", rule(nil, backend("web-gray", -1), backend("web-stable", -1)))
		pc := newCanary(ns, "shop", downPromURL(t))
		pc.Spec.Replicas = ptr.To[int32](4)
		pc.Spec.Steps = []int32{50}
		pc.Spec.TrafficRouting = &v1alpha1.TrafficRouting{GatewayAPI: v1alpha1.GatewayAPIRouting{HTTPRoute: "web", StableService: "web-stable", GrayService: "web-gray"}}
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitEvent(ctx, t, c, ns, "shop", controller.EventPrometheusUnavailable)
		waitFor(t, 10*time.Second, "the route at 50/50 while Prometheus is down", func() (bool, string) {
			w := routeWeightsOf(ctx, t, c, ns, "web", 0, "web-stable", "web-gray")
			return w == "50/50", w
		})
		annotate(ctx, t, c, ns, "shop", v1alpha1.AnnotationAbort, "a1")
		waitFor(t, 20*time.Second, "phase RolledBack and the route at 0/100", func() (bool, string) {
			cur := getCanary(ctx, t, c, ns, "shop")
			w := routeWeightsOf(ctx, t, c, ns, "web", 0, "web-stable", "web-gray")
			return cur.Status.Phase == v1alpha1.PhaseRolledBack && w == "0/100" && ptr.Deref(cur.Status.RouteWeight, -1) == 0,
				fmt.Sprintf("phase %s, route %s, routeWeight %v", cur.Status.Phase, w, cur.Status.RouteWeight)
		})
	})

	t.Run("routing: a missing route degrades the canary, which holds until the route exists", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "routemissing")
		prom := newFakeProm(t, "good")
		pc := newCanary(ns, "shop", prom.srv.URL)
		pc.Spec.TrafficRouting = &v1alpha1.TrafficRouting{GatewayAPI: v1alpha1.GatewayAPIRouting{HTTPRoute: "web"}}
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitDegraded(ctx, t, c, ns, gatewayapi.ReasonRouteNotFound, "HTTPRoute web not found in namespace "+ns+"; no weight set")
		time.Sleep(2 * time.Second) // steps of 1s: it would have promoted
		cur := getCanary(ctx, t, c, ns, "shop")
		if cur.Status.Phase != v1alpha1.PhaseProgressing || cur.Status.CurrentStep != 0 || cur.Status.LastAnalysis != nil || cur.Status.RouteWeight != nil {
			t.Errorf("a missing route moved the rollout: phase %s, step %d, last analysis %v, routeWeight %v", cur.Status.Phase, cur.Status.CurrentStep, cur.Status.LastAnalysis, cur.Status.RouteWeight)
		}
		if n := prom.count("job_gray_status:http_request_duration_seconds:p99_rate5m"); n != 0 {
			t.Errorf("%d analyses while the route is missing, want none", n)
		}
		if ev := waitEvent(ctx, t, c, ns, "shop", controller.EventRouteDegraded); ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, "HTTPRoute web not found") {
			t.Errorf("event %s %q, want a Warning naming the route", ev.Type, ev.Note)
		}

		// The route appears: the controller sets it (HTTPRoutes are read again every second in
		// the tests) and the rollout goes on.
		createRoute(ctx, t, c, ns, "web", rule(nil, backend("shop-stable", -1), backend("shop-gray", -1)))
		waitFor(t, 30*time.Second, "phase Promoted and the route at 0/100", func() (bool, string) {
			cur := getCanary(ctx, t, c, ns, "shop")
			w := routeWeights(ctx, t, c, ns, "web", 0)
			return cur.Status.Phase == v1alpha1.PhasePromoted && w == "0/100" && meta.IsStatusConditionFalse(cur.Status.Conditions, v1alpha1.ConditionDegraded),
				fmt.Sprintf("phase %s, route %s", cur.Status.Phase, w)
		})
	})

	t.Run("routing: a route without the gray backend degrades the canary and is not touched", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, c, "routenogray")
		prom := newFakeProm(t, "good")
		route := createRoute(ctx, t, c, ns, "web", rule(nil, backend("shop-stable", 7), backend("other", 3)))
		pc := newCanary(ns, "shop", prom.srv.URL)
		pc.Spec.TrafficRouting = &v1alpha1.TrafficRouting{GatewayAPI: v1alpha1.GatewayAPIRouting{HTTPRoute: "web"}}
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitDegraded(ctx, t, c, ns, gatewayapi.ReasonBackendsMissing, "HTTPRoute web: no backendRef names Service shop-gray; no weight set")
		time.Sleep(2 * time.Second)
		if now := getRoute(ctx, t, c, ns, "web"); now.GetResourceVersion() != route.GetResourceVersion() {
			t.Errorf("the route was written (resourceVersion %s, created as %s)", now.GetResourceVersion(), route.GetResourceVersion())
		}
		if cur := getCanary(ctx, t, c, ns, "shop"); cur.Status.Phase != v1alpha1.PhaseProgressing || cur.Status.CurrentStep != 0 || cur.Status.LastAnalysis != nil {
			t.Errorf("a route without the gray backend moved the rollout: phase %s, step %d, last analysis %v", cur.Status.Phase, cur.Status.CurrentStep, cur.Status.LastAnalysis)
		}
	})
}

// waitPromotedThrough waits for canary shop to be Promoted with the weights of what (read by
// weights as "gray/stable") at 0/100, and checks that every split they carried on the way, in
// order, stepped through want.
func waitPromotedThrough(ctx context.Context, t *testing.T, c client.Client, ns, what string, weights func() (string, error), want []string) {
	t.Helper()
	var seen []string
	waitFor(t, 30*time.Second, "phase Promoted and "+what+" at 0/100", func() (bool, string) {
		w, err := weights()
		if err != nil {
			return false, err.Error()
		}
		if n := len(seen); n == 0 || seen[n-1] != w {
			seen = append(seen, w)
		}
		cur := getCanary(ctx, t, c, ns, "shop")
		return cur.Status.Phase == v1alpha1.PhasePromoted && w == "0/100", fmt.Sprintf("phase %s, %s %s", cur.Status.Phase, what, w)
	})
	if !isSubsequence(want, seen) {
		t.Errorf("%s carried %v, want it to step through %v", what, seen, want)
	}
}

// rule is an HTTPRoute rule with the fields in extra and these backendRefs.
func rule(extra map[string]any, refs ...map[string]any) map[string]any {
	r := map[string]any{}
	for k, v := range extra {
		r[k] = v
	}
	var bs []any
	for _, b := range refs {
		bs = append(bs, b)
	}
	r["backendRefs"] = bs
	return r
}

// backend is a backendRef to a Service on port 8080; a negative weight leaves it unset.
func backend(name string, weight int64) map[string]any {
	b := map[string]any{"name": name, "port": int64(8080)}
	if weight >= 0 {
		b["weight"] = weight
	}
	return b
}

// createRoute creates an HTTPRoute attached to a Gateway "gw" (which need not exist).
func createRoute(ctx context.Context, t *testing.T, c client.Client, ns, name string, rules ...map[string]any) *unstructured.Unstructured {
	t.Helper()
	var rs []any
	for _, r := range rules {
		rs = append(rs, r)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1",
		"kind":       "HTTPRoute",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"parentRefs": []any{map[string]any{"name": "gw"}},
			"rules":      rs,
		},
	}}
	if err := c.Create(ctx, u); err != nil {
		t.Fatalf("creating HTTPRoute %s: %v", name, err)
	}
	return u
}

func getRoute(ctx context.Context, t *testing.T, c client.Client, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gatewayapi.HTTPRouteGVK)
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

// routeWeights is "gray/stable", the weights of shop-gray and shop-stable in rule i of the
// route ("-" for one that is unset).
func routeWeights(ctx context.Context, t *testing.T, c client.Client, ns, name string, i int) string {
	t.Helper()
	return routeWeightsOf(ctx, t, c, ns, name, i, "shop-stable", "shop-gray")
}

func routeWeightsOf(ctx context.Context, t *testing.T, c client.Client, ns, name string, i int, stable, gray string) string {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(getRoute(ctx, t, c, ns, name).Object, "spec", "rules")
	w := map[string]string{stable: "-", gray: "-"}
	for _, x := range rules[i].(map[string]any)["backendRefs"].([]any) {
		ref := x.(map[string]any)
		if n, _ := ref["name"].(string); n == stable || n == gray {
			if v, ok := ref["weight"]; ok {
				w[n] = fmt.Sprint(v)
			}
		}
	}
	return w[gray] + "/" + w[stable]
}

func waitDegraded(ctx context.Context, t *testing.T, c client.Client, ns, reason, msg string) {
	t.Helper()
	waitFor(t, 20*time.Second, "Degraded "+reason, func() (bool, string) {
		d := meta.FindStatusCondition(getCanary(ctx, t, c, ns, "shop").Status.Conditions, v1alpha1.ConditionDegraded)
		if d == nil {
			return false, "no Degraded condition"
		}
		return d.Status == metav1.ConditionTrue && d.Reason == reason && d.Message == msg, fmt.Sprintf("%s %s: %s", d.Status, d.Reason, d.Message)
	})
}

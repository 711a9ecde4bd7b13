package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
)

// HTTPRouteGVK is the Gateway API HTTPRoute the controller sets the weights of. The controller
// reads and patches it as an unstructured object, so it needs no Gateway API Go module, and it
// neither watches nor caches HTTPRoutes: a cluster without the Gateway API CRDs runs canaries
// without trafficRouting as before.
var HTTPRouteGVK = schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"}

// Reasons of the Degraded condition.
const (
	ReasonRouteNotFound   = "RouteNotFound"   // True: the HTTPRoute (or the HTTPRoute API) does not exist.
	ReasonBackendsMissing = "BackendsMissing" // True: no rule of the route names both track Services.
	ReasonRouteSet        = "RouteSet"        // False: the route carries the current weights.
)

// Event reasons of the route.
const (
	EventRouteDegraded = "RouteDegraded" // Warning: the route cannot be set (the Degraded condition's message).
	EventRouteWeights  = "RouteWeights"  // Normal: the controller changed the route's weights.
)

// defaultServicePort is a track Service's port when no container of the template has a port
// named http.
const defaultServicePort = 8080

// defaultRouteResync is PoolCanaryReconciler.RouteResync when it is 0.
const defaultRouteResync = 30 * time.Second

// Routing is spec.trafficRouting with the defaults filled in: the HTTPRoute and the names of
// the track Services its backendRefs name.
type Routing struct {
	Route, StableService, GrayService string
}

// RoutingOf returns the canary's Routing, ok false without spec.trafficRouting.
func RoutingOf(pc *v1alpha1.PoolCanary) (rt Routing, ok bool) {
	if pc.Spec.TrafficRouting == nil {
		return Routing{}, false
	}
	g := pc.Spec.TrafficRouting.GatewayAPI
	stable, gray := g.ServiceNames(pc)
	return Routing{Route: g.HTTPRoute, StableService: stable, GrayService: gray}, true
}

// service is the name of a track's Service.
func (rt Routing) service(track string) string {
	if track == v1alpha1.TrackGray {
		return rt.GrayService
	}
	return rt.StableService
}

// trackService builds the server-side apply configuration of a track's ClusterIP Service: it
// selects the track's pods (the chart's labels and spec.selector's matchLabels as the pods
// carry them, and the track label; not the pool mode, which a promotion changes), on the port
// of the template's first container port named http (else 8080), owned by the canary.
func trackService(pc *v1alpha1.PoolCanary, sel *metav1.LabelSelector, track, name string, mode v1alpha1.PoolMode) *corev1ac.ServiceApplyConfiguration {
	podLabels := trackPodLabels(pc, sel, track, mode)
	selector := map[string]string{v1alpha1.LabelTrack: track}
	for _, k := range []string{v1alpha1.LabelName, v1alpha1.LabelInstance, v1alpha1.LabelComponent} {
		selector[k] = podLabels[k]
	}
	for k := range sel.MatchLabels {
		selector[k] = podLabels[k]
	}
	port := servicePort(&pc.Spec.Template)
	return corev1ac.Service(name, pc.Namespace).
		WithLabels(trackObjectLabels(pc, track, mode)).
		WithOwnerReferences(controllerRef(pc)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(selector).
			WithPorts(corev1ac.ServicePort().
				WithName("http").
				WithProtocol(corev1.ProtocolTCP).
				WithPort(port).
				WithTargetPort(intstr.FromInt32(port))))
}

// servicePort is the first container port named http of the template, or 8080.
func servicePort(tmpl *corev1.PodTemplateSpec) int32 {
	for _, c := range tmpl.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == "http" && p.ContainerPort > 0 {
				return p.ContainerPort
			}
		}
	}
	return defaultServicePort
}

// routeProblem is why the controller cannot set a route's weights: the message of the
// Degraded condition, and its reason.
type routeProblem struct{ reason, msg string }

// jsonPatchOp is one RFC 6902 operation.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// routeWeights plans the patch that gives the gray backend weight and the stable backend
// 100 - weight in every rule of route that names both track Services, and nothing else: each
// weight it sets is guarded by a test of the backendRef's name, so a route reordered since it
// was read refuses the patch instead of getting a weight on the wrong backend. ops is empty
// when the route already carries the weights. problem is set when no rule names both.
func routeWeights(route *unstructured.Unstructured, rt Routing, weight int32) (ops []jsonPatchOp, problem *routeProblem) {
	rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
	want := map[string]int64{rt.StableService: int64(100 - weight), rt.GrayService: int64(weight)}
	seen := map[string]bool{}
	split := false // a rule names both
	for i, r := range rules {
		refs := trackBackendRefs(r, route.GetNamespace(), rt)
		for _, ref := range refs {
			seen[ref.name] = true
		}
		if !bothTracks(refs, rt) {
			continue // a rule that names one track (or none) is not the canary's split
		}
		for _, ref := range refs {
			if w, ok := ref.weight(); ok && w == want[ref.name] {
				continue
			}
			path := fmt.Sprintf("/spec/rules/%d/backendRefs/%d", i, ref.index)
			ops = append(ops,
				jsonPatchOp{Op: "test", Path: path + "/name", Value: ref.name},
				jsonPatchOp{Op: "add", Path: path + "/weight", Value: want[ref.name]})
		}
		split = true
	}
	if split {
		return ops, nil
	}
	var missing []string
	for _, svc := range []string{rt.StableService, rt.GrayService} {
		if !seen[svc] {
			missing = append(missing, fmt.Sprintf("no backendRef names Service %s", svc))
		}
	}
	if len(missing) == 0 {
		missing = append(missing, fmt.Sprintf("no rule names both Services %s and %s", rt.StableService, rt.GrayService))
	}
	return nil, &routeProblem{ReasonBackendsMissing, fmt.Sprintf("HTTPRoute %s: %s; no weight set", route.GetName(), strings.Join(missing, ", "))}
}

// routeShare is the gray backend's share of the weights, in percent, in the first rule of
// route that names both track Services (the rules the controller sets all carry the same
// weights); ok is false when no rule does.
func routeShare(route *unstructured.Unstructured, rt Routing) (share int32, ok bool) {
	rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
	for _, r := range rules {
		refs := trackBackendRefs(r, route.GetNamespace(), rt)
		if !bothTracks(refs, rt) {
			continue
		}
		sum := map[string]int64{}
		for _, ref := range refs {
			w, ok := ref.weight()
			if !ok {
				w = 1 // the Gateway API's default weight
			}
			sum[ref.name] += w
		}
		total := sum[rt.StableService] + sum[rt.GrayService]
		if total <= 0 {
			return 0, true
		}
		return int32(math.Round(100 * float64(sum[rt.GrayService]) / float64(total))), true
	}
	return 0, false
}

// backendRef is a backendRef of a rule that names a track Service.
type backendRef struct {
	index int
	name  string
	obj   map[string]any
}

// weight is the backendRef's weight, ok false when unset or not a number.
func (b backendRef) weight() (int64, bool) {
	switch w := b.obj["weight"].(type) {
	case int64:
		return w, true
	case float64:
		return int64(w), true
	}
	return 0, false
}

// trackBackendRefs returns the backendRefs of a rule that name one of the track Services: a
// Service (group "" and kind Service, the defaults) of that name in the route's namespace.
func trackBackendRefs(rule any, ns string, rt Routing) []backendRef {
	r, _ := rule.(map[string]any)
	refs, _ := r["backendRefs"].([]any)
	var out []backendRef
	for j, x := range refs {
		ref, _ := x.(map[string]any)
		name, _ := ref["name"].(string)
		group, _ := ref["group"].(string)
		kind, _ := ref["kind"].(string)
		refNS, _ := ref["namespace"].(string)
		if (name != rt.StableService && name != rt.GrayService) || group != "" || (kind != "" && kind != "Service") || (refNS != "" && refNS != ns) {
			continue
		}
		out = append(out, backendRef{index: j, name: name, obj: ref})
	}
	return out
}

// bothTracks reports whether refs name both track Services.
func bothTracks(refs []backendRef, rt Routing) bool {
	var stable, gray bool
	for _, ref := range refs {
		stable = stable || ref.name == rt.StableService
		gray = gray || ref.name == rt.GrayService
	}
	return stable && gray
}

// readRoute reads the canary's HTTPRoute from the API server. A route (or an HTTPRoute API)
// that does not exist is a problem, not an error; other read errors are returned.
func (r *PoolCanaryReconciler) readRoute(ctx context.Context, pc *v1alpha1.PoolCanary, rt Routing) (*unstructured.Unstructured, *routeProblem, error) {
	route := &unstructured.Unstructured{}
	route.SetGroupVersionKind(HTTPRouteGVK)
	err := r.apiReader().Get(ctx, types.NamespacedName{Namespace: pc.Namespace, Name: rt.Route}, route)
	switch {
	case apierrors.IsNotFound(err):
		return nil, &routeProblem{ReasonRouteNotFound, fmt.Sprintf("HTTPRoute %s not found in namespace %s; no weight set", rt.Route, pc.Namespace)}, nil
	case meta.IsNoMatchError(err):
		return nil, &routeProblem{ReasonRouteNotFound, fmt.Sprintf("HTTPRoute %s: the API server does not serve %s (install the Gateway API CRDs); no weight set", rt.Route, HTTPRouteGVK.GroupVersion())}, nil
	case err != nil:
		return nil, nil, fmt.Errorf("reading HTTPRoute %s: %w", rt.Route, err)
	}
	return route, nil, nil
}

// setRoute gives the route's track backends the current weight (gray: the weight, stable:
// 100 - weight; 0 after a promotion, a rollback or an abort) by a JSON patch of those weights
// only, and records the share read back from the route in status.routeWeight.
func (r *PoolCanaryReconciler) setRoute(ctx context.Context, pc *v1alpha1.PoolCanary, rt Routing, route *unstructured.Unstructured, out *pending) error {
	st := &pc.Status
	weight := min(max(st.CurrentWeight, 0), 100)
	ops, problem := routeWeights(route, rt, weight)
	if problem != nil {
		r.degrade(pc, problem, out)
		return nil
	}
	if len(ops) > 0 {
		patch, err := json.Marshal(ops)
		if err != nil {
			return fmt.Errorf("encoding the patch of HTTPRoute %s: %w", rt.Route, err)
		}
		if err := r.Client.Patch(ctx, route, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(managerName)); err != nil {
			// Also a failed test: the route changed since it was read. Retried with backoff.
			return fmt.Errorf("setting the weights of HTTPRoute %s: %w", rt.Route, err)
		}
		out.event(corev1.EventTypeNormal, EventRouteWeights, "Route", "HTTPRoute %s: %s %d, %s %d", rt.Route, rt.GrayService, weight, rt.StableService, 100-weight)
	}
	share, ok := routeShare(route, rt) // route is the patched object the API server returned
	if !ok {
		return fmt.Errorf("HTTPRoute %s lost its track backends while being set", rt.Route)
	}
	st.RouteWeight = &share
	setCondition(pc, v1alpha1.ConditionDegraded, metav1.ConditionFalse, ReasonRouteSet,
		fmt.Sprintf("HTTPRoute %s: %s %d, %s %d", rt.Route, rt.GrayService, weight, rt.StableService, 100-weight))
	return nil
}

// degrade records a route the controller cannot set: Degraded True (with a Warning Event when
// it turns True or its message changes) and no route weight in force that it knows of.
func (r *PoolCanaryReconciler) degrade(pc *v1alpha1.PoolCanary, p *routeProblem, out *pending) {
	if c := meta.FindStatusCondition(pc.Status.Conditions, v1alpha1.ConditionDegraded); c == nil || c.Status != metav1.ConditionTrue || c.Message != p.msg {
		out.event(corev1.EventTypeWarning, EventRouteDegraded, "Route", "%s", p.msg)
	}
	pc.Status.RouteWeight = nil
	setCondition(pc, v1alpha1.ConditionDegraded, metav1.ConditionTrue, p.reason, p.msg)
}

// routeDegraded reports whether the canary's last status says its route cannot be set.
func routeDegraded(pc *v1alpha1.PoolCanary) bool {
	return meta.IsStatusConditionTrue(pc.Status.Conditions, v1alpha1.ConditionDegraded)
}

// apiReader is APIReader, or Client when it is nil.
func (r *PoolCanaryReconciler) apiReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

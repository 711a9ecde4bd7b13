// Package gatewayapi is the router of spec.trafficRouting.gatewayAPI: it sets the backendRef
// weights of a Gateway API HTTPRoute (gray: the weight, stable: 100 minus it) in every rule
// that names both track Services, and nothing else on the route. The reconciler creates those
// Services (the router names them). The route is read and patched as an unstructured object,
// so no Gateway API Go module is needed, and it is neither watched nor cached: a cluster
// without the Gateway API CRDs runs canaries without trafficRouting as before.
package gatewayapi

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/controller/trafficrouting"
)

// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch

// Member is the member of spec.trafficRouting this router serves.
const Member = "gatewayAPI"

// HTTPRouteGVK is the Gateway API HTTPRoute the router sets the weights of.
var HTTPRouteGVK = schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"}

// Reasons of the Degraded condition this router gives.
const (
	ReasonRouteNotFound   = "RouteNotFound"   // True: the HTTPRoute (or the HTTPRoute API) does not exist.
	ReasonBackendsMissing = "BackendsMissing" // True: no rule of the route names both track Services.
)

// Routing is spec.trafficRouting.gatewayAPI with the defaults filled in: the HTTPRoute and the
// names of the track Services its backendRefs name.
type Routing struct {
	Route, StableService, GrayService string
}

// RoutingOf returns the canary's Routing, ok false when it does not set
// spec.trafficRouting.gatewayAPI.
func RoutingOf(pc *v1alpha1.PoolCanary) (rt Routing, ok bool) {
	if pc.Spec.TrafficRouting == nil || pc.Spec.TrafficRouting.GatewayAPI == (v1alpha1.GatewayAPIRouting{}) {
		return Routing{}, false
	}
	g := pc.Spec.TrafficRouting.GatewayAPI
	stable, gray := g.ServiceNames(pc)
	return Routing{Route: g.HTTPRoute, StableService: stable, GrayService: gray}, true
}

// New is the router's trafficrouting.Factory.
func New(pc *v1alpha1.PoolCanary, deps trafficrouting.Deps) trafficrouting.Router {
	rt, _ := RoutingOf(pc)
	return &router{rt: rt, namespace: pc.Namespace, deps: deps}
}

// router sets one canary's HTTPRoute. It keeps the route SetUp read, and then the one
// SetWeight's patch returned, for VerifyWeight.
type router struct {
	rt        Routing
	namespace string
	deps      trafficrouting.Deps
	route     *unstructured.Unstructured
}

// Split gives each track enough pods to carry its weight (trafficrouting.SplitByWeight).
func (*router) Split(replicas, weight int32) (stable, gray int32) {
	return trafficrouting.SplitByWeight(replicas, weight)
}

// Services are the Services the route's backendRefs name.
func (r *router) Services() (stable, gray string, ok bool) {
	return r.rt.StableService, r.rt.GrayService, true
}

// Weighted is true: the weights live on the route.
func (*router) Weighted() bool { return true }

// SetUp reads the route from the API server and checks that a rule names both track
// Services. A route (or an HTTPRoute API) that does not exist is a Problem, not an error.
func (r *router) SetUp(ctx context.Context) (*trafficrouting.Problem, error) {
	route := &unstructured.Unstructured{}
	route.SetGroupVersionKind(HTTPRouteGVK)
	err := r.deps.Reader.Get(ctx, types.NamespacedName{Namespace: r.namespace, Name: r.rt.Route}, route)
	switch {
	case apierrors.IsNotFound(err):
		return &trafficrouting.Problem{Reason: ReasonRouteNotFound, Message: fmt.Sprintf("HTTPRoute %s not found in namespace %s; no weight set", r.rt.Route, r.namespace)}, nil
	case meta.IsNoMatchError(err):
		return &trafficrouting.Problem{Reason: ReasonRouteNotFound, Message: fmt.Sprintf("HTTPRoute %s: the API server does not serve %s (install the Gateway API CRDs); no weight set", r.rt.Route, HTTPRouteGVK.GroupVersion())}, nil
	case err != nil:
		return nil, fmt.Errorf("reading HTTPRoute %s: %w", r.rt.Route, err)
	}
	r.route = route
	_, problem := routeWeights(route, r.rt, 0)
	return problem, nil
}

// SetWeight gives the route's track backends the weight (gray: weight, stable: 100 - weight)
// by a JSON patch of those weights only.
func (r *router) SetWeight(ctx context.Context, weight int32) (trafficrouting.Change, *trafficrouting.Problem, error) {
	rt := r.rt
	change := trafficrouting.Change{Message: fmt.Sprintf("HTTPRoute %s: %s %d, %s %d", rt.Route, rt.GrayService, weight, rt.StableService, 100-weight)}
	ops, problem := routeWeights(r.route, rt, weight)
	if problem != nil || len(ops) == 0 {
		return change, problem, nil
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return change, nil, fmt.Errorf("encoding the patch of HTTPRoute %s: %w", rt.Route, err)
	}
	if err := r.deps.Client.Patch(ctx, r.route, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(r.deps.FieldOwner)); err != nil {
		// Also a failed test: the route changed since it was read. Retried with backoff.
		return change, nil, fmt.Errorf("setting the weights of HTTPRoute %s: %w", rt.Route, err)
	}
	change.Changed = true
	return change, nil, nil
}

// VerifyWeight reads the gray share back from the route as the API server returned it.
func (r *router) VerifyWeight(context.Context) (int32, error) {
	share, ok := routeShare(r.route, r.rt) // the patched object the API server returned
	if !ok {
		return 0, fmt.Errorf("HTTPRoute %s lost its track backends while being set", r.rt.Route)
	}
	return share, nil
}

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
func routeWeights(route *unstructured.Unstructured, rt Routing, weight int32) (ops []jsonPatchOp, problem *trafficrouting.Problem) {
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
	return nil, &trafficrouting.Problem{Reason: ReasonBackendsMissing, Message: fmt.Sprintf("HTTPRoute %s: %s; no weight set", route.GetName(), strings.Join(missing, ", "))}
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

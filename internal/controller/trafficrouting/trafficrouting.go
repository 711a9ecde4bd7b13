// Package trafficrouting is the seam between the PoolCanary reconciler and what gives the gray
// track its share of the traffic: a Router interface, and a Registry that makes a canary's
// Router from the member of spec.trafficRouting it sets (the replica split when it sets none).
// Each router lives in a package of its own (replicasplit, gatewayapi) with its RBAC markers;
// adding one is that package, one member of v1alpha1.TrafficRouting and one Register call
// (controller.DefaultRouters). The reconciler keeps the status, the conditions and the Events:
// a router only reads and writes its own objects and says what it found.
package trafficrouting

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
)

// Router gives the gray track of one canary its share of the traffic.
//
// Concurrency: a Router is made by its Factory for one reconcile of one canary and used by
// that reconcile's goroutine only, in this order: SetUp (before the state machine), Split and
// Services (while the tracks are applied), then SetWeight and VerifyWeight. It may keep what
// SetUp read for the calls after it. Different canaries' Routers run concurrently and share
// nothing but Deps, whose clients are safe for concurrent use.
//
// Nothing is cleaned up when a rollout ends or routing is turned off: the objects a router
// creates are owned by the canary (they go with it), and the weight stays where the rollout
// left it (0 after a promotion, a rollback or an abort).
type Router interface {
	// Split sizes the tracks for a gray weight in percent from spec.replicas: the stable and
	// gray Deployments' replicas. A weight of 0 (after a promotion, a rollback or an abort)
	// gives every replica to stable.
	Split(replicas, weight int32) (stable, gray int32)

	// Services names the per-track Services the router's backends address; ok is false when
	// it needs none. The reconciler creates them beside the track Deployments: ClusterIP,
	// selecting the track's pods, owned by the canary.
	Services() (stable, gray string, ok bool)

	// Weighted reports whether the weight lives on an object of the router's own (a route, a
	// mesh's rule) that the reconciler sets every reconcile, reads back into
	// status.routeWeight and the Degraded condition, and reads again every RouteResync since
	// it does not watch it. False for the replica split, whose weight is the pod counts:
	// SetUp, SetWeight and VerifyWeight are then not called.
	Weighted() bool

	// SetUp reads what the router sets and says whether a weight can be set on it. A Problem
	// holds the rollout where it is (Degraded True) until a later reconcile finds none; an
	// error is retried with backoff.
	SetUp(ctx context.Context) (*Problem, error)

	// SetWeight gives the gray track weight percent of the traffic and the stable track the
	// rest (weight is within [0, 100]). It changes nothing else on the object. A Problem
	// means the object changed since SetUp so that no weight can be set; an error (also a
	// concurrent change caught by the write) is retried.
	SetWeight(ctx context.Context, weight int32) (Change, *Problem, error)

	// VerifyWeight reads back the gray track's share of the weights in force, in percent,
	// after SetWeight; an error when the object no longer carries a share.
	VerifyWeight(ctx context.Context) (share int32, err error)
}

// Problem is why a router cannot set a weight: the Degraded condition's reason and message.
type Problem struct {
	Reason, Message string
}

// Change is what SetWeight did.
type Change struct {
	// Changed is true when SetWeight wrote the object (the reconciler emits an Event).
	Changed bool
	// Message says what is in force, e.g. "HTTPRoute web: shop-gray 10, shop-stable 90": the
	// Event's note and the Degraded False condition's message.
	Message string
}

// Deps are what a router reaches the API server with.
type Deps struct {
	// Client writes (and reads from the manager's cache).
	Client client.Client
	// Reader reads straight from the API server, for objects the manager does not cache.
	Reader client.Reader
	// FieldOwner is the field manager of the router's writes.
	FieldOwner string
}

// Factory makes the Router of one canary (see Router's concurrency contract). It may be
// called concurrently for different canaries.
type Factory func(pc *v1alpha1.PoolCanary, deps Deps) Router

// Registry maps the members of spec.trafficRouting to their routers' factories. Build it
// with NewRegistry and Register before use; after that For is safe for concurrent use.
type Registry struct {
	fallback Factory
	members  map[string]Factory
}

// NewRegistry returns a Registry whose canaries without spec.trafficRouting (or with no member
// set) get fallback's router.
func NewRegistry(fallback Factory) *Registry {
	return &Registry{fallback: fallback, members: map[string]Factory{}}
}

// Register makes member's router with f. member is the JSON name of a field of
// v1alpha1.TrafficRouting; a name that is none, or is registered already, is an error.
func (r *Registry) Register(member string, f Factory) error {
	if !slices.Contains(memberNames(), member) {
		return fmt.Errorf("registering a router: trafficRouting has no member %q (it has %s)", member, strings.Join(memberNames(), ", "))
	}
	if _, dup := r.members[member]; dup {
		return fmt.Errorf("registering a router: member %q is registered already", member)
	}
	r.members[member] = f
	return nil
}

// ErrNoRouter is returned by For when the canary sets more than one member, or one that has no
// registered router: only possible when the API server's validation was bypassed, or the
// binary was built without the member's router.
var ErrNoRouter = errors.New("no router")

// For returns the canary's Router: the registered router of the member of spec.trafficRouting
// it sets, or the fallback's when it sets none.
func (r *Registry) For(pc *v1alpha1.PoolCanary, deps Deps) (Router, error) {
	set := Members(pc.Spec.TrafficRouting)
	switch len(set) {
	case 0:
		return r.fallback(pc, deps), nil
	case 1:
		if f, ok := r.members[set[0]]; ok {
			return f(pc, deps), nil
		}
		return nil, fmt.Errorf("%w for trafficRouting.%s", ErrNoRouter, set[0])
	}
	return nil, fmt.Errorf("%w: trafficRouting sets %s, want exactly one", ErrNoRouter, strings.Join(set, " and "))
}

// Members returns the JSON names of the members tr sets (non-zero fields), in field order.
func Members(tr *v1alpha1.TrafficRouting) []string {
	if tr == nil {
		return nil
	}
	v := reflect.ValueOf(tr).Elem()
	var set []string
	for i := range v.NumField() {
		if !v.Field(i).IsZero() {
			set = append(set, jsonName(v.Type().Field(i)))
		}
	}
	return set
}

// memberNames returns the JSON names of every member of v1alpha1.TrafficRouting.
func memberNames() []string {
	t := reflect.TypeFor[v1alpha1.TrafficRouting]()
	names := make([]string, t.NumField())
	for i := range t.NumField() {
		names[i] = jsonName(t.Field(i))
	}
	return names
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// SplitByWeight sizes the tracks for a router that splits the traffic by weight: the replica
// counts no longer decide the share, so each track gets enough pods to carry its part of the
// traffic at the density of replicas pods for all of it.
//
//   - while weight > 0, gray = max(1, ceil(replicas * weight / 100)) and
//     stable = max(1, ceil(replicas * (100 - weight) / 100)): each track carries its weight,
//     and the stable baseline keeps one pod even at weight 100 (the route sends it nothing
//     then, but the gray track is judged against it). Rounding both up can give the tracks
//     one pod more than replicas (weight 25 of 10: 8 + 3), and a single replica runs 1 + 1;
//   - replicas <= 0 gives 0 + 0 and weight <= 0 (a promotion, a rollback) gives every replica
//     to stable, as the replica split does.
func SplitByWeight(replicas, weight int32) (stable, gray int32) {
	if replicas <= 0 {
		return 0, 0
	}
	if weight <= 0 {
		return replicas, 0
	}
	weight = min(weight, 100)
	carry := func(w int32) int32 {
		// int64: replicas * weight overflows int32 above ~21 million replicas.
		return int32(max(1, (int64(replicas)*int64(w)+99)/100))
	}
	return carry(100 - weight), carry(weight)
}

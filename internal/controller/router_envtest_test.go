package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/controller"
	"github.com/poolparity/poolparity/internal/controller/controllertest"
	"github.com/poolparity/poolparity/internal/controller/trafficrouting"
	"github.com/poolparity/poolparity/internal/controller/trafficrouting/replicasplit"
	"github.com/poolparity/poolparity/internal/testenv"
)

// configMapRouter is a third router that only the tests register: it keeps the weights in a
// ConfigMap's data (gray, stable) as a mesh's rule would keep them. The CRD the tests install
// is the real one, so it serves the gatewayAPI member and names its ConfigMap by httpRoute; a
// router of its own member would add that one field to v1alpha1.TrafficRouting. Its whole cost
// is this type and one Register call: the reconciler does not change.
type configMapRouter struct {
	name, namespace string
	deps            trafficrouting.Deps
	cm              *corev1.ConfigMap
	written         *weightLog // every weight the API server took, when set
}

// weightLog keeps the weights a router wrote, "gray/stable", in order; safe for concurrent use.
// A test reads it rather than polling the ConfigMap, which a step of one second can outrun.
type weightLog struct {
	mu sync.Mutex
	ws []string
}

func (l *weightLog) add(w string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ws = append(l.ws, w)
}

func (l *weightLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ws)
}

// reasonWeightsMissing is the Degraded reason while the ConfigMap does not exist.
const reasonWeightsMissing = "WeightsMissing"

func newConfigMapRouter(pc *v1alpha1.PoolCanary, deps trafficrouting.Deps) trafficrouting.Router {
	return &configMapRouter{name: pc.Spec.TrafficRouting.GatewayAPI.HTTPRoute, namespace: pc.Namespace, deps: deps}
}

func (*configMapRouter) Split(replicas, weight int32) (stable, gray int32) {
	return trafficrouting.SplitByWeight(replicas, weight)
}

func (*configMapRouter) Services() (stable, gray string, ok bool) { return "", "", false }

func (*configMapRouter) Weighted() bool { return true }

func (r *configMapRouter) SetUp(ctx context.Context) (*trafficrouting.Problem, error) {
	cm := &corev1.ConfigMap{}
	switch err := r.deps.Reader.Get(ctx, types.NamespacedName{Namespace: r.namespace, Name: r.name}, cm); {
	case apierrors.IsNotFound(err):
		return &trafficrouting.Problem{Reason: reasonWeightsMissing, Message: fmt.Sprintf("ConfigMap %s not found; no weight set", r.name)}, nil
	case err != nil:
		return nil, fmt.Errorf("reading ConfigMap %s: %w", r.name, err)
	}
	r.cm = cm
	return nil, nil
}

func (r *configMapRouter) SetWeight(ctx context.Context, weight int32) (trafficrouting.Change, *trafficrouting.Problem, error) {
	gray, stable := strconv.Itoa(int(weight)), strconv.Itoa(int(100-weight))
	change := trafficrouting.Change{Message: fmt.Sprintf("ConfigMap %s: gray %s, stable %s", r.name, gray, stable)}
	if r.cm.Data["gray"] == gray && r.cm.Data["stable"] == stable {
		return change, nil, nil
	}
	patch := client.MergeFromWithOptions(r.cm.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if r.cm.Data == nil {
		r.cm.Data = map[string]string{}
	}
	r.cm.Data["gray"], r.cm.Data["stable"] = gray, stable
	if err := r.deps.Client.Patch(ctx, r.cm, patch, client.FieldOwner(r.deps.FieldOwner)); err != nil {
		return change, nil, fmt.Errorf("setting the weights of ConfigMap %s: %w", r.name, err)
	}
	if r.written != nil {
		r.written.add(gray + "/" + stable)
	}
	change.Changed = true
	return change, nil, nil
}

func (r *configMapRouter) VerifyWeight(context.Context) (int32, error) {
	share, err := strconv.Atoi(r.cm.Data["gray"])
	if err != nil {
		return 0, fmt.Errorf("ConfigMap %s: gray %q: %w", r.name, r.cm.Data["gray"], err)
	}
	return int32(share), nil
}

// TestANewRouterIsOnePackage drives a canary through the test-only configMapRouter on a real
// API server: the reconciler holds the rollout while the router cannot set a weight, then sets
// each step's weight through it, reads the share back into the status and promotes; the
// router's split sizes the tracks, and it asks for no Service.
func TestANewRouterIsOnePackage(t *testing.T) {
	scheme := testScheme(t)
	env := testenv.Start(t, testenv.WithScheme(scheme), testenv.WithCRDPaths(crdDir(t)))
	ctx := context.Background()
	c := env.Client

	routers := trafficrouting.NewRegistry(replicasplit.New)
	written := &weightLog{}
	if err := routers.Register("gatewayAPI", func(pc *v1alpha1.PoolCanary, deps trafficrouting.Deps) trafficrouting.Router {
		r := newConfigMapRouter(pc, deps).(*configMapRouter)
		r.written = written
		return r
	}); err != nil {
		t.Fatal(err)
	}
	controllertest.Start(t, env.Config, scheme, prometheus.NewRegistry(), func(r *controller.PoolCanaryReconciler) { r.Routers = routers })

	ns := newNamespace(t, c, "cmrouter")
	prom := newFakeProm(t, "good")
	pc := newCanary(ns, "shop", prom.srv.URL)
	pc.Spec.Replicas = ptr.To[int32](10)
	pc.Spec.Steps = []int32{25, 50}
	pc.Spec.TrafficRouting = &v1alpha1.TrafficRouting{GatewayAPI: v1alpha1.GatewayAPIRouting{HTTPRoute: "weights"}}
	if err := c.Create(ctx, pc); err != nil {
		t.Fatal(err)
	}
	waitDegraded(ctx, t, c, ns, reasonWeightsMissing, "ConfigMap weights not found; no weight set")
	time.Sleep(2 * time.Second) // steps of 1s: it would have promoted
	if cur := getCanary(ctx, t, c, ns, "shop"); cur.Status.Phase != v1alpha1.PhaseProgressing || cur.Status.CurrentStep != 0 || cur.Status.LastAnalysis != nil {
		t.Errorf("a router that cannot set the weight moved the rollout: phase %s, step %d, last analysis %v", cur.Status.Phase, cur.Status.CurrentStep, cur.Status.LastAnalysis)
	}
	// The router's split while it holds at 25 of 10 replicas: each track carries its weight.
	waitFor(t, 10*time.Second, "the tracks at 8 + 3", func() (bool, string) {
		s, g := deployReplicas(ctx, t, c, ns, "shop")
		return s == 8 && g == 3, fmt.Sprintf("%d + %d", s, g)
	})

	if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "weights"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "phase Promoted and the ConfigMap at 0/100", func() (bool, string) {
		var cm corev1.ConfigMap
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "weights"}, &cm); err != nil {
			return false, err.Error()
		}
		w := cm.Data["gray"] + "/" + cm.Data["stable"]
		cur := getCanary(ctx, t, c, ns, "shop")
		return cur.Status.Phase == v1alpha1.PhasePromoted && w == "0/100", fmt.Sprintf("phase %s, the ConfigMap %s", cur.Status.Phase, w)
	})
	if want, got := []string{"25/75", "50/50", "0/100"}, written.all(); !isSubsequence(want, got) {
		t.Errorf("the router wrote %v to the ConfigMap, want it to step through %v", got, want)
	}
	got := getCanary(ctx, t, c, ns, "shop")
	if ptr.Deref(got.Status.RouteWeight, -1) != 0 {
		t.Errorf("after promotion: routeWeight %v, want 0", got.Status.RouteWeight)
	}
	if d := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionDegraded); d == nil || d.Status != metav1.ConditionFalse ||
		d.Reason != controller.ReasonRouteSet || d.Message != "ConfigMap weights: gray 0, stable 100" {
		t.Errorf("Degraded %+v, want False RouteSet with the weights in force", d)
	}
	if s, g := deployReplicas(ctx, t, c, ns, "shop"); s != 10 || g != 0 {
		t.Errorf("after promotion: stable %d, gray %d; want 10 + 0", s, g)
	}
	var svcs corev1.ServiceList
	if err := c.List(ctx, &svcs, client.InNamespace(ns)); err != nil || len(svcs.Items) != 0 {
		t.Errorf("Services %d (%v), want none: the router names none", len(svcs.Items), err)
	}
	waitEvent(ctx, t, c, ns, "shop", controller.EventRouteWeights)
}

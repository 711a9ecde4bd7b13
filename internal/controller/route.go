package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/controller/trafficrouting"
	"github.com/poolparity/poolparity/internal/controller/trafficrouting/gatewayapi"
	"github.com/poolparity/poolparity/internal/controller/trafficrouting/replicasplit"
)

// ReasonRouteSet is the Degraded condition's reason when the router carries the current
// weight (False). The True reasons are the routers' (e.g. gatewayapi.ReasonRouteNotFound).
const ReasonRouteSet = "RouteSet"

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

// DefaultRouters returns a new Registry of the routers this controller ships: the replica
// split for canaries without spec.trafficRouting, and one router per member. A new router is
// its package, its member of v1alpha1.TrafficRouting and one Register line here.
func DefaultRouters() (*trafficrouting.Registry, error) {
	reg := trafficrouting.NewRegistry(replicasplit.New)
	if err := reg.Register(gatewayapi.Member, gatewayapi.New); err != nil {
		return nil, err
	}
	return reg, nil
}

// router returns the canary's Router from Routers. A canary whose trafficRouting has no
// router (only when the API server's validation was bypassed) is a terminal error.
func (r *PoolCanaryReconciler) router(pc *v1alpha1.PoolCanary) (trafficrouting.Router, error) {
	reg := r.Routers
	if reg == nil { // a reconciler not set up by SetupWithManager
		var err error
		if reg, err = DefaultRouters(); err != nil {
			return nil, err
		}
	}
	rt, err := reg.For(pc, trafficrouting.Deps{Client: r.Client, Reader: r.apiReader(), FieldOwner: managerName})
	if err != nil {
		return nil, reconcile.TerminalError(err)
	}
	return rt, nil
}

// setUpRouting runs before the state machine. A router that weighs on an object of its own
// reads it (SetUp): one that cannot be set holds the rollout (held: no step, no analysis, no
// weight) and turns Degraded True; one that can again gives the step a full interval, since the
// weight goes in force only now. Without such a router the route's status goes.
func (r *PoolCanaryReconciler) setUpRouting(ctx context.Context, pc *v1alpha1.PoolCanary, router trafficrouting.Router, now time.Time, out *pending) (held bool, err error) {
	if !router.Weighted() {
		meta.RemoveStatusCondition(&pc.Status.Conditions, v1alpha1.ConditionDegraded)
		pc.Status.RouteWeight = nil
		return false, nil
	}
	problem, err := router.SetUp(ctx)
	switch {
	case err != nil:
		return false, err
	case problem != nil:
		r.degrade(pc, problem, out)
		return true, nil
	case routeDegraded(pc) && !pc.RolloutEnded():
		pc.Status.StepStartedAt = ptrTime(now)
	}
	return false, nil
}

// setWeight gives the router the current weight (gray: the weight, stable: 100 - weight; 0
// after a promotion, a rollback or an abort), with an Event when it changed, and records the
// share read back in status.routeWeight and Degraded False.
func (r *PoolCanaryReconciler) setWeight(ctx context.Context, pc *v1alpha1.PoolCanary, router trafficrouting.Router, out *pending) error {
	if !router.Weighted() {
		return nil
	}
	weight := min(max(pc.Status.CurrentWeight, 0), 100)
	change, problem, err := router.SetWeight(ctx, weight)
	switch {
	case err != nil:
		return err
	case problem != nil:
		r.degrade(pc, problem, out)
		return nil
	case change.Changed:
		out.event(corev1.EventTypeNormal, EventRouteWeights, "Route", "%s", change.Message)
	}
	share, err := router.VerifyWeight(ctx)
	if err != nil {
		return err
	}
	pc.Status.RouteWeight = &share
	setCondition(pc, v1alpha1.ConditionDegraded, metav1.ConditionFalse, ReasonRouteSet, change.Message)
	return nil
}

// routeRequeue caps requeue at RouteResync for a router whose object is not watched: a route
// created late, or whose weights someone else changed, is set within it. Once the rollout has
// ended and its route is set (not Degraded), endedResyncFactor times less often: an ended
// canary has nothing to move, and a fleet of them would otherwise cost a reconcile each every
// RouteResync forever.
func (r *PoolCanaryReconciler) routeRequeue(pc *v1alpha1.PoolCanary, router trafficrouting.Router, requeue time.Duration) time.Duration {
	if !router.Weighted() {
		return requeue
	}
	resync := r.routeResync()
	if pc.RolloutEnded() && !meta.IsStatusConditionTrue(pc.Status.Conditions, v1alpha1.ConditionDegraded) {
		resync *= endedResyncFactor
	}
	if requeue == 0 || requeue > resync {
		return resync
	}
	return requeue
}

// endedResyncFactor is how many times less often an ended canary's route is read again.
const endedResyncFactor = 10

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

// degrade records a route the controller cannot set: Degraded True (with a Warning Event when
// it turns True or its message changes) and no route weight in force that it knows of.
func (r *PoolCanaryReconciler) degrade(pc *v1alpha1.PoolCanary, p *trafficrouting.Problem, out *pending) {
	if c := meta.FindStatusCondition(pc.Status.Conditions, v1alpha1.ConditionDegraded); c == nil || c.Status != metav1.ConditionTrue || c.Message != p.Message {
		out.event(corev1.EventTypeWarning, EventRouteDegraded, "Route", "%s", p.Message)
	}
	pc.Status.RouteWeight = nil
	setCondition(pc, v1alpha1.ConditionDegraded, metav1.ConditionTrue, p.Reason, p.Message)
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

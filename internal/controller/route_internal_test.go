package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/controller/trafficrouting"
	"github.com/poolparity/poolparity/internal/controller/trafficrouting/replicasplit"
)

func TestServicePort(t *testing.T) {
	tests := []struct {
		name  string
		ports [][]corev1.ContainerPort
		want  int32
	}{
		{"no port is 8080", nil, 8080},
		{"an unnamed port is not http", [][]corev1.ContainerPort{{{ContainerPort: 9000}}}, 8080},
		{"the port named http", [][]corev1.ContainerPort{{{Name: "metrics", ContainerPort: 9090}, {Name: "http", ContainerPort: 8081}}}, 8081},
		{"the first container's http port wins", [][]corev1.ContainerPort{{{Name: "admin", ContainerPort: 1}}, {{Name: "http", ContainerPort: 3000}}, {{Name: "http", ContainerPort: 4000}}}, 3000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tmpl corev1.PodTemplateSpec
			for _, ps := range tt.ports {
				tmpl.Spec.Containers = append(tmpl.Spec.Containers, corev1.Container{Ports: ps})
			}
			if got := servicePort(&tmpl); got != tt.want {
				t.Errorf("servicePort = %d, want %d", got, tt.want)
			}
		})
	}
}

// weightedRouter is a Router that weighs on an object of its own; only Weighted is called.
type weightedRouter struct{ trafficrouting.Router }

func (weightedRouter) Weighted() bool { return true }

// TestRouteRequeue (issue 63, "a routed canary is resynced every 30 s forever"): a running
// canary's route is read again within RouteResync; an ended one's, once set, ten times less
// often; a Degraded one's at the running pace.
func TestRouteRequeue(t *testing.T) {
	r := &PoolCanaryReconciler{RouteResync: 30 * time.Second}
	tests := []struct {
		name     string
		ended    bool
		degraded bool
		requeue  time.Duration
		want     time.Duration
	}{
		{"running, nothing due", false, false, 0, 30 * time.Second},
		{"running, a look due sooner", false, false, 5 * time.Second, 5 * time.Second},
		{"running, a look due later", false, false, time.Minute, 30 * time.Second},
		{"ended, route set", true, false, 0, 5 * time.Minute},
		{"ended, route degraded", true, true, 0, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc := scheduleCanary(v1alpha1.StatisticalCounts)
			reason := v1alpha1.ReasonStepping
			if tt.ended {
				reason = v1alpha1.ReasonPromoted
			}
			status := map[bool]metav1.ConditionStatus{true: metav1.ConditionFalse, false: metav1.ConditionTrue}[tt.ended]
			setCondition(pc, v1alpha1.ConditionProgressing, status, reason, "")
			degraded := map[bool]metav1.ConditionStatus{true: metav1.ConditionTrue, false: metav1.ConditionFalse}[tt.degraded]
			setCondition(pc, v1alpha1.ConditionDegraded, degraded, ReasonRouteSet, "")
			if tt.ended != pc.RolloutEnded() {
				t.Fatalf("RolloutEnded = %t, the test wants %t", pc.RolloutEnded(), tt.ended)
			}
			if got := r.routeRequeue(pc, weightedRouter{}, tt.requeue); got != tt.want {
				t.Errorf("routeRequeue = %s, want %s", got, tt.want)
			}
			if got := r.routeRequeue(pc, replicasplit.New(pc, trafficrouting.Deps{}), tt.requeue); got != tt.requeue {
				t.Errorf("an unweighted router: routeRequeue = %s, want the requeue %s", got, tt.requeue)
			}
		})
	}
}

package v1alpha1_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
)

func TestRolloutEndedAndRequestRefusal(t *testing.T) {
	canary := func(status metav1.ConditionStatus, reason string) *v1alpha1.PoolCanary {
		pc := &v1alpha1.PoolCanary{}
		if reason != "" {
			pc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionProgressing, Status: status, Reason: reason, Message: "m"}}
		}
		return pc
	}
	tests := []struct {
		name        string
		pc          *v1alpha1.PoolCanary
		ended       bool
		wantRefusal string
	}{
		{"a canary not reconciled yet has not ended and takes requests", canary("", ""), false, ""},
		{"a stepping rollout takes requests", canary(metav1.ConditionTrue, v1alpha1.ReasonStepping), false, ""},
		{"spec.paused only pauses", canary(metav1.ConditionFalse, v1alpha1.ReasonPaused), false, ""},
		{"a rollout paused on success has ended and still takes requests", canary(metav1.ConditionFalse, v1alpha1.ReasonPausedOnSuccess), true, ""},
		{"a rollout paused on failure has ended and still takes requests", canary(metav1.ConditionFalse, v1alpha1.ReasonPausedOnFailure), true, ""},
		{"a promoted rollout refuses", canary(metav1.ConditionFalse, v1alpha1.ReasonPromoted), true, "the rollout has ended (Promoted: m)"},
		{"a rolled back rollout refuses", canary(metav1.ConditionFalse, v1alpha1.ReasonRolledBack), true, "the rollout has ended (RolledBack: m)"},
		{"an aborted rollout refuses", canary(metav1.ConditionFalse, v1alpha1.ReasonAborted), true, "the rollout has ended (Aborted: m)"},
		{"nothing to compare refuses", canary(metav1.ConditionFalse, v1alpha1.ReasonNothingToCompare), true, "the rollout has ended (NothingToCompare: m)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.pc.RolloutEnded(); got != tt.ended {
				t.Errorf("RolloutEnded() = %t, want %t", got, tt.ended)
			}
			if got := tt.pc.RequestRefusal(); got != tt.wantRefusal {
				t.Errorf("RequestRefusal() = %q, want %q", got, tt.wantRefusal)
			}
		})
	}
}

func TestServiceNames(t *testing.T) {
	pc := &v1alpha1.PoolCanary{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	tests := []struct {
		name         string
		g            v1alpha1.GatewayAPIRouting
		stable, gray string
	}{
		{"unset, they are the track Deployments' names", v1alpha1.GatewayAPIRouting{HTTPRoute: "r"}, "shop-stable", "shop-gray"},
		{"set, they are kept", v1alpha1.GatewayAPIRouting{HTTPRoute: "r", StableService: "a", GrayService: "b"}, "a", "b"},
		{"one set, the other defaults", v1alpha1.GatewayAPIRouting{HTTPRoute: "r", GrayService: "b"}, "shop-stable", "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if stable, gray := tt.g.ServiceNames(pc); stable != tt.stable || gray != tt.gray {
				t.Errorf("ServiceNames() = %q, %q; want %q, %q", stable, gray, tt.stable, tt.gray)
			}
		})
	}
}

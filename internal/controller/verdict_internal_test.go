package controller

import (
	"testing"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/parity"
)

// TestVerdictRulesCoverEveryVerdict holds the one mapping to both vocabularies: every verdict of
// the judge maps to a CRD verdict whose rule is its own, and one the mapping does not know is
// never a pass.
func TestVerdictRulesCoverEveryVerdict(t *testing.T) {
	tests := []struct {
		judge parity.Verdict
		crd   v1alpha1.Verdict
	}{
		{parity.Pass, v1alpha1.VerdictPass},
		{parity.Fail, v1alpha1.VerdictFail},
		{parity.NoData, v1alpha1.VerdictNoData},
		{parity.Error, v1alpha1.VerdictError},
		{"MAYBE", v1alpha1.VerdictError},
	}
	for _, tt := range tests {
		t.Run(string(tt.judge), func(t *testing.T) {
			got := crdVerdict(tt.judge)
			if got != tt.crd {
				t.Fatalf("crdVerdict(%q) = %q, want %q", tt.judge, got, tt.crd)
			}
			if r := verdictOf(got); r.crd != got || r.reason == "" {
				t.Errorf("verdictOf(%q) = %+v, want its own rule with a Parity reason", got, r)
			}
		})
	}
	if r := verdictOf("Maybe"); r.crd != v1alpha1.VerdictNoData {
		t.Errorf("an unknown CRD verdict holds as %q, want NoData", r.crd)
	}
}

// TestProgressReasonsCoverEveryReason holds the phase table to the Progressing reasons.
func TestProgressReasonsCoverEveryReason(t *testing.T) {
	tests := []struct {
		reason string
		phase  v1alpha1.Phase
		ended  bool
	}{
		{v1alpha1.ReasonStepping, v1alpha1.PhaseProgressing, false},
		{v1alpha1.ReasonPaused, v1alpha1.PhasePaused, false},
		{v1alpha1.ReasonPromoted, v1alpha1.PhasePromoted, true},
		{v1alpha1.ReasonNothingToCompare, v1alpha1.PhasePromoted, true},
		{v1alpha1.ReasonPausedOnSuccess, v1alpha1.PhasePaused, true},
		{v1alpha1.ReasonRolledBack, v1alpha1.PhaseRolledBack, true},
		{v1alpha1.ReasonPausedOnFailure, v1alpha1.PhasePaused, true},
		{v1alpha1.ReasonAborted, v1alpha1.PhaseRolledBack, true},
	}
	if got := v1alpha1.ProgressReasons(); len(got) != len(tests) {
		t.Errorf("v1alpha1 has %d Progressing reasons %v, the test %d", len(got), got, len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			pc := &v1alpha1.PoolCanary{}
			setCondition(pc, v1alpha1.ConditionProgressing, "True", tt.reason, "")
			if got := phaseOf(pc); got != tt.phase {
				t.Errorf("phase %s, want %s", got, tt.phase)
			}
			if got := pc.RolloutEnded(); got != tt.ended {
				t.Errorf("ended %v, want %v", got, tt.ended)
			}
		})
	}
}

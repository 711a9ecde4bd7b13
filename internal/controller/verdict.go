package controller

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/parity"
)

// verdictRule is what one verdict of the judge does to the status.
type verdictRule struct {
	judge parity.Verdict   // the judge's verdict (parity.Report.Verdict)
	crd   v1alpha1.Verdict // status.lastAnalysis.verdict and the SLIs'
	// parity and reason are the Parity condition an analysis at the step's end sets;
	// interimReason its reason after an interim look (Sequential mode) that does not fail.
	parity                metav1.ConditionStatus
	reason, interimReason string
	// holding ends the Progressing message of a step that holds on the verdict ("holding
	// weight 10: <holding>"); a pass and a failure have their own.
	holding string
	// eventType and event are the Event of an analysis that fails or holds the step.
	eventType, event string
}

// verdictRules is the one mapping from the judge's verdict to the status: the CRD's verdict,
// the Parity condition, the hold message and the Event. crdVerdict and verdictOf read it; the
// phase follows from the Progressing reason the decision sets (progressReasons). Read only.
var verdictRules = [...]verdictRule{
	{judge: parity.Pass, crd: v1alpha1.VerdictPass, parity: metav1.ConditionTrue, reason: "Passed", interimReason: "InterimPass"},
	{judge: parity.Fail, crd: v1alpha1.VerdictFail, parity: metav1.ConditionFalse, reason: "Breached",
		eventType: corev1.EventTypeWarning, event: EventAnalysisFailed},
	{judge: parity.NoData, crd: v1alpha1.VerdictNoData, parity: metav1.ConditionUnknown, reason: "NoData", interimReason: "NoData",
		holding: "analysis inconclusive", eventType: corev1.EventTypeNormal, event: EventAnalysisInconclusive},
	{judge: parity.Error, crd: v1alpha1.VerdictError, parity: metav1.ConditionUnknown, reason: EventPrometheusUnavailable, interimReason: EventPrometheusUnavailable,
		holding: "Prometheus unavailable", eventType: corev1.EventTypeWarning, event: EventPrometheusUnavailable},
}

// crdVerdict maps the judge's verdict to the CRD's; one it does not know is an Error (never a
// pass).
func crdVerdict(v parity.Verdict) v1alpha1.Verdict {
	for _, r := range verdictRules {
		if r.judge == v {
			return r.crd
		}
	}
	return v1alpha1.VerdictError
}

// verdictOf returns the rule of a CRD verdict; one it does not know holds the step as NoData.
func verdictOf(v v1alpha1.Verdict) verdictRule {
	var noData verdictRule
	for _, r := range verdictRules {
		if r.crd == v {
			return r
		}
		if r.crd == v1alpha1.VerdictNoData {
			noData = r
		}
	}
	return noData
}

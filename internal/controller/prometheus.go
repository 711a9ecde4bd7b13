package controller

import (
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// TenantLabel is the label every query of a PoolCanary is pinned to, with its own namespace
// as the value: one controller serves many namespaces, and a canary reads only its own
// namespace's series (docs/security.md).
const TenantLabel = "namespace"

// ReasonAnalysisRefused is the Parity condition's reason (and the Warning Event's) when the
// controller refuses to run a canary's analysis: the message names the field. No request is
// sent to Prometheus for it.
const ReasonAnalysisRefused = "AnalysisRefused"

// Refusal is an analysis the controller will not run: the spec field at fault and why.
type Refusal struct {
	Field, Reason string
}

func (r *Refusal) Error() string { return r.Field + ": " + r.Reason }

// ruleName is a recording rule's name (a metric name): the only thing spliced into a query
// besides the checked label names and quoted values.
var ruleName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// refuseAnalysis returns why the analysis of a canary in namespace must not run, or nil: a
// Prometheus endpoint that clients do not allow (clients nil skips that check: a caller with
// its own Analyzer), a label name that is not one, a rule name that is not one, or a
// namespace matcher naming another namespace (the schema refuses the first three at
// admission; this holds without it). Every query is also pinned to namespace on the parsed
// query (promread.Pin), so nothing it lets through reads another namespace.
func refuseAnalysis(a *v1alpha1.Analysis, namespace string, clients *promread.Clients) *Refusal {
	if clients != nil {
		if _, err := clients.Resolve(a.PrometheusURL); err != nil {
			return &Refusal{"spec.analysis.prometheusURL", err.Error()}
		}
	}
	if r := refuseLabels("spec.analysis.matchLabels", a.MatchLabels, namespace); r != nil {
		return r
	}
	if a.RequestRateRule != "" && !ruleName.MatchString(a.RequestRateRule) {
		return &Refusal{"spec.analysis.requestRateRule", fmt.Sprintf("%q is not a rule name", a.RequestRateRule)}
	}
	for i, sli := range a.SLIs {
		field := fmt.Sprintf("spec.analysis.slis[%d]", i)
		if r := refuseLabels(field+".matchLabels", sli.MatchLabels, namespace); r != nil {
			return r
		}
		for name, rule := range map[string]string{"rule": sli.Rule, "sampleRule": sli.SampleRule} {
			if rule != "" && !ruleName.MatchString(rule) {
				return &Refusal{field + "." + name, fmt.Sprintf("%q is not a rule name", rule)}
			}
		}
	}
	return nil
}

// refuseLabels refuses a label map whose keys are not label names, or whose namespace label
// names another namespace than the canary's.
func refuseLabels(field string, labels map[string]string, namespace string) *Refusal {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if err := promread.CheckLabelName(k); err != nil {
			return &Refusal{field, err.Error()}
		}
	}
	if v, ok := labels[TenantLabel]; ok && namespace != "" && v != namespace {
		return &Refusal{field + "." + TenantLabel, fmt.Sprintf("%q is not the canary's namespace %q: a canary reads only its own namespace's series", v, namespace)}
	}
	return nil
}

// querier returns the Querier of a's endpoint through clients, pinned to namespace (no pin
// for ""), or why the analysis is refused.
func querier(clients *promread.Clients, a *v1alpha1.Analysis, namespace string) (parity.Querier, *Refusal) {
	if clients == nil {
		return nil, &Refusal{"spec.analysis.prometheusURL", "the controller has no Prometheus endpoints configured"}
	}
	if r := refuseAnalysis(a, namespace, clients); r != nil {
		return nil, r
	}
	q, _, err := clients.For(a.PrometheusURL)
	if err != nil {
		return nil, &Refusal{"spec.analysis.prometheusURL", err.Error()}
	}
	if namespace == "" {
		return q, nil
	}
	pq, err := promread.Pin(q, TenantLabel, namespace)
	if err != nil {
		return nil, &Refusal{"metadata.namespace", err.Error()}
	}
	return pq, nil
}

package controller

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
)

// Metrics are the controller's own series, next to controller-runtime's
// (controller_runtime_reconcile_*, workqueue_*). Create them with NewMetrics; a nil
// *Metrics records nothing. Safe for concurrent use.
type Metrics struct {
	analyses *prometheus.CounterVec
	outcomes *prometheus.CounterVec
	weight   *prometheus.GaugeVec
	phase    *prometheus.GaugeVec
	duration prometheus.Histogram
}

var allPhases = []v1alpha1.Phase{
	v1alpha1.PhaseProgressing, v1alpha1.PhasePaused, v1alpha1.PhasePromoted,
	v1alpha1.PhaseRolledBack, v1alpha1.PhaseFailed,
}

// NewMetrics creates the controller's metrics and registers them with reg. The binary passes
// controller-runtime's metrics.Registry, which is the registry the manager serves on its
// metrics endpoint; tests pass a fresh prometheus.NewRegistry(). Registering the same
// metrics twice on one registry is an error.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		analyses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "poolparity_canary_analyses_total",
			Help: "Parity analyses run by the PoolCanary controller, by verdict (Pass, Fail, NoData, Error).",
		}, []string{"namespace", "name", "verdict"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "poolparity_canary_rollouts_total",
			Help: "PoolCanary rollouts that ended, by outcome (promoted, rolled_back, aborted, paused_on_success, paused_on_failure).",
		}, []string{"namespace", "name", "outcome"}),
		weight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "poolparity_canary_weight_percent",
			Help: "Current weight of the gray track of a PoolCanary, in percent.",
		}, []string{"namespace", "name"}),
		phase: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "poolparity_canary_phase",
			Help: "Phase of a PoolCanary: 1 for the current phase, 0 for the others.",
		}, []string{"namespace", "name", "phase"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "poolparity_canary_analysis_duration_seconds",
			Help:    "Time one parity analysis took (all its Prometheus queries).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 9),
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.analyses, m.outcomes, m.weight, m.phase, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering controller metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) observeAnalysis(ns, name string, v v1alpha1.Verdict, seconds float64) {
	if m == nil {
		return
	}
	m.analyses.WithLabelValues(ns, name, string(v)).Inc()
	m.duration.Observe(seconds)
}

func (m *Metrics) observeOutcome(ns, name, outcome string) {
	if m == nil {
		return
	}
	m.outcomes.WithLabelValues(ns, name, outcome).Inc()
}

func (m *Metrics) setState(ns, name string, phase v1alpha1.Phase, weight int32) {
	if m == nil {
		return
	}
	m.weight.WithLabelValues(ns, name).Set(float64(weight))
	for _, p := range allPhases {
		v := 0.0
		if p == phase {
			v = 1
		}
		m.phase.WithLabelValues(ns, name, string(p)).Set(v)
	}
}

// forget drops the series of a deleted PoolCanary.
func (m *Metrics) forget(ns, name string) {
	if m == nil {
		return
	}
	l := prometheus.Labels{"namespace": ns, "name": name}
	m.analyses.DeletePartialMatch(l)
	m.outcomes.DeletePartialMatch(l)
	m.weight.DeletePartialMatch(l)
	m.phase.DeletePartialMatch(l)
}

package controller

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/parity/promread"
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
	lag      prometheus.Histogram

	// The Prometheus endpoints' requests (promread.Observer), by endpoint: the admin's
	// allow-list bounds the label's values.
	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	inFlight        *prometheus.GaugeVec
}

var _ promread.Observer = (*Metrics)(nil)

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
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "poolparity_canary_analysis_lag_seconds",
			Help:    "How long after its due time an analysis ran: the controller falling behind (busy workers, a long queue).",
			Buckets: prometheus.ExponentialBuckets(0.1, 2.5, 9),
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "poolparity_controller_prometheus_requests_total",
			Help: "Requests of the controller to an allowed Prometheus endpoint, by kind (query, query_range, rules, rule_list) and outcome (ok; error: the query's; failed: the endpoint's; unavailable: refused or cut short by the endpoint's guard).",
		}, []string{"endpoint", "kind", "outcome"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "poolparity_controller_prometheus_request_duration_seconds",
			Help:    "Time one request of the controller to a Prometheus endpoint took, its wait for a request slot included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 9),
		}, []string{"endpoint"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "poolparity_controller_prometheus_requests_in_flight",
			Help: "Requests of the controller in flight to a Prometheus endpoint.",
		}, []string{"endpoint"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.analyses, m.outcomes, m.weight, m.phase, m.duration, m.lag, m.requests, m.requestDuration, m.inFlight} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering controller metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) observeAnalysis(ns, name string, v v1alpha1.Verdict, seconds, lateSeconds float64) {
	if m == nil {
		return
	}
	m.analyses.WithLabelValues(ns, name, string(v)).Inc()
	m.duration.Observe(seconds)
	m.lag.Observe(lateSeconds)
}

// ObserveRequest counts one request to a Prometheus endpoint (promread.Observer).
func (m *Metrics) ObserveRequest(endpoint, kind, outcome string, seconds float64) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(endpoint, kind, outcome).Inc()
	m.requestDuration.WithLabelValues(endpoint).Observe(seconds)
}

// AddInFlight moves the requests in flight to a Prometheus endpoint (promread.Observer).
func (m *Metrics) AddInFlight(endpoint string, delta int) {
	if m == nil {
		return
	}
	m.inFlight.WithLabelValues(endpoint).Add(float64(delta))
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

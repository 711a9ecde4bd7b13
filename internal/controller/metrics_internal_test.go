package controller

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
)

// TestMetricsOfTheEndpoints: the controller's series of its Prometheus endpoints' requests
// and of its analyses' lag count what they are told and pass the metric linter.
func TestMetricsOfTheEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	const ep = "http://prometheus:9090"
	m.AddInFlight(ep, 1)
	m.ObserveRequest(ep, "query", "ok", 0.02)
	m.ObserveRequest(ep, "rule_list", "ok", 0.3)
	m.ObserveRequest(ep, "query", "unavailable", 0)
	m.AddInFlight(ep, -1)
	m.observeAnalysis("ns", "shop", v1alpha1.VerdictPass, 0.5, 12)
	want := `
# HELP poolparity_controller_prometheus_requests_total Requests of the controller to an allowed Prometheus endpoint, by kind (query, query_range, rules, rule_list) and outcome (ok; error: the query's; failed: the endpoint's; unavailable: refused or cut short by the endpoint's guard).
# TYPE poolparity_controller_prometheus_requests_total counter
poolparity_controller_prometheus_requests_total{endpoint="http://prometheus:9090",kind="query",outcome="ok"} 1
poolparity_controller_prometheus_requests_total{endpoint="http://prometheus:9090",kind="query",outcome="unavailable"} 1
poolparity_controller_prometheus_requests_total{endpoint="http://prometheus:9090",kind="rule_list",outcome="ok"} 1
# HELP poolparity_controller_prometheus_requests_in_flight Requests of the controller in flight to a Prometheus endpoint.
# TYPE poolparity_controller_prometheus_requests_in_flight gauge
poolparity_controller_prometheus_requests_in_flight{endpoint="http://prometheus:9090"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "poolparity_controller_prometheus_requests_total", "poolparity_controller_prometheus_requests_in_flight"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.lag); n != 1 {
		t.Errorf("lag histogram: %d series, want 1", n)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

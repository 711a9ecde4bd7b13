// Package servertest holds test helpers for the server package's users.
package servertest

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/poolparity/poolparity/internal/server"
	"github.com/poolparity/poolparity/internal/termstats"
)

// Methods is every standard method and a few that no server knows.
var Methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "FOO", "brew", "X-" + string(make([]byte, 100))}

// Routes is every route label, and values no route produces.
var Routes = []string{
	server.RouteItem, server.RouteItems, server.RouteReport, server.RouteHealthz,
	server.RouteReadyz, server.RouteMetrics, server.RouteOther, "", "/", "/no/such/route",
}

// ObserveEverything records one request for every method in Methods,
// route in Routes and status code from 100 to 999 (all that net/http lets
// a handler write), and a shed and a refused request for every route and
// reason or bound: more than any run of the server can produce, so the
// series rec then exports are its worst case.
func ObserveEverything(rec server.Recorder) {
	for _, m := range Methods {
		for _, r := range Routes {
			for code := 100; code <= 999; code++ {
				rec.ObserveRequest(m, r, code, time.Millisecond, 4096)
			}
		}
	}
	for _, r := range Routes {
		for _, reason := range []string{server.ShedInFlight, "bytes", "other"} {
			rec.ObserveShed(r, reason)
		}
		for _, bound := range []string{string(termstats.BoundReadBytes), string(termstats.BoundHeldBytes), "other"} {
			rec.ObserveRefused(r, bound)
		}
	}
}

// WorstCase records ObserveEverything with a PromRecorder on a registry of
// its own and returns the gathered families and their series count.
func WorstCase() ([]*dto.MetricFamily, int, error) {
	reg := prometheus.NewRegistry()
	rec, err := server.NewPromRecorder(reg)
	if err != nil {
		return nil, 0, err
	}
	ObserveEverything(rec)
	mfs, err := reg.Gather()
	if err != nil {
		return nil, 0, fmt.Errorf("gathering the worst case: %w", err)
	}
	n := 0
	for _, mf := range mfs {
		n += Series(mf)
	}
	return mfs, n, nil
}

// Series counts the series a family exports: a histogram is one series per
// bucket plus +Inf, _sum and _count; a summary one per quantile plus _sum
// and _count.
func Series(mf *dto.MetricFamily) int {
	n := 0
	for _, m := range mf.GetMetric() {
		switch {
		case m.GetHistogram() != nil:
			n += len(m.GetHistogram().GetBucket()) + 3
		case m.GetSummary() != nil:
			n += len(m.GetSummary().GetQuantile()) + 2
		default:
			n++
		}
	}
	return n
}

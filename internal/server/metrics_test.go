package server_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/poolparity/poolparity/internal/pools"
	"github.com/poolparity/poolparity/internal/server"
	"github.com/poolparity/poolparity/internal/server/servertest"
)

// maxHTTPSeries is the bound on the request metrics' series per pod. With
// the rest of a pod's series (runtime, process, Redis pool, Redis health,
// pools: about 100) it keeps a pod under 300; the service tests check the
// sum.
const maxHTTPSeries = 210

func TestRequestMetricsAreBoundedInTheWorstCase(t *testing.T) {
	mfs, total, err := servertest.WorstCase()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		t.Logf("%s: %d series", mf.GetName(), servertest.Series(mf))
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "method" && len(lp.GetValue()) > 7 {
					t.Errorf("unbounded method label %q", lp.GetValue())
				}
			}
		}
	}
	if total > maxHTTPSeries {
		t.Errorf("%d request series in the worst case, want <= %d", total, maxHTTPSeries)
	}
}

func TestRequestLabels(t *testing.T) {
	tests := []struct {
		name, method, route string
		code                int
		want                map[string]string // labels of the one counter series
		histogram           bool
	}{
		{"an accepted method keeps its name", "PUT", server.RouteItem, 200, map[string]string{"method": "PUT", "code": "200"}, true},
		{"HEAD counts as the GET that serves it", "HEAD", server.RouteItem, 404, map[string]string{"method": "GET", "code": "404"}, true},
		{"a method the route refuses is other", "POST", server.RouteItem, 405, map[string]string{"method": "other", "code": "405"}, false},
		{"a code the route does not list is a class", "GET", server.RouteItem, 502, map[string]string{"code": "5xx"}, true},
		{"a non-error code the route does not list is other", "GET", server.RouteHealthz, 302, map[string]string{"code": "other"}, false},
		{"a shed request is counted, not timed", "GET", server.RouteReport, 429, map[string]string{"code": "429"}, false},
		{"a refused request is counted and timed", "GET", server.RouteReport, 422, map[string]string{"code": "422"}, true},
		{"a refused list is counted under its code", "GET", server.RouteItems, 422, map[string]string{"code": "422", "method": "GET"}, true},
		{"health checks are not timed", "GET", server.RouteReadyz, 200, map[string]string{"code": "200"}, false},
		{"an unknown route is other", "GET", "/x", 404, map[string]string{"route": "other", "method": "other", "code": "404"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			rec, err := server.NewPromRecorder(reg)
			if err != nil {
				t.Fatal(err)
			}
			rec.ObserveRequest(tt.method, tt.route, tt.code, 0, 100)
			if got := counterValue(t, reg, "http_requests_total", tt.want); got != 1 {
				t.Errorf("http_requests_total%v = %v, want 1", tt.want, got)
			}
			mfs, _ := reg.Gather()
			hasHistogram, hasSize := false, false
			for _, mf := range mfs {
				hasHistogram = hasHistogram || mf.GetName() == "http_request_duration_seconds"
				hasSize = hasSize || mf.GetName() == server.ResponseSizeName
			}
			if hasHistogram != tt.histogram || hasSize != tt.histogram {
				t.Errorf("observed in the latency histogram = %v and the size histogram = %v, want %v", hasHistogram, hasSize, tt.histogram)
			}
		})
	}
}

func TestResponseSizeIsTheBodyBytesServed(t *testing.T) {
	e := newEnv(t, pools.ModePooled)
	var want int
	for _, req := range []struct{ method, target, body string }{
		{"PUT", "/api/v1/items/s-1", `{"name":"Size","tags":["x"],"payload":"` + strings.Repeat("p", 3000) + `"}`},
		{"GET", "/api/v1/items/s-1", ""},
		{"GET", "/api/v1/items/missing", ""},
	} {
		_, body := e.do(t, req.method, req.target, strings.NewReader(req.body))
		want += len(body)
	}
	e.do(t, "GET", "/healthz", nil) // not an API route: not observed
	h := histogram(t, e.reg, server.ResponseSizeName)
	if h.GetSampleCount() != 3 || h.GetSampleSum() != float64(want) {
		t.Errorf("%s: %d observations summing %v bytes, want 3 summing %d (the bodies served)",
			server.ResponseSizeName, h.GetSampleCount(), h.GetSampleSum(), want)
	}
}

// histogram returns every series of the histogram family name merged: its
// observations and their sum.
func histogram(t testing.TB, g prometheus.Gatherer, name string) *dto.Histogram {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var count uint64
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			count += m.GetHistogram().GetSampleCount()
			sum += m.GetHistogram().GetSampleSum()
		}
	}
	return &dto.Histogram{SampleCount: &count, SampleSum: &sum}
}

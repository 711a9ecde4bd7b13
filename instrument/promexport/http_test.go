package promexport_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/instrument/promexport"
)

func newMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "0" {
			http.Error(w, `{"error":"no such item"}`, http.StatusNotFound)
			return
		}
		io.WriteString(w, `{"id":1}`)
	})
	mux.HandleFunc("POST /items", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(599 + 1) })
	return mux
}

// TestHTTPMetricsLabelsAreBounded sends requests no route table foresees and checks that every
// label value stays in its bounded set: the matched templates, the standard methods, codes of
// 100-599.
func TestHTTPMetricsLabelsAreBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := promexport.NewHTTPMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Middleware(newMux()))
	t.Cleanup(srv.Close)
	for _, req := range []struct{ method, path string }{
		{"GET", "/items/1"}, {"HEAD", "/items/2"}, {"GET", "/items/0"}, {"POST", "/items"},
		{"BREW", "/items/3"}, {"GET", "/no/such/path/" + strings.Repeat("x", 100)}, {"DELETE", "/items/1"},
	} {
		r, err := http.NewRequest(req.method, srv.URL+req.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := `
# HELP http_requests_total HTTP requests served, by method, route template and status code.
# TYPE http_requests_total counter
http_requests_total{code="200",method="GET",route="/items/{id}"} 2
http_requests_total{code="404",method="GET",route="/items/{id}"} 1
http_requests_total{code="404",method="GET",route="other"} 1
http_requests_total{code="405",method="DELETE",route="other"} 1
http_requests_total{code="405",method="other",route="other"} 1
http_requests_total{code="other",method="POST",route="/items"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "http_requests_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "http_request_duration_seconds"); n != 5 {
		t.Errorf("%d histogram series, want 5 (one per method and route seen)", n)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
}

func TestHTTPMetricsOptions(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := promexport.NewHTTPMetrics(reg, promexport.WithDurationBuckets([]float64{0.1, 1}),
		promexport.WithRoute(func(*http.Request) string { return "/fixed" }))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	m.Middleware(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var bounds []float64
	var routes []string
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "route" {
					routes = append(routes, l.GetValue())
				}
			}
			for _, b := range mt.GetHistogram().GetBucket() {
				bounds = append(bounds, b.GetUpperBound())
			}
		}
	}
	if fmt.Sprint(bounds) != "[0.1 1]" || fmt.Sprint(routes) != "[/fixed /fixed]" {
		t.Errorf("buckets %v, routes %v: want [0.1 1] and the route the option gives", bounds, routes)
	}
	if _, err := promexport.NewHTTPMetrics(reg); err == nil {
		t.Error("registering the metrics twice succeeded")
	}
}

// A service of one's own: the track labels from its environment, the runtime series the heap and
// GC SLIs read, and the request metrics around its mux. These are the series the poolparity
// rules read with rules.http.metrics "poolparity".
func ExampleNewHTTPMetrics() {
	track, err := instrument.ParseTrack("true", instrument.PoolModePooled) // e.g. os.Getenv("GRAY_STATUS")
	if err != nil {
		log.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	tr := promexport.WithTrack(reg, track)
	if err := promexport.RegisterRuntime(tr); err != nil {
		log.Fatal(err)
	}
	m, err := promexport.NewHTTPMetrics(tr)
	if err != nil {
		log.Fatal(err)
	}
	handler := m.Middleware(newMux()) // serve it with http.Server{Handler: handler}

	handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/items/7", nil))
	mfs, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "http_requests_total", "go_gc_heap_allocs_bytes_total", "process_cpu_seconds_total":
			var labels []string
			for _, l := range mf.GetMetric()[0].GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			fmt.Println(mf.GetName(), strings.Join(labels, ","))
		}
	}
	// Output:
	// go_gc_heap_allocs_bytes_total gray_status=true,pool_mode=pooled
	// http_requests_total code=200,gray_status=true,method=GET,pool_mode=pooled,route=/items/{id}
	// process_cpu_seconds_total gray_status=true,pool_mode=pooled
}

package promexport_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

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

// get sends a request without a body and returns the response body.
func get(t *testing.T, method, url string) []byte {
	t.Helper()
	r, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return b
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
		get(t, req.method, srv.URL+req.path)
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
		promexport.WithResponseSizeBuckets([]float64{10}),
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
	if fmt.Sprint(bounds) != "[0.1 1 10]" || fmt.Sprint(routes) != "[/fixed /fixed /fixed]" {
		t.Errorf("buckets %v, routes %v: want [0.1 1 10] and the route the option gives", bounds, routes)
	}
	if _, err := promexport.NewHTTPMetrics(reg); err == nil {
		t.Error("registering the metrics twice succeeded")
	}
}

// TestHTTPMetricsResponseSize serves bodies of known sizes, written in one or several writes,
// through io.Copy and around a flush, and checks http_response_size_bytes against them: the same
// family as the reference service's (name, labels, buckets).
func TestHTTPMetricsResponseSize(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := promexport.NewHTTPMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	mux := newMux()
	mux.HandleFunc("GET /blob/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.PathValue("n"))
		if err != nil {
			http.Error(w, "bad size", http.StatusBadRequest)
			return
		}
		half := strings.Repeat("x", n/2)
		io.WriteString(w, half)
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush through the middleware: %v", err)
		}
		io.Copy(w, strings.NewReader(strings.Repeat("y", n-n/2)))
	})
	srv := httptest.NewServer(m.Middleware(mux))
	t.Cleanup(srv.Close)
	for _, req := range []struct {
		method, path string
		body         int // bytes the client must receive
	}{
		{"GET", "/items/1", 8}, {"GET", "/items/2", 8}, {"GET", "/items/0", 25},
		{"GET", "/blob/0", 0}, {"GET", "/blob/2000", 2000}, {"GET", "/blob/20000", 20000},
	} {
		if b := get(t, req.method, srv.URL+req.path); len(b) != req.body {
			t.Fatalf("%s %s: %d bytes, want %d", req.method, req.path, len(b), req.body)
		}
	}
	want := `
# HELP http_response_size_bytes HTTP response body bytes, by method and route template.
# TYPE http_response_size_bytes histogram
` + sizeSeries("/blob/{n}", 22000, 1, 2, 3, 3) + sizeSeries("/items/{id}", 41, 3, 3, 3, 3)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), promexport.ResponseSizeName); err != nil {
		t.Error(err)
	}
	if a, b := testutil.CollectAndCount(reg, promexport.ResponseSizeName), testutil.CollectAndCount(reg, promexport.DurationName); a != b {
		t.Errorf("%d size series, %d latency series: want one of each per method and route", a, b)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
}

// sizeSeries returns the text exposition of the http_response_size_bytes series of GET route:
// cumulative counts for each of ResponseSizeBuckets, then the +Inf bucket and count (the last
// count), and sum.
func sizeSeries(route string, sum int, cumulative ...int) string {
	var b strings.Builder
	labels := fmt.Sprintf(`method="GET",route=%q`, route)
	for i, le := range promexport.ResponseSizeBuckets {
		fmt.Fprintf(&b, "http_response_size_bytes_bucket{%s,le=\"%g\"} %d\n", labels, le, cumulative[i])
	}
	n := cumulative[len(cumulative)-1]
	fmt.Fprintf(&b, "http_response_size_bytes_bucket{%s,le=\"+Inf\"} %d\n", labels, n)
	fmt.Fprintf(&b, "http_response_size_bytes_sum{%s} %d\nhttp_response_size_bytes_count{%s} %d\n", labels, sum, labels, n)
	return b.String()
}

func TestHTTPMetricsWithoutResponseSize(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := promexport.NewHTTPMetrics(reg, promexport.WithoutResponseSize())
	if err != nil {
		t.Fatal(err)
	}
	m.Middleware(newMux()).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/items/1", nil))
	m.ObserveResponse("GET", "/items/{id}", 200, time.Millisecond, 10)
	if n := testutil.CollectAndCount(reg, promexport.ResponseSizeName); n != 0 {
		t.Errorf("%d response-size series WithoutResponseSize, want none", n)
	}
	if n := testutil.CollectAndCount(reg, promexport.DurationName); n != 1 {
		t.Errorf("%d latency series, want 1", n)
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
		case "http_requests_total", "http_response_size_bytes", "go_gc_heap_allocs_bytes_total", "process_cpu_seconds_total":
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
	// http_response_size_bytes gray_status=true,method=GET,pool_mode=pooled,route=/items/{id}
	// process_cpu_seconds_total gray_status=true,pool_mode=pooled
}

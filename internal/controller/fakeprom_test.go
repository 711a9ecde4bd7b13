package controller_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/catalog/catalogtest"
)

// fakeProm answers the Prometheus HTTP API's instant queries (/api/v1/query) the way a
// Prometheus evaluating the poolparity recording rules would: one series per gray_status.
// In "fresh" mode a third track, the fresh baseline (gray_status="baseline"), is as slow as
// gray while the long-warm stable track is twice as fast. Its mode can change while a test
// runs. Safe for concurrent use.
type fakeProm struct {
	srv *httptest.Server

	mu      sync.Mutex
	mode    string             // "good", "regression", "nodata", "quiet", "fresh"
	queries map[string]int     // rule name -> count of instant and range queries
	ranges  []string           // every range query, "<query> step <step>"
	sent    []string           // every query as sent, instant and range
	values  map[string]float64 // rule name -> stable value (gray is the same, or worse in "regression")
}

// newFakeProm starts a fake Prometheus in mode and closes it when the test ends.
func newFakeProm(t *testing.T, mode string) *fakeProm {
	t.Helper()
	f := &fakeProm{mode: mode, queries: map[string]int{}, values: map[string]float64{
		"job_gray_status:http_requests:rate5m":                             20, // req/s: 6000 per 5m
		"job_gray_status:http_requests:rate1m":                             20, // the error ratio's request counts
		"job_gray_status:http_request_duration_seconds:p99_rate5m":         0.050,
		"job_gray_status:http_request_duration_seconds:p99_rate1m":         0.050,
		"job_gray_status:http_request_errors:ratio_rate5m":                 0.001,
		"job_gray_status:go_gc_heap_allocs_bytes_per_request:ratio_rate5m": 40000,
		"job_gray_status:redis_pool_hits:ratio_rate5m":                     0.99,
	}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// downPromURL returns the URL of a Prometheus that refuses connections.
func downPromURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	return url
}

func (f *fakeProm) setMode(m string) {
	f.mu.Lock()
	f.mode = m
	f.mu.Unlock()
}

// rangeQueries returns every range query so far, "<query> step <step>".
func (f *fakeProm) rangeQueries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ranges...)
}

// sentQueries returns every query so far as it was sent.
func (f *fakeProm) sentQueries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sent...)
}

func (f *fakeProm) count(rule string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queries[rule]
}

type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (f *fakeProm) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/query" && r.URL.Path != "/api/v1/query_range" && r.URL.Path != "/api/v1/rules" {
		http.Error(w, `{"status":"error","errorType":"not_found","error":"not found"}`, http.StatusNotFound)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := r.Form.Get("query")
	rule, _, _ := strings.Cut(q, "{")

	f.mu.Lock()
	f.queries[rule]++
	if q != "" {
		f.sent = append(f.sent, q)
	}
	if r.URL.Path == "/api/v1/query_range" {
		f.ranges = append(f.ranges, q+" step "+r.Form.Get("step"))
	}
	mode := f.mode
	stable, known := f.values[rule]
	f.mu.Unlock()

	switch mode {
	case "error":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(`{"status":"error","errorType":"execution","error":"query processing would load too many samples"}`))
		return
	case "slow":
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		return
	}
	switch r.URL.Path {
	case "/api/v1/query_range":
		start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
		end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
		f.serveRange(w, rule, mode, stable, known, start, end)
		return
	case "/api/v1/rules":
		catalogtest.WriteRules(w)
		return
	}

	var result []sample
	if known && mode != "nodata" {
		gray := stable
		switch {
		case mode == "regression" && rule == "job_gray_status:http_request_duration_seconds:p99_rate5m":
			gray = stable * 2 // gray twice as slow
		case mode == "quiet" && rule == "job_gray_status:http_requests:rate5m":
			stable, gray = 0.01, 0.01 // 3 requests per 5m
		}
		// Stamped at the query's time, as Prometheus stamps an instant answer.
		ts, err := strconv.ParseFloat(r.Form.Get("time"), 64)
		if err != nil {
			ts = float64(time.Now().Unix())
		}
		result = []sample{
			{Metric: map[string]string{"__name__": rule, "job": "poolparity", "gray_status": "false"}, Value: [2]any{ts, fmt.Sprint(stable * freshStable(mode, rule))}},
			{Metric: map[string]string{"__name__": rule, "job": "poolparity", "gray_status": "true"}, Value: [2]any{ts, fmt.Sprint(gray)}},
		}
		if mode == "fresh" {
			result = append(result, sample{Metric: map[string]string{"__name__": rule, "job": "poolparity", "gray_status": "baseline"}, Value: [2]any{ts, fmt.Sprint(gray)}})
		}
		if mode == "dup" {
			result = append(result, sample{Metric: map[string]string{"__name__": rule, "job": "other", "gray_status": "true"}, Value: [2]any{ts, fmt.Sprint(gray)}})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"status": "success",
		"data":   map[string]any{"resultType": "vector", "result": append([]sample{}, result...)},
	})
}

type rangeSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

// serveRange answers a range query with 20 samples per track around the instant value,
// spread by a fixed +-5% pattern, evenly from start to end (the last at end); in
// "regression" mode gray's latency is twice stable's, and in "quiet" mode there are only 3
// samples.
func (f *fakeProm) serveRange(w http.ResponseWriter, rule, mode string, stable float64, known bool, start, end float64) {
	var result []rangeSeries
	if known && mode != "nodata" {
		n := 20
		if mode == "quiet" {
			n = 3
		}
		factor := 1.0
		if mode == "regression" && strings.HasPrefix(rule, "job_gray_status:http_request_duration_seconds:p99_rate") {
			factor = 2
		}
		tracks := []struct {
			gs string
			f  float64
		}{{"false", freshStable(mode, rule)}, {"true", factor}}
		if mode == "fresh" {
			tracks = append(tracks, tracks[1])
			tracks[2].gs = "baseline"
		}
		for _, tr := range tracks {
			s := rangeSeries{Metric: map[string]string{"__name__": rule, "job": "poolparity", "gray_status": tr.gs}}
			for i := range n {
				phase := 0
				if tr.gs != "false" {
					phase = 2 // gray's pattern runs two samples ahead, so the tracks' ratio varies
				}
				v := stable * tr.f * (1 + 0.05*float64((i+phase)%5-2)/2)
				t := end
				if n > 1 {
					t = start + (end-start)*float64(i)/float64(n-1)
				}
				s.Values = append(s.Values, [2]any{t, fmt.Sprint(v)})
			}
			result = append(result, s)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"status": "success",
		"data":   map[string]any{"resultType": "matrix", "result": append([]rangeSeries{}, result...)},
	})
}

// freshStable is the factor on the stable track's value in mode: in "fresh" mode the stable
// track's latency is half gray's (and the fresh baseline's).
func freshStable(mode, rule string) float64 {
	if mode == "fresh" && strings.HasPrefix(rule, "job_gray_status:http_request_duration_seconds:p99_rate") {
		return 0.5
	}
	return 1
}

package controller_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/catalog/catalogtest"
	"github.com/poolparity/poolparity/internal/parity/paritytest"
)

// fakeProm answers the Prometheus HTTP API's instant queries (/api/v1/query) the way a
// Prometheus evaluating the poolparity recording rules would: one series per gray_status.
// In "fresh" mode a third track, the fresh baseline (gray_status="baseline"), is as slow as
// gray while the long-warm stable track is twice as fast. Its mode can change while a test
// runs. With withCounts it has also loaded the poolparity.counts rules, and answers the
// count-based test's reads of their raw per-pod counters (countSim). Safe for concurrent use.
type fakeProm struct {
	srv *httptest.Server

	mu      sync.Mutex
	mode    string             // "good", "regression", "nodata", "quiet", "fresh"
	queries map[string]int     // rule name -> count of instant and range queries
	ranges  []string           // every range query, "<query> step <step>"
	sent    []string           // every query as sent, instant and range
	values  map[string]float64 // rule name -> stable value (gray is the same, or worse in "regression")
	counts  *countSim          // the poolparity.counts rules' series (withCounts), nil without them
}

// promOption configures a fakeProm.
type promOption func(*fakeProm)

// newFakeProm starts a fake Prometheus in mode and closes it when the test ends.
func newFakeProm(t *testing.T, mode string, opts ...promOption) *fakeProm {
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
	for _, o := range opts {
		o(f)
	}
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
	if f.counts != nil {
		// The counters' increments up to now were drawn in the old mode: a switch applies
		// only to the steps after it, and the counters stay monotone.
		f.counts.extend(time.Now(), f.mode)
	}
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
	var counts *countAnswer
	if f.counts != nil && f.counts.rules[rule] && mode != "error" && mode != "slow" {
		counts = f.counts.answer(r, q, rule, mode)
	}
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
	if counts != nil {
		counts.write(w)
		return
	}
	switch r.URL.Path {
	case "/api/v1/query_range":
		start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
		end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
		f.serveRange(w, rule, mode, stable, known, start, end)
		return
	case "/api/v1/rules":
		if f.counts != nil {
			catalogtest.WriteRulesWithCounts(w, f.counts.step)
			return
		}
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

// countSeed seeds the count series' increments (with the step and the track).
const countSeed = 59

// withCounts makes the fake a Prometheus that has also loaded the poolparity.counts rules,
// evaluated every step: it lists them in /api/v1/rules and answers their reads (the count-based
// test's range selectors at an instant, rule{...}[span], range queries and instant ones) with
// per-pod cumulative counters from history before since on, since the earliest rollout start
// the test reads from (time.Now() for a rollout that starts after): a Prometheus that has
// evaluated the rules for that long (parity.CountHistory for every step of stable's history
// that the test reads; less keeps the reads of 1 s steps small). Gray serves at parity with
// stable in "good", slower in "regression" (latencyMult); "nodata" answers no series.
func withCounts(step time.Duration, since time.Time, history time.Duration) promOption {
	return func(f *fakeProm) {
		f.counts = newCountSim(step, since.Add(-history).Truncate(step))
	}
}

// countSim is the count rules' series of a fakeProm: per track and pod the cumulative counters
// paritytest.Counters simulates, one sample a step on a fixed grid from origin (all 0 there).
// The increments of step k (the step ending at origin + k step) are drawn once, when a read or
// a mode switch first reaches the step's end, from an rng seeded with k and the track, in the
// fake's mode at that time: a timestamp always holds the same value, however often and in
// whatever order it is read, and a mode switch changes only the increments after it. The
// fakeProm's mutex guards it.
type countSim struct {
	step   time.Duration
	origin time.Time
	tracks []paritytest.Track
	rules  map[string]bool // the count rules, by name
	series []*countSeries  // in the order they first appeared
	byKey  map[string]*countSeries
	n      int // grid points drawn, 0 to n-1
}

// countSeries is one series of a count rule: its labels and its value at each grid point.
type countSeries struct {
	metric map[string]string
	vals   []float64
}

func newCountSim(step time.Duration, origin time.Time) *countSim {
	c := &countSim{step: step, origin: origin, rules: map[string]bool{}, byKey: map[string]*countSeries{}, n: 1}
	for _, r := range catalogtest.CountRuleNames(catalog.Default()) {
		c.rules[r] = true
	}
	// One pod per track, 2000 requests a step (enough for a PASS at parity at the test's
	// first look, MinSteps steps in): latency median 20 ms (p99 about 60 ms), 0.1% 5xx.
	for _, status := range []string{"false", "true"} {
		c.tracks = append(c.tracks, paritytest.Track{Status: status, Pods: 1, PerPodStep: 2000, ErrRate: 0.001,
			Latency: 0.020, CPU: 0.001, Heap: 40000, Resp: 2000})
	}
	return c
}

// at is the time of grid point k.
func (c *countSim) at(k int) time.Time { return c.origin.Add(time.Duration(k) * c.step) }

// latencyMult is a track's latency factor in mode: gray's is 10 in "regression", a regression
// the count-based test sees within a step or two wherever it starts. (The per-track rules say
// 2x; on the counters a regression that starts after the test's PASS is judged by the FAIL
// test since the start, diluted by the steps at parity, and by the watches that start every 10
// steps after the PASS, each only MinSteps = 6 steps in: at 2x it FAILs 2 to 6 one-second
// steps after it starts, at 3x 2 to 6, at 5x 2 to 4, at 10x 1 or 2, depending on where it
// falls among the watches. The step-2 scenario must roll back within 5 s of the step's start.)
func latencyMult(mode, status string) float64 {
	if mode == "regression" && status == "true" {
		return 10
	}
	return 1
}

// extend draws the increments of every step that ends at or before t, in mode.
func (c *countSim) extend(t time.Time, mode string) {
	for k := c.n; !c.at(k).After(t); k++ {
		for ti, tr := range c.tracks {
			tr.LatencyMult = latencyMult(mode, tr.Status)
			rng := rand.New(rand.NewPCG(countSeed, uint64(k)<<2|uint64(ti)))
			m := paritytest.Counters(rng, tr, c.at(k), 1, c.step)
			for _, rule := range slices.Sorted(maps.Keys(m)) {
				for _, s := range m[rule] {
					key := s.Metric.String()
					cs, ok := c.byKey[key]
					if !ok {
						cs = &countSeries{metric: map[string]string{}, vals: make([]float64, k)}
						for name, v := range s.Metric {
							cs.metric[string(name)] = string(v)
						}
						c.byKey[key] = cs
						c.series = append(c.series, cs)
					}
					// Counters' two samples: 0 at the step's start, the step's increments at its end.
					cs.vals = append(cs.vals, cs.vals[k-1]+float64(s.Values[1].Value-s.Values[0].Value))
				}
			}
		}
		c.n = k + 1
	}
}

// last is the index of the last grid point at or before t (-1 for none).
func (c *countSim) last(t time.Time) int {
	if t.Before(c.origin) {
		return -1
	}
	return min(int(t.Sub(c.origin)/c.step), c.n-1)
}

// countAnswer is the answer to a read of a count rule.
type countAnswer struct {
	resultType string
	matrix     []rangeSeries
	vector     []sample
}

func (a *countAnswer) write(w http.ResponseWriter) {
	var result any = append([]rangeSeries{}, a.matrix...)
	if a.resultType == "vector" {
		result = append([]sample{}, a.vector...)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"status": "success",
		"data":   map[string]any{"resultType": a.resultType, "result": result},
	})
}

// answer reads rule's series as query q asks in r (the fakeProm's mutex held): a range
// selector rule{...}[span] at an instant gives every sample in (at-span, at], a range query the
// last sample at or before each of its steps, an instant query the last sample at or before it.
// The selector's matchers are not applied: every series is job="poolparity".
func (c *countSim) answer(r *http.Request, q, rule, mode string) *countAnswer {
	at := formTime(r.Form.Get("time"), time.Now())
	if r.URL.Path == "/api/v1/query_range" {
		at = formTime(r.Form.Get("end"), time.Now())
	}
	c.extend(at, mode)
	var span time.Duration
	if i := strings.LastIndex(q, "["); i >= 0 && strings.HasSuffix(q, "]") {
		d, err := model.ParseDuration(q[i+1 : len(q)-1])
		if err == nil {
			span = time.Duration(d)
		}
	}
	a := &countAnswer{resultType: "matrix"}
	if r.URL.Path == "/api/v1/query" && span == 0 {
		a.resultType = "vector"
	}
	if mode == "nodata" {
		return a
	}
	for _, s := range c.series {
		if s.metric["__name__"] != rule {
			continue
		}
		switch {
		case r.URL.Path == "/api/v1/query_range":
			start := formTime(r.Form.Get("start"), at)
			step, err := strconv.ParseFloat(r.Form.Get("step"), 64)
			if err != nil || step <= 0 {
				step = c.step.Seconds()
			}
			rs := rangeSeries{Metric: s.metric}
			for t := start; !t.After(at); t = t.Add(time.Duration(step * float64(time.Second))) {
				if k := c.last(t); k >= 0 {
					rs.Values = append(rs.Values, [2]any{unixSeconds(t), fmt.Sprint(s.vals[k])})
				}
			}
			a.matrix = append(a.matrix, rs)
		case span > 0:
			rs := rangeSeries{Metric: s.metric}
			for k := max(c.last(at.Add(-span))+1, 0); k <= c.last(at); k++ {
				rs.Values = append(rs.Values, [2]any{unixSeconds(c.at(k)), fmt.Sprint(s.vals[k])})
			}
			a.matrix = append(a.matrix, rs)
		default:
			if k := c.last(at); k >= 0 {
				a.vector = append(a.vector, sample{Metric: s.metric, Value: [2]any{unixSeconds(at), fmt.Sprint(s.vals[k])}})
			}
		}
	}
	return a
}

// formTime parses a Prometheus API time in Unix seconds, else returns dflt.
func formTime(s string, dflt time.Time) time.Time {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return dflt
	}
	return time.UnixMilli(int64(math.Round(f * 1000)))
}

// unixSeconds is t in the API's Unix seconds, to the millisecond.
func unixSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

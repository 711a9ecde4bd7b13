// Package judgetest serves a fake Prometheus HTTP API for the tests of the
// judge's callers (internal/judge, app/cmd/poolparity-judge,
// app/cmd/poolparity-argo-plugin): the poolparity recording rules loaded,
// the poolparity.counts group among them, and every per-track rule
// answered for a stable and a gray track, equal (Pass), with gray's latency
// doubled (Fail), with no series (NoData), or with an API error (Error).
// A count rule's range selector (the count-based test, the judge's default
// mode) is answered with the raw per-pod counters of two pods per track
// (internal/parity/paritytest), every CountStep.
package judgetest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/catalog/catalogtest"
	"github.com/poolparity/poolparity/internal/parity/paritytest"
)

// Mode is what the fake Prometheus answers.
type Mode string

// The modes.
const (
	// Pass: both tracks read the same, with noise, at 20 req/s each.
	Pass Mode = "pass"
	// Fail: gray's latency is twice stable's.
	Fail Mode = "fail"
	// NoData: every query answers no series.
	NoData Mode = "nodata"
	// Error: every query answers an API error (HTTP 422).
	Error Mode = "error"
)

// Samples is how many samples per track a range query answers.
const Samples = 30

// CountStep is the poolparity.counts group's evaluation interval, the step
// of the raw counters answered.
const CountStep = 20 * time.Second

// countTrack is how each track serves in the raw counters: 2 pods at
// 10 req/s each (the 20 req/s of the rate rules), a 50 ms median latency.
var countTrack = paritytest.Track{Pods: 2, PerPodStep: 10 * CountStep.Seconds(), ErrRate: 0.001, Latency: 0.05, CPU: 0.0014, Heap: 40000, Resp: 20000}

// Prom is a fake Prometheus. Safe for concurrent use.
type Prom struct {
	// URL is its base URL.
	URL string

	mu   sync.Mutex
	mode Mode
	sent []string
}

// NewProm starts a fake Prometheus answering in mode, closed when the test
// ends.
func NewProm(t testing.TB, mode Mode) *Prom {
	t.Helper()
	p := &Prom{mode: mode}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// SetMode changes what it answers.
func (p *Prom) SetMode(m Mode) {
	p.mu.Lock()
	p.mode = m
	p.mu.Unlock()
}

// Sent returns every query received, as received.
func (p *Prom) Sent() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.sent...)
}

// level is a rule's stable value; rules not listed answer 0.5.
func level(rule string) float64 {
	switch {
	case strings.HasPrefix(rule, "job_gray_status:http_requests:rate"):
		return 20
	case strings.Contains(rule, "duration_seconds"):
		return 0.05
	case strings.Contains(rule, "errors"):
		return 0
	case strings.Contains(rule, "bytes"):
		return 40000
	}
	return 0.5
}

func (p *Prom) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if err := r.ParseForm(); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	q := r.Form.Get("query")
	p.mu.Lock()
	mode := p.mode
	if q != "" {
		p.sent = append(p.sent, q)
	}
	p.mu.Unlock()
	if mode == Error {
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(`{"status":"error","errorType":"execution","error":"query processing would load too many samples"}`))
		return
	}
	rule, _, _ := strings.Cut(q, "{")
	switch r.URL.Path {
	case "/api/v1/rules":
		catalogtest.WriteRulesWithCounts(w, CountStep)
	case "/api/v1/query":
		ts, err := strconv.ParseFloat(r.Form.Get("time"), 64)
		if err != nil {
			ts = 0
		}
		if strings.HasSuffix(q, "]") {
			writeRaw(w, mode, rule, q, ts)
			return
		}
		var result []map[string]any
		if mode != NoData {
			for _, gs := range []string{"false", "true"} {
				v := level(rule) * factor(mode, rule, gs)
				result = append(result, map[string]any{"metric": map[string]string{"__name__": rule, "gray_status": gs}, "value": []any{ts, fmt.Sprint(v)}})
			}
		}
		writeData(w, "vector", result)
	case "/api/v1/query_range":
		start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
		end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
		var result []map[string]any
		if mode != NoData {
			for _, gs := range []string{"false", "true"} {
				var values [][2]any
				for i := range Samples {
					// A fixed pattern, gray's two samples ahead: the paired differences vary.
					shift := 0
					if gs == "true" {
						shift = 2
					}
					v := level(rule) * factor(mode, rule, gs) * (1 + 0.02*float64((i+shift)%5-2))
					values = append(values, [2]any{start + (end-start)*float64(i)/float64(Samples-1), fmt.Sprint(v)})
				}
				result = append(result, map[string]any{"metric": map[string]string{"__name__": rule, "gray_status": gs}, "values": values})
			}
		}
		writeData(w, "matrix", result)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"status":"error","errorType":"not_found","error":"not found"}`))
	}
}

// writeRaw answers an instant query of a range selector, rule{...}[span],
// at ts: each track's raw counters of rule over span, the same for every
// query of one span and time (so a judgement's rules agree), gray's
// latencies doubled in Fail mode.
func writeRaw(w http.ResponseWriter, mode Mode, rule, q string, ts float64) {
	d, err := model.ParseDuration(q[strings.LastIndex(q, "[")+1 : len(q)-1])
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":%q}`, err.Error())
		return
	}
	result := model.Matrix{}
	if mode != NoData {
		// One generator per query, seeded alike: the same counters for every rule.
		rng := rand.New(rand.NewPCG(7, 11))
		end := time.Unix(0, int64(ts*1e9))
		steps := int(time.Duration(d) / CountStep)
		for _, gs := range []string{"false", "true"} {
			tr := countTrack
			tr.Status = gs
			if mode == Fail && gs == "true" {
				tr.LatencyMult = 2
			}
			result = append(result, paritytest.Counters(rng, tr, end, steps, CountStep)[rule]...)
		}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": result}})
}

// factor is gray's latency factor in Fail mode, else 1.
func factor(mode Mode, rule, gs string) float64 {
	if mode == Fail && gs == "true" && strings.Contains(rule, "duration_seconds") {
		return 2
	}
	return 1
}

func writeData(w http.ResponseWriter, typ string, result []map[string]any) {
	if result == nil {
		result = []map[string]any{}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": typ, "result": result}})
}

package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/poolparity/poolparity/internal/pools"
	"github.com/poolparity/poolparity/internal/server"
	"github.com/poolparity/poolparity/internal/termstats"
)

// blockingScanStore holds every SCAN until release is closed, after
// saying so on entered.
type blockingScanStore struct {
	repeatingScanStore
	entered chan struct{}
	release chan struct{}
}

func (s blockingScanStore) ScanIDs(ctx context.Context, dst []string, limit int) ([]string, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.repeatingScanStore.ScanIDs(ctx, dst, limit)
}

// checkShed checks a 429 answer of a shed request.
func checkShed(t *testing.T, rec *httptest.ResponseRecorder, mention string) {
	t.Helper()
	if rec.Code != 429 {
		t.Fatalf("status %d, want 429 (body %s)", rec.Code, rec.Body)
	}
	if got := rec.Header().Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
	var v struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || !strings.Contains(v.Error, mention) {
		t.Errorf("body %s is not a JSON error mentioning %q (%v)", rec.Body, mention, err)
	}
}

func TestHeavyRequestsPastTheInFlightBoundAreShed(t *testing.T) {
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			st := blockingScanStore{
				repeatingScanStore: repeatingScanStore{scan: []string{"a"}, items: map[string]string{"a": `{"name":"a","tags":[],"payload":"p q"}`}},
				entered:            make(chan struct{}),
				release:            make(chan struct{}),
			}
			reg := prometheus.NewRegistry()
			rec, err := server.NewPromRecorder(reg)
			if err != nil {
				t.Fatal(err)
			}
			s, err := server.New(server.Options{Store: st, Mode: m.mode, Metrics: rec, HeavyMaxInFlight: 1})
			if err != nil {
				t.Fatal(err)
			}
			first := httptest.NewRecorder()
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.ServeHTTP(first, httptest.NewRequest("GET", "/api/v1/report", nil))
			}()
			<-st.entered // the report holds the only slot
			for _, target := range []string{"/api/v1/items", "/api/v1/report?n=5"} {
				shed := httptest.NewRecorder()
				s.ServeHTTP(shed, httptest.NewRequest("GET", target, nil))
				checkShed(t, shed, "too many heavy requests")
			}
			// Item requests are not heavy: they are served meanwhile.
			light := httptest.NewRecorder()
			s.ServeHTTP(light, httptest.NewRequest("GET", "/api/v1/items/a", nil))
			if light.Code != 200 {
				t.Errorf("GET item while a report runs = %d, want 200", light.Code)
			}
			close(st.release)
			<-done
			if first.Code != 200 {
				t.Errorf("the report in flight = %d, want 200", first.Code)
			}
			go func() { <-st.entered }() // the slot is free again
			again := httptest.NewRecorder()
			s.ServeHTTP(again, httptest.NewRequest("GET", "/api/v1/items", nil))
			if again.Code != 200 {
				t.Errorf("a list after the report = %d, want 200", again.Code)
			}
			for route, want := range map[string]float64{server.RouteItems: 1, server.RouteReport: 1} {
				if got := counterValue(t, reg, "http_requests_shed_total", map[string]string{"route": route, "reason": "in_flight"}); got != want {
					t.Errorf("http_requests_shed_total{route=%q,reason=\"in_flight\"} = %v, want %v", route, got, want)
				}
			}
			if got := counterValue(t, reg, "http_requests_total", map[string]string{"code": "429"}); got != 2 {
				t.Errorf(`http_requests_total{code="429"} = %v, want 2`, got)
			}
		})
	}
}

// checkRefusal checks a 422 answer of a request past a byte bound: a
// Refusal body naming the bound, its limit, what was counted and what
// fits, and no Retry-After (no retry can help). It returns the body.
func checkRefusal(t *testing.T, code int, h http.Header, body []byte, bound string, limit int64, fits map[string]int) server.Refusal {
	t.Helper()
	if code != 422 {
		t.Fatalf("status %d, want 422 (body %s)", code, body)
	}
	if got := h.Get("Retry-After"); got != "" {
		t.Errorf("Retry-After = %q on a 422: a permanent refusal must not invite retries", got)
	}
	var ref server.Refusal
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ref); err != nil {
		t.Fatalf("body %s is not a Refusal: %v", body, err)
	}
	if ref.Bound != bound || ref.Limit != limit || ref.Needed <= limit || !maps.Equal(ref.Fits, fits) {
		t.Errorf("refusal %+v, want bound %s, limit %d, needed > limit, fits %v", ref, bound, limit, fits)
	}
	if !strings.Contains(ref.Error, bound) || !strings.Contains(ref.Error, "retrying cannot help") {
		t.Errorf("error %q does not name %s and say a retry cannot help", ref.Error, bound)
	}
	return ref
}

// fitsTarget is the request the refusal says would fit: target with the
// query parameter of fits.
func fitsTarget(target string, fits map[string]int) string {
	path, _, _ := strings.Cut(target, "?")
	for k, v := range fits {
		return fmt.Sprintf("%s?%s=%d", path, k, v)
	}
	return ""
}

// distinctTerms is a payload of n distinct words of the same length, a
// term counter's worst case.
func distinctTerms(prefix string, n int) string {
	var p strings.Builder
	for i := range n {
		fmt.Fprintf(&p, "%s%06d ", prefix, i)
	}
	return p.String()
}

func TestARequestPastAByteBoundIsRefusedWith422(t *testing.T) {
	tests := []struct {
		name    string
		budget  termstats.Budget
		items   func(i int) string // item i's body
		n       int                // items stored
		target  string
		bound   string
		limit   int64
		fits    map[string]int
		counter string // the bound label of http_requests_refused_total
	}{
		{
			name:   "a report that would read past HEAVY_MAX_READ_BYTES names n that fits",
			budget: termstats.Budget{MaxReadBytes: 24 << 10, MaxHeldBytes: 1 << 20},
			items: func(i int) string {
				return fmt.Sprintf(`{"name":"n%d","payload":%q}`, i, strings.Repeat("word ", 2<<10))
			},
			n: 3, target: "/api/v1/report?n=3",
			bound: server.BoundHeavyMaxReadBytes, limit: 24 << 10, fits: map[string]int{"n": 2}, counter: "read_bytes",
		},
		{
			name:   "a list that would read past HEAVY_MAX_READ_BYTES names the limit that fits",
			budget: termstats.Budget{MaxReadBytes: 64},
			items:  func(i int) string { return fmt.Sprintf(`{"name":"item-%d","payload":"p"}`, i) },
			n:      3, target: "/api/v1/items?limit=3",
			bound: server.BoundHeavyMaxReadBytes, limit: 64, fits: map[string]int{"limit": 2}, counter: "read_bytes",
		},
		{
			name:   "a report that would hold past HEAVY_MAX_HELD_BYTES names n that fits",
			budget: termstats.Budget{MaxHeldBytes: 256 << 10},
			items: func(i int) string {
				return fmt.Sprintf(`{"name":"t%d","payload":%q}`, i, distinctTerms(fmt.Sprintf("w%dx", i), 2500))
			},
			n: 4, target: "/api/v1/report?n=4",
			bound: server.BoundHeavyMaxHeldBytes, limit: 256 << 10, fits: map[string]int{"n": 2}, counter: "held_bytes",
		},
		{
			name:   "a single item past HEAVY_MAX_HELD_BYTES leaves nothing that fits",
			budget: termstats.Budget{MaxHeldBytes: 64 << 10},
			items:  func(int) string { return fmt.Sprintf(`{"name":"t","payload":%q}`, distinctTerms("w", 20000)) },
			n:      1, target: "/api/v1/report",
			bound: server.BoundHeavyMaxHeldBytes, limit: 64 << 10, fits: nil, counter: "held_bytes",
		},
	}
	for _, m := range modes() {
		for _, tt := range tests {
			t.Run(m.name+": "+tt.name, func(t *testing.T) {
				e := newEnv(t, m.mode, func(o *server.Options) { o.HeavyBudget = tt.budget })
				for i := range tt.n {
					if code, b := e.do(t, "PUT", fmt.Sprintf("/api/v1/items/b%d", i), strings.NewReader(tt.items(i))); code != 200 {
						t.Fatalf("PUT = %d %s", code, b)
					}
				}
				rec := httptest.NewRecorder()
				e.h.ServeHTTP(rec, httptest.NewRequest("GET", tt.target, nil))
				checkRefusal(t, rec.Code, rec.Header(), rec.Body.Bytes(), tt.bound, tt.limit, tt.fits)
				// The same request again: the same answer, whatever the load.
				again := httptest.NewRecorder()
				e.h.ServeHTTP(again, httptest.NewRequest("GET", tt.target, nil))
				if again.Code != 422 {
					t.Errorf("the same request again = %d, want 422 again", again.Code)
				}
				if tt.fits != nil {
					if code, b := e.do(t, "GET", fitsTarget(tt.target, tt.fits), nil); code != 200 {
						t.Errorf("GET %s, which the refusal says fits = %d %s, want 200", fitsTarget(tt.target, tt.fits), code, b)
					}
				}
				route, _, _ := strings.Cut(tt.target, "?")
				if got := counterValue(t, e.reg, "http_requests_refused_total", map[string]string{"route": route, "bound": tt.counter}); got != 2 {
					t.Errorf("http_requests_refused_total{bound=%q} = %v, want 2", tt.counter, got)
				}
				if got := counterValue(t, e.reg, "http_requests_shed_total", nil); got != 0 {
					t.Errorf("http_requests_shed_total = %v, want 0: a refusal is not a shed", got)
				}
			})
		}
	}
}

// TestEightConcurrentReportsPastTheHeldBoundAreAllRefused is issue 26's
// case scaled down: eight concurrent report?n=1000 over items of random
// words whose working state passes HEAVY_MAX_HELD_BYTES. Every one is a
// 422 naming the bound (before: all 429 with Retry-After: 1, which tells
// clients and proxies to retry a request that can never succeed); the
// in-flight bound queues them and sheds none.
func TestEightConcurrentReportsPastTheHeldBoundAreAllRefused(t *testing.T) {
	const held = 256 << 10
	for _, mode := range []pools.Mode{pools.ModePooled, pools.ModeUnpooled} {
		t.Run(string(mode), func(t *testing.T) {
			e := newEnv(t, mode, func(o *server.Options) {
				o.HeavyMaxInFlight = 2
				o.HeavyQueueWait = 30 * time.Second
				o.HeavyBudget = termstats.Budget{MaxReadBytes: 256 << 20, MaxHeldBytes: held}
			})
			r := rand.New(rand.NewPCG(26, 26))
			const letters = "abcdefghijklmnopqrstuvwxyz"
			for i := range 20 {
				var p strings.Builder
				for p.Len() < 16<<10 {
					for range 3 + r.IntN(6) {
						p.WriteByte(letters[r.IntN(len(letters))])
					}
					p.WriteByte(' ')
				}
				if code, b := e.do(t, "PUT", fmt.Sprintf("/api/v1/items/r%02d", i), strings.NewReader(fmt.Sprintf(`{"name":"r%d","payload":%q}`, i, p.String()))); code != 200 {
					t.Fatalf("PUT = %d %s", code, b)
				}
			}
			var wg sync.WaitGroup
			recs := make([]*httptest.ResponseRecorder, 8)
			for i := range recs {
				recs[i] = httptest.NewRecorder()
				wg.Add(1)
				go func() {
					defer wg.Done()
					e.h.ServeHTTP(recs[i], httptest.NewRequest("GET", "/api/v1/report?n=1000", nil))
				}()
			}
			wg.Wait()
			for _, rec := range recs {
				// How far each got may differ by a few items: a recycled
				// scratch's capacity counts in the held estimate.
				var own server.Refusal
				_ = json.Unmarshal(rec.Body.Bytes(), &own)
				ref := checkRefusal(t, rec.Code, rec.Header(), rec.Body.Bytes(), server.BoundHeavyMaxHeldBytes, held, own.Fits)
				if ref.Fits["n"] < 1 || ref.Fits["n"] >= 20 {
					t.Errorf("fits %v, want n in 1..19", ref.Fits)
				}
			}
			if got := counterValue(t, e.reg, "http_requests_total", map[string]string{"route": server.RouteReport, "code": "422"}); got != 8 {
				t.Errorf(`http_requests_total{code="422"} = %v, want 8`, got)
			}
			if got := counterValue(t, e.reg, "http_requests_shed_total", nil); got != 0 {
				t.Errorf("http_requests_shed_total = %v, want 0", got)
			}
		})
	}
}

func TestAHeavyRequestWaitsForASlotUpToTheQueueWait(t *testing.T) {
	st := blockingScanStore{
		repeatingScanStore: repeatingScanStore{scan: []string{"a"}, items: map[string]string{"a": `{"name":"a","tags":[],"payload":"p"}`}},
		entered:            make(chan struct{}),
		release:            make(chan struct{}),
	}
	s, err := server.New(server.Options{Store: st, HeavyMaxInFlight: 1, HeavyQueueWait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	first, waiting := httptest.NewRecorder(), httptest.NewRecorder()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.ServeHTTP(first, httptest.NewRequest("GET", "/api/v1/report", nil))
	}()
	<-st.entered // the report holds the only slot
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.ServeHTTP(waiting, httptest.NewRequest("GET", "/api/v1/items", nil))
	}()
	time.Sleep(50 * time.Millisecond) // the list is now waiting for the slot
	close(st.release)
	<-st.entered // the list got the slot once the report let it go
	wg.Wait()
	if first.Code != 200 || waiting.Code != 200 {
		t.Errorf("report %d, waiting list %d: want both 200", first.Code, waiting.Code)
	}

	// A client that leaves while waiting gets 499, not a shed 429.
	st2 := blockingScanStore{repeatingScanStore: st.repeatingScanStore, entered: make(chan struct{}), release: make(chan struct{})}
	s2, err := server.New(server.Options{Store: st2, HeavyMaxInFlight: 1, HeavyQueueWait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	go s2.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/v1/report", nil))
	<-st2.entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	left := httptest.NewRecorder()
	s2.ServeHTTP(left, httptest.NewRequest("GET", "/api/v1/items", nil).WithContext(ctx))
	if left.Code != server.StatusClientClosedRequest {
		t.Errorf("a client that left while waiting = %d, want 499", left.Code)
	}
	close(st2.release)
}

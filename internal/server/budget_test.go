package server_test

import (
	"context"
	"encoding/json"
	"fmt"
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

func TestHeavyRequestsPastTheByteBudgetAreShed(t *testing.T) {
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			e := newEnv(t, m.mode, func(o *server.Options) {
				o.HeavyBudget = termstats.Budget{MaxReadBytes: 24 << 10, MaxHeldBytes: 1 << 20}
			})
			for i := range 3 {
				body := fmt.Sprintf(`{"name":"n%d","payload":%q}`, i, strings.Repeat("word ", 2<<10))
				if code, b := e.do(t, "PUT", fmt.Sprintf("/api/v1/items/b%d", i), strings.NewReader(body)); code != 200 {
					t.Fatalf("PUT = %d %s", code, b)
				}
			}
			// Two items (about 21 KiB) fit the 24 KiB read budget, three do not.
			if code, b := e.do(t, "GET", "/api/v1/report?n=2", nil); code != 200 {
				t.Errorf("report over 2 items = %d %s, want 200", code, b)
			}
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/report?n=3", nil))
			checkShed(t, rec, "byte budget")
			// The list reads summaries: far under the budget.
			if code, b := e.do(t, "GET", "/api/v1/items", nil); code != 200 {
				t.Errorf("list = %d %s, want 200", code, b)
			}
			if got := counterValue(t, e.reg, "http_requests_shed_total", map[string]string{"route": server.RouteReport, "reason": "bytes"}); got != 1 {
				t.Errorf("http_requests_shed_total{reason=\"bytes\"} = %v, want 1", got)
			}
		})
	}
}

func TestAReportPastTheHeldBudgetIsShed(t *testing.T) {
	e := newEnv(t, pools.ModePooled, func(o *server.Options) { o.HeavyBudget = termstats.Budget{MaxHeldBytes: 64 << 10} })
	var p strings.Builder
	for i := range 20000 { // 20,000 distinct terms: a large term counter
		fmt.Fprintf(&p, "w%d ", i)
	}
	if code, b := e.do(t, "PUT", "/api/v1/items/terms", strings.NewReader(fmt.Sprintf(`{"name":"t","payload":%q}`, p.String()))); code != 200 {
		t.Fatalf("PUT = %d %s", code, b)
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/report", nil))
	checkShed(t, rec, "byte budget")
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

package promread_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/parity/promread"
)

// guardConfig is a guard with short times, so that a test sees it stall, back off and probe in
// about a second.
var guardConfig = promread.ClientConfig{
	Timeout:    time.Second,
	StallAfter: 200 * time.Millisecond,
	Backoff:    400 * time.Millisecond,
	MaxBackoff: 800 * time.Millisecond,
}

// endpointServer answers /api/v1/query per its mode: "ok" an answer, "hang" none until the
// client goes, "5xx" a 503 without Prometheus' envelope, "bad" Prometheus' 400 bad_data. It
// counts the requests that reached it.
type endpointServer struct {
	srv  *httptest.Server
	mode atomic.Value
	hits atomic.Int32
}

func newEndpointServer(t *testing.T, mode string) *endpointServer {
	t.Helper()
	e := &endpointServer{}
	e.mode.Store(mode)
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.hits.Add(1)
		_ = r.ParseForm()
		switch e.mode.Load().(string) {
		case "hang":
			select {
			case <-r.Context().Done():
			case <-time.After(30 * time.Second):
			}
		case "5xx":
			http.Error(w, "upstream down", http.StatusServiceUnavailable)
		case "bad":
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"parse error"}`)
		default:
			fmt.Fprintf(w, okVector, time.Now().Unix(), time.Now().Unix())
		}
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *endpointServer) query(t *testing.T, c *promread.Clients, timeout time.Duration) (time.Duration, error) {
	t.Helper()
	q, _, err := c.For(e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	_, _, _, err = q.Query(ctx, "up", time.Now())
	return time.Since(start), err
}

// TestGuardStallsBacksOffAndProbes drives one endpoint's guard through its states against a
// real HTTP server: a never-answering endpoint costs one request's wait, not one per caller.
func TestGuardStallsBacksOffAndProbes(t *testing.T) {
	hang := newEndpointServer(t, "hang")
	good := newEndpointServer(t, "ok")
	c, err := promread.NewClients([]string{hang.srv.URL, good.srv.URL}, false, guardConfig)
	if err != nil {
		t.Fatal(err)
	}

	// Two callers at once: the first waits out the client's timeout, the second is cut short when
	// the endpoint stalls, and a third, sent while it is stalled, is not sent at all.
	var wg sync.WaitGroup
	var firstErr, secondErr error
	var firstTook, secondTook time.Duration
	wg.Go(func() { firstTook, firstErr = hang.query(t, c, 5*time.Second) }) // the client's own 1s timeout ends it
	time.Sleep(50 * time.Millisecond)
	wg.Go(func() { secondTook, secondErr = hang.query(t, c, 5*time.Second) })
	time.Sleep(300 * time.Millisecond)
	took, err := hang.query(t, c, 5*time.Second)
	if !errors.Is(err, promread.ErrEndpointUnavailable) || !strings.Contains(err.Error(), "has not answered") || took > 50*time.Millisecond {
		t.Errorf("a request while stalled: %v after %s, want ErrEndpointUnavailable at once", err, took)
	}
	// The good endpoint answers meanwhile: one endpoint's guard is its own.
	if took, err := good.query(t, c, time.Second); err != nil {
		t.Errorf("the other endpoint while the first is stalled: %v after %s", err, took)
	}
	wg.Wait()
	if !errors.Is(secondErr, promread.ErrEndpointUnavailable) || !strings.Contains(secondErr.Error(), "cut short") || secondTook > time.Second {
		t.Errorf("the request begun after the stalled one: %v after %s, want it cut short about 150ms in", secondErr, secondTook)
	}
	if firstErr == nil || errors.Is(firstErr, promread.ErrEndpointUnavailable) || firstTook < 600*time.Millisecond {
		t.Errorf("the stalled request: %v after %s, want the client's timeout", firstErr, firstTook)
	}
	if n := hang.hits.Load(); n != 2 {
		t.Errorf("%d requests reached the never-answering endpoint, want 2", n)
	}

	// Its deadline was a failure: the endpoint is backed off, nothing is sent.
	took, err = hang.query(t, c, 5*time.Second)
	if !errors.Is(err, promread.ErrEndpointUnavailable) || !strings.Contains(err.Error(), "backed off until") || !strings.Contains(err.Error(), "1 failure(s)") || took > 50*time.Millisecond {
		t.Errorf("a request while backed off: %v after %s", err, took)
	}
	if n := hang.hits.Load(); n != 2 {
		t.Errorf("%d requests reached it while backed off, want still 2", n)
	}

	// After the backoff one probe goes; another caller meanwhile fails at once. The probe
	// times out: two failures in a row, the backoff doubles.
	time.Sleep(guardConfig.Backoff + 50*time.Millisecond)
	wg.Go(func() { firstTook, firstErr = hang.query(t, c, 5*time.Second) })
	time.Sleep(50 * time.Millisecond)
	if _, err := hang.query(t, c, 5*time.Second); !errors.Is(err, promread.ErrEndpointUnavailable) {
		t.Errorf("a request beside the probe: %v, want it refused", err)
	}
	wg.Wait()
	if n := hang.hits.Load(); n != 3 {
		t.Errorf("%d requests reached it after the backoff, want one probe (3 in all)", n)
	}
	if _, err := hang.query(t, c, 5*time.Second); err == nil || !strings.Contains(err.Error(), "2 failure(s)") {
		t.Errorf("after a failed probe: %v, want backed off after 2 failures", err)
	}

	// It answers again: the next probe closes the breaker and every caller is served.
	hang.mode.Store("ok")
	time.Sleep(guardConfig.MaxBackoff + 50*time.Millisecond)
	for i := range 3 {
		if _, err := hang.query(t, c, time.Second); err != nil {
			t.Errorf("request %d after the endpoint came back: %v", i, err)
		}
	}
}

// TestGuardJudgesFailures: only the endpoint's failures back it off, not the query's errors.
func TestGuardJudgesFailures(t *testing.T) {
	tests := []struct {
		mode     string
		backOff  bool
		outcomes string // what the Observer is told, request by request
	}{
		{"ok", false, "ok ok"},
		{"bad", false, "error error"}, // Prometheus answered: the query is at fault
		{"5xx", true, "failed unavailable"},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			e := newEndpointServer(t, tc.mode)
			obs := &recordingObserver{}
			cfg := guardConfig
			cfg.Observer = obs
			c, err := promread.NewClients([]string{e.srv.URL}, false, cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = e.query(t, c, time.Second)
			_, err = e.query(t, c, time.Second)
			if got := errors.Is(err, promread.ErrEndpointUnavailable); got != tc.backOff {
				t.Errorf("second request: %v; backed off %t, want %t", err, got, tc.backOff)
			}
			if want := map[bool]int32{true: 1, false: 2}[tc.backOff]; e.hits.Load() != want {
				t.Errorf("%d requests reached the endpoint, want %d", e.hits.Load(), want)
			}
			if got := strings.Join(obs.outcomes, " "); got != tc.outcomes || obs.inFlight != 0 || obs.maxInFlight != 1 {
				t.Errorf("observed %q, in flight %d (at most %d); want %q, 0 (1)", got, obs.inFlight, obs.maxInFlight, tc.outcomes)
			}
		})
	}
}

// TestGuardSlowButAnswering: an endpoint slower than StallAfter that answers other requests
// meanwhile is not stalled.
func TestGuardSlowButAnswering(t *testing.T) {
	var slowHits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.Form.Get("query") == "slow" {
			slowHits.Add(1)
			time.Sleep(500 * time.Millisecond)
		}
		fmt.Fprintf(w, okVector, time.Now().Unix(), time.Now().Unix())
	}))
	t.Cleanup(srv.Close)
	c, err := promread.NewClients([]string{srv.URL}, false, guardConfig)
	if err != nil {
		t.Fatal(err)
	}
	q, _, err := c.For(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var slowErr error
	wg.Go(func() { _, _, _, slowErr = q.Query(context.Background(), "slow", time.Now()) })
	wg.Go(func() {
		time.Sleep(300 * time.Millisecond)
		_, _, _, slowErr2 := q.Query(context.Background(), "slow", time.Now())
		if slowErr2 != nil {
			t.Errorf("the second slow request: %v", slowErr2)
		}
	})
	for range 10 {
		time.Sleep(50 * time.Millisecond)
		if _, _, _, err := q.Query(context.Background(), "fast", time.Now()); err != nil {
			t.Errorf("a fast request beside the slow ones: %v", err)
		}
	}
	wg.Wait()
	if slowErr != nil {
		t.Errorf("the slow request: %v", slowErr)
	}
}

// recordingObserver records what a guard tells its Observer.
type recordingObserver struct {
	mu                    sync.Mutex
	outcomes              []string
	inFlight, maxInFlight int
}

func (o *recordingObserver) ObserveRequest(endpoint, kind, outcome string, seconds float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outcomes = append(o.outcomes, outcome)
}

func (o *recordingObserver) AddInFlight(endpoint string, delta int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.inFlight += delta
	o.maxInFlight = max(o.maxInFlight, o.inFlight)
}

// TestGuardShortDeadlineIsTheCallers: a caller whose own deadline ends its request before
// StallAfter does not back off an endpoint that others share.
func TestGuardShortDeadlineIsTheCallers(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		time.Sleep(100 * time.Millisecond)
		fmt.Fprintf(w, okVector, time.Now().Unix(), time.Now().Unix())
	}))
	t.Cleanup(srv.Close)
	e := &endpointServer{srv: srv}
	c, err := promread.NewClients([]string{srv.URL}, false, guardConfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.query(t, c, 20*time.Millisecond); err == nil {
		t.Fatal("a 20ms deadline on a 100ms answer did not fail")
	}
	if _, err := e.query(t, c, time.Second); err != nil {
		t.Errorf("another caller after the short deadline: %v, want an answer", err)
	}
	if n := hits.Load(); n != 2 {
		t.Errorf("%d requests reached the endpoint, want 2", n)
	}
}

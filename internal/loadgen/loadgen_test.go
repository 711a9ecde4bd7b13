package loadgen_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/loadgen"
)

// recorder is a fake service that records the calls it receives.
type recorder struct {
	mu    sync.Mutex
	calls []string
	code  int
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method == http.MethodPut {
		var v struct {
			Name    string   `json:"name"`
			Tags    []string `json:"tags"`
			Payload string   `json:"payload"`
		}
		dec := json.NewDecoder(req.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil || v.Name == "" {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
	}
	r.mu.Lock()
	r.calls = append(r.calls, req.Method+" "+req.URL.RequestURI())
	code := r.code
	r.mu.Unlock()
	if code == 0 {
		code = http.StatusOK
	}
	w.WriteHeader(code)
}

// cfg is a run that sends every arrival: the load is open-loop, so a
// Concurrency of 1 would drop the arrivals that come while a request is in
// flight, and a busy machine that holds the run up for a moment makes the
// overdue arrivals come at once. With MaxRequests at most Concurrency, none
// can be dropped.
func cfg(url string) loadgen.Config {
	return loadgen.Config{
		BaseURL: url, Duration: 10 * time.Second, MaxRequests: 300,
		RPS: 1000, Concurrency: 1024, Keys: 50, Seed: 1,
	}
}

func TestRunStopsAtMaxRequestsWithTheMix(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()

	g, err := loadgen.New(cfg(srv.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := g.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Requests != 300 || len(rec.calls) != 300 || st.Arrivals != 300 || st.Dropped != 0 {
		t.Fatalf("sent %d requests of %d arrivals (%d dropped), server saw %d; want 300 of 300", st.Requests, st.Arrivals, st.Dropped, len(rec.calls))
	}
	if st.Latency.Count != 300 || st.ByOpLatency["get"].Count != st.ByOp["get"] {
		t.Errorf("latency of %d requests (%d gets of %d), want every answer's", st.Latency.Count, st.ByOpLatency["get"].Count, st.ByOp["get"])
	}
	if st.Errors != 0 || st.ClientErrors != 0 {
		t.Errorf("errors %d, client errors %d; want none (every PUT body must be a valid item)", st.Errors, st.ClientErrors)
	}
	for _, op := range []string{"put", "get", "list", "report", "delete"} {
		if st.ByOp[op] == 0 {
			t.Errorf("no %s call in 300 requests: %v", op, st.ByOp)
		}
	}
	if st.ByOp["get"] < st.ByOp["delete"] {
		t.Errorf("the mix is not read-mostly: %v", st.ByOp)
	}
}

// TestTheSameSeedGivesTheSameCalls: arrival i makes the same call in every
// run with one seed. Requests in flight together may reach the server in
// either order, so the calls are compared sorted.
func TestTheSameSeedGivesTheSameCalls(t *testing.T) {
	run := func() []string {
		rec := &recorder{}
		srv := httptest.NewServer(rec)
		defer srv.Close()
		c := cfg(srv.URL)
		c.MaxRequests = 100
		g, err := loadgen.New(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		st, err := g.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Dropped != 0 {
			t.Fatalf("%d arrivals dropped with %d in flight allowed", st.Dropped, c.Concurrency)
		}
		slices.Sort(rec.calls)
		return rec.calls
	}
	a, b := run(), run()
	if len(a) != 100 || strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("two runs with one seed sent different calls (%d and %d)", len(a), len(b))
	}
}

func TestRunStopsAtItsDurationAndCountsErrors(t *testing.T) {
	rec := &recorder{code: http.StatusServiceUnavailable}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c := cfg(srv.URL)
	c.Duration, c.RPS, c.MaxRequests, c.Concurrency = 300*time.Millisecond, 100, 1_000_000, 4

	g, err := loadgen.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	st, err := g.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("run took %v, want about 300ms", took)
	}
	// 100 req/s for 0.3 s: about 30; allow a slow machine wide margins.
	if st.Requests < 1 || st.Requests > 60 {
		t.Errorf("sent %d requests in 300ms at 100 req/s", st.Requests)
	}
	if st.Errors != st.Requests {
		t.Errorf("errors %d of %d; every 503 is an error", st.Errors, st.Requests)
	}
	if st.Latency.Count != st.Requests {
		t.Errorf("latency of %d of %d answers; an error status is an answer too", st.Latency.Count, st.Requests)
	}
}

func TestRunEndsWithItsContext(t *testing.T) {
	srv := httptest.NewServer(&recorder{})
	defer srv.Close()
	c := cfg(srv.URL)
	c.RPS, c.MaxRequests = 50, 1_000_000
	g, err := loadgen.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := g.Run(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the context's", err)
	}
	if _, err := g.Run(context.Background()); err == nil {
		t.Error("a second Run succeeded")
	}
}

func TestConfigValidate(t *testing.T) {
	ok := cfg("http://127.0.0.1:8080")
	tests := []struct {
		name   string
		mutate func(*loadgen.Config)
		want   error
	}{
		{"a loopback target with bounds is valid", func(*loadgen.Config) {}, nil},
		{"localhost is loopback", func(c *loadgen.Config) { c.BaseURL = "http://localhost:1" }, nil},
		{"IPv6 loopback is loopback", func(c *loadgen.Config) { c.BaseURL = "http://[::1]:1" }, nil},
		{"a private address is refused", func(c *loadgen.Config) { c.BaseURL = "http://10.0.0.1:80" }, loadgen.ErrNotLoopback},
		{"a public name is refused", func(c *loadgen.Config) { c.BaseURL = "http://example.com" }, loadgen.ErrNotLoopback},
		{"https is refused", func(c *loadgen.Config) { c.BaseURL = "https://127.0.0.1" }, loadgen.ErrNotLoopback},
		{"an allowed host name is accepted", func(c *loadgen.Config) {
			c.BaseURL, c.AllowHosts = "http://poolparity:80", []string{"poolparity"}
		}, nil},
		{"a host name that is not allowed is refused", func(c *loadgen.Config) {
			c.BaseURL, c.AllowHosts = "http://other:80", []string{"poolparity"}
		}, loadgen.ErrNotLoopback},
		{"an allowed IP outside loopback is still refused", func(c *loadgen.Config) {
			c.BaseURL, c.AllowHosts = "http://10.0.0.1:80", []string{"10.0.0.1"}
		}, loadgen.ErrNotLoopback},
		{"no duration is refused", func(c *loadgen.Config) { c.Duration = 0 }, loadgen.ErrBounds},
		{"no request bound is refused", func(c *loadgen.Config) { c.MaxRequests = 0 }, loadgen.ErrBounds},
		{"no rate is refused", func(c *loadgen.Config) { c.RPS = 0 }, loadgen.ErrBounds},
		{"no workers is refused", func(c *loadgen.Config) { c.Concurrency = 0 }, loadgen.ErrBounds},
		{"a mix of zeros is refused", func(c *loadgen.Config) { c.Mix = loadgen.Mix{Put: -1, Get: 1} }, loadgen.ErrBounds},
		{"a large body over the service's limit is refused", func(c *loadgen.Config) { c.LargeBodyBytes = loadgen.MaxLargeBodyBytes + 1 }, loadgen.ErrBounds},
		{"a negative large body is refused", func(c *loadgen.Config) { c.LargeBodyBytes = -1 }, loadgen.ErrBounds},
		{"a wave of all workers is valid", func(c *loadgen.Config) { c.Burst = c.Concurrency }, nil},
		{"a wave larger than the workers is refused", func(c *loadgen.Config) { c.Burst = c.Concurrency + 1 }, loadgen.ErrBounds},
		{"a negative wave is refused", func(c *loadgen.Config) { c.Burst = -1 }, loadgen.ErrBounds},
		{"a virtual host is valid", func(c *loadgen.Config) { c.Host = "canary-a.poolparity.test" }, nil},
		{"a virtual host with a port is valid", func(c *loadgen.Config) { c.Host = "gw.local:8000" }, nil},
		{"a host with a path is refused", func(c *loadgen.Config) { c.Host = "a.test/x" }, loadgen.ErrBounds},
		{"a host with an empty label is refused", func(c *loadgen.Config) { c.Host = "a..test" }, loadgen.ErrBounds},
		{"a host with a bad port is refused", func(c *loadgen.Config) { c.Host = "a.test:99999" }, loadgen.ErrBounds},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mutate(&c)
			err := c.Validate()
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Validate() = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestLargeBodies: with LargeBodyBytes set, about one PUT in LargeBodyShare
// carries a payload of that size, still a valid item under 1 MiB.
func TestLargeBodies(t *testing.T) {
	const large = 300 << 10
	var mu sync.Mutex
	var puts, big int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPut {
			b, _ := io.ReadAll(req.Body)
			var v struct{ Payload string }
			if err := json.Unmarshal(b, &v); err != nil || len(b) > 1<<20 {
				http.Error(w, "bad body", http.StatusBadRequest)
				return
			}
			mu.Lock()
			puts++
			if len(v.Payload) >= large {
				big++
			}
			mu.Unlock()
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	c := cfg(srv.URL)
	c.MaxRequests, c.LargeBodyBytes = 600, large // at most Concurrency: all sent
	st := runLoad(t, c)
	if st.ClientErrors != 0 {
		t.Fatalf("%d client errors: a large body is not a valid item", st.ClientErrors)
	}
	// 1 in 16 expected; allow a wide band for the seeded draw.
	if big == 0 || big*100 < puts*2 || big*100 > puts*15 {
		t.Errorf("%d large bodies in %d PUTs, want about 1 in %d", big, puts, loadgen.LargeBodyShare)
	}
}

// TestBurstSendsWaves: with Burst, a wave's calls are in flight at once.
// Evenly paced at 40 req/s, calls of 50 ms overlap about two at a time;
// waves of 8, every 200 ms, put 8 in flight. (Concurrency is every request
// of the run, so that a wave held up on a busy machine drops none.)
func TestBurstSendsWaves(t *testing.T) {
	const wave = 8
	var inFlight, most atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		_, _ = io.Copy(io.Discard, req.Body)
		time.Sleep(50 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	c := cfg(srv.URL)
	c.RPS, c.Concurrency, c.Burst, c.MaxRequests, c.Duration = 40, 4*wave, wave, 4*wave, 10*time.Second
	st := runLoad(t, c)
	if st.Requests != uint64(c.MaxRequests) || st.Dropped != 0 {
		t.Errorf("%d requests, %d dropped; want all %d sent", st.Requests, st.Dropped, c.MaxRequests)
	}
	if got := most.Load(); got < wave {
		t.Errorf("at most %d requests in flight at once, want a wave of %d", got, wave)
	}
}

// runLoad runs a generator for c to its end and returns its counts.
func runLoad(t *testing.T, c loadgen.Config) loadgen.Stats {
	t.Helper()
	g, err := loadgen.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := g.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// slowServer answers every request after d (or when the client gives up),
// and tells how many requests it saw and how many were in flight at most.
type slowServer struct {
	d              time.Duration
	seen, inFlight atomic.Int64
	most           atomic.Int64
}

func (s *slowServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	s.seen.Add(1)
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
	}
	_, _ = io.Copy(io.Discard, req.Body)
	select {
	case <-time.After(s.d):
	case <-req.Context().Done():
	}
	w.WriteHeader(http.StatusOK)
}

// TestOpenLoop: arrivals keep their schedule when the service is slow. At
// 50 req/s for 1 s against answers of 200 ms, about 50 arrivals come due
// whatever the in-flight bound. With 64 in flight allowed, all of them are
// sent, about 10 in flight at once; with 2, most are dropped instead of
// delayed (a closed-loop generator with 2 workers would have offered about
// 10 in that second, and counted none missing).
func TestOpenLoop(t *testing.T) {
	tests := []struct {
		name                   string
		concurrency            int
		minDropped, maxDropped uint64
		minMost, maxMost       int64 // requests in flight at once, at the server
	}{
		{"a slow service gets the rate it was offered", 64, 0, 0, 5, 64},
		{"arrivals over the in-flight bound are dropped, not delayed", 2, 25, 50, 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := &slowServer{d: 200 * time.Millisecond}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			c := cfg(ts.URL)
			c.RPS, c.Duration, c.MaxRequests, c.Concurrency = 50, time.Second, 1_000_000, tt.concurrency
			st := runLoad(t, c)

			// Arrivals are due at 0, 20, ..., 980 ms (and perhaps 1 s).
			if st.Arrivals < 40 || st.Arrivals > 51 {
				t.Errorf("%d arrivals in 1 s at 50 req/s, want about 50", st.Arrivals)
			}
			if st.Dropped < tt.minDropped || st.Dropped > tt.maxDropped {
				t.Errorf("%d of %d arrivals dropped, want %d to %d", st.Dropped, st.Arrivals, tt.minDropped, tt.maxDropped)
			}
			// Sent = arrivals - dropped; the run's end cuts off at most the
			// requests in flight, which are neither counted nor dropped.
			sent := st.Arrivals - st.Dropped
			if st.Requests > sent || st.Requests+uint64(tt.concurrency) < sent {
				t.Errorf("%d requests counted of %d sent (%d arrivals, %d dropped)", st.Requests, sent, st.Arrivals, st.Dropped)
			}
			// The run's end may cut off the last few before they reach it.
			if seen := uint64(srv.seen.Load()); seen > sent || seen+5 < sent {
				t.Errorf("the server saw %d requests, %d were sent", seen, sent)
			}
			if most := srv.most.Load(); most < tt.minMost || most > tt.maxMost {
				t.Errorf("at most %d requests in flight at once, want %d to %d", most, tt.minMost, tt.maxMost)
			}
			if st.Latency.Count != st.Requests || st.Requests > 0 && st.Latency.P50 < 200*time.Millisecond {
				t.Errorf("latency %v of %d requests, want each at least the service's 200ms", st.Latency, st.Requests)
			}
		})
	}
}

// TestLatencyIsMeasuredAndReported: every answer's latency, from its
// arrival's due time, is in Stats.Latency and ByOpLatency, and in the
// JSON and the line Stats print.
func TestLatencyIsMeasuredAndReported(t *testing.T) {
	ts := httptest.NewServer(&slowServer{d: 50 * time.Millisecond})
	defer ts.Close()
	c := cfg(ts.URL)
	c.RPS, c.MaxRequests = 100, 20
	st := runLoad(t, c)

	l := st.Latency
	if l.Count != 20 || st.Requests != 20 {
		t.Fatalf("latency of %d of %d requests, want 20 of 20", l.Count, st.Requests)
	}
	if l.P50 < 50*time.Millisecond || l.P50 > l.P99 || l.P99 > l.Max || l.Mean < 50*time.Millisecond || l.Mean > l.Max {
		t.Errorf("latency %+v, want p50 >= 50ms (the service's time) and p50 <= p99 <= max", l)
	}
	var byOp uint64
	for _, s := range st.ByOpLatency {
		byOp += s.Count
	}
	if byOp != l.Count {
		t.Errorf("by op latency counts %d, want %d", byOp, l.Count)
	}
	if st.OfferedRPS <= 0 || st.AchievedRPS <= 0 || st.AchievedRPS > st.OfferedRPS {
		t.Errorf("offered %g req/s, achieved %g; want 0 < achieved <= offered", st.OfferedRPS, st.AchievedRPS)
	}

	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Arrivals    *uint64  `json:"arrivals"`
		Dropped     *uint64  `json:"dropped"`
		OfferedRPS  *float64 `json:"offered_rps"`
		AchievedRPS *float64 `json:"achieved_rps"`
		Latency     struct {
			Count uint64 `json:"count"`
			P99   int64  `json:"p99_ns"`
			P999  int64  `json:"p999_ns"`
		} `json:"latency"`
		ByOpLatency map[string]struct {
			Count uint64 `json:"count"`
		} `json:"by_op_latency"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Arrivals == nil || out.Dropped == nil || out.OfferedRPS == nil || out.AchievedRPS == nil || out.Latency.Count != 20 ||
		out.Latency.P99 != int64(l.P99) || out.Latency.P999 != int64(l.P999) || len(out.ByOpLatency) != 5 {
		t.Errorf("JSON %s lacks the new fields", b)
	}
	if line := st.String(); !strings.Contains(line, "0 dropped") || !strings.Contains(line, "p99 ") || !strings.Contains(line, "20 requests") {
		t.Errorf("String() = %q, want the requests, the dropped arrivals and the latency", line)
	}
}

// TestTransportFailuresAreErrorsWithoutLatency: a request that gets no
// answer counts as an error and has no latency.
func TestTransportFailuresAreErrorsWithoutLatency(t *testing.T) {
	ts := httptest.NewServer(&recorder{})
	url := ts.URL
	ts.Close() // connections are refused from now on
	c := cfg(url)
	c.MaxRequests = 20
	st := runLoad(t, c)
	if st.Requests != 20 || st.Errors != 20 {
		t.Errorf("%d requests, %d errors; want 20 refused, each an error", st.Requests, st.Errors)
	}
	if st.Latency != (loadgen.LatencySummary{}) {
		t.Errorf("latency %+v, want none", st.Latency)
	}
}

// TestHostSetsTheHostHeader: with Host set, every request carries it (the
// virtual host a gateway routes on) and still goes to BaseURL.
func TestHostSetsTheHostHeader(t *testing.T) {
	tests := []struct{ name, host, want string }{
		{"no host: the target's", "", ""},
		{"a virtual host", "canary-a.poolparity.test", "canary-a.poolparity.test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			hosts := map[string]int{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				hosts[r.Host]++
				mu.Unlock()
			}))
			defer srv.Close()
			c := cfg(srv.URL)
			c.MaxRequests, c.Host = 20, tt.host
			g, err := loadgen.New(c, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := g.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == "" {
				want = strings.TrimPrefix(srv.URL, "http://")
			}
			if len(hosts) != 1 || hosts[want] != 20 {
				t.Errorf("Host headers %v, want all 20 %q", hosts, want)
			}
		})
	}
}

package loadgen_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
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

func cfg(url string) loadgen.Config {
	return loadgen.Config{
		BaseURL: url, Duration: 10 * time.Second, MaxRequests: 300,
		RPS: 3000, Concurrency: 1, Keys: 50, Seed: 1,
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
	if st.Requests != 300 || len(rec.calls) != 300 {
		t.Fatalf("sent %d requests, server saw %d; want 300", st.Requests, len(rec.calls))
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
		if _, err := g.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return rec.calls
	}
	a, b := run(), run()
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Error("two runs with one seed (and one worker) sent different calls")
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
	c.MaxRequests, c.LargeBodyBytes = 1200, large
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
// Evenly paced at 40 req/s, calls of 50 ms overlap about two at a time
// (at most 5 from a late tick's credit); waves of 8 put 8 in flight.
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
	c.RPS, c.Concurrency, c.Burst, c.MaxRequests, c.Duration = 40, wave, wave, 4*wave, 10*time.Second
	st := runLoad(t, c)
	if st.Requests != uint64(c.MaxRequests) {
		t.Errorf("%d requests, want all %d", st.Requests, c.MaxRequests)
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

package loadgen_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/targets"
)

// echo is a fake service that records each request as one line: method,
// URI, Host, the X-Trace header and the body.
type echo struct {
	mu    sync.Mutex
	calls map[string]int
	code  func(*http.Request) int
}

func (e *echo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	line := fmt.Sprintf("%s %s host=%s trace=%s body=%s", r.Method, r.URL.RequestURI(), r.Host, r.Header.Get("X-Trace"), body)
	e.mu.Lock()
	if e.calls == nil {
		e.calls = map[string]int{}
	}
	e.calls[line]++
	e.mu.Unlock()
	if e.code != nil {
		w.WriteHeader(e.code(r))
	}
}

func replay(t *testing.T, h http.Handler, ts []targets.Target, mutate func(*loadgen.Config)) (loadgen.Stats, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := cfg(srv.URL)
	c.Targets, c.MaxRequests = ts, 30
	if mutate != nil {
		mutate(&c)
	}
	g, err := loadgen.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := g.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Dropped != 0 || st.Requests != uint64(c.MaxRequests) {
		t.Fatalf("%d requests, %d dropped; want all %d sent", st.Requests, st.Dropped, c.MaxRequests)
	}
	return st, strings.TrimPrefix(srv.URL, "http://")
}

func TestReplaySendsTheTargetsRoundRobin(t *testing.T) {
	ts := []targets.Target{
		{Method: "GET", URL: "/api/v1/items/42?x=1", Header: http.Header{"X-Trace": {"abc"}}},
		{Method: "POST", URL: "http://127.0.0.1:1/convert", Header: http.Header{"Content-Type": {"text/csv"}}, Body: []byte("a,b")},
		{Method: "DELETE", URL: "/api/v1/items/7", Header: http.Header{"Host": {"svc.example"}}},
	}
	e := &echo{code: func(r *http.Request) int {
		if r.Method == http.MethodDelete {
			return http.StatusNotFound
		}
		return http.StatusOK
	}}
	st, host := replay(t, e, ts, nil)
	want := map[string]int{
		"GET /api/v1/items/42?x=1 host=" + host + " trace=abc body=": 10,
		"POST /convert host=" + host + " trace= body=a,b":            10,
		"DELETE /api/v1/items/7 host=svc.example trace= body=":       10,
	}
	if fmt.Sprint(e.calls) != fmt.Sprint(want) {
		t.Errorf("the service saw %v\nwant %v", e.calls, want)
	}
	if st.ClientErrors != 10 || st.Errors != 0 {
		t.Errorf("%d client errors, %d errors; want the 10 DELETEs' 404s", st.ClientErrors, st.Errors)
	}
	wantKeys := map[string]uint64{"GET /api/v1/items/{n}": 10, "POST /convert": 10, "DELETE /api/v1/items/{n}": 10}
	for k, n := range wantKeys {
		if got := st.ByTarget[k]; got.Requests != n || got.Latency.Count != n {
			t.Errorf("ByTarget[%q] = %+v, want %d requests with latency", k, got, n)
		}
	}
	if len(st.ByTarget) != len(wantKeys) || st.ByTarget["DELETE /api/v1/items/{n}"].ClientErrors != 10 {
		t.Errorf("ByTarget %+v, want the keys %v with the DELETEs' client errors", st.ByTarget, wantKeys)
	}
	for op, n := range st.ByOp {
		if n != 0 {
			t.Errorf("ByOp[%s] = %d in a replay, want 0", op, n)
		}
	}
}

// TestReplayAtRandomIsSeeded: the same seed draws the same targets, another
// seed others, and every seed spreads 300 arrivals over the three targets.
func TestReplayAtRandomIsSeeded(t *testing.T) {
	ts := []targets.Target{{Method: "GET", URL: "/a"}, {Method: "GET", URL: "/b"}, {Method: "GET", URL: "/c"}}
	counts := func(seed uint64) string {
		st, _ := replay(t, &echo{}, ts, func(c *loadgen.Config) {
			c.Order, c.Seed, c.MaxRequests = loadgen.Random, seed, 300
		})
		for _, k := range []string{"GET /a", "GET /b", "GET /c"} {
			// 100 expected of each; 60 is more than 5 standard deviations below.
			if n := st.ByTarget[k].Requests; n < 60 || n > 140 {
				t.Errorf("seed %d: %d of 300 arrivals on %s", seed, n, k)
			}
		}
		return fmt.Sprint(st.ByTarget["GET /a"].Requests, st.ByTarget["GET /b"].Requests)
	}
	a, b, c := counts(1), counts(1), counts(2)
	if a != b {
		t.Errorf("seed 1 drew %s, then %s", a, b)
	}
	if a == c {
		t.Errorf("seeds 1 and 2 both drew %s", a)
	}
}

func TestReplayStatsKeysAreBounded(t *testing.T) {
	var ts []targets.Target
	for i := range loadgen.MaxTargetKeys + 4 {
		ts = append(ts, targets.Target{Method: "GET", URL: fmt.Sprintf("/p/x%d", i)})
	}
	ts = append(ts, targets.Target{Method: "GET", URL: "/p/x0"}) // an old key: not "other"
	st, _ := replay(t, &echo{}, ts, func(c *loadgen.Config) { c.MaxRequests = 2 * len(ts) })
	if len(st.ByTarget) != loadgen.MaxTargetKeys+1 {
		t.Fatalf("%d keys, want %d and %q", len(st.ByTarget), loadgen.MaxTargetKeys, loadgen.OtherTarget)
	}
	if n := st.ByTarget[loadgen.OtherTarget].Requests; n != 8 {
		t.Errorf("%q counted %d requests, want the 4 last paths' 8", loadgen.OtherTarget, n)
	}
	if n := st.ByTarget["GET /p/x0"].Requests; n != 4 {
		t.Errorf("GET /p/x0 counted %d, want 4 (two targets, twice each)", n)
	}
}

func TestReplayConfigIsChecked(t *testing.T) {
	path, _ := loadgen.ParsePath("/a")
	tests := []struct {
		name   string
		mutate func(*loadgen.Config)
		want   error
	}{
		{"loopback targets are valid", func(c *loadgen.Config) {
			c.Targets = []targets.Target{{Method: "GET", URL: "/a"}, {Method: "GET", URL: "http://localhost:9/b"}}
		}, nil},
		{"a target outside loopback is refused", func(c *loadgen.Config) {
			c.Targets = []targets.Target{{Method: "GET", URL: "http://10.1.2.3/b", Line: 7}}
		}, loadgen.ErrNotLoopback},
		{"an https target is refused", func(c *loadgen.Config) {
			c.Targets = []targets.Target{{Method: "GET", URL: "https://127.0.0.1/b"}}
		}, loadgen.ErrNotLoopback},
		{"an allowed host name is accepted", func(c *loadgen.Config) {
			c.Targets, c.AllowHosts = []targets.Target{{Method: "GET", URL: "http://svc/b"}}, []string{"svc"}
		}, nil},
		{"Path and Targets together are refused", func(c *loadgen.Config) {
			c.Targets, c.Path = []targets.Target{{Method: "GET", URL: "/a"}}, path
		}, loadgen.ErrBounds},
		{"an unknown method is refused", func(c *loadgen.Config) {
			c.Targets = []targets.Target{{Method: "BREW", URL: "/a"}}
		}, loadgen.ErrBounds},
		{"a relative URL is refused", func(c *loadgen.Config) {
			c.Targets = []targets.Target{{Method: "GET", URL: "a"}}
		}, loadgen.ErrBounds},
		{"a body over the cap is refused", func(c *loadgen.Config) {
			c.Targets = []targets.Target{{Method: "PUT", URL: "/a", Body: make([]byte, targets.MaxBodyBytes+1)}}
		}, loadgen.ErrBounds},
		{"an unknown order is refused", func(c *loadgen.Config) { c.Order = 7 }, loadgen.ErrBounds},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg("http://127.0.0.1:8080")
			tt.mutate(&c)
			_, err := loadgen.New(c, nil)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("New: %v, want %v", err, tt.want)
			}
		})
	}
	err := loadgen.CheckTargets([]targets.Target{{Method: "GET", URL: "/a"}, {Method: "GET", URL: "http://example.com/", Line: 9}}, nil)
	if !errors.Is(err, loadgen.ErrNotLoopback) || !strings.Contains(err.Error(), "line 9") {
		t.Errorf("CheckTargets: %v, want ErrNotLoopback naming line 9", err)
	}
}

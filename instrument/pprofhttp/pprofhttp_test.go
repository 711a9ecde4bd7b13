package pprofhttp_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/instrument/pprofhttp"
)

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(pprofhttp.Handler())
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name, path string
		code       int
		body       string // a substring of the answer
	}{
		{"index", "/debug/pprof/", http.StatusOK, "allocs"},
		{"allocs profile", "/debug/pprof/allocs?debug=1", http.StatusOK, "heap profile"},
		{"goroutines", "/debug/pprof/goroutine?debug=1", http.StatusOK, "goroutine profile"},
		{"a one-second CPU profile", "/debug/pprof/profile?seconds=1", http.StatusOK, ""},
		{"seconds past the bound", "/debug/pprof/profile?seconds=121", http.StatusBadRequest, `"error"`},
		{"seconds not a number", "/debug/pprof/trace?seconds=1x", http.StatusBadRequest, `"error"`},
		{"zero seconds", "/debug/pprof/profile?seconds=0", http.StatusBadRequest, `"error"`},
		{"not a profile path", "/metrics", http.StatusNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := srv.Client().Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code {
				t.Fatalf("GET %s: %d, want %d: %s", tc.path, resp.StatusCode, tc.code, b)
			}
			if !strings.Contains(string(b), tc.body) {
				t.Errorf("GET %s: answer lacks %q: %.200s", tc.path, tc.body, b)
			}
		})
	}
}

func TestServeStopsWithContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pprofhttp.Serve(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return 5s after its context was cancelled")
	}
}

// A service serves its profiles on a port of its own, beside its API.
func Example() {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // e.g. PPROF_ADDR; off unless set
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pprofhttp.Serve(ctx, ln) }()

	resp, err := http.Get("http://" + ln.Addr().String() + pprofhttp.Prefix + "allocs")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	cancel()
	fmt.Println(<-done)
	// Output:
	// 200
	// <nil>
}

// Package pprofhttp serves the Go runtime's profiles (net/http/pprof) on a
// port of their own, so that a service can expose them to an operator, or to
// poolparity's profile comparison, without putting them on its API port and
// without touching http.DefaultServeMux.
//
// The endpoints are the standard ones under /debug/pprof/: the index, the
// named profiles (heap, allocs, goroutine, mutex, block, threadcreate),
// profile (CPU, ?seconds=N), trace (?seconds=N), cmdline and symbol.
// Profiles reveal code paths and timings and cost CPU while they run: keep the
// port off by default and reachable only from inside the cluster (no Service,
// `kubectl port-forward`), as poolparity's chart does.
package pprofhttp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Prefix is the path under which Handler serves the profiles.
const Prefix = "/debug/pprof/"

// MaxSeconds bounds the seconds a CPU profile or a trace may run; longer
// requests are answered 400 with a JSON error body.
const MaxSeconds = 120

// Handler returns a handler serving the profiles under Prefix on a mux of its
// own. It is safe for concurrent use.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(Prefix, pprof.Index)
	mux.HandleFunc(Prefix+"cmdline", pprof.Cmdline)
	mux.Handle(Prefix+"profile", boundSeconds(http.HandlerFunc(pprof.Profile)))
	mux.HandleFunc(Prefix+"symbol", pprof.Symbol)
	mux.Handle(Prefix+"trace", boundSeconds(http.HandlerFunc(pprof.Trace)))
	return mux
}

// boundSeconds refuses a seconds parameter that is not an integer in
// [1, MaxSeconds], so that one request cannot keep a profile running for
// hours.
func boundSeconds(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := r.URL.Query().Get("seconds"); s != "" {
			var n int
			if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n < 1 || n > MaxSeconds || fmt.Sprint(n) != s {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, "{\"error\":\"seconds must be an integer in [1, %d]\"}\n", MaxSeconds)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// Serve serves Handler on ln until ctx is cancelled, then closes the server
// (profiles in progress end). It returns nil after a cancellation and the
// server's error otherwise. It closes ln.
func Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		// A CPU profile or a trace writes after its seconds have passed.
		WriteTimeout: (MaxSeconds + 30) * time.Second,
		IdleTimeout:  2 * time.Minute,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serving pprof: %w", err)
	case <-ctx.Done():
		err := srv.Close()
		<-done
		if err != nil && !errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("closing pprof server: %w", err)
		}
		return nil
	}
}

package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/poolparity/poolparity/instrument/promexport"
)

// statusWriter remembers the status code and counts the body bytes written
// through it, and turns the router's own plain-text errors into JSON ones.
type statusWriter struct {
	http.ResponseWriter
	r    *http.Request
	code int
	// size is the body bytes written.
	size int64
	// muted drops the body of a router error replaced by a JSON one.
	muted bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code != 0 {
		w.ResponseWriter.WriteHeader(code) // net/http logs the superfluous call
		return
	}
	w.code = code
	if code >= 400 && w.r.Pattern == "" {
		// Every route, and the "/" catch-all, has a handler that sets
		// r.Pattern and writes JSON. An error without a pattern comes from
		// http.ServeMux itself: a CONNECT to an authority ("CONNECT
		// host:port") matches no pattern and gets its plain-text 404, and
		// "OPTIONS *" its bare 400. Answer those in JSON as well.
		w.muted = true
		w.ResponseWriter.Header().Del("X-Content-Type-Options")
		writeError(w.ResponseWriter, code, routerErrorText(code))
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.muted {
		return len(b), nil
	}
	n, err := w.ResponseWriter.Write(b)
	w.size += int64(n)
	return n, err
}

// routerErrorText is the JSON error message for a status code written by
// http.ServeMux.
func routerErrorText(code int) string {
	switch code {
	case http.StatusNotFound:
		return "no such route"
	case http.StatusMethodNotAllowed:
		return "method not allowed"
	}
	if t := http.StatusText(code); t != "" {
		return strings.ToLower(t)
	}
	return "request rejected"
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// instrument records every request under its route template. The mux sets
// r.Pattern on the request it is given, so the handler must receive r
// itself, not a copy.
func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if s.shuttingDown.Load() {
			// Close the connection after this answer, so that a client
			// on a keep-alive connection opens a new one (to another pod)
			// for its next request instead of sending it on a connection
			// that http.Server.Shutdown may close as idle.
			w.Header().Set("Connection", "close")
		}
		sw := &statusWriter{ResponseWriter: w, r: r}
		next.ServeHTTP(sw, r)
		code := sw.code
		if code == 0 {
			code = http.StatusOK
		}
		s.metrics.ObserveRequest(r.Method, routeLabel(r), code, time.Since(start), sw.size)
	})
}

// RouteOther is the route label of requests that matched no route.
const RouteOther = promexport.Other

// routeLabel turns a mux pattern ("GET /api/v1/items/{id}") into the route
// label ("/api/v1/items/{id}"), as promexport.PatternRoute does. The
// catch-all pattern "/" becomes RouteOther, so the label set is exactly
// the registered templates.
func routeLabel(r *http.Request) string { return promexport.PatternRoute(r) }

// faults injects the configured latency and errors into API requests.
func (s *Server) faults(next http.HandlerFunc) http.HandlerFunc {
	if s.faultLatency <= 0 && s.faultErrorRate <= 0 {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if s.faultLatency > 0 {
			if err := sleep(r.Context(), s.faultLatency); err != nil {
				writeError(w, StatusClientClosedRequest, "client closed request")
				return
			}
		}
		if s.faultErrorRate > 0 && s.rand() < s.faultErrorRate {
			writeError(w, http.StatusInternalServerError, "injected fault (FAULT_ERROR_RATE)")
			return
		}
		next(w, r)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

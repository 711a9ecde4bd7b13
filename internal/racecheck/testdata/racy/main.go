// Command racy is a throwaway HTTP service for the racecheck tests: its
// handler formats every response in one package-level bytes.Buffer, the
// misuse that a pooled build can introduce, which the race detector reports
// once requests run together. RACY_LOCK=1 guards the buffer with a mutex, so
// the same binary also serves as the race-free variant.
//
// It listens on 127.0.0.1:$PORT and shuts down on SIGINT or SIGTERM, so that
// a -race build prints its "Found N data race(s)" trailer and exits 66.
package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// shared is the buffer every request formats its response in.
var shared bytes.Buffer

// server holds the lock that the race-free variant takes around shared.
type server struct {
	locked bool
	mu     sync.Mutex
}

func (s *server) handler(w http.ResponseWriter, r *http.Request) {
	if s.locked {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	shared.Reset()
	fmt.Fprintf(&shared, "hello %s\n", r.URL.Query().Get("n"))
	w.Header().Set("Content-Type", "text/plain")
	w.Write(shared.Bytes())
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "racy:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", os.Getenv("PORT")))
	if err != nil {
		return err
	}
	s := &server{locked: os.Getenv("RACY_LOCK") == "1"}
	mux := http.NewServeMux()
	mux.HandleFunc("/", s.handler)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Printf("racy: listening on %s (locked=%t)\n", ln.Addr(), s.locked)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Shutdown waits up to 5 s for a connection that was dialed but never
	// sent a request; past a short grace, close whatever is left.
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	fmt.Println("racy: stopped")
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/poolparity/poolparity/internal/judge"
	"github.com/poolparity/poolparity/internal/judge/judgehttp"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// serve builds the judge and serves the hooks and the health endpoints
// until ctx ends, then drains. ready, when not nil, receives the two
// listeners' addresses once both listen (tests).
func serve(ctx context.Context, cfg Config, log *slog.Logger, ready chan<- [2]string) error {
	clients, err := promread.NewClients(cfg.Endpoints(), false, promread.ClientConfig{
		MaxResponseBytes: int64(cfg.PrometheusMaxResponseBytes), Timeout: cfg.PrometheusTimeout,
	})
	if err != nil {
		return fmt.Errorf("prometheus endpoints: %w", err)
	}
	allow, err := cfg.Allowed()
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	j := &judge.Judge{Clients: clients, Timeout: cfg.JudgeTimeout}
	hooks, err := judgehttp.New(j, allow, judge.NewStarts(cfg.MaxRollouts), log, reg)
	if err != nil {
		return err
	}
	var stopping atomic.Bool
	health := http.NewServeMux()
	health.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	health.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if stopping.Load() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	health.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))

	var lc net.ListenConfig
	hookLn, err := lc.Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on ADDR %s: %w", cfg.Addr, err)
	}
	healthLn, err := lc.Listen(ctx, "tcp", cfg.HealthAddr)
	if err != nil {
		hookLn.Close()
		return fmt.Errorf("listening on HEALTH_ADDR %s: %w", cfg.HealthAddr, err)
	}
	servers := []*http.Server{newServer(hooks, cfg, log), newServer(health, cfg, log)}
	errc := make(chan error, 2)
	for i, ln := range []net.Listener{hookLn, healthLn} {
		go func() { errc <- servers[i].Serve(ln) }()
	}
	log.Info("serving", "addr", hookLn.Addr().String(), "health_addr", healthLn.Addr().String(), "prometheus", clients.Allowed(), "namespaces", allow.String())
	if ready != nil {
		ready <- [2]string{hookLn.Addr().String(), healthLn.Addr().String()}
	}
	var serveErr error
	select {
	case serveErr = <-errc:
		serveErr = fmt.Errorf("serving HTTP: %w", serveErr)
	case <-ctx.Done():
	}
	stopping.Store(true)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	errs := []error{serveErr}
	for _, s := range servers {
		if err := s.Shutdown(sctx); err != nil {
			errs = append(errs, fmt.Errorf("draining: %w", err), s.Close())
		}
	}
	log.Info("stopped")
	return errors.Join(errs...)
}

// newServer bounds h's connections: headers, bodies (judgehttp caps them
// too) and the answer's time, which is the judgement's bound and a margin.
func newServer(h http.Handler, cfg Config, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      cfg.JudgeTimeout + 10*time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

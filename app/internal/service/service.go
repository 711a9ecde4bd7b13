// Package service wires the poolparity service together: Redis (external
// or embedded), the metrics registry with its collectors, tracing, the
// HTTP server, and the graceful shutdown sequence. main only parses the
// configuration and calls Run.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"

	"github.com/poolparity/poolparity/app/internal/config"
	"github.com/poolparity/poolparity/app/internal/embedredis"
	"github.com/poolparity/poolparity/app/internal/report"
	"github.com/poolparity/poolparity/app/internal/server"
	"github.com/poolparity/poolparity/app/internal/store"
	"github.com/poolparity/poolparity/app/internal/telemetry"
	"github.com/poolparity/poolparity/instrument"
)

// Name is the service name in traces and logs.
const Name = "poolparity"

// Service is a wired service, ready to Serve. Create one with New and
// release it with Close.
type Service struct {
	cfg      config.Config
	log      *slog.Logger
	rdb      *redis.Client
	embedded *embedredis.Server
	tracing  *telemetry.Tracing
	server   *server.Server
	handler  http.Handler
}

// New connects to Redis (starting an embedded server when cfg.RedisAddr is
// empty), builds the metrics registry and the HTTP handler. It does not
// wait for Redis to answer: /readyz reports that.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (svc *Service, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	s := &Service{cfg: cfg, log: log}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Close())
		}
	}()

	addr := cfg.RedisAddr
	if addr == "" {
		if s.embedded, err = embedredis.Start(); err != nil {
			return nil, err
		}
		addr = s.embedded.Addr()
		log.Warn("REDIS_ADDR is not set: using an embedded in-process Redis-protocol server; data lives in memory and is lost on exit",
			"addr", addr)
	}
	s.rdb = redis.NewClient(&redis.Options{
		Addr:         addr,
		Password:     cfg.RedisPassword,
		DB:           cfg.RedisDB,
		PoolSize:     cfg.RedisPoolSize,
		DialTimeout:  cfg.RedisDialTimeout,
		ReadTimeout:  cfg.RedisReadTimeout,
		WriteTimeout: cfg.RedisWriteTimeout,
		PoolTimeout:  cfg.RedisPoolTimeout,
		// Fail fast while Redis is down: one retry, then 503.
		MaxRetries: 1,
	})

	version := buildVersion()
	if s.tracing, err = telemetry.NewTracing(ctx, cfg.OTLPEndpoint, Name, version, map[string]string{
		telemetry.LabelGrayStatus: strconv.FormatBool(cfg.GrayStatus),
		telemetry.LabelPoolMode:   cfg.PoolMode,
	}); err != nil {
		return nil, err
	}
	if err := redisotel.InstrumentTracing(s.rdb, redisotel.WithTracerProvider(s.tracing.Provider)); err != nil {
		return nil, fmt.Errorf("instrumenting redis tracing: %w", err)
	}

	gatherer, reg := telemetry.NewRegistry(cfg.GrayStatus, cfg.PoolMode)
	pools := instrument.NewRegistry()
	if err := errors.Join(
		telemetry.RegisterRuntime(reg),
		telemetry.RegisterRedis(reg, s.rdb),
		telemetry.RegisterPools(reg, pools),
	); err != nil {
		return nil, err
	}
	rec, err := server.NewPromRecorder(reg)
	if err != nil {
		return nil, err
	}
	s.server, err = server.New(server.Options{
		Store:            store.New(s.rdb),
		Pooled:           cfg.Pooled(),
		Pools:            pools,
		Metrics:          rec,
		MetricsHandler:   promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)}),
		Logger:           log,
		FaultLatency:     cfg.FaultLatency,
		FaultErrorRate:   cfg.FaultErrorRate,
		ReadyTimeout:     cfg.RedisDialTimeout + cfg.RedisReadTimeout,
		HeavyMaxInFlight: cfg.HeavyMaxInFlight,
		HeavyQueueWait:   cfg.HeavyQueueWait,
		HeavyBudget: report.Budget{
			MaxReadBytes: int64(cfg.HeavyMaxReadBytes),
			MaxHeldBytes: int64(cfg.HeavyMaxHeldBytes),
		},
	})
	if err != nil {
		return nil, err
	}
	if cfg.FaultLatency > 0 || cfg.FaultErrorRate > 0 {
		log.Warn("fault injection is on (testing knob)", "fault_latency", cfg.FaultLatency.String(), "fault_error_rate", cfg.FaultErrorRate)
	}
	s.handler = otelhttp.NewHandler(s.server, Name,
		otelhttp.WithTracerProvider(s.tracing.Provider),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})),
	)
	return s, nil
}

// Handler returns the service's HTTP handler.
func (s *Service) Handler() http.Handler { return s.handler }

// Serve serves on ln until ctx is cancelled, then shuts down: /readyz turns
// false at once and every answer from then on carries Connection: close,
// the listener stays open for cfg.ShutdownDelay so that load balancers
// notice and keep-alive clients move to new connections, and in-flight
// requests get cfg.ShutdownTimeout to finish. It closes ln.
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	s.log.Info("serving", "addr", ln.Addr().String(), "pool_mode", s.cfg.PoolMode, "gray_status", s.cfg.GrayStatus)

	select {
	case err := <-serveErr:
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}

	s.server.StartShutdown()
	s.log.Info("shutting down: readiness is false, connections close after their next answer", "delay", s.cfg.ShutdownDelay.String(), "timeout", s.cfg.ShutdownTimeout.String())
	time.Sleep(s.cfg.ShutdownDelay)

	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return errors.Join(fmt.Errorf("draining HTTP requests: %w", err), srv.Close())
	}
	s.log.Info("drained")
	return nil
}

// Close releases Redis, the embedded server and the tracer provider.
func (s *Service) Close() error {
	var errs []error
	if s.rdb != nil {
		if err := s.rdb.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing redis client: %w", err))
		}
	}
	if s.embedded != nil {
		s.embedded.Close()
	}
	if s.tracing != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.tracing.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("flushing traces: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Run builds the service, serves cfg.HTTPAddr until ctx is cancelled and
// shuts down gracefully.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger) (err error) {
	s, err := New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.HTTPAddr, err)
	}
	return s.Serve(ctx, ln)
}

func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}

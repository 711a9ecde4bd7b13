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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/instrument/pprofhttp"
	"github.com/poolparity/poolparity/internal/config"
	"github.com/poolparity/poolparity/internal/embedredis"
	"github.com/poolparity/poolparity/internal/redishealth"
	"github.com/poolparity/poolparity/internal/server"
	"github.com/poolparity/poolparity/internal/store"
	"github.com/poolparity/poolparity/internal/telemetry"
	"github.com/poolparity/poolparity/internal/termstats"
)

// Name is the service name in traces and logs.
const Name = "poolparity"

// Service is a wired service, ready to Serve. Create one with New and
// release it with Close.
type Service struct {
	cfg config.Config
	log *slog.Logger
	rdb *redis.Client
	// healthRDB is the Redis health watcher's own client: one
	// connection, no retries, no tracing, so that its pings neither
	// queue behind requests nor show in the request pool's statistics.
	healthRDB  *redis.Client
	stopHealth context.CancelFunc
	healthDone chan struct{}
	embedded   *embedredis.Server
	tracing    *telemetry.Tracing
	push       *telemetry.MetricsPush
	otelErrs   *telemetry.ExportErrors
	server     *server.Server
	handler    http.Handler
}

// New connects to Redis (starting an embedded server when cfg.RedisAddr is
// empty), builds the metrics registry and the HTTP handler, and starts the
// Redis health watcher (redis_up, redis_ping_failures_total and log lines
// at a bounded rate). It does not wait for Redis to answer, and readiness
// never depends on it (docs/service.md, "Probes").
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

	s.healthRDB = redis.NewClient(&redis.Options{
		Addr:         addr,
		Password:     cfg.RedisPassword,
		DB:           cfg.RedisDB,
		PoolSize:     1,
		DialTimeout:  cfg.RedisDialTimeout,
		ReadTimeout:  cfg.RedisReadTimeout,
		WriteTimeout: cfg.RedisWriteTimeout,
		PoolTimeout:  cfg.RedisPoolTimeout,
		MaxRetries:   -1, // one ping is one try: the next interval is the retry
	})

	gatherer, reg := telemetry.NewRegistry(cfg.GrayStatus, cfg.PoolMode)
	pools := instrument.NewRegistry()
	if err := errors.Join(
		telemetry.RegisterRuntime(reg),
		telemetry.RegisterRedis(reg, s.rdb),
		telemetry.RegisterPools(reg, pools),
	); err != nil {
		return nil, err
	}
	if err := s.startOTLP(ctx, gatherer, reg, pools); err != nil {
		return nil, err
	}
	if err := redisotel.InstrumentTracing(s.rdb, redisotel.WithTracerProvider(s.tracing.Provider)); err != nil {
		return nil, fmt.Errorf("instrumenting redis tracing: %w", err)
	}
	rec, err := server.NewPromRecorder(reg)
	if err != nil {
		return nil, err
	}
	healthOpts := []redishealth.Option{redishealth.WithInterval(cfg.RedisHealthInterval), redishealth.WithLogger(log)}
	// A ping gets the client's dial and read timeouts; 0 for both means go-redis's defaults,
	// and then the watcher's own default bound.
	if t := cfg.RedisDialTimeout + cfg.RedisReadTimeout; t > 0 {
		healthOpts = append(healthOpts, redishealth.WithTimeout(t))
	}
	watcher, err := redishealth.New(store.New(s.healthRDB), reg, healthOpts...)
	if err != nil {
		return nil, err
	}
	s.server, err = server.New(server.Options{
		Store:            store.New(s.rdb),
		Mode:             cfg.Mode(),
		Pools:            pools,
		CheckEvery:       cfg.PoolCheckEvery,
		Poison:           cfg.Poison,
		Metrics:          rec,
		MetricsHandler:   promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)}),
		Logger:           log,
		FaultLatency:     cfg.FaultLatency,
		FaultErrorRate:   cfg.FaultErrorRate,
		HeavyMaxInFlight: cfg.HeavyMaxInFlight,
		HeavyQueueWait:   cfg.HeavyQueueWait,
		HeavyBudget: termstats.Budget{
			MaxReadBytes: int64(cfg.HeavyMaxReadBytes),
			MaxHeldBytes: int64(cfg.HeavyMaxHeldBytes),
		},
	})
	if err != nil {
		return nil, err
	}
	if cfg.Poison {
		log.Warn("pool poisoning is on (POOLPARITY_POISON, a debug mode): every Put overwrites the object and every Get checks it")
	}
	if cfg.FaultLatency > 0 || cfg.FaultErrorRate > 0 {
		log.Warn("fault injection is on (testing knob)", "fault_latency", cfg.FaultLatency.String(), "fault_error_rate", cfg.FaultErrorRate)
	}
	hctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stopHealth, s.healthDone = stop, make(chan struct{})
	go func() {
		defer close(s.healthDone)
		watcher.Run(hctx)
	}()
	s.handler = otelhttp.NewHandler(s.server, Name,
		otelhttp.WithTracerProvider(s.tracing.Provider),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})),
	)
	return s, nil
}

// startOTLP sets up trace export and the metrics push when the
// configuration names an OTLP endpoint (docs/otlp.md). Both run on their
// own goroutines; failures are counted in otlp_export_failures_total on
// reg and logged at most once a minute per signal.
func (s *Service) startOTLP(ctx context.Context, g prometheus.Gatherer, reg prometheus.Registerer, pools *instrument.Registry) error {
	o := s.cfg.OTLP()
	attrs := map[string]string{
		instrument.LabelGrayStatus: s.cfg.GrayStatus,
		instrument.LabelPoolMode:   s.cfg.PoolMode,
	}
	res, err := telemetry.NewResource(Name, buildVersion(), attrs)
	if err != nil {
		return err
	}
	errs, err := telemetry.NewExportErrors(reg, s.log, time.Minute)
	if err != nil {
		return err
	}
	s.otelErrs = errs
	if s.tracing, err = telemetry.NewTracing(ctx, o, res, errs); err != nil {
		return err
	}
	if o.MetricsURL() == "" {
		return nil
	}
	if s.push, err = telemetry.NewMetricsPush(ctx, o, res, g, pools, attrs, errs); err != nil {
		return err
	}
	s.log.Info("pushing metrics over OTLP; /metrics is still served", "url", o.MetricsURL(), "interval", o.MetricInterval.String())
	return nil
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

// Close stops the Redis health watcher, flushes and stops the tracer
// provider and the metrics push (whose last push still reads the Redis
// pool), then releases Redis and the embedded server. The flushes share
// one 5s bound.
func (s *Service) Close() error {
	var errs []error
	if s.stopHealth != nil {
		s.stopHealth()
		<-s.healthDone
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.tracing != nil {
		if err := s.tracing.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("flushing traces: %w", err))
		}
	}
	if s.push != nil {
		if err := s.push.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("flushing OTLP metrics: %w", err))
		}
	}
	for _, c := range []*redis.Client{s.rdb, s.healthRDB} {
		if c == nil {
			continue
		}
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing redis client: %w", err))
		}
	}
	if s.embedded != nil {
		s.embedded.Close()
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
	// The SDK reports its own errors (failed collections, dropped spans)
	// to a process-wide handler; Run is the process's entry point, so it
	// routes them to the same bounded-rate log as failed exports.
	otel.SetErrorHandler(s.otelErrs)
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.HTTPAddr, err)
	}
	if cfg.PprofAddr == "" {
		return s.Serve(ctx, ln)
	}
	pln, err := net.Listen("tcp", cfg.PprofAddr)
	if err != nil {
		return errors.Join(fmt.Errorf("listening on PPROF_ADDR %s: %w", cfg.PprofAddr, err), ln.Close())
	}
	log.Info("serving profiles", "addr", pln.Addr().String(), "path", pprofhttp.Prefix)
	// The profiles stop when the API has drained: a profile taken during
	// the shutdown delay still sees the last requests.
	pctx, stopProfiles := context.WithCancel(context.WithoutCancel(ctx))
	pdone := make(chan error, 1)
	go func() { pdone <- pprofhttp.Serve(pctx, pln) }()
	err = s.Serve(ctx, ln)
	stopProfiles()
	return errors.Join(err, <-pdone)
}

func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}

// Package telemetry builds the service's observability plumbing: the
// Prometheus registry with the track labels on every series, its
// collectors, the OpenTelemetry tracer provider and the slog logger. It
// holds no global state: everything is created here and passed on.
package telemetry

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/extra/redisprometheus/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/instrument/promexport"
)

// NewRegistry returns a fresh (non-global) registry, to gather from, and a
// Registerer that adds gray_status (a value of instrument.ParseGrayStatus) and
// pool_mode to every series registered through it.
func NewRegistry(grayStatus string, poolMode string) (*prometheus.Registry, prometheus.Registerer) {
	reg := prometheus.NewRegistry()
	return reg, promexport.WithTrack(reg, instrument.Track{GrayStatus: grayStatus, PoolMode: poolMode})
}

// RegisterRuntime registers the Go runtime collector (with the runtime
// metrics opt-ins the parity rules need) and the process collector:
// promexport.RegisterRuntime, which a team's own service calls too.
func RegisterRuntime(reg prometheus.Registerer) error { return promexport.RegisterRuntime(reg) }

// RedisNamespace is the namespace of the go-redis pool collector: its
// series are redis_pool_hit_total, redis_pool_miss_total,
// redis_pool_timeout_total, redis_pool_conn_total_current,
// redis_pool_conn_idle_current and redis_pool_conn_stale_total.
const RedisNamespace = "redis"

// RegisterRedis registers go-redis's own pool collector for client.
func RegisterRedis(reg prometheus.Registerer, client redisprometheus.StatGetter) error {
	return registerAll(reg, redisprometheus.NewCollector(RedisNamespace, "", client))
}

// RegisterPools registers the instrument pool exporter (syncpool_*_total)
// for the pools in pools.
func RegisterPools(reg prometheus.Registerer, pools *instrument.Registry) error {
	return registerAll(reg, promexport.NewCollector(pools))
}

func registerAll(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("registering collector: %w", err)
		}
	}
	return nil
}

// Tracing is a tracer provider and the function that flushes and stops it.
type Tracing struct {
	Provider trace.TracerProvider
	Shutdown func(context.Context) error
}

// NewResource returns the OpenTelemetry resource of the service: the SDK
// defaults, service.name, service.version and attrs.
func NewResource(service, version string, attrs map[string]string) (*resource.Resource, error) {
	kv := []attribute.KeyValue{attribute.String("service.name", service), attribute.String("service.version", version)}
	for k, v := range attrs {
		kv = append(kv, attribute.String(k, v))
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(kv...))
	if err != nil {
		return nil, fmt.Errorf("building OpenTelemetry resource: %w", err)
	}
	return res, nil
}

// NewTracing returns an OpenTelemetry SDK tracer provider exporting over
// OTLP (o.Protocol) to o.TracesURL() (with o's headers and timeout) when that is
// not empty, and a no-op provider otherwise, so that an unconfigured
// service pays nothing for tracing. Spans are batched and exported on
// their own goroutine; failed exports are counted and logged through errs.
func NewTracing(ctx context.Context, o OTLP, res *resource.Resource, errs *ExportErrors) (*Tracing, error) {
	u := o.TracesURL()
	if u == "" {
		return &Tracing{Provider: noop.NewTracerProvider(), Shutdown: func(context.Context) error { return nil }}, nil
	}
	exp, err := newSpanExporter(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("creating OTLP trace exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spanExporter{SpanExporter: exp, errs: errs}), sdktrace.WithResource(res))
	return &Tracing{Provider: tp, Shutdown: tp.Shutdown}, nil
}

// RedisLogger adapts a slog.Logger to go-redis's logger interface, so that
// go-redis's own messages (failed dials during an outage, for example) come
// out as JSON at warn level like the rest. Install it with redis.SetLogger,
// which is process-wide: main does it, libraries must not.
type RedisLogger struct{ Log *slog.Logger }

// Printf implements go-redis's internal.Logging.
func (l RedisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.Log.WarnContext(ctx, fmt.Sprintf(format, v...), "component", "go-redis")
}

// Package otelexport exports instrument pool statistics through the
// OpenTelemetry metrics API.
//
// Register creates four Int64ObservableCounters and one callback that reads
// a snapshot of every pool in an instrument.Registry each time the SDK
// collects. Nothing is recorded on the pools' hot paths.
//
// The instrument names and units are chosen so that the OpenTelemetry
// Prometheus exporter (and the OTLP-to-Prometheus translation in Prometheus
// itself) produce the same names as instrument/promexport:
//
//	syncpool.gets   {get}   -> syncpool_gets_total
//	syncpool.misses {miss}  -> syncpool_misses_total
//	syncpool.puts   {put}   -> syncpool_puts_total
//	syncpool.drops  {drop}  -> syncpool_drops_total
//	syncpool.dirty  {dirty} -> syncpool_dirty_total
//
// Curly-brace units are annotations: the translation drops them rather
// than adding a unit suffix, then adds _total because the instruments are
// monotonic counters. Each point carries the attribute pool=<pool name>.
package otelexport

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/poolparity/poolparity/instrument"
)

// Snapshotter is what Register reads: a list of pools and their counters.
// *instrument.Registry implements it. Snapshot is called once per
// collection, possibly from several goroutines at once.
type Snapshotter interface {
	Snapshot() []instrument.PoolStats
}

// Instrument names, as the OpenTelemetry API sees them.
const (
	GetsName   = "syncpool.gets"
	MissesName = "syncpool.misses"
	PutsName   = "syncpool.puts"
	DropsName  = "syncpool.drops"
	DirtyName  = "syncpool.dirty"
)

// DefaultMeterName is the instrumentation scope name used unless
// WithMeterName says otherwise.
const DefaultMeterName = "github.com/poolparity/poolparity/instrument/otelexport"

// DefaultPoolAttribute is the attribute key that carries the pool name.
const DefaultPoolAttribute = "pool"

// Option configures Register.
type Option func(*config)

type config struct {
	meterName string
	poolKey   attribute.Key
	attrs     []attribute.KeyValue
}

// WithMeterName sets the instrumentation scope (meter) name.
func WithMeterName(name string) Option {
	return func(c *config) { c.meterName = name }
}

// WithPoolAttribute sets the attribute key that carries the pool name
// (default "pool").
func WithPoolAttribute(key string) Option {
	return func(c *config) { c.poolKey = attribute.Key(key) }
}

// WithAttributes adds attributes to every point, for example the track's
// gray_status and pool_mode when they are not already resource attributes
// that the exporter turns into labels.
func WithAttributes(attrs ...attribute.KeyValue) Option {
	return func(c *config) { c.attrs = append(c.attrs, attrs...) }
}

// Register creates the four observable counters on a meter from mp and
// registers one callback that reports src's pools at each collection. A
// nil mp means a no-op provider. Call Unregister on the result to stop
// reporting; the instruments themselves stay with the meter.
func Register(mp metric.MeterProvider, src Snapshotter, opts ...Option) (metric.Registration, error) {
	cfg := config{meterName: DefaultMeterName, poolKey: DefaultPoolAttribute}
	for _, opt := range opts {
		opt(&cfg)
	}
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	if src == nil {
		return nil, fmt.Errorf("registering pool instruments: nil Snapshotter")
	}
	meter := mp.Meter(cfg.meterName)

	type spec struct {
		name, unit, desc string
		field            func(instrument.Stats) uint64
	}
	specs := [...]spec{
		{GetsName, "{get}", "Calls to Get on the sync.Pool.", func(s instrument.Stats) uint64 { return s.Gets }},
		{MissesName, "{miss}", "Gets on the sync.Pool that were not served from the pool (New was called, or the pool was empty).", func(s instrument.Stats) uint64 { return s.Misses }},
		{PutsName, "{put}", "Objects accepted back into the sync.Pool by Put.", func(s instrument.Stats) uint64 { return s.Puts }},
		{DropsName, "{drop}", "Objects passed to Put that the pool's keep policy refused (for example over the size cap).", func(s instrument.Stats) uint64 { return s.Drops }},
		{DirtyName, "{dirty}", "Objects taken from the sync.Pool that were not as Put left them: they failed the pool's WithCheck check (state its reset left behind) or their WithPoison poison was overwritten (a write after Put). Each was dropped and replaced by a fresh one.", func(s instrument.Stats) uint64 { return s.Dirty }},
	}
	var counters [len(specs)]metric.Int64ObservableCounter
	observables := make([]metric.Observable, len(specs))
	for i, s := range specs {
		c, err := meter.Int64ObservableCounter(s.name, metric.WithUnit(s.unit), metric.WithDescription(s.desc))
		if err != nil {
			return nil, fmt.Errorf("creating instrument %s: %w", s.name, err)
		}
		counters[i] = c
		observables[i] = c
	}

	poolKey, extra := cfg.poolKey, cfg.attrs
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, ps := range src.Snapshot() {
			kv := make([]attribute.KeyValue, 0, len(extra)+1)
			kv = append(kv, extra...)
			kv = append(kv, poolKey.String(ps.Name))
			set := metric.WithAttributeSet(attribute.NewSet(kv...))
			for i, s := range specs {
				o.ObserveInt64(counters[i], clamp(s.field(ps.Stats)), set)
			}
		}
		return nil
	}, observables...)
	if err != nil {
		return nil, fmt.Errorf("registering pool stats callback: %w", err)
	}
	return reg, nil
}

// clamp converts a count to int64. A count past MaxInt64 (2^63 operations)
// cannot happen in practice; clamping keeps the counter monotonic if it did.
func clamp(v uint64) int64 {
	const maxInt64 = 1<<63 - 1
	if v > maxInt64 {
		return maxInt64
	}
	return int64(v)
}

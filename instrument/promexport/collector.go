// Package promexport exports instrument pool statistics to Prometheus.
//
// A Collector reads a snapshot of every pool in an instrument.Registry when
// Prometheus scrapes, and emits one constant counter per pool and statistic:
//
//	syncpool_gets_total{pool="..."}    calls to Get
//	syncpool_misses_total{pool="..."}  Gets that had to call New
//	syncpool_puts_total{pool="..."}    objects accepted back by Put
//	syncpool_drops_total{pool="..."}   objects Put refused by the keep policy
//	syncpool_dirty_total{pool="..."}   pooled objects not as Put left them (WithCheck, WithPoison)
//
// Nothing is recorded on the pools' hot paths: the Collector only reads the
// counters the pools keep anyway. Register it with a prometheus.Registerer,
// wrapped with prometheus.WrapRegistererWith to add constant labels such as
// gray_status and pool_mode to every series.
//
// The package also holds what a service of one's own needs to emit the
// other series the poolparity rules read, each a few lines to adopt:
// WithTrack adds an instrument.Track's gray_status and pool_mode to every
// series; RegisterRuntime registers the Go runtime collector with the heap
// and GC-CPU series client_golang leaves out by default, and the process
// collector; HTTPMetrics records http_requests_total,
// http_request_duration_seconds and http_response_size_bytes with bounded
// labels around an http.ServeMux. A service instrumented with OpenTelemetry's otelhttp
// instead needs none of HTTPMetrics: the rules read the semantic
// conventions' names with rules.http.metrics "semconv".
package promexport

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/poolparity/poolparity/instrument"
)

// Snapshotter is what a Collector reads: a consistent list of pools and
// their counters. *instrument.Registry implements it. Snapshot is called
// once per scrape, possibly from several goroutines at once.
type Snapshotter interface {
	Snapshot() []instrument.PoolStats
}

// Metric names and the label the Collector emits.
const (
	GetsName   = "syncpool_gets_total"
	MissesName = "syncpool_misses_total"
	PutsName   = "syncpool_puts_total"
	DropsName  = "syncpool_drops_total"
	DirtyName  = "syncpool_dirty_total"
	PoolLabel  = "pool"
)

// Option configures a Collector.
type Option func(*config)

type config struct {
	constLabels prometheus.Labels
}

// WithConstLabels adds constant labels to every series the Collector emits.
// Prefer prometheus.WrapRegistererWith when the labels describe the whole
// process (for example gray_status and pool_mode); use this option when
// they describe only this collector. The labels must not include "pool".
func WithConstLabels(labels prometheus.Labels) Option {
	return func(c *config) {
		if c.constLabels == nil {
			c.constLabels = prometheus.Labels{}
		}
		for k, v := range labels {
			c.constLabels[k] = v
		}
	}
}

// Collector is a prometheus.Collector that reports the counters of the pools
// in a Snapshotter at each scrape. It is safe for concurrent use.
type Collector struct {
	src    Snapshotter
	gets   *prometheus.Desc
	misses *prometheus.Desc
	puts   *prometheus.Desc
	drops  *prometheus.Desc
	dirty  *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a Collector reading src. Creating it registers
// nothing: pass it to a prometheus.Registerer.
func NewCollector(src Snapshotter, opts ...Option) *Collector {
	var cfg config
	for _, opt := range opts {
		opt(&cfg)
	}
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{PoolLabel}, cfg.constLabels)
	}
	return &Collector{
		src:    src,
		gets:   desc(GetsName, "Calls to Get on the sync.Pool."),
		misses: desc(MissesName, "Gets on the sync.Pool that were not served from the pool (New was called, or the pool was empty)."),
		puts:   desc(PutsName, "Objects accepted back into the sync.Pool by Put."),
		drops:  desc(DropsName, "Objects passed to Put that the pool's keep policy refused (for example over the size cap)."),
		dirty:  desc(DirtyName, "Objects taken from the sync.Pool that were not as Put left them: they failed the pool's WithCheck check (state its reset left behind) or their WithPoison poison was overwritten (a write after Put). Each was dropped and replaced by a fresh one."),
	}
}

// Describe sends the five descriptors. The set is fixed, so the Collector
// is a checked collector: a registry rejects it if another collector
// already owns these names with the same constant labels.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.gets
	ch <- c.misses
	ch <- c.puts
	ch <- c.drops
	ch <- c.dirty
}

// Collect reads one snapshot and sends five counters per pool.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, ps := range c.src.Snapshot() {
		c.send(ch, c.gets, ps.Gets, ps.Name)
		c.send(ch, c.misses, ps.Misses, ps.Name)
		c.send(ch, c.puts, ps.Puts, ps.Name)
		c.send(ch, c.drops, ps.Drops, ps.Name)
		c.send(ch, c.dirty, ps.Dirty, ps.Name)
	}
}

func (c *Collector) send(ch chan<- prometheus.Metric, d *prometheus.Desc, v uint64, pool string) {
	m, err := prometheus.NewConstMetric(d, prometheus.CounterValue, float64(v), pool)
	if err != nil {
		// Only an invalid label value can fail here (pool names are
		// validated on registration); report it as the registry expects.
		m = prometheus.NewInvalidMetric(d, err)
	}
	ch <- m
}

// Package redishealth watches the Redis server the service depends on, from
// the side: it pings it at an interval and reports what it sees as metrics
// (redis_up, redis_ping_failures_total) and as log lines at a bounded rate.
// It never decides readiness: /readyz says whether this pod can serve, and
// a Redis that every pod shares is not this pod (docs/service.md,
// "Probes").
package redishealth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names.
const (
	// UpName is the gauge: 1 when the last ping answered, 0 when it did not.
	UpName = "redis_up"
	// FailuresName counts the pings that failed or timed out.
	FailuresName = "redis_ping_failures_total"
)

// Defaults of the options.
const (
	DefaultInterval = 5 * time.Second
	DefaultTimeout  = 2 * time.Second
	DefaultLogEvery = 10 * time.Second
)

// Pinger is what the Watcher checks. *store.Store implements it. Ping must
// be safe to call from the Watcher's goroutine while others use the store.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Option configures a Watcher.
type Option func(*options)

type options struct {
	interval, timeout, logEvery time.Duration
	log                         *slog.Logger
	now                         func() time.Time
}

// WithInterval sets the time between pings (default DefaultInterval).
func WithInterval(d time.Duration) Option { return func(o *options) { o.interval = d } }

// WithTimeout bounds one ping (default DefaultTimeout).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithLogger sets the logger of the state changes (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithLogEvery sets the most often a "still unreachable" line is logged
// while Redis stays down (default DefaultLogEvery).
func WithLogEvery(d time.Duration) Option { return func(o *options) { o.logEvery = d } }

// Watcher pings a Redis server at an interval. Create one with New and
// start it with Run. Its methods are safe for concurrent use.
type Watcher struct {
	p        Pinger
	o        options
	up       prometheus.Gauge
	failures prometheus.Counter

	mu         sync.Mutex
	down       bool      // the last ping failed
	downSince  time.Time // first failure of the current outage
	lastLog    time.Time // last "unreachable" line
	downPings  int       // failed pings in the current outage
	suppressed int       // failed pings since the last line
}

// New returns a Watcher of p and registers its metrics with reg. Until the
// first ping, redis_up is 0.
func New(p Pinger, reg prometheus.Registerer, opts ...Option) (*Watcher, error) {
	if p == nil {
		return nil, errors.New("redishealth: nil Pinger")
	}
	o := options{interval: DefaultInterval, timeout: DefaultTimeout, logEvery: DefaultLogEvery, now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if o.interval <= 0 || o.timeout <= 0 || o.logEvery <= 0 {
		return nil, fmt.Errorf("redishealth: interval %s, timeout %s and log interval %s must be > 0", o.interval, o.timeout, o.logEvery)
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{
		p: p, o: o,
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: UpName,
			Help: "1 when the last PING of the Redis server answered within its timeout, 0 when it failed. Not part of readiness.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: FailuresName,
			Help: "PINGs of the Redis server that failed or timed out.",
		}),
	}
	for _, c := range []prometheus.Collector{w.up, w.failures} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering Redis health metrics: %w", err)
		}
	}
	return w, nil
}

// Run pings at once, then every interval, until ctx is done.
func (w *Watcher) Run(ctx context.Context) {
	t := time.NewTicker(w.o.interval)
	defer t.Stop()
	for {
		w.Check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Check pings once and records the result. It returns the ping's error.
func (w *Watcher) Check(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, w.o.timeout)
	err := w.p.Ping(pctx)
	cancel()
	if err != nil && ctx.Err() != nil {
		return err // stopping: not Redis's fault
	}
	w.record(err)
	return err
}

// record updates the metrics and logs: the first failure, then at most
// one line per logEvery while Redis stays down, and the recovery.
func (w *Watcher) record(err error) {
	now := w.o.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		w.up.Set(1)
		if w.down {
			w.o.log.Info("redis reachable again", "down_for", now.Sub(w.downSince).Round(time.Millisecond).String(), "failed_pings", w.downPings)
		}
		w.down, w.downPings, w.suppressed = false, 0, 0
		return
	}
	w.up.Set(0)
	w.failures.Inc()
	w.downPings++
	switch {
	case !w.down:
		w.down, w.downSince, w.lastLog, w.suppressed = true, now, now, 0
		w.o.log.Warn("redis unreachable: requests that need it answer 503; readiness is unaffected", "err", err.Error())
	case now.Sub(w.lastLog) >= w.o.logEvery:
		w.o.log.Warn("redis still unreachable", "err", err.Error(), "down_for", now.Sub(w.downSince).Round(time.Millisecond).String(),
			"failed_pings", w.downPings, "suppressed_since_last", w.suppressed)
		w.lastLog, w.suppressed = now, 0
	default:
		w.suppressed++
	}
}

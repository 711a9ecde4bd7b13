package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/controller"
	"github.com/poolparity/poolparity/internal/envflag"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// Config is the controller's configuration. Every setting is a flag whose name is the
// lower-case environment variable with '-' for '_' (METRICS_ADDR is -metrics-addr); a flag
// on the command line wins over the variable.
type Config struct {
	// MetricsAddr is where the manager serves /metrics (controller-runtime's registry,
	// which holds the controller's own series too). "0" disables it.
	MetricsAddr string
	// HealthAddr is where the manager serves /healthz and /readyz.
	HealthAddr string
	// LeaderElect enables leader election, so that only one replica reconciles.
	LeaderElect bool
	// LeaderElectionID names the Lease.
	LeaderElectionID string
	// LeaderElectionNamespace holds the Lease; empty means the pod's own namespace.
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// WatchNamespace restricts the controller to one namespace; empty watches all.
	WatchNamespace string
	// MaxConcurrentReconciles bounds parallel reconciles of different canaries.
	MaxConcurrentReconciles int
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// PrometheusEndpoints lists, comma-separated, the base URLs of the Prometheus HTTP APIs
	// the PoolCanaries may name in spec.analysis.prometheusURL; the first is the default for
	// a canary that names none. Any other URL is refused and never called.
	PrometheusEndpoints string
	// PrometheusMaxResponseBytes caps one Prometheus answer; a larger one is an error and is
	// never held whole in memory.
	PrometheusMaxResponseBytes int
	// PrometheusStallAfter is how long a request may wait with no answer from its endpoint
	// before the endpoint counts as stalled: the requests begun after it are cut short, new
	// ones fail at once until it ends, and a failure backs the endpoint off (its canaries hold
	// with the reason while the others run on time).
	PrometheusStallAfter time.Duration
	// ReconcileTimeout bounds one reconcile, its analysis included.
	ReconcileTimeout time.Duration
	// MemoryLimitBytes is the container's memory limit (the chart passes it from
	// resources.limits.memory); 0 means none. When GOMEMLIMIT is not set, the Go runtime's
	// soft memory limit is set to 90% of it, so the heap is collected before the container is
	// killed.
	MemoryLimitBytes uint64
}

// DefaultPrometheusEndpoint is PROMETHEUS_ENDPOINTS' default: the Prometheus the
// prometheus-operator (kube-prometheus-stack) runs in the monitoring namespace.
const DefaultPrometheusEndpoint = "http://prometheus-operated.monitoring.svc:9090"

// Endpoints returns the endpoints of PrometheusEndpoints, blanks dropped.
func (c Config) Endpoints() []string {
	var out []string
	for _, e := range strings.Split(c.PrometheusEndpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// DefaultConfig returns the configuration with every default filled in.
func DefaultConfig() Config {
	return Config{
		MetricsAddr:             ":8080",
		HealthAddr:              ":8081",
		LeaderElect:             true,
		LeaderElectionID:        "poolparity-controller.poolparity.dev",
		LeaseDuration:           15 * time.Second,
		RenewDeadline:           10 * time.Second,
		RetryPeriod:             2 * time.Second,
		MaxConcurrentReconciles: 4,
		LogLevel:                "info",

		PrometheusEndpoints:        DefaultPrometheusEndpoint,
		PrometheusMaxResponseBytes: promread.DefaultMaxResponseBytes,
		PrometheusStallAfter:       promread.DefaultStallAfter,
		ReconcileTimeout:           controller.DefaultReconcileTimeout,
	}
}

// ParseConfig fills a Config from args (without the program name) and the environment as
// read by getenv, then validates it.
func ParseConfig(args []string, getenv func(string) string, usage io.Writer) (Config, error) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("poolparity-controller", flag.ContinueOnError)
	fs.SetOutput(usage)
	e := envflag.New(fs, getenv)

	e.String(&c.MetricsAddr, "METRICS_ADDR", `address of the metrics endpoint; "0" disables it`)
	e.String(&c.HealthAddr, "HEALTH_ADDR", "address of /healthz and /readyz")
	e.Bool(&c.LeaderElect, "LEADER_ELECT", "elect a leader so that only one replica reconciles")
	e.String(&c.LeaderElectionID, "LEADER_ELECTION_ID", "name of the leader election Lease")
	e.String(&c.LeaderElectionNamespace, "LEADER_ELECTION_NAMESPACE", "namespace of the Lease; empty: the pod's namespace")
	e.Duration(&c.LeaseDuration, "LEASE_DURATION", "leader election lease duration")
	e.Duration(&c.RenewDeadline, "RENEW_DEADLINE", "leader election renew deadline")
	e.Duration(&c.RetryPeriod, "RETRY_PERIOD", "leader election retry period")
	e.String(&c.WatchNamespace, "WATCH_NAMESPACE", "only reconcile PoolCanaries in this namespace; empty: all")
	e.Int(&c.MaxConcurrentReconciles, "MAX_CONCURRENT_RECONCILES", "parallel reconciles of different canaries")
	e.String(&c.LogLevel, "LOG_LEVEL", "log level: debug, info, warn or error")
	e.String(&c.PrometheusEndpoints, "PROMETHEUS_ENDPOINTS", "comma-separated base URLs of the Prometheus APIs the canaries may read; the first is the default")
	e.Int(&c.PrometheusMaxResponseBytes, "PROMETHEUS_MAX_RESPONSE_BYTES", "largest Prometheus answer read, in bytes")
	e.Duration(&c.PrometheusStallAfter, "PROMETHEUS_STALL_AFTER", "how long a request may wait with no answer from its endpoint before the endpoint counts as stalled (its other requests fail at once)")
	e.Duration(&c.ReconcileTimeout, "RECONCILE_TIMEOUT", "bound of one reconcile, its analysis included")
	e.Uint64(&c.MemoryLimitBytes, "MEMORY_LIMIT_BYTES", "the container's memory limit in bytes; unless GOMEMLIMIT is set, the Go soft memory limit is 90% of it (0: none)")

	if err := e.Parse(args); err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate reports every invalid setting at once.
func (c Config) Validate() error {
	var errs []error
	if c.MetricsAddr == "" {
		errs = append(errs, errors.New(`METRICS_ADDR is empty (use "0" to disable the endpoint)`))
	}
	if c.HealthAddr == "" {
		errs = append(errs, errors.New("HEALTH_ADDR is empty"))
	}
	if c.LeaderElect {
		if c.LeaderElectionID == "" {
			errs = append(errs, errors.New("LEADER_ELECTION_ID is empty"))
		}
		if c.LeaseDuration <= 0 || c.RenewDeadline <= 0 || c.RetryPeriod <= 0 {
			errs = append(errs, errors.New("LEASE_DURATION, RENEW_DEADLINE and RETRY_PERIOD must be positive"))
		} else if !(c.LeaseDuration > c.RenewDeadline && c.RenewDeadline > c.RetryPeriod) {
			errs = append(errs, fmt.Errorf("want LEASE_DURATION (%s) > RENEW_DEADLINE (%s) > RETRY_PERIOD (%s)", c.LeaseDuration, c.RenewDeadline, c.RetryPeriod))
		}
	}
	if c.MaxConcurrentReconciles < 1 {
		errs = append(errs, fmt.Errorf("MAX_CONCURRENT_RECONCILES=%d: must be >= 1", c.MaxConcurrentReconciles))
	}
	if len(c.Endpoints()) == 0 {
		errs = append(errs, errors.New("PROMETHEUS_ENDPOINTS is empty: list at least one Prometheus base URL"))
	}
	for _, e := range c.Endpoints() {
		if _, err := promread.CheckURL(e); err != nil {
			errs = append(errs, fmt.Errorf("PROMETHEUS_ENDPOINTS: %w", err))
		}
	}
	if c.PrometheusMaxResponseBytes < 1024 {
		errs = append(errs, fmt.Errorf("PROMETHEUS_MAX_RESPONSE_BYTES=%d: must be at least 1024", c.PrometheusMaxResponseBytes))
	}
	if c.PrometheusStallAfter < time.Second {
		errs = append(errs, fmt.Errorf("PROMETHEUS_STALL_AFTER=%s: must be at least 1s", c.PrometheusStallAfter))
	}
	if c.ReconcileTimeout < 10*time.Second {
		errs = append(errs, fmt.Errorf("RECONCILE_TIMEOUT=%s: must be at least 10s", c.ReconcileTimeout))
	}
	if _, err := cli.ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("LOG_LEVEL=%w", err))
	}
	return errors.Join(errs...)
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/envflag"
	"github.com/poolparity/poolparity/internal/judge"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// errInvalid is wrapped by every configuration error.
var errInvalid = errors.New("invalid configuration")

// Config is poolparity-judge's configuration. Each field is an environment
// variable and a flag (PROMETHEUS_ENDPOINTS is -prometheus-endpoints); a
// flag wins.
type Config struct {
	// Addr is where the hooks are served (/flagger/rollout,
	// /flagger/confirm-promotion, /argo).
	Addr string
	// HealthAddr is where /healthz, /readyz and /metrics are served.
	HealthAddr string
	// PrometheusEndpoints lists, comma-separated, the base URLs of the
	// Prometheus APIs a request may name; the first is the default. No
	// other is ever called.
	PrometheusEndpoints string
	// Namespaces lists, comma-separated, the namespaces whose rollouts the
	// judge answers for; a request for another is refused with 403. "*"
	// alone answers for every namespace (a cluster whose tenants trust each
	// other). Empty means PodNamespace alone.
	Namespaces string
	// PodNamespace is the namespace the judge runs in (the chart sets it
	// from the Downward API): the allow-list when Namespaces is empty. With
	// both empty the judge refuses to start.
	PodNamespace string
	// PrometheusMaxResponseBytes caps one Prometheus answer.
	PrometheusMaxResponseBytes int
	// PrometheusTimeout bounds one Prometheus request.
	PrometheusTimeout time.Duration
	// JudgeTimeout bounds one judgement (all its queries); keep it below
	// the callers' timeouts (Flagger's webhook timeout, Argo's web
	// provider timeoutSeconds).
	JudgeTimeout time.Duration
	// MaxRollouts bounds the rollout starts remembered (judge.Starts).
	MaxRollouts int
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// ShutdownTimeout bounds the drain of in-flight requests on SIGTERM.
	ShutdownTimeout time.Duration
}

// DefaultPrometheusEndpoint is the Prometheus the chart's kube-prometheus
// stack serves, as the controller's default.
const DefaultPrometheusEndpoint = "http://prometheus-operated.monitoring.svc:9090"

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Addr: ":8080", HealthAddr: ":8081",
		PrometheusEndpoints:        DefaultPrometheusEndpoint,
		PrometheusMaxResponseBytes: promread.DefaultMaxResponseBytes,
		PrometheusTimeout:          promread.DefaultTimeout,
		JudgeTimeout:               8 * time.Second,
		MaxRollouts:                4096,
		LogLevel:                   "info",
		ShutdownTimeout:            10 * time.Second,
	}
}

// Endpoints returns the endpoints of PrometheusEndpoints, blanks dropped.
func (c Config) Endpoints() []string { return judge.SplitList(c.PrometheusEndpoints) }

// Allowed returns the namespaces the judge answers for: Namespaces, or
// PodNamespace alone when Namespaces lists none.
func (c Config) Allowed() (judge.Namespaces, error) {
	switch {
	case len(judge.SplitList(c.Namespaces)) > 0:
		n, err := judge.ParseNamespaces(c.Namespaces)
		if err != nil {
			return n, fmt.Errorf("NAMESPACES: %w", err)
		}
		return n, nil
	case c.PodNamespace != "":
		n, err := judge.ParseNamespaces(c.PodNamespace)
		if err != nil || n.String() == judge.AllNamespaces {
			return judge.Namespaces{}, fmt.Errorf("POD_NAMESPACE %q is not a namespace name", c.PodNamespace)
		}
		return n, nil
	}
	return judge.Namespaces{}, fmt.Errorf("NAMESPACES is empty and POD_NAMESPACE is unset: list the namespaces whose rollouts the judge answers for (or * for every one, where tenants trust each other)")
}

// Validate checks c and returns every problem at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{errInvalid}, a...)...))
	}
	if c.Addr == "" || c.HealthAddr == "" {
		bad("ADDR and HEALTH_ADDR must not be empty")
	} else if c.Addr == c.HealthAddr {
		bad("ADDR and HEALTH_ADDR must differ, both are %q", c.Addr)
	}
	if _, err := c.Allowed(); err != nil {
		bad("%v", err)
	}
	if len(c.Endpoints()) == 0 {
		bad("PROMETHEUS_ENDPOINTS must list at least one Prometheus base URL")
	}
	for _, e := range c.Endpoints() {
		if _, err := promread.CheckURL(e); err != nil {
			bad("PROMETHEUS_ENDPOINTS: %v", err)
		}
	}
	if c.PrometheusMaxResponseBytes < 1024 {
		bad("PROMETHEUS_MAX_RESPONSE_BYTES must be at least 1024, got %d", c.PrometheusMaxResponseBytes)
	}
	if c.PrometheusTimeout < time.Second || c.PrometheusTimeout > 2*time.Minute {
		bad("PROMETHEUS_TIMEOUT must be 1s to 2m, got %s", c.PrometheusTimeout)
	}
	if c.JudgeTimeout < time.Second || c.JudgeTimeout > 2*time.Minute {
		bad("JUDGE_TIMEOUT must be 1s to 2m, got %s", c.JudgeTimeout)
	}
	if c.MaxRollouts < 1 || c.MaxRollouts > 1_000_000 {
		bad("MAX_ROLLOUTS must be 1 to 1000000, got %d", c.MaxRollouts)
	}
	if _, err := cli.ParseLevel(c.LogLevel); err != nil {
		bad("LOG_LEVEL: %v", err)
	}
	if c.ShutdownTimeout <= 0 {
		bad("SHUTDOWN_TIMEOUT must be positive, got %s", c.ShutdownTimeout)
	}
	return errors.Join(errs...)
}

// ParseConfig fills a Config from args and the environment read by getenv,
// then validates it.
func ParseConfig(args []string, getenv func(string) string, usage io.Writer) (Config, error) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("poolparity-judge", flag.ContinueOnError)
	fs.SetOutput(usage)
	e := envflag.New(fs, getenv, envflag.WrapErrors(errInvalid))
	e.String(&c.Addr, "ADDR", "address of the hooks: /flagger/rollout, /flagger/confirm-promotion, /argo")
	e.String(&c.HealthAddr, "HEALTH_ADDR", "address of /healthz, /readyz and /metrics")
	e.String(&c.Namespaces, "NAMESPACES", "comma-separated namespaces whose rollouts the judge answers for (403 for others); * for every one; empty means POD_NAMESPACE alone")
	e.String(&c.PodNamespace, "POD_NAMESPACE", "the namespace the judge runs in: the allow-list when NAMESPACES is empty")
	e.String(&c.PrometheusEndpoints, "PROMETHEUS_ENDPOINTS", "comma-separated base URLs of the Prometheus APIs a request may name; the first is the default")
	e.Int(&c.PrometheusMaxResponseBytes, "PROMETHEUS_MAX_RESPONSE_BYTES", "largest Prometheus answer read, in bytes")
	e.Duration(&c.PrometheusTimeout, "PROMETHEUS_TIMEOUT", "bound of one Prometheus request")
	e.Duration(&c.JudgeTimeout, "JUDGE_TIMEOUT", "bound of one judgement; keep it below Flagger's webhook timeout and Argo's timeoutSeconds")
	e.Int(&c.MaxRollouts, "MAX_ROLLOUTS", "rollout starts remembered for callers that give none (Flagger)")
	e.String(&c.LogLevel, "LOG_LEVEL", "debug, info, warn or error")
	e.Duration(&c.ShutdownTimeout, "SHUTDOWN_TIMEOUT", "bound of the drain of in-flight requests on SIGTERM")
	if err := e.Parse(args); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Command poolparity-argo-plugin is poolparity's Argo Rollouts metric
// provider plugin (internal/judge/argoplugin): Argo's controller starts it
// and calls it over hashicorp/go-plugin's RPC; each measurement is one
// judgement of the AnalysisRun's namespace by the one evaluator, over the
// Prometheus endpoints this binary allows. Run it by hand and it refuses
// (go-plugin's handshake cookie is missing). docs/argo-rollouts.md says how
// to install it.
//
// Its settings are flags (argo-rollouts-config's metricProviderPlugins
// args) and environment variables (the Argo controller's), POOLPARITY_
// prefixed: POOLPARITY_PROMETHEUS_ENDPOINTS is -prometheus-endpoints.
//
// `poolparity-argo-plugin install DIR` copies the binary into DIR: an init
// container of Argo's controller, from the poolparity image (which has no
// shell), puts it on a volume the controller loads it from (file://).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/argoproj/argo-rollouts/metricproviders/plugin/rpc"

	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/envflag"
	"github.com/poolparity/poolparity/internal/judge"
	"github.com/poolparity/poolparity/internal/judge/argoplugin"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Getenv, os.Stderr)
	os.Exit(cli.Exit(os.Stderr, "poolparity-argo-plugin", err))
}

// errInvalid is wrapped by every configuration error.
var errInvalid = errors.New("invalid configuration")

// Config is the plugin's configuration.
type Config struct {
	// PrometheusEndpoints lists, comma-separated, the Prometheus base URLs
	// a metric's config may name; the first is the default.
	PrometheusEndpoints string
	// PrometheusMaxResponseBytes caps one Prometheus answer.
	PrometheusMaxResponseBytes int
	// JudgeTimeout bounds one measurement's queries.
	JudgeTimeout time.Duration
	// LogLevel is debug, info, warn or error.
	LogLevel string
}

// DefaultConfig returns the defaults: the chart's Prometheus, as the
// controller's.
func DefaultConfig() Config {
	return Config{
		PrometheusEndpoints:        "http://prometheus-operated.monitoring.svc:9090",
		PrometheusMaxResponseBytes: promread.DefaultMaxResponseBytes,
		JudgeTimeout:               20 * time.Second,
		LogLevel:                   "info",
	}
}

// Validate checks c and returns every problem at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{errInvalid}, a...)...))
	}
	eps := judge.SplitList(c.PrometheusEndpoints)
	if len(eps) == 0 {
		bad("POOLPARITY_PROMETHEUS_ENDPOINTS must list at least one Prometheus base URL")
	}
	for _, e := range eps {
		if _, err := promread.CheckURL(e); err != nil {
			bad("POOLPARITY_PROMETHEUS_ENDPOINTS: %v", err)
		}
	}
	if c.PrometheusMaxResponseBytes < 1024 {
		bad("POOLPARITY_PROMETHEUS_MAX_RESPONSE_BYTES must be at least 1024, got %d", c.PrometheusMaxResponseBytes)
	}
	if c.JudgeTimeout < time.Second || c.JudgeTimeout > 2*time.Minute {
		bad("POOLPARITY_JUDGE_TIMEOUT must be 1s to 2m, got %s", c.JudgeTimeout)
	}
	if _, err := cli.ParseLevel(c.LogLevel); err != nil {
		bad("POOLPARITY_LOG_LEVEL: %v", err)
	}
	return errors.Join(errs...)
}

// ParseConfig fills a Config from args and the environment, then validates it.
func ParseConfig(args []string, getenv func(string) string, usage io.Writer) (Config, error) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("poolparity-argo-plugin", flag.ContinueOnError)
	fs.SetOutput(usage)
	e := envflag.New(fs, getenv, envflag.TrimPrefix("POOLPARITY_"), envflag.WrapErrors(errInvalid))
	e.String(&c.PrometheusEndpoints, "POOLPARITY_PROMETHEUS_ENDPOINTS", "comma-separated base URLs of the Prometheus APIs a metric may name; the first is the default")
	e.Int(&c.PrometheusMaxResponseBytes, "POOLPARITY_PROMETHEUS_MAX_RESPONSE_BYTES", "largest Prometheus answer read, in bytes")
	e.Duration(&c.JudgeTimeout, "POOLPARITY_JUDGE_TIMEOUT", "bound of one measurement's queries")
	e.String(&c.LogLevel, "POOLPARITY_LOG_LEVEL", "debug, info, warn or error")
	if err := e.Parse(args); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// newPlugin builds the plugin of cfg, logging to stderr (go-plugin passes
// a plugin's stderr to the host's log).
func newPlugin(cfg Config, stderr io.Writer) (*argoplugin.Plugin, error) {
	clients, err := promread.NewClients(judge.SplitList(cfg.PrometheusEndpoints), false, promread.ClientConfig{MaxResponseBytes: int64(cfg.PrometheusMaxResponseBytes)})
	if err != nil {
		return nil, err
	}
	log, err := cli.NewLogger(stderr, cfg.LogLevel)
	if err != nil {
		return nil, err
	}
	return &argoplugin.Plugin{Judge: &judge.Judge{Clients: clients, Timeout: cfg.JudgeTimeout}, Log: log}, nil
}

// serveConfig is go-plugin's configuration serving p with Argo's handshake.
func serveConfig(p *argoplugin.Plugin) *goplugin.ServeConfig {
	return &goplugin.ServeConfig{
		HandshakeConfig: argoplugin.Handshake,
		Plugins:         map[string]goplugin.Plugin{argoplugin.PluginKey: &rpc.RpcMetricProviderPlugin{Impl: p}},
	}
}

// run parses the configuration (a bad one is exit 2) and serves the plugin
// until Argo's controller stops it. ctx is not used by go-plugin's Serve,
// which handles the host's signals itself.
func run(_ context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "install" {
		if len(args) != 2 {
			return cli.Usage(fmt.Errorf("%w: usage: poolparity-argo-plugin install DIR", errInvalid))
		}
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding this binary: %w", err)
		}
		return install(self, args[1], stderr)
	}
	cfg, err := ParseConfig(args, getenv, stderr)
	if err != nil {
		return cli.Usage(err)
	}
	p, err := newPlugin(cfg, stderr)
	if err != nil {
		return cli.Usage(err)
	}
	if getenv(argoplugin.Handshake.MagicCookieKey) != argoplugin.Handshake.MagicCookieValue {
		return cli.Usage(fmt.Errorf("this is an Argo Rollouts metric plugin: Argo's controller starts it (docs/argo-rollouts.md)"))
	}
	goplugin.Serve(serveConfig(p))
	return nil
}

// install copies the binary at self into dir as poolparity-argo-plugin,
// executable, through a temporary file renamed into place.
func install(self, dir string, stderr io.Writer) (err error) {
	src, err := os.Open(self)
	if err != nil {
		return fmt.Errorf("opening %s: %w", self, err)
	}
	defer src.Close()
	tmp, err := os.CreateTemp(dir, ".poolparity-argo-plugin-*")
	if err != nil {
		return fmt.Errorf("installing into %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return fmt.Errorf("copying to %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return fmt.Errorf("making %s executable: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	dst := filepath.Join(dir, "poolparity-argo-plugin")
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("installing %s: %w", dst, err)
	}
	fmt.Fprintf(stderr, "poolparity-argo-plugin: installed %s\n", dst)
	return nil
}

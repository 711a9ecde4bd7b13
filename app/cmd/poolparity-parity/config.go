package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/instrument/pprofhttp"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/envflag"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// errInvalid is wrapped by every configuration error.
var errInvalid = errors.New("invalid configuration")

// Config is poolparity-parity's configuration.
type Config struct {
	// PrometheusURL is the Prometheus the report is read from, e.g.
	// http://127.0.0.1:9090.
	PrometheusURL string
	// Window is the recording-rule family read: 5m, the one the chart's
	// PrometheusRule loads, unless told otherwise.
	Window string
	// Selector holds PromQL label matchers without braces (e.g.
	// `namespace="shop",job="poolparity"`) that pick one service; empty
	// reads every series of the rules.
	Selector string
	// OutDir receives report.{txt,json,html}.
	OutDir string
	// Gate is the verdict that decides the exit status: "counts", the
	// default (the count-based anytime-valid test, from Since; it needs the
	// poolparity.counts rules), "sequential" (the anytime-valid test of
	// per-minute samples, from Since), "confirmed" (a threshold FAIL counts
	// only where the statistical test confirms it; firing alerts always
	// count) or "thresholds" (the threshold rows and the alerts alone).
	// docs/verdict-eval.md and docs/verdict-eval-counts.md measure them.
	Gate string
	// Since is when the sequential gate's evidence starts, RFC 3339 (the
	// rollout's start: its false-alarm rate holds however often the report
	// is run from the same Since); empty means the statistical window
	// before now, which is valid for one reading only.
	Since string
	// SLIs lists the catalog SLI IDs to judge, comma-separated (e.g.
	// latency-p99,error-ratio,heap-alloc-per-request); empty judges every
	// SLI of the catalog. An SLI the service cannot have is better left out
	// here than left to NO DATA.
	SLIs string
	// PprofGray and PprofStable are the pprof roots of one gray and one
	// stable instance (e.g. http://10.0.0.5:6060, meaning
	// http://10.0.0.5:6060/debug/pprof/): when both are set and the verdict
	// is FAIL, both are profiled for ProfileSeconds and the functions whose
	// cost per request differs most go into the report. Empty: no profiles.
	PprofGray, PprofStable string
	// ProfileSeconds is the length of the CPU profile and the window of the
	// allocation profile, 1 to pprofhttp.MaxSeconds.
	ProfileSeconds int
	// MaxResponseBytes caps one Prometheus answer: a larger one is an error
	// (exit 4), never read whole into memory.
	MaxResponseBytes int
}

// profiling reports whether a FAIL is profiled.
func (c Config) profiling() bool { return c.PprofGray != "" && c.PprofStable != "" }

// SinceTime returns Since parsed (zero when empty).
func (c Config) SinceTime() (time.Time, error) {
	if c.Since == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339, c.Since)
}

// Catalog returns the catalog the report judges: the default one, or its
// SLIs that SLIs lists, in the order listed.
func (c Config) Catalog() (catalog.Catalog, error) {
	cat := catalog.Default()
	if strings.TrimSpace(c.SLIs) == "" {
		return cat, nil
	}
	var ids []catalog.ID
	for f := range strings.SplitSeq(c.SLIs, ",") {
		ids = append(ids, catalog.ID(strings.TrimSpace(f)))
	}
	return cat.Select(ids...)
}

// defaultConfig returns the defaults.
func defaultConfig() Config {
	return Config{Window: "5m", OutDir: "out", Gate: string(parity.GateCounts), ProfileSeconds: 5, MaxResponseBytes: promread.DefaultMaxResponseBytes}
}

// Validate checks c and returns every problem at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{errInvalid}, a...)...))
	}
	if c.PrometheusURL == "" {
		bad("PROMETHEUS_URL is required (e.g. http://127.0.0.1:9090)")
	} else if _, err := promread.CheckURL(c.PrometheusURL); err != nil {
		bad("PROMETHEUS_URL must be an http or https URL such as http://127.0.0.1:9090: %v", err)
	}
	if c.MaxResponseBytes < 1024 {
		bad("MAX_RESPONSE_BYTES must be at least 1024, got %d", c.MaxResponseBytes)
	}
	if _, err := model.ParseDuration(c.Window); err != nil {
		bad("WINDOW must be a Prometheus duration such as 1m or 5m, got %q", c.Window)
	}
	if c.OutDir == "" {
		bad("OUT must not be empty")
	}
	if _, err := parity.ParseGate(c.Gate); err != nil {
		bad("GATE: %v", err)
	}
	if _, err := c.Catalog(); err != nil {
		bad("SLIS: %v", err)
	}
	if c.Since != "" {
		if t, err := c.SinceTime(); err != nil {
			bad("SINCE must be an RFC 3339 time such as 2026-11-25T10:00:00Z, got %q", c.Since)
		} else if t.After(time.Now().Add(time.Minute)) {
			bad("SINCE %s is in the future: it is when the rollout's evidence starts", c.Since)
		} else if g, err := parity.Modes().LookupGate(c.Gate); err == nil && !g.AnytimeValid() {
			bad("SINCE applies to the anytime-valid gates only (GATE is %q)", c.Gate)
		}
	}
	if (c.PprofGray == "") != (c.PprofStable == "") {
		bad("PPROF_GRAY and PPROF_STABLE go together: profiles compare one gray and one stable instance")
	}
	for _, p := range []struct{ name, url string }{{"PPROF_GRAY", c.PprofGray}, {"PPROF_STABLE", c.PprofStable}} {
		if p.url == "" {
			continue
		}
		if u, err := url.Parse(p.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.RawQuery != "" {
			bad("%s must be the http URL of an instance's pprof port such as http://10.0.0.5:6060, got %q", p.name, p.url)
		}
	}
	if c.ProfileSeconds < 1 || c.ProfileSeconds > pprofhttp.MaxSeconds {
		bad("PROFILE_SECONDS must be 1 to %d, got %d", pprofhttp.MaxSeconds, c.ProfileSeconds)
	}
	return errors.Join(errs...)
}

// parseConfig fills a Config from args and the environment read by getenv,
// then validates it. PROMETHEUS_URL is read as it is; the other variables
// carry the prefix PARITY_ (PARITY_WINDOW, PARITY_SELECTOR, PARITY_OUT,
// PARITY_GATE, PARITY_SINCE, PARITY_SLIS, PARITY_PPROF_GRAY,
// PARITY_PPROF_STABLE, PARITY_PROFILE_SECONDS, PARITY_MAX_RESPONSE_BYTES). Each is also a flag
// (-prometheus-url, -window, -selector, -out, -gate, -since, -slis,
// -pprof-gray, -pprof-stable, -profile-seconds), which wins.
func parseConfig(name string, args []string, getenv func(string) string, usage io.Writer) (Config, error) {
	c := defaultConfig()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(usage)
	e := envflag.New(fs, getenv, envflag.TrimPrefix("PARITY_"), envflag.WrapErrors(errInvalid))
	e.String(&c.PrometheusURL, "PROMETHEUS_URL", "Prometheus to read the report from, e.g. http://127.0.0.1:9090")
	e.String(&c.Window, "PARITY_WINDOW", "recording-rule window the report reads (the chart's rules: 5m; the kind harness: 1m)")
	e.String(&c.Selector, "PARITY_SELECTOR", `PromQL label matchers picking one service, e.g. namespace="shop",job="poolparity"`)
	e.String(&c.OutDir, "PARITY_OUT", "directory for report.{txt,json,html}")
	e.String(&c.Gate, "PARITY_GATE", "verdict behind the exit status: "+parity.GateHelp())
	e.String(&c.Since, "PARITY_SINCE", "sequential and counts gates: when the rollout's evidence starts, RFC 3339; empty: the statistical window before now")
	e.String(&c.SLIs, "PARITY_SLIS", "catalog SLI IDs to judge, comma-separated (docs/contracts.md section 5); empty: all")
	e.String(&c.PprofGray, "PARITY_PPROF_GRAY", "on FAIL, profile this gray instance's pprof port, e.g. http://10.0.0.5:6060 (with -pprof-stable; docs/profiles.md)")
	e.String(&c.PprofStable, "PARITY_PPROF_STABLE", "on FAIL, profile this stable instance's pprof port, e.g. http://10.0.0.7:6060 (with -pprof-gray)")
	e.Int(&c.ProfileSeconds, "PARITY_PROFILE_SECONDS", "seconds of the CPU profile and of the allocation profile's window")
	e.Int(&c.MaxResponseBytes, "PARITY_MAX_RESPONSE_BYTES", "largest Prometheus answer read, in bytes (a larger one is an error, exit 4)")
	if err := e.Parse(args); err != nil {
		return c, err
	}
	return c, c.Validate()
}

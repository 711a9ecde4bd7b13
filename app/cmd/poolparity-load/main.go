// Command poolparity-load is the project's load generator (internal/loadgen) as a binary: a
// bounded, seeded mix of item writes, reads, listings, reports and deletes at a fixed rate. It
// ships in the service image, and the kind cluster's load Job runs it against the split Service,
// so the share of requests per track follows the ready replicas of each.
//
// The load is open-loop: requests arrive at -rps whether or not earlier ones were answered, at
// most -concurrency in flight; an arrival that finds that many in flight is dropped (counted,
// not sent). Each answer's client-side latency is measured from its arrival's due time.
//
// With -requests it replays a requests file (package targets: vegeta-style "METHOD URL" lines,
// headers, inline or @file bodies, so POSTs with CSV or JSON bodies) instead of the item API's
// mix, in the file's order or, with -random, drawn at random with -seed; the counts are then per
// request template (stats' by_target).
//
// The target must be on loopback, or, when the command runs in a Kubernetes pod
// (KUBERNETES_SERVICE_HOST is set), a Service host name such as "poolparity" or
// "poolparity.shop.svc" (never an IP address outside loopback). Every run is bounded by
// -duration and -max-requests. It prints the final counts (with the dropped arrivals and the
// client-side latency quantiles) as JSON on stdout and as one line on stderr, and exits 1 when
// more than -max-error-ratio of the requests failed (5xx or transport errors), 2 for a bad
// setting.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/envflag"
	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/targets"
)

// Config is the command's settings: the generator's, and how the command judges and connects.
type Config struct {
	Load          loadgen.Config // BaseURL is -target
	MaxErrorRatio float64
	KeepAlive     bool
	// Get is a path template (loadgen.ParsePath) that replaces the item
	// API's mix: a service of another shape.
	Get string
	// Requests is a requests file (package targets) replayed instead of
	// the item API's mix; Random draws its requests at random (seeded)
	// instead of in order.
	Requests  string
	Random    bool
	InCluster bool // set from KUBERNETES_SERVICE_HOST, not a flag
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Exit(os.Stderr, "poolparity-load", err))
}

func parse(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	c := Config{
		Load:          loadgen.Config{Duration: time.Minute, MaxRequests: 1_000_000, RPS: 50, Concurrency: 8, Keys: 200, Seed: 1},
		MaxErrorRatio: 0.01, KeepAlive: true,
	}
	fs := flag.NewFlagSet("poolparity-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	e := envflag.New(fs, getenv, envflag.TrimPrefix("LOAD_"))
	e.String(&c.Load.BaseURL, "LOAD_TARGET", "base URL of the service, e.g. http://poolparity:80")
	e.String(&c.Load.Host, "LOAD_HOST", "Host header of every request (the virtual host of a route behind a shared gateway); default the target's")
	e.Duration(&c.Load.Duration, "LOAD_DURATION", "how long to send load")
	e.Int(&c.Load.MaxRequests, "LOAD_MAX_REQUESTS", "most request arrivals (sent or dropped)")
	e.Float64(&c.Load.RPS, "LOAD_RPS", "request arrivals per second, whether or not earlier requests were answered")
	e.Int(&c.Load.Concurrency, "LOAD_CONCURRENCY", "most requests in flight; an arrival that finds this many is dropped, not delayed")
	e.Int(&c.Load.Keys, "LOAD_KEYS", "size of the item id space")
	e.Int(&c.Load.LargeBodyBytes, "LOAD_LARGE_BODY_BYTES", "when > 0, one PUT body in 16 carries a payload of about this many bytes (the long tail a pool size cap is for; at most 921600)")
	e.Int(&c.Load.Burst, "LOAD_BURST", "when > 1, requests arrive in waves of this many at once, at the same average rate (at most LOAD_CONCURRENCY)")
	e.Uint64(&c.Load.Seed, "LOAD_SEED", "seed of the call sequence")
	e.Float64(&c.MaxErrorRatio, "LOAD_MAX_ERROR_RATIO", "exit 1 when more than this share of requests failed")
	e.String(&c.Get, "LOAD_GET", `GET this path template for every request instead of the item API's mix (a service of your own): {key} becomes a key below LOAD_KEYS, {a|b} one of the choices; e.g. "/thumbnail/img-{key}?w={64|128}"`)
	e.String(&c.Requests, "LOAD_REQUESTS", `replay this requests file instead of the item API's mix: "METHOD URL" lines (a path is sent to -target), headers, an inline body or "@file" (POST bodies), requests separated by blank lines (docs/loadgen.md)`)
	e.Bool(&c.Random, "LOAD_RANDOM", "with LOAD_REQUESTS, draw each request at random (seeded by LOAD_SEED) instead of in the file's order")
	e.Bool(&c.KeepAlive, "LOAD_KEEP_ALIVE", "reuse connections; false opens one per request, so a Kubernetes Service spreads requests (not connections) over its pods")
	if err := e.Parse(args); err != nil {
		return c, err
	}
	c.InCluster = getenv("KUBERNETES_SERVICE_HOST") != ""
	return c, c.Validate()
}

// Validate checks the settings and the target (see loadConfig).
func (c Config) Validate() error {
	_, err := c.loadConfig()
	return err
}

// loadConfig turns c into the generator's config, allowing the target's host name only in a pod.
func (c Config) loadConfig() (loadgen.Config, error) {
	if c.MaxErrorRatio < 0 || c.MaxErrorRatio > 1 {
		return loadgen.Config{}, fmt.Errorf("max error ratio must be in [0, 1], got %g", c.MaxErrorRatio)
	}
	lc := c.Load
	if c.Get != "" && c.Requests != "" {
		return lc, errors.New("LOAD_GET and LOAD_REQUESTS both set: give one")
	}
	if c.Random && c.Requests == "" {
		return lc, errors.New("LOAD_RANDOM needs LOAD_REQUESTS")
	}
	if c.Get != "" {
		path, err := loadgen.ParsePath(c.Get)
		if err != nil {
			return lc, fmt.Errorf("LOAD_GET: %w", err)
		}
		lc.Path = path
	}
	if c.InCluster {
		if u, err := url.Parse(lc.BaseURL); err == nil {
			lc.AllowHosts = []string{u.Hostname()}
		}
	}
	if c.Requests != "" {
		ts, err := readRequests(c.Requests)
		if err != nil {
			return lc, fmt.Errorf("LOAD_REQUESTS: %w", err)
		}
		if err := loadgen.CheckTargets(ts, lc.AllowHosts); err != nil {
			return lc, fmt.Errorf("LOAD_REQUESTS %s: %w", c.Requests, err)
		}
		lc.Targets = ts
		if c.Random {
			lc.Order = loadgen.Random
		}
	}
	if err := lc.Validate(); err != nil {
		if errors.Is(err, loadgen.ErrNotLoopback) && !c.InCluster {
			return lc, fmt.Errorf("%w (a Service host name is allowed only when running in a Kubernetes pod)", err)
		}
		return lc, err
	}
	return lc, nil
}

// readRequests reads the requests file at path (a body "@file" relative to its directory).
func readRequests(path string) ([]targets.Target, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return targets.Parse(f, path, os.ReadFile)
}

// run sends the load and prints the final counts: as JSON on stdout, and as one readable line
// (requests, dropped arrivals, client-side latency) on stderr. A bad setting is a usage error
// (exit 2); a run that stopped early or failed too often is exit 1.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, err := parse(args, getenv, stderr)
	if err != nil {
		return cli.Usage(err)
	}
	lc, _ := c.loadConfig() // parse validated it
	var client *http.Client
	if !c.KeepAlive {
		client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	}
	g, err := loadgen.New(lc, client)
	if err != nil {
		return cli.Usage(err)
	}
	st, err := g.Run(ctx)
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(st)
	fmt.Fprintf(stderr, "poolparity-load: %v\n", st)
	if err != nil {
		return fmt.Errorf("stopped early: %w", err)
	}
	if st.Requests > 0 && float64(st.Errors)/float64(st.Requests) > c.MaxErrorRatio {
		return fmt.Errorf("%d of %d requests failed (more than %.2f%%)", st.Errors, st.Requests, 100*c.MaxErrorRatio)
	}
	return nil
}

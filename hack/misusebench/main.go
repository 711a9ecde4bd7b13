// Command misusebench measures each pool mode of the service side by side with wrk: the
// unpooled build, pooling done right and every misuse mode (docs/pool-misuse.md), each
// started alone against one shared redis-server on loopback and loaded with the same
// endpoint mix (mix.lua, the load generator's DefaultMix). It prints, and with -bench-write
// puts into docs/pool-misuse.md between its markers, throughput, p99 latency and CPU
// seconds per request as ratios to unpooled.
//
//	go run ./hack/misusebench                # make misuse-bench
//	go run ./hack/misusebench -bench-duration 30s -bench-write docs/pool-misuse.md
//
// It needs wrk and redis-server on PATH (Debian packages wrk and redis-server); without
// them it exits 2 with one line saying what to install. Everything runs on 127.0.0.1 and
// every run is bounded by -duration.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/envflag"
)

// Config is the command's settings.
type Config struct {
	Duration    time.Duration
	Warmup      time.Duration
	Connections int
	Threads     int
	Modes       string
	Write       string
	// GC, when set, measures the GC tuning table instead (docs/gc-tuning.md):
	// comma-separated settings, default first (parseGCSettings).
	GC string
	// OpenRPS and OpenDuration are the GC table's open-loop run after each
	// wrk run: internal/loadgen at a fixed rate, for a client-side p99 free of
	// coordinated omission (wrk waits for each answer). 0 skips it.
	OpenRPS      float64
	OpenDuration time.Duration
}

// allModes is every POOL_MODE of the service, unpooled first (the base).
const allModes = "unpooled,pooled,misuse-hold,misuse-reset,misuse-retain,misuse-dirty"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Exit(os.Stderr, "misusebench", err))
}

// run parses the settings and runs the bench. A bad setting or a missing
// tool is exit 2.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parse(args, getenv, stderr)
	if err != nil {
		return cli.Usage(err)
	}
	err = bench(ctx, cfg, stdout)
	if errors.As(err, new(errPrereq)) {
		return cli.WithStatus(cli.ExitUsage, err)
	}
	return err
}

func parse(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	c := Config{Duration: 20 * time.Second, Warmup: 3 * time.Second, Connections: 16, Threads: 2, Modes: allModes,
		OpenRPS: 800, OpenDuration: 10 * time.Second}
	fs := flag.NewFlagSet("misusebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	e := envflag.New(fs, getenv)
	e.Duration(&c.Duration, "BENCH_DURATION", "wrk run per mode")
	e.Duration(&c.Warmup, "BENCH_WARMUP", "unmeasured wrk run per mode before the measured one")
	e.Int(&c.Connections, "BENCH_CONNECTIONS", "wrk connections (-c)")
	e.Int(&c.Threads, "BENCH_THREADS", "wrk threads (-t)")
	e.String(&c.Modes, "BENCH_MODES", "comma-separated POOL_MODEs, the first is the base of the ratios")
	e.String(&c.Write, "BENCH_WRITE", "markdown file whose generated table to replace (empty: print only)")
	e.Float64(&c.OpenRPS, "BENCH_OPEN_RPS", "GC table: the open-loop run's fixed request rate after each wrk run (0: none)")
	e.Duration(&c.OpenDuration, "BENCH_OPEN_DURATION", "GC table: the open-loop run's length")
	e.String(&c.GC, "BENCH_GC", "GC tuning instead of the misuse table: settings default,N (GOGC),off:X (GOGC=off, GOMEMLIMIT X times the live heap), e.g. "+defaultGC)
	if err := e.Parse(args); err != nil {
		return c, err
	}
	if c.GC != "" && c.Modes == allModes {
		c.Modes = "unpooled,pooled" // GC tuning against pooling: the two real builds
	}
	return c, c.Validate()
}

// Validate checks the bounds.
func (c Config) Validate() error {
	var errs []error
	if c.Duration < time.Second || c.Duration > 5*time.Minute {
		errs = append(errs, fmt.Errorf("BENCH_DURATION=%s: want 1s to 5m", c.Duration))
	}
	if c.Warmup < 0 || c.Warmup > time.Minute {
		errs = append(errs, fmt.Errorf("BENCH_WARMUP=%s: want 0 to 1m", c.Warmup))
	}
	if c.Connections < 1 || c.Connections > 256 {
		errs = append(errs, fmt.Errorf("BENCH_CONNECTIONS=%d: want 1 to 256", c.Connections))
	}
	if c.Threads < 1 || c.Threads > c.Connections {
		errs = append(errs, fmt.Errorf("BENCH_THREADS=%d: want 1 to the connections", c.Threads))
	}
	if c.GC != "" {
		if _, err := parseGCSettings(c.GC); err != nil {
			errs = append(errs, err)
		}
	}
	if c.OpenRPS < 0 || c.OpenRPS > 20000 {
		errs = append(errs, fmt.Errorf("BENCH_OPEN_RPS=%g: want 0 (none) to 20000", c.OpenRPS))
	}
	if c.OpenRPS > 0 && (c.OpenDuration < time.Second || c.OpenDuration > 5*time.Minute) {
		errs = append(errs, fmt.Errorf("BENCH_OPEN_DURATION=%s: want 1s to 5m", c.OpenDuration))
	}
	if len(splitModes(c.Modes)) < 2 {
		errs = append(errs, fmt.Errorf("BENCH_MODES=%q: want at least two modes, the base first", c.Modes))
	}
	return errors.Join(errs...)
}

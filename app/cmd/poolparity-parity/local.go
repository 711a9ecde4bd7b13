package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/envflag"
	"github.com/poolparity/poolparity/internal/localmode"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/targets"
)

// runLocal is `poolparity-parity local`: the parity check of two builds on this machine
// (internal/localmode). Exit status: 0 PASS, 1 FAIL, 2 a bad flag, setting or requests file, 3 NO
// DATA, 4 the check could not run (a track refused before any load, Prometheus, the files), 130
// interrupted. Past the flags and the requests file, the report is written on every exit, an
// error's with verdict ERROR (localmode.Run).
func runLocal(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseLocalConfig(args, getenv, stderr)
	if err != nil {
		return cli.WithStatus(parity.ExitUsage, err)
	}
	res, err := localmode.Run(ctx, cfg, stdout)
	switch {
	case ctx.Err() != nil:
		return cli.WithStatus(parity.ExitInterrupted, errors.New("interrupted"))
	case errors.Is(err, localmode.ErrInvalid), errors.Is(err, targets.ErrSyntax):
		return cli.WithStatus(parity.ExitUsage, err)
	case err != nil:
		return cli.WithStatus(parity.ExitError, err)
	}
	return cli.Status(parity.ExitStatus(res.Report.Verdict))
}

// parseLocalConfig fills a localmode.Config from args and the environment read by getenv, then
// validates it. Each setting is a variable with the prefix PARITY_LOCAL_ (PARITY_LOCAL_STABLE_CMD,
// PARITY_LOCAL_REQUESTS, ...) and a flag without it (-stable-cmd, -requests), which wins. The
// rules' overrides are flags only: -set and -values (repeatable), -window (default 1m) and -for
// (default 30s), as `poolparity-parity rules` takes them.
func parseLocalConfig(args []string, getenv func(string) string, usage io.Writer) (localmode.Config, error) {
	c := localmode.Default()
	fs := flag.NewFlagSet("poolparity-parity local", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.Usage = func() {
		fmt.Fprintln(usage, "usage: poolparity-parity local (-stable-cmd CMD | -stable-url URL) (-gray-cmd CMD | -gray-url URL) -requests FILE [flags]")
		fmt.Fprintln(usage, "Runs two builds of a service side by side on this machine under a replayed load, judges gray against stable with a real Prometheus and the poolparity rules, compares their responses, and writes the report (docs/adopt.md).")
		fs.PrintDefaults()
	}
	e := envflag.New(fs, getenv, envflag.TrimPrefix("PARITY_LOCAL_"), envflag.WrapErrors(localmode.ErrInvalid))
	e.String(&c.Stable.Cmd, "PARITY_LOCAL_STABLE_CMD", "command line that starts the stable build (sh -c, with PORT and GRAY_STATUS=false set), e.g. 'HTTP_ADDR=127.0.0.1:$PORT ./stable'")
	e.String(&c.Gray.Cmd, "PARITY_LOCAL_GRAY_CMD", "command line that starts the gray build (sh -c, with PORT and GRAY_STATUS=true set)")
	e.String(&c.Stable.URL, "PARITY_LOCAL_STABLE_URL", "stable's base URL on loopback: where it already runs, or (with -stable-cmd) the port its command listens on; empty with a command: a free port")
	e.String(&c.Gray.URL, "PARITY_LOCAL_GRAY_URL", "gray's base URL on loopback, as -stable-url")
	e.String(&c.Stable.Mode, "PARITY_LOCAL_STABLE_MODE", "pool_mode label stable's metrics must carry (e.g. unpooled); empty: not checked")
	e.String(&c.Gray.Mode, "PARITY_LOCAL_GRAY_MODE", "pool_mode label gray's metrics must carry (e.g. pooled); empty: not checked")
	e.String(&c.RequestsFile, "PARITY_LOCAL_REQUESTS", "requests file replayed as the load, whose responses the differential check compares (METHOD URL, headers, body; docs/loadgen.md)")
	e.Float64(&c.RPS, "PARITY_LOCAL_RPS", "arrivals per second, both tracks together (open loop)")
	e.Duration(&c.Duration, "PARITY_LOCAL_DURATION", "how long the load runs before the report is read (20s to 2h)")
	e.Float64(&c.GrayWeight, "PARITY_LOCAL_GRAY_WEIGHT", "share of the arrivals sent to gray, between 0 and 1")
	e.Int(&c.Concurrency, "PARITY_LOCAL_CONCURRENCY", "bound on each track's requests in flight (an arrival past it is dropped and counted)")
	e.String(&c.MetricsPath, "PARITY_LOCAL_METRICS_PATH", "the tracks' metrics path")
	e.String(&c.PrometheusBin, "PARITY_LOCAL_PROMETHEUS", "prometheus binary; empty: ./bin/prometheus if present, else prometheus on PATH")
	e.Int(&c.DiffSample, "PARITY_LOCAL_DIFF_SAMPLE", "responses the differential check compares (0: no check); 400 with none differing is the fewest that can pass its 1% maximum")
	e.Bool(&c.DiffUnderLoad, "PARITY_LOCAL_DIFF_UNDER_LOAD", "compare gray's own load responses, sampled over the run, each with stable's answer to the same request asked as the load goes on, at its -concurrency: what only concurrency corrupts (a buffer put back to its pool before the response is written from it, a buffer shared by all requests) is seen; false (or with -diff-requests): after the load, one request at a time")
	e.String(&c.DiffRequestsFile, "PARITY_LOCAL_DIFF_REQUESTS", "requests file the differential check sends after the load, one request at a time, instead of comparing the load's responses under it: e.g. the load's reads only when its writes go to a store both tracks share")
	var diffIgnore, diffExclude string
	e.String(&diffIgnore, "PARITY_LOCAL_DIFF_IGNORE", "comma-separated paths where gray may legitimately differ from stable, besides the noise learned from stable asked twice: JSON paths such as .id,.created_at,.items[*].ts (a path covers what is under it), or status, content-type")
	e.String(&diffExclude, "PARITY_LOCAL_DIFF_EXCLUDE", "comma-separated requests the differential check leaves out: a method (DELETE) or an endpoint as the report names it ('PUT /api/v1/items/{n}'); every other request is compared, so exclude those whose answer depends on when they are asked (writes, counters, reads of what the load writes)")
	e.Bool(&c.Poison, "PARITY_LOCAL_POISON", "add "+localmode.PoisonEnv+"=1 to both commands' environment: a service whose instrument pools poison what is put back behind that variable (instrument.WithBytePoison) then corrupts every response used after Put and counts every write after Put as dirty. A correctness check: about 25 ns per KiB of capacity put back, which only a pooled track pays, so it biases CPU and latency against a pooled gray with large buffers")
	e.String(&c.OutDir, "PARITY_LOCAL_OUT", "directory for report.{txt,json,html}, prometheus.yml, rules.yml and logs/")
	e.String(&c.Gate, "PARITY_LOCAL_GATE", "verdict behind the exit status, as poolparity-parity -gate (confirmed, the default, suits one read at the load's end): "+parity.GateHelp())
	e.String(&c.Stable.ScrapeURL, "PARITY_LOCAL_STABLE_SCRAPE_URL", "base URL Prometheus scrapes for stable's metrics instead of -stable-url's, e.g. a collector stable pushes OTLP to; empty: the track itself")
	e.String(&c.Gray.ScrapeURL, "PARITY_LOCAL_GRAY_SCRAPE_URL", "gray's, as -stable-scrape-url")
	e.String(&c.Stable.PprofURL, "PARITY_LOCAL_STABLE_PPROF", "root of stable's net/http/pprof handlers, e.g. http://127.0.0.1:6060/debug/pprof/ (with -profile-seconds)")
	e.String(&c.Gray.PprofURL, "PARITY_LOCAL_GRAY_PPROF", "root of gray's net/http/pprof handlers (with -profile-seconds)")
	e.Int(&c.ProfileSeconds, "PARITY_LOCAL_PROFILE_SECONDS", "on a FAIL, profile both tracks' CPU this many seconds (the load going on) and compare it and their allocations per request in the report (needs -stable-pprof and -gray-pprof; 0: no profiles)")
	e.String(&c.Job, "PARITY_LOCAL_JOB", "Prometheus job the tracks are scraped as (empty: "+localmode.Job+")")
	e.String(&c.RulesFile, "PARITY_LOCAL_RULES_FILE", "a rules file of your own for Prometheus instead of the rules rendered from -set/-values (-window still names the family read)")
	e.Uint64(&c.Seed, "PARITY_LOCAL_SEED", "seed of the load's random order (-random)")
	e.Bool(&c.Random, "PARITY_LOCAL_RANDOM", "draw each arrival's request from the requests file at random (seeded) instead of replaying the file in order")
	e.Int(&c.Burst, "PARITY_LOCAL_BURST", "make each track's arrivals come in waves of this many at once, the rate unchanged (0 or 1: evenly spaced; at most -concurrency)")
	e.Duration(&c.ScrapeInterval, "PARITY_LOCAL_SCRAPE_INTERVAL", "Prometheus scrape and rule evaluation interval (1s to 15s)")
	e.Duration(&c.Progress, "PARITY_LOCAL_PROGRESS", "interval between progress lines")
	e.String(&c.Record, "PARITY_LOCAL_RECORD", "dump the run's per-track series to this file (gzip JSON) before Prometheus stops, for verdicteval's recorded corpus")
	e.String(&c.Title, "PARITY_LOCAL_TITLE", "the report's title (empty: poolparity local: gray (mode) vs stable (mode))")
	e.String(&c.GrayPackage, "PARITY_LOCAL_GRAY_PKG", "gray's Go main package (an import path, or a directory such as ./cmd/svc), built from the working directory into -out/bin: -gray-cmd then gets BIN, the build's path, in its environment (empty -gray-cmd: exec \"$BIN\"), and with -race-duration a -race build of it runs the race phase")
	c.RaceDuration = localmode.DefaultRaceDuration
	e.Duration(&c.RaceDuration, "PARITY_LOCAL_RACE_DURATION", "with -gray-pkg, how long the race phase loads a -race build of gray after the main load, at -rps and -concurrency: a data race it reports fails the run, naming both stacks' top frames (0: no race phase; without -gray-pkg none runs)")
	fs.Func("stable-env", "KEY=value added to the stable command's environment (repeatable)", appendTo(&c.Stable.Env))
	fs.Func("gray-env", "KEY=value added to the gray command's environment (repeatable)", appendTo(&c.Gray.Env))
	fs.Func("clear-env", "variables removed from the environment the commands inherit, comma-separated, a name ending with _ removing a prefix, e.g. REDIS_,OTEL_ (repeatable)", func(v string) error {
		c.ClearEnv = append(c.ClearEnv, strings.Split(v, ",")...)
		return nil
	})
	c.Rules.BindFlags(fs)
	def := localmode.Default()
	c.Rules.Window, c.Rules.For = def.Rules.Window, def.Rules.For // BindFlags zeroes them
	if err := e.Parse(args); err != nil {
		return c, err
	}
	if c.GrayPackage == "" && !isSet(fs, getenv, "PARITY_LOCAL_RACE_DURATION") {
		c.RaceDuration = 0 // the default's race phase needs -gray-pkg; one asked for is refused without it
	}
	c.DiffIgnore, c.DiffExclude = splitList(diffIgnore), splitList(diffExclude)
	return c, c.Validate()
}

// splitList splits a comma-separated list, trimming spaces and leaving out
// empty entries; nil for none.
func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// appendTo is a repeatable flag's setter: each value is appended to *list.
func appendTo(list *[]string) func(string) error {
	return func(v string) error {
		*list = append(*list, v)
		return nil
	}
}

// isSet reports whether the setting of the variable env was given, as a
// flag or in the environment.
func isSet(fs *flag.FlagSet, getenv func(string) string, env string) bool {
	set := getenv(env) != ""
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == envflag.FlagName(strings.TrimPrefix(env, "PARITY_LOCAL_")) })
	return set
}

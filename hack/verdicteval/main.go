// Command verdicteval measures the poolparity verdict as it is used: how often the shipped
// alert rules and the judges (thresholds, Confirm with the Mann-Whitney test, the anytime-valid
// sequential test) raise a false alarm on two equal tracks (A/A) under continuous monitoring,
// and how often and how fast they catch injected regressions, with a 95% interval on every
// rate, on two corpora: synthetic series (correlated, with lasting per-pod offsets and a cold
// start; every parameter a flag) and recorded real series (hack/verdicteval/testdata/recorded).
//
// It does not start a service: each run's scrapes (synthesised, or bootstrapped from
// recordings) are replayed through the Prometheus engine and rule manager (the code promtool
// runs) evaluating the committed deploy/prometheus rules, and the judges call the parity
// evaluator (internal/parity, the code the demo, `make parity` and the PoolCanary controller
// run) on that engine every minute of the rollout. `make verdict-eval` runs it and writes
// docs/verdict-eval.md. Its counts subcommand (hack/verdicteval/countsim) simulates the
// scraped counters themselves, fast, and measures the count-based judge against the per-minute
// one; `make verdict-eval-counts` writes docs/verdict-eval-counts.md.
//
//	go run ./hack/verdicteval -out docs/verdict-eval.md
//	go run ./hack/verdicteval counts -out docs/verdict-eval-counts.md
//	go run ./hack/verdicteval record -prometheus http://127.0.0.1:9090 -since 30m -step 5s -out FILE.json.gz
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/recorded"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Exit(os.Stderr, "verdicteval", err))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "record" {
		return record(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "counts" {
		return counts(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("verdicteval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := defaultConfig()
	fs.IntVar(&cfg.AARuns, "aa-runs", cfg.AARuns, "A/A runs per A/A scenario of the synthetic corpus")
	fs.IntVar(&cfg.Runs, "runs", cfg.Runs, "runs per injected regression (and per recorded regression)")
	fs.IntVar(&cfg.RecordedRuns, "recorded-runs", cfg.RecordedRuns, "A/A runs bootstrapped from the recorded corpus")
	fs.StringVar(&cfg.RecordedDir, "recorded", cfg.RecordedDir, "directory of the recorded corpus (*.json.gz); empty: none")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the noise")
	fs.StringVar(&cfg.RulesFile, "rules", cfg.RulesFile, "rules file the engine evaluates")
	fs.DurationVar(&cfg.Lead, "lead", cfg.Lead, "how long stable runs alone before the gray starts")
	fs.DurationVar(&cfg.Rollout, "rollout", cfg.Rollout, "how long a rollout is judged")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "the per-pod warm-up the judges exclude")
	fs.DurationVar(&cfg.Scrape, "scrape", cfg.Scrape, "scrape interval of the synthetic series")
	fs.Float64Var(&cfg.RPS, "rps", cfg.RPS, "requests per second per track")
	fs.Float64Var(&cfg.MedianLatency, "median-latency", cfg.MedianLatency, "median latency, seconds")
	fs.Float64Var(&cfg.P99Latency, "p99-latency", cfg.P99Latency, "p99 latency, seconds")
	fs.Float64Var(&cfg.BaseErrors, "base-errors", cfg.BaseErrors, "5xx ratio of both tracks")
	fs.Float64Var(&cfg.Drift, "drift", cfg.Drift, "sigma of a track's log latency scale (an AR(1) process)")
	fs.Float64Var(&cfg.AR1, "ar1", cfg.AR1, "minute-to-minute correlation of the latency scale (0: independent per scrape)")
	fs.Float64Var(&cfg.PodOffset, "pod-offset", cfg.PodOffset, "sigma of each pod's lasting log latency and CPU offset")
	fs.IntVar(&cfg.Pods, "pods", cfg.Pods, "pods per track")
	fs.Float64Var(&cfg.StallProb, "stall-prob", cfg.StallProb, "chance per scrape and track of a stall")
	fs.Float64Var(&cfg.StallShare, "stall-share", cfg.StallShare, "share of a stalled scrape's requests slowed")
	fs.Float64Var(&cfg.StallFactor, "stall-factor", cfg.StallFactor, "how many times slower a stalled request is")
	fs.Float64Var(&cfg.Cold, "cold", cfg.Cold, "how much slower the cold gray is at its start (0.3: 30%)")
	fs.DurationVar(&cfg.ColdFor, "cold-for", cfg.ColdFor, "how long the cold start lasts")
	fs.IntVar(&cfg.OracleRuns, "oracle-runs", cfg.OracleRuns, "simulated runs per latency regression of the synthetic corpus' oracle")
	fs.IntVar(&cfg.OracleNullRuns, "oracle-null-runs", cfg.OracleNullRuns, "simulated runs at the floor of the synthetic corpus' oracle")
	out := fs.String("out", "", "write the Markdown report here (default: stdout)")
	if err := fs.Parse(args); err != nil {
		return cli.Usage(err)
	}
	if fs.NArg() > 0 {
		return cli.Usage(fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	res, err := evaluate(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	w := stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return fmt.Errorf("creating %s: %w", *out, err)
		}
		defer f.Close()
		w = f
	}
	if err := writeReport(w, cfg, res, args); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}

// record dumps the per-track series the rules read from a Prometheus into a recording.
func record(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verdicteval record", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("prometheus", "http://127.0.0.1:9090", "Prometheus base URL")
	since := fs.Duration("since", 30*time.Minute, "record from this long before -end")
	endS := fs.String("end", "", "end of the range, RFC 3339 (default: now)")
	step := fs.Duration("step", 15*time.Second, "step of the recording (the scrape interval)")
	scenario := fs.String("scenario", "", "what ran, e.g. aa or regression")
	outPath := fs.String("out", "", "write the recording here (name it GROUP-N.json.gz: the corpus groups by GROUP)")
	if err := fs.Parse(args); err != nil {
		return cli.Usage(err)
	}
	if *outPath == "" || fs.NArg() > 0 {
		return cli.Usage(fmt.Errorf("record needs -out and no arguments"))
	}
	end := time.Now()
	if *endS != "" {
		t, err := time.Parse(time.RFC3339, *endS)
		if err != nil {
			return cli.Usage(fmt.Errorf("-end: %w", err))
		}
		end = t
	}
	c, err := promapi.NewClient(promapi.Config{Address: *url})
	if err != nil {
		return fmt.Errorf("prometheus client for %s: %w", *url, err)
	}
	rec, err := recorded.Record(ctx, v1.NewAPI(c), end.Add(-*since), end, *step)
	if err != nil {
		return err
	}
	rec.Name, rec.Scenario = *outPath, *scenario
	rec.Command = "go run ./hack/verdicteval record " + strings.Join(args, " ")
	if err := rec.WriteFile(*outPath); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "recorded %d series, %d steps of %s, into %s\n", len(rec.Series), rec.Len(), rec.Step, *outPath)
	return nil
}

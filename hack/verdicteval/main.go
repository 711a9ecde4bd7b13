// Command verdicteval measures the poolparity verdict: how often the shipped alert rules, the
// judge's thresholds and the judge's statistical test raise a false alarm on two equal tracks
// (A/A), and how often and how fast they catch injected regressions of the gray track's
// latency (+5%, +10%, +20%, +40%) and errors (+0.5 points).
//
// It does not start a service: each run synthesises the service's scrapes for both tracks
// (request counts, latency histograms with the service's buckets, 5xx counts, CPU, heap, GC and
// Redis pool counters) with controlled noise, replays them through the Prometheus engine and
// rule manager (the code promtool runs) evaluating the committed deploy/prometheus rules, and
// calls the parity judge (internal/parity, the code the demo, `make parity` and the
// PoolCanary controller run) on that engine every analysis window. `make verdict-eval` runs it
// and writes docs/verdict-eval.md.
//
//	go run ./hack/verdicteval -out docs/verdict-eval.md
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/poolparity/poolparity/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Exit(os.Stderr, "verdicteval", err))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verdicteval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := defaultConfig()
	fs.IntVar(&cfg.AARuns, "aa-runs", cfg.AARuns, "A/A runs")
	fs.IntVar(&cfg.Runs, "runs", cfg.Runs, "runs per injected regression")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the noise")
	fs.StringVar(&cfg.RulesFile, "rules", cfg.RulesFile, "rules file the engine evaluates")
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

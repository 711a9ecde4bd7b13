package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/poolparity/poolparity/hack/verdicteval/countsim"
	"github.com/poolparity/poolparity/internal/cli"
)

// counts runs the count-level simulation (hack/verdicteval/countsim) and writes its report.
func counts(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verdicteval counts", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := countsim.DefaultConfig()
	seeds := fs.String("seeds", "1,2,3", "comma-separated seeds; every cell pools them")
	fs.IntVar(&cfg.Runs, "runs", cfg.Runs, "runs per A/A, boundary and margin cell, over all seeds")
	fs.IntVar(&cfg.RegressionRuns, "regression-runs", cfg.RegressionRuns, "runs per regression cell, over all seeds")
	fs.Float64Var(&cfg.ResetShare, "reset-share", cfg.ResetShare, "share of runs in which a pod restarts (its counters reset)")
	fs.DurationVar(&cfg.Timing.Rollout, "rollout", cfg.Timing.Rollout, "how long each rollout is judged (whole minutes)")
	fs.DurationVar(&cfg.Timing.Lead, "lead", cfg.Timing.Lead, "how long stable serves alone before the gray starts: the count judge's history of stable (the controller reads parity.CountHistory)")
	fs.IntVar(&cfg.Workers, "workers", 0, "runs in parallel (0: GOMAXPROCS); results do not depend on it")
	models := fs.String("models", "", "comma-separated noise models to run (default: all)")
	quick := fs.Bool("quick", false, "a smoke run: models iid and corpus, the first traffic row, 15-minute rollouts, 8 runs per cell (over the seeds)")
	out := fs.String("out", "", "write the Markdown report here (default: stdout)")
	if err := fs.Parse(args); err != nil {
		return cli.Usage(err)
	}
	if fs.NArg() > 0 {
		return cli.Usage(fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	var err error
	if cfg.Seeds, err = parseSeeds(*seeds); err != nil {
		return cli.Usage(err)
	}
	if *quick {
		cfg.Runs, cfg.RegressionRuns, cfg.Timing.Rollout, cfg.Traffics = 8, 8, 15*time.Minute, cfg.Traffics[:1]
		if *models == "" {
			*models = "iid,corpus"
		}
	}
	if cfg.Models, err = selectModels(cfg.Models, *models); err != nil {
		return cli.Usage(err)
	}
	return writeCounts(ctx, cfg, args, *out, stdout, stderr)
}

// writeCounts evaluates cfg and writes the report to out (stdout when empty).
func writeCounts(ctx context.Context, cfg countsim.Config, args []string, out string, stdout, stderr io.Writer) error {
	start := time.Now()
	last := time.Now()
	cells, err := countsim.Evaluate(ctx, cfg, func(done, total int) {
		if time.Since(last) > 10*time.Second || done == total {
			last = time.Now()
			fmt.Fprintf(stderr, "counts: %d of %d runs (%s)\n", done, total, time.Since(start).Round(time.Second))
		}
	})
	if err != nil {
		return fmt.Errorf("evaluating the count simulation: %w", err)
	}
	meta := countsim.Meta{Command: strings.TrimSpace("go run ./hack/verdicteval counts " + strings.Join(args, " ")), Elapsed: time.Since(start), CPUs: runtime.GOMAXPROCS(0)}
	w := stdout
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return fmt.Errorf("creating %s: %w", out, err)
		}
		defer f.Close()
		w = f
	}
	if err := countsim.WriteReport(w, cfg, cells, meta); err != nil {
		return fmt.Errorf("writing the counts report: %w", err)
	}
	return nil
}

func parseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("-seeds %q: %w", s, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func selectModels(all []countsim.Model, names string) ([]countsim.Model, error) {
	if names == "" {
		return all, nil
	}
	var out []countsim.Model
	for _, n := range strings.Split(names, ",") {
		i := slices.IndexFunc(all, func(m countsim.Model) bool { return m.Name == strings.TrimSpace(n) })
		if i < 0 {
			return nil, fmt.Errorf("-models: no model %q", n)
		}
		out = append(out, all[i])
	}
	return out, nil
}

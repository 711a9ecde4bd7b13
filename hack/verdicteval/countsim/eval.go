package countsim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

// Config is one evaluation: every cell (model x traffic x scenario) simulated Runs times
// (RegressionRuns for a regression) and judged by both judges at both look intervals.
type Config struct {
	Service   Service
	Timing    Timing
	Models    []Model
	Traffics  []Traffic
	Scenarios []Scenario
	// Seeds are the seeds: run i of a cell takes seed i mod len(Seeds). Every run's noise derives
	// from its seed and its place, so results do not depend on Workers.
	Seeds []uint64
	// Runs per A/A, boundary and margin cell, over all seeds; RegressionRuns per regression cell.
	Runs, RegressionRuns int
	// ResetShare is the share of runs in which a pod restarts.
	ResetShare float64
	// Step is the count judge's step and the fast look interval (20 s).
	Step time.Duration
	// Test is the count judge's configuration (K: every SLI of the catalog, as shipped).
	Test seqcount.Test
	// Workers run in parallel; 0 takes GOMAXPROCS.
	Workers int
}

// DefaultConfig is the brief's evaluation: every model, traffic row and scenario, seeds 1 to 3,
// 400 runs per A/A, boundary and margin cell and 100 per regression (over the seeds), 10% of runs
// with a restart. 400 runs put the 95% upper bound of one false FAIL at 1.4%, under the target's
// 2%; at 200 a single one (2.8%) could not be told from a rate over 1%.
func DefaultConfig() Config {
	svc := DefaultService()
	return Config{
		Service: svc, Timing: DefaultTiming(), Models: Models(), Traffics: Traffics(), Scenarios: Scenarios(svc),
		Seeds: []uint64{1, 2, 3}, Runs: 400, RegressionRuns: 100, ResetShare: 0.1,
		Step: 20 * time.Second, Test: seqcount.Test{Alpha: 0.01, K: K},
	}
}

// RunResult is one run judged.
type RunResult struct {
	// Counts and Minute are the count judge's and the per-minute judge's traces.
	Counts, Minute Traces
	// Contrasts are the count contrasts per judged SLI (latency p95, p99, errors, CPU, heap).
	Contrasts []Contrast
	// Reset says whether a pod restarted.
	Reset bool
}

// Cell is every run of one model, traffic row and scenario, over all seeds.
type Cell struct {
	Model    Model
	Traffic  Traffic
	Scenario Scenario
	Runs     []RunResult
}

// job is one run to simulate: run run of cell cell.
type job struct {
	cell, run int
}

// Evaluate simulates and judges every run of cfg; progress (may be nil) is told every finished
// run, by one goroutine at a time.
func Evaluate(ctx context.Context, cfg Config, progress func(done, total int)) ([]Cell, error) {
	slis, err := judged()
	if err != nil {
		return nil, err
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cells, jobs := cfg.plan()
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var next atomic.Int64
	var done int
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(jobs) && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				jb := jobs[i]
				c := &cells[jb.cell]
				res, err := cfg.one(c, jb, slis)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				c.Runs[jb.run] = res
				done++
				if progress != nil {
					progress(done, len(jobs))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return cells, errors.Join(firstErr, ctx.Err())
}

func (cfg Config) check() error {
	switch {
	case len(cfg.Seeds) == 0 || cfg.Runs < 1 || cfg.RegressionRuns < 1:
		return fmt.Errorf("need a seed and at least one run per cell (seeds %v, runs %d, regression runs %d)", cfg.Seeds, cfg.Runs, cfg.RegressionRuns)
	case cfg.Step <= 0 || time.Minute%cfg.Step != 0 || cfg.Timing.Rollout%time.Minute != 0:
		return fmt.Errorf("the step %s must divide a minute and the rollout %s be whole minutes", cfg.Step, cfg.Timing.Rollout)
	case len(cfg.Models) == 0 || len(cfg.Traffics) == 0 || len(cfg.Scenarios) == 0:
		return errors.New("need a model, a traffic row and a scenario")
	}
	return cfg.Timing.check()
}

func (cfg Config) runsOf(sc Scenario) int {
	if sc.Kind == Regression {
		return cfg.RegressionRuns
	}
	return cfg.Runs
}

// plan lays out the cells and every run to simulate.
func (cfg Config) plan() ([]Cell, []job) {
	var cells []Cell
	var jobs []job
	for _, m := range cfg.Models {
		for _, tr := range cfg.Traffics {
			for _, sc := range cfg.Scenarios {
				n := cfg.runsOf(sc)
				cells = append(cells, Cell{Model: m, Traffic: tr, Scenario: sc, Runs: make([]RunResult, n)})
				for r := range n {
					jobs = append(jobs, job{cell: len(cells) - 1, run: r})
				}
			}
		}
	}
	return cells, jobs
}

// one simulates and judges one run; its noise is a function of its seed, cell and number only.
func (cfg Config) one(c *Cell, jb job, slis []sli) (RunResult, error) {
	n := len(cfg.Seeds)
	rng := rand.New(rand.NewPCG(cfg.Seeds[jb.run%n], uint64(jb.cell)<<32|uint64(jb.run/n)))
	su := Setup{Service: cfg.Service, Model: c.Model, Traffic: c.Traffic, Scenario: c.Scenario, Timing: cfg.Timing, ResetShare: cfg.ResetShare}
	run, err := Simulate(su, rng)
	if err != nil {
		return RunResult{}, err
	}
	return cfg.judge(su, run, slis)
}

// judge runs both judges on a simulated run.
func (cfg Config) judge(su Setup, run Run, slis []sli) (RunResult, error) {
	looks, edges := cfg.Timing.edges(cfg.Step)
	cs, err := countSteps(su, run, slis, edges)
	if err != nil {
		return RunResult{}, fmt.Errorf("%s, %s, %s: %w", su.Model.Name, su.Traffic.Name, su.Scenario.Name, err)
	}
	stride := int(time.Minute / cfg.Step)
	return RunResult{
		Counts:    traceLooks(looks, stride, cfg.Step, cfg.shippedLooks(run, slis)),
		Minute:    traceLooks(looks, stride, cfg.Step, minuteLooks(su, run, slis, cfg.Step)),
		Contrasts: contrasts(cs),
		Reset:     run.Reset != "",
	}, nil
}

// edges returns the number of steps of the rollout and their edges, from the gray's start.
func (t Timing) edges(step time.Duration) (int, []time.Time) {
	looks := int(t.Rollout / step)
	edges := make([]time.Time, looks+1)
	for j := range edges {
		edges[j] = t.GrayStart().Add(time.Duration(j) * step)
	}
	return looks, edges
}

package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/poolparity/poolparity/hack/verdicteval/countsim"
	"github.com/poolparity/poolparity/internal/catalog"
)

// corpusOracle is the oracle of the synthetic corpus' latency regressions, as the count
// evaluation defines it (countsim.OracleOf): the minutes a fixed-horizon test that knows the
// true effect needs, at the count judge's per-rollout alpha over the catalog's SLIs, to FAIL at
// power 0.5 and 0.95, its null the gray at every SLI's floor. It is computed on counters that
// countsim simulates with this corpus' own parameters (latency, drift, pod offsets, stalls,
// errors), traffic and pods, not on the replayed series: the replay's judges read rules, and
// the oracle needs each step's counts at the judge's bounds.
type corpusOracle struct {
	// Traffic names the simulated traffic row.
	Traffic string
	// Runs are the regression runs and NullRuns the floor runs it rests on.
	Runs, NullRuns int
	// Alpha and K are the per-rollout alpha and the SLIs it is spent over.
	Alpha float64
	K     int
	// ByLatency is the oracle of each latency regression (0.2: p99 +20%).
	ByLatency map[float64]countsim.Oracle
}

// oracleScenarios are the countsim scenarios the oracle simulates: the null and the latency
// regressions the targets name, by their countsim keys.
var oracleScenarios = map[string]float64{"boundary": 0, "p99+20": 0.2, "p99+40": 0.4}

// oracleConfig is countsim's evaluation of the synthetic corpus of cfg: one model with its
// noise, one traffic row (both tracks at cfg.RPS, cfg.Pods pods each), the boundary and the
// latency regressions, cfg's timing, seeds cfg.Seed to cfg.Seed+2, and cfg's oracle runs.
func oracleConfig(cfg config) (countsim.Config, error) {
	oc := countsim.DefaultConfig()
	oc.Service.Median, oc.Service.P99, oc.Service.Errors = cfg.MedianLatency, cfg.P99Latency, cfg.BaseErrors
	i := slices.IndexFunc(oc.Models, func(m countsim.Model) bool { return m.Name == "corpus" })
	if i < 0 {
		return oc, fmt.Errorf("countsim has no corpus model")
	}
	m := oc.Models[i]
	m.Name = "synthetic corpus"
	m.Drift, m.Phi, m.PodSD = cfg.Drift, cfg.AR1, cfg.PodOffset
	m.StallProb, m.StallShare, m.StallFactor = cfg.StallProb, cfg.StallShare, cfg.StallFactor
	oc.Models = []countsim.Model{m}
	oc.Traffics = []countsim.Traffic{{Name: fmt.Sprintf("%g req/s 50/50, %d+%d pods", 2*cfg.RPS, cfg.Pods, cfg.Pods),
		RPS: 2 * cfg.RPS, GrayShare: 0.5, StablePods: cfg.Pods, GrayPods: cfg.Pods}}
	var scs []countsim.Scenario
	for _, sc := range countsim.Scenarios(oc.Service) {
		if _, ok := oracleScenarios[sc.Key]; ok {
			scs = append(scs, sc)
		}
	}
	if len(scs) != len(oracleScenarios) {
		return oc, fmt.Errorf("countsim lacks a scenario of %v", oracleScenarios)
	}
	oc.Scenarios = scs
	oc.Timing.Scrape, oc.Timing.Lead, oc.Timing.Rollout = cfg.Scrape, cfg.Lead, cfg.Rollout
	oc.Seeds = []uint64{cfg.Seed, cfg.Seed + 1, cfg.Seed + 2}
	oc.ResetShare = 0 // the synthetic corpus has no restarts
	oc.Test.K = len(catalog.Default().SLIs)
	oc.RegressionRuns, oc.Runs = cfg.OracleRuns, cfg.OracleNullRuns
	return oc, nil
}

// oracleOf simulates oracleConfig(cfg) and returns the oracle of each latency regression.
func oracleOf(ctx context.Context, cfg config) (corpusOracle, error) {
	oc, err := oracleConfig(cfg)
	if err != nil {
		return corpusOracle{}, err
	}
	cells, err := countsim.Evaluate(ctx, oc, nil)
	if err != nil {
		return corpusOracle{}, fmt.Errorf("simulating the oracle: %w", err)
	}
	var null countsim.Cell
	for _, c := range cells {
		if c.Scenario.Key == "boundary" {
			null = c
		}
	}
	o := corpusOracle{Traffic: oc.Traffics[0].Name, Runs: oc.RegressionRuns, NullRuns: len(null.Runs), Alpha: oc.Test.Alpha, K: oc.Test.K, ByLatency: map[float64]countsim.Oracle{}}
	for _, c := range cells {
		if lat := oracleScenarios[c.Scenario.Key]; lat > 0 {
			o.ByLatency[lat] = countsim.OracleOf(c.Runs, null.Runs, oc.Test.Alpha, oc.Test.K, oc.Step)
		}
	}
	return o, nil
}

// beside is what the oracle says beside a target on the minutes the oracle needs at some power
// (+Inf: not within the rollout): its figure, and whether it is beyond the target's limit.
func beside(minutes float64, power string, limit time.Duration) string {
	switch {
	case math.IsInf(minutes, 1):
		return fmt.Sprintf("; the oracle itself does not reach power %s within the rollout, beyond the target", power)
	case minutes > limit.Minutes():
		return fmt.Sprintf("; the oracle itself needs %.3g min at power %s, beyond the target", minutes, power)
	}
	return fmt.Sprintf("; the oracle needs %.3g min at power %s", minutes, power)
}

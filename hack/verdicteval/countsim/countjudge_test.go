package countsim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

// TestShippedLooksMatchJudgingEachLook: the evaluation judges each SLI of a run once over the
// whole rollout with the shipped test (parity.JudgeCounts) and reads every look's outcome from
// that; a controller judges again at every look. The two must agree at every look (a FAIL after a
// PASS included), on three kinds of runs.
func TestShippedLooksMatchJudgingEachLook(t *testing.T) {
	cfg := DefaultConfig()
	// A 5-minute history keeps the test short: what it compares (one call over the rollout
	// against a call per look) does not depend on the history's length.
	cfg.Timing.Lead, cfg.Timing.Rollout = 5*time.Minute, 15*time.Minute
	slis, err := judged()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		model Model
		sc    Scenario
		reset float64
	}{
		{"A/A, iid, a pod restarting", cfg.Models[0], cfg.Scenarios[0], 1},
		{"p99 +40%, corpus", cfg.Models[1], cfg.Scenarios[5], 0},
		{"errors +0.5 points, ar1", cfg.Models[2], cfg.Scenarios[6], 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			su := Setup{Service: cfg.Service, Model: c.model, Traffic: cfg.Traffics[0], Scenario: c.sc, Timing: cfg.Timing, ResetShare: c.reset}
			run, err := Simulate(su, rand.New(rand.NewPCG(21, 22)))
			if err != nil {
				t.Fatal(err)
			}
			looks, _ := cfg.Timing.edges(cfg.Step)
			at := cfg.shippedLooks(run, slis)
			decided := 0
			for j := 1; j <= looks; j++ {
				fail, pass := at(j)
				wantFail, wantPass := judgeLook(cfg, run, slis, cfg.Timing.GrayStart().Add(time.Duration(j)*cfg.Step))
				if fail != wantFail || pass != wantPass {
					t.Fatalf("look %d: failing SLI %d pass %v, judging at the look gives %d, %v", j, fail, pass, wantFail, wantPass)
				}
				if fail >= 0 || pass {
					decided++
				}
			}
			if decided == 0 {
				t.Fatal("no look decided: the comparison tested nothing")
			}
		})
	}
}

// judgeLook judges every SLI of run with the shipped test at the look at, as a controller does:
// the first SLI (in order) that FAILs, -1 for none, and whether all PASS.
func judgeLook(cfg Config, run Run, slis []sli, at time.Time) (fail int, pass bool) {
	fail, pass = -1, true
	for i, s := range slis {
		switch parity.JudgeCounts(cfg.countsInput(run, s, at)).Verdict {
		case parity.Fail:
			if fail < 0 {
				fail = i
			}
		case parity.Pass:
		default:
			pass = false
		}
	}
	return fail, pass && fail < 0
}

// TestMinuteLooksPassAGrayAtParity: today's per-minute judge, given each minute's requests as the
// controller reads them, PASSes a gray at parity (iid noise, 150 req/s, 90/10) within 30 minutes.
// Without the requests the error ratio's rate bound has nothing to count and no run ever PASSed.
func TestMinuteLooksPassAGrayAtParity(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Timing.Rollout = 30 * time.Minute
	slis, err := judged()
	if err != nil {
		t.Fatal(err)
	}
	passed := 0
	const runs = 3
	for i := range runs {
		su := Setup{Service: cfg.Service, Model: cfg.Models[0], Traffic: cfg.Traffics[0], Scenario: cfg.Scenarios[0], Timing: cfg.Timing}
		run, err := Simulate(su, rand.New(rand.NewPCG(31, uint64(i))))
		if err != nil {
			t.Fatal(err)
		}
		looks, _ := cfg.Timing.edges(cfg.Step)
		at := minuteLooks(su, run, slis, cfg.Step)
		for j := 1; j <= looks; j++ {
			fail, pass := at(j)
			if fail >= 0 {
				t.Fatalf("run %d: a gray at parity FAILed SLI %d at look %d", i, fail, j)
			}
			if pass {
				passed++
				break
			}
		}
	}
	if passed < 2 {
		t.Fatalf("%d of %d runs at parity PASSed within %s, want at least 2", passed, runs, cfg.Timing.Rollout)
	}
}

// TestCountStepsHistory: every SLI gets stable's steps over the lead (5 minutes, 15 steps of 20 s)
// as its history, each with requests, and the rollout's steps from the gray's start.
func TestCountStepsHistory(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Timing.Rollout = 5 * time.Minute
	slis, err := judged()
	if err != nil {
		t.Fatal(err)
	}
	su := Setup{Service: cfg.Service, Model: cfg.Models[0], Traffic: cfg.Traffics[0], Scenario: cfg.Scenarios[0], Timing: cfg.Timing}
	looks, edges, cs := simulatedSteps(t, cfg, su, slis, rand.NewPCG(5, 6))
	wantHist := int(cfg.Timing.Lead / cfg.Step)
	for i, c := range cs {
		if len(c.hist) != wantHist || len(c.steps) != looks {
			t.Fatalf("SLI %d: %d history steps and %d steps, want %d and %d", i, len(c.hist), len(c.steps), wantHist, looks)
		}
		for k, h := range c.hist {
			if !(h.Requests > 0) {
				t.Fatalf("SLI %d: history step %d has %g requests", i, k, h.Requests)
			}
		}
		if !c.steps[0].T.Equal(edges[1]) {
			t.Errorf("SLI %d: first step ends at %s, want %s", i, c.steps[0].T, edges[1])
		}
	}
}

// simulatedSteps simulates one run of su and returns its looks, the step edges and the SLIs' steps.
func simulatedSteps(t *testing.T, cfg Config, su Setup, slis []sli, src rand.Source) (int, []time.Time, []countSLI) {
	t.Helper()
	run, err := Simulate(su, rand.New(src))
	if err != nil {
		t.Fatal(err)
	}
	looks, edges := cfg.Timing.edges(cfg.Step)
	cs, err := countSteps(su, run, slis, edges)
	if err != nil {
		t.Fatal(err)
	}
	return looks, edges, cs
}

// TestErrorsFailWithinTenMinutes judges the error SLI on the simulation's counts (per-pod
// counters scraped every 15 s, stable's 30 minutes of history, 150 req/s split 90/10 over 4 + 1
// pods, iid) with errors +0.5 points: it must FAIL within 10 minutes in at least 95 of 100 runs,
// issue 37's target, and the same counts without per-pod counts (no pod allowance) must do no
// worse by more than 3 runs. Until stop 47 a Proportion pod spread read from chance (the pods'
// sampling noise taken off at its mean, not its 95% quantile) widened the floor in about two runs
// in five: 84 of 100 FAILed in time, 99 without per-pod counts.
func TestErrorsFailWithinTenMinutes(t *testing.T) {
	cfg := DefaultConfig()
	slis, err := judged()
	if err != nil {
		t.Fatal(err)
	}
	ei := slices.IndexFunc(slis, func(s sli) bool { return s.series == SeriesErrors })
	si := slices.IndexFunc(cfg.Scenarios, func(s Scenario) bool { return s.Key == "errors+0.5" })
	if ei < 0 || si < 0 {
		t.Fatalf("no error SLI (%d) or errors+0.5 scenario (%d)", ei, si)
	}
	su := Setup{Service: cfg.Service, Model: cfg.Models[0], Traffic: cfg.Traffics[0], Scenario: cfg.Scenarios[si], Timing: cfg.Timing}
	const runs = 100
	var within, withoutPods int
	for r := range runs {
		_, _, cs := simulatedSteps(t, cfg, su, slis, rand.NewPCG(uint64(r), 77))
		c := cs[ei]
		inTime := func(res seqcount.Result) bool {
			return res.Outcome == seqcount.Fail && res.Rejected.Sub(c.steps[0].T) <= 10*time.Minute
		}
		if inTime(cfg.Test.JudgeAfter(c.kind, c.lim, c.hist, c.steps)) {
			within++
		}
		bare := slices.Clone(c.steps)
		for i := range bare {
			bare[i].Stable.Pods, bare[i].Gray.Pods = nil, nil
		}
		if inTime(cfg.Test.JudgeAfter(c.kind, c.lim, c.hist, bare)) {
			withoutPods++
		}
	}
	t.Logf("errors +0.5 points FAILed within 10 minutes in %d of %d runs, %d without per-pod counts", within, runs, withoutPods)
	if within < 95 || within < withoutPods-3 {
		t.Errorf("FAILed within 10 minutes in %d of %d runs (%d without per-pod counts), want at least 95 and at most 3 fewer", within, runs, withoutPods)
	}
}

// TestParityPassTimes judges every SLI on the simulation's counts of a gray at parity (iid, 150
// req/s split 90/10, stable's 30 minutes of history), 150 runs, and logs each SLI's median and
// 90th percentile minutes to PASS (docs/controller.md quotes them). The rollout, which PASSes
// with its last SLI, must PASS after a median of at most 5 minutes and a 90th percentile of at
// most 10, issue 37's target: 5 and 7.67 are measured, 6 and 8 before the PASS test of a
// Proportion SLI read gray's lower tail at its Poisson cumulant (stop 47).
func TestParityPassTimes(t *testing.T) {
	cfg := DefaultConfig()
	slis, err := judged()
	if err != nil {
		t.Fatal(err)
	}
	su := Setup{Service: cfg.Service, Model: cfg.Models[0], Traffic: cfg.Traffics[0], Scenario: cfg.Scenarios[0], Timing: cfg.Timing}
	const runs = 150
	per := make([][]float64, len(slis)+1) // the last: the rollout
	for r := range runs {
		run, err := Simulate(su, rand.New(rand.NewPCG(uint64(r), 91)))
		if err != nil {
			t.Fatal(err)
		}
		var last float64
		for i, s := range slis {
			// The first 20 minutes: a PASS later than the 90th percentile's target (10) is
			// as late as none, and the judge watches every step after a PASS.
			res := parity.JudgeCounts(cfg.countsInput(run, s, su.Timing.GrayStart().Add(20*time.Minute)))
			m := math.Inf(1)
			if res.Verdict == parity.Pass {
				m = res.Rejected.Sub(su.Timing.GrayStart()).Minutes()
			}
			per[i] = append(per[i], m)
			last = math.Max(last, m)
		}
		per[len(slis)] = append(per[len(slis)], last)
	}
	var median, p90 float64
	for i, xs := range per {
		median, p90 = Quantile(xs, 0.5), Quantile(xs, 0.9)
		name := "the rollout"
		if i < len(slis) {
			name = string(slis[i].cat.ID)
		}
		t.Logf("%s: PASS after a median of %.2f minutes, 90th percentile %.2f", name, median, p90)
	}
	if median > 5 || p90 > 10 {
		t.Errorf("the rollout at parity PASSed after a median of %.2f minutes, 90th percentile %.2f; want at most 5 and 10", median, p90)
	}
}

// TestAR1FailTimes judges every SLI on the simulation's counts of a gray whose latency is 40%
// slower (p99 +40%) under per-track AR(1) drift (the ar1 model: sd 0.095 of the log, 0.5 per
// minute, latency, CPU and heap), 150 req/s split 90/10, stable's 30 minutes of history, 100
// runs. The rollout FAILs with its first SLI, and must FAIL after a median of at most 3 minutes,
// issue 37's target (the oracle needs 1.33): 2.33 is measured here on the shipped path
// (parity.JudgeCounts; seed 91), 3.00 when the evaluation judged on its own steps at nominal
// limits. It is the target that the history's drift bound held back:
// with the bound's factor at a 99% chi-squared upper bound (until stop 50) the median was 5.33
// minutes here and in the report, and this test failed.
func TestAR1FailTimes(t *testing.T) {
	cfg := DefaultConfig()
	slis, err := judged()
	if err != nil {
		t.Fatal(err)
	}
	models := Models()
	mi := slices.IndexFunc(models, func(m Model) bool { return m.Name == "ar1" })
	si := slices.IndexFunc(cfg.Scenarios, func(s Scenario) bool { return s.Key == "p99+40" })
	if mi < 0 || si < 0 {
		t.Fatalf("no ar1 model (%d) or p99+40 scenario (%d)", mi, si)
	}
	su := Setup{Service: cfg.Service, Model: models[mi], Traffic: cfg.Traffics[0], Scenario: cfg.Scenarios[si], Timing: cfg.Timing}
	const runs = 100
	first := make([]float64, 0, runs)
	for r := range runs {
		run, err := Simulate(su, rand.New(rand.NewPCG(uint64(r), 91)))
		if err != nil {
			t.Fatal(err)
		}
		m := math.Inf(1)
		for _, s := range slis {
			if res := parity.JudgeCounts(cfg.countsInput(run, s, su.Timing.GrayStart().Add(su.Timing.Rollout))); res.Verdict == parity.Fail {
				m = math.Min(m, res.Rejected.Sub(su.Timing.GrayStart()).Minutes())
			}
		}
		first = append(first, m)
	}
	median, p90 := Quantile(first, 0.5), Quantile(first, 0.9)
	t.Logf("p99 +40%% under ar1: FAIL after a median of %.2f minutes, 90th percentile %.2f", median, p90)
	if median > 3 {
		t.Errorf("p99 +40%% under ar1 FAILed after a median of %.2f minutes, want at most 3", median)
	}
}

package seqcount_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

// runs and steps of the Monte Carlo tests: 90 steps of 20 s are half an hour.
const (
	mcRuns  = 300
	mcSteps = 90
)

// outcomes judges runs of simulated error counts, the rollout's alpha split over k SLIs, and
// returns the outcome counts and the steps to each FAIL.
func outcomes(seed uint64, k int, grayShare, ps, pg float64) (count map[seqcount.Outcome]int, failSteps []int) {
	rng := rand.New(rand.NewPCG(seed, 2026))
	count = map[seqcount.Outcome]int{}
	for range mcRuns {
		r := seqcount.Test{K: k}.Judge(seqcount.Proportion, errorLimits, errorSteps(rng, mcSteps, 150, grayShare, 20, ps, pg))
		count[r.Outcome]++
		if r.Outcome == seqcount.Fail {
			failSteps = append(failSteps, r.Steps)
		}
	}
	return count, failSteps
}

// TestFalseVerdictRates judges gray exactly at the floor (a FAIL would be false) and exactly at
// the margin (a PASS would be false) under independent binomial counts at 150 req/s split 50/50,
// with two seeds. Each rate must be consistent with Alpha = 0.01: its 95% Wilson interval's lower
// end at most Alpha (a true rate of 3 x Alpha is caught about 9 times in 10 at 300 runs).
func TestFalseVerdictRates(t *testing.T) {
	const alpha = 0.01
	for _, seed := range []uint64{1, 2} {
		for _, tc := range []struct {
			name  string
			pg    float64
			false seqcount.Outcome
		}{
			{"gray at the floor", 0.001 + errorLimits.Floor.Abs, seqcount.Fail},
			{"gray at the margin", 0.001 + errorLimits.Margin.Abs, seqcount.Pass},
		} {
			count, _ := outcomes(seed, 1, 0.5, 0.001, tc.pg)
			lo, hi := wilson(count[tc.false], mcRuns)
			t.Logf("seed %d, %s: %d false %s in %d runs of %d steps (95%% Wilson %.4f-%.4f); outcomes %v",
				seed, tc.name, count[tc.false], tc.false, mcRuns, mcSteps, lo, hi, count)
			if lo > alpha {
				t.Errorf("seed %d, %s: false %s rate %d/%d, Wilson lower end %.4f above alpha %g", seed, tc.name, tc.false, count[tc.false], mcRuns, lo, alpha)
			}
		}
	}
}

// TestTimeToFail: errors +0.5 points (0.1% to 0.6%) at 150 req/s split 90/10, alpha split over
// the catalog's 8 SLIs, FAIL within 10 minutes (30 steps of 20 s) in at least 95% of runs (issue
// 37's target, on the point estimate as docs/verdict-eval-counts.md reads it), with two seeds;
// about 97% is measured. Until stop 47 the FAIL test read the contrasts' empirical variance, that of a
// gray at 0.6%, three times the floor's, and FAILed within 10 minutes in about half the runs.
func TestTimeToFail(t *testing.T) {
	for _, seed := range []uint64{3, 4} {
		count, steps := outcomes(seed, 8, 0.1, 0.001, 0.006)
		slices.Sort(steps)
		if len(steps) == 0 {
			t.Fatalf("seed %d: no FAIL in %d runs: %v", seed, mcRuns, count)
		}
		within := 0
		for _, n := range steps {
			if n <= 30 {
				within++
			}
		}
		median := steps[len(steps)/2]
		lo, hi := wilson(within, mcRuns)
		t.Logf("seed %d: FAIL within 10 min in %d of %d runs (95%% Wilson %.3f-%.3f), median %d steps (%.1f min), outcomes %v",
			seed, within, mcRuns, lo, hi, median, float64(median)/3, count)
		if float64(within) < 0.95*mcRuns || count[seqcount.Pass] > 0 {
			t.Errorf("seed %d: FAIL within 10 min in %d of %d runs (want >= 95%%), %d PASS (want 0)", seed, within, mcRuns, count[seqcount.Pass])
		}
	}
}

// TestFailPriorAtTheCatalogsLimits: the error SLI at the catalog's limits (FAIL beyond +0.1
// point, PASS within +0.5) and errors +0.5 points (0.1% to 0.6%) at 150 req/s split 90/10, K = 8:
// the FAIL mixture's prior is tuned to the effect from floor to margin, 0.4 points, the effect
// this gray shows. Its scale is the lambda the Poisson cumulant bound picks for that effect,
// log(1 + 0.004/0.002) = 1.1; the normal's 0.004/0.002 = 2 weighed lambdas no such gray reaches.
// Over two seeds of 1000 runs the mean steps to FAIL must be at most 14.75 and at most 33 runs per
// seed may FAIL later than 10 minutes: 14.56 and 29, 31 are measured with the watch after a PASS
// holding a quarter of the FAIL e-process (package doc, "Watching after a PASS"; 14.12 and 24, 25
// before it), 14.29 and 24, 27 with a tenth.
func TestFailPriorAtTheCatalogsLimits(t *testing.T) {
	lim := seqcount.Limits{Floor: seqcount.Bound{Abs: 0.001}, Margin: seqcount.Bound{Abs: 0.005}}
	const runs = 1000
	var sum int
	for _, seed := range []uint64{7, 8} {
		rng := rand.New(rand.NewPCG(seed, 2026))
		late := 0
		for range runs {
			r := seqcount.Test{K: 8}.Judge(seqcount.Proportion, lim, errorSteps(rng, mcSteps, 150, 0.1, 20, 0.001, 0.006))
			n := r.Steps
			if r.Outcome != seqcount.Fail {
				n = mcSteps + 1
			}
			sum += n
			if n > 30 {
				late++
			}
		}
		t.Logf("seed %d: %d of %d runs FAILed later than 10 minutes", seed, late, runs)
		if late > 33 {
			t.Errorf("seed %d: %d of %d runs FAILed later than 10 minutes, want at most 33", seed, late, runs)
		}
	}
	if mean := float64(sum) / (2 * runs); mean > 14.75 {
		t.Errorf("mean %.2f steps to FAIL, want at most 14.75", mean)
	} else {
		t.Logf("mean %.2f steps to FAIL", mean)
	}
}

// TestSkewedCountsAtTheFloor: at 20 req/s split 90/10 a 20 s step carries 40 gray requests, and at
// a 0.2% error floor about one error in twelve steps; stable's 360 requests carry one in three.
// Such counts are far from normal: gray's upper tail is heavier, and stable's rate, which sets
// the boundary, is often read low. The FAIL test must still spend at most its share of alpha,
// alpha/K with the catalog's K = 8: the 95% Wilson interval's lower end at most 0.125%, over 2000
// runs of 180 steps (an hour) per seed (0 to 2 are measured).
func TestSkewedCountsAtTheFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("4000 judged runs of 180 steps; run without -short")
	}
	const runs, steps, alpha, k = 2000, 180, 0.01, 8
	for _, seed := range []uint64{5, 6} {
		rng := rand.New(rand.NewPCG(seed, 2026))
		fails := 0
		for range runs {
			r := seqcount.Test{Alpha: alpha, K: k}.Judge(seqcount.Proportion, errorLimits, errorSteps(rng, steps, 20, 0.1, 20, 0.001, 0.002))
			if r.Outcome == seqcount.Fail {
				fails++
			}
		}
		lo, hi := wilson(fails, runs)
		t.Logf("seed %d: %d false FAIL in %d runs (95%% Wilson %.4f-%.4f)", seed, fails, runs, lo, hi)
		if lo > alpha/k {
			t.Errorf("seed %d: false FAIL %d/%d, Wilson lower end %.4f above alpha/K %g", seed, fails, runs, lo, alpha/k)
		}
	}
}

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

// outcomes judges runs of simulated error counts and returns the outcome counts and the steps to
// each decision.
func outcomes(seed uint64, grayShare, ps, pg float64) (count map[seqcount.Outcome]int, steps []int) {
	rng := rand.New(rand.NewPCG(seed, 2026))
	count = map[seqcount.Outcome]int{}
	for range mcRuns {
		r := seqcount.Test{}.Judge(seqcount.Proportion, errorLimits, errorSteps(rng, mcSteps, 150, grayShare, 20, ps, pg))
		count[r.Outcome]++
		if r.Outcome != seqcount.Inconclusive {
			steps = append(steps, r.Steps)
		}
	}
	return count, steps
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
			count, _ := outcomes(seed, 0.5, 0.001, tc.pg)
			lo, hi := wilson(count[tc.false], mcRuns)
			t.Logf("seed %d, %s: %d false %s in %d runs of %d steps (95%% Wilson %.4f-%.4f); outcomes %v",
				seed, tc.name, count[tc.false], tc.false, mcRuns, mcSteps, lo, hi, count)
			if lo > alpha {
				t.Errorf("seed %d, %s: false %s rate %d/%d, Wilson lower end %.4f above alpha %g", seed, tc.name, tc.false, count[tc.false], mcRuns, lo, alpha)
			}
		}
	}
}

// TestTimeToFail: errors +0.5 points (0.1% to 0.6%) at 150 req/s split 90/10 fail in a median
// of at most 6 minutes (18 steps of 20 s; about 5 is measured), in nearly every run, with two seeds.
func TestTimeToFail(t *testing.T) {
	for _, seed := range []uint64{3, 4} {
		count, steps := outcomes(seed, 0.1, 0.001, 0.006)
		slices.Sort(steps)
		if len(steps) == 0 {
			t.Fatalf("seed %d: no decision in %d runs: %v", seed, mcRuns, count)
		}
		median := steps[len(steps)/2]
		lo, hi := wilson(count[seqcount.Fail], mcRuns)
		t.Logf("seed %d: FAIL in %d of %d runs (95%% Wilson %.3f-%.3f), median %d steps (%.1f min), outcomes %v",
			seed, count[seqcount.Fail], mcRuns, lo, hi, median, float64(median)/3, count)
		if median > 18 || hi < 0.95 || count[seqcount.Pass] > 0 {
			t.Errorf("seed %d: median %d steps (want <= 18), FAIL share Wilson upper %.3f (want >= 0.95), %d PASS (want 0)", seed, median, hi, count[seqcount.Pass])
		}
	}
}

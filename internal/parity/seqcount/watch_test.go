package seqcount_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

// TestLateRegressionFailsAfterThePass: errors at 0.1% on both tracks for 20 minutes, then
// +0.5 points on gray (to 0.6%), at 150 req/s split 90/10, alpha split over the catalog's K = 8,
// the catalog's limits (FAIL beyond +0.1 point, PASS within +0.5), an hour of 20 s steps. The
// judge PASSes at parity first (every run, within 5 minutes) and must not let that PASS stand: the
// watch FAILs every run (no PASS standing at the hour's end), over two seeds of 300 runs, at a
// median of at most 9.5 minutes after the regression's start and within 10 minutes in at least 175
// runs per seed. Measured: medians 9.0 and 9.0 minutes, 191 and 193 runs within 10 minutes (95th
// percentiles 15.3 and 14.7 minutes); before the watch, the first PASS stood in every run. The
// issue's target, 95% within 10 minutes, is not met: a FAIL from the rollout's start at this
// traffic takes a median 4.7 minutes and reaches 97% within 10 (TestTimeToFail), and a watch needs
// more evidence than that (package doc).
func TestLateRegressionFailsAfterThePass(t *testing.T) {
	lim := seqcount.Limits{Floor: seqcount.Bound{Abs: 0.001}, Margin: seqcount.Bound{Abs: 0.005}}
	const start, steps = 60, 180
	for _, seed := range []uint64{21, 22} {
		rng := rand.New(rand.NewPCG(seed, 2026))
		var within, passedFirst, standing int
		var delays []float64
		for range mcRuns {
			st := append(errorSteps(rng, start, 150, 0.1, 20, 0.001, 0.001), errorSteps(rng, steps-start, 150, 0.1, 20, 0.001, 0.006)...)
			for i := range st {
				st[i].T = t0.Add(stepsOf(i + 1))
			}
			r := seqcount.Test{K: 8}.Judge(seqcount.Proportion, lim, st)
			if !r.Passed.IsZero() && r.Passed.Before(st[start].T) {
				passedFirst++
			}
			switch r.Outcome {
			case seqcount.Fail:
				at := r.Rejected.Sub(st[start-1].T)
				delays = append(delays, at.Minutes())
				if at <= stepsOf(30) && at > 0 {
					within++
				}
			case seqcount.Pass:
				standing++
			}
		}
		slices.Sort(delays)
		if len(delays) > 0 {
			t.Logf("seed %d: minutes from the regression's start to FAIL: median %.2f, 95th percentile %.2f", seed, delays[len(delays)/2], delays[len(delays)*95/100])
		}
		lo, hi := wilson(within, mcRuns)
		if len(delays) == 0 {
			t.Fatalf("seed %d: no FAIL after the regression", seed)
		}
		t.Logf("seed %d: PASS before the regression in %d of %d runs; FAIL within 10 min of its start in %d (95%% Wilson %.3f-%.3f); PASS standing at the end in %d",
			seed, passedFirst, mcRuns, within, lo, hi, standing)
		if len(delays) < mcRuns || within < 175 || delays[len(delays)/2] > 9.5 || standing > 0 {
			t.Errorf("seed %d: %d of %d runs FAILed after the regression, %d within 10 min (want all, and >= 175 within 10 min at a median <= 9.5 min); PASS standing in %d (want 0)",
				seed, len(delays), mcRuns, within, standing)
		}
		if passedFirst < mcRuns/2 {
			t.Errorf("seed %d: only %d of %d runs PASSed before the regression: the test does not exercise the watch", seed, passedFirst, mcRuns)
		}
	}
}

// stepsOf is the length of n steps of 20 s.
func stepsOf(n int) time.Duration { return time.Duration(n) * 20 * time.Second }

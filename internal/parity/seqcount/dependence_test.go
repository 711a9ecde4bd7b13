package seqcount_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

// driftSteps simulates 150 req/s split 50/50 in 20 s steps with stable at a 1% error ratio and gray
// exactly at the floor (x1.1), each track's rate multiplied by its own exp(u_t - sd^2/2), u an
// AR(1) with coefficient phi and stationary sd sd (phi 0: independent overdispersion).
func driftSteps(rng *rand.Rand, n int, phi, sd float64) []seqcount.Step {
	steps := errorSteps(rng, n, 150, 0.5, 20, 0, 0)
	inn := sd * math.Sqrt(1-phi*phi)
	ug, us := rng.NormFloat64()*sd, rng.NormFloat64()*sd
	for i := range steps {
		ug, us = phi*ug+inn*rng.NormFloat64(), phi*us+inn*rng.NormFloat64()
		steps[i].Stable.Num = binomial(rng, 1500, 0.01*math.Exp(us-sd*sd/2))
		steps[i].Gray.Num = binomial(rng, 1500, 0.011*math.Exp(ug-sd*sd/2))
	}
	return steps
}

// TestDependence measures false FAILs at the floor under per-track noise beyond the binomial.
// Neither is held at Alpha = 1%: the empirical variance is a plug-in, low at the first looks, so
// independent overdispersion (sd 0.3 of the log rate per step) gives about 2% (11 of 600 runs),
// and per-track AR(1) drift (phi 0.5, sd 0.2), which the lag-3 inflation absorbs only in part,
// about 5% (31 of 600); see the package doc. The test holds those measured levels (Wilson lower
// ends under 3% and 8%) so that a judge that loses its empirical variance or its inflation fails.
func TestDependence(t *testing.T) {
	if testing.Short() {
		t.Skip("1200 judged runs of 90 steps; run without -short")
	}
	lim := seqcount.Limits{Floor: seqcount.Bound{Rel: 0.1}, Margin: seqcount.Bound{Rel: 0.3}}
	for _, tc := range []struct {
		name    string
		phi, sd float64
		maxLo   float64 // the Wilson lower end must not exceed this
	}{
		{"independent overdispersion", 0, 0.3, 0.03},
		{"AR(1) drift per track", 0.5, 0.2, 0.08},
	} {
		for _, seed := range []uint64{1, 2} {
			rng := rand.New(rand.NewPCG(seed, 99))
			fails := 0
			for range mcRuns {
				if (seqcount.Test{}).Judge(seqcount.Proportion, lim, driftSteps(rng, mcSteps, tc.phi, tc.sd)).Outcome == seqcount.Fail {
					fails++
				}
			}
			lo, hi := wilson(fails, mcRuns)
			t.Logf("%s, seed %d: %d false FAIL in %d runs (95%% Wilson %.4f-%.4f)", tc.name, seed, fails, mcRuns, lo, hi)
			if lo > tc.maxLo {
				t.Errorf("%s, seed %d: false FAIL %d/%d, Wilson lower end %.4f above %g", tc.name, seed, fails, mcRuns, lo, tc.maxLo)
			}
		}
	}
}

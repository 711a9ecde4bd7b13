package seqcount

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCoMovement: the gate of the conditional FAIL test reads a drift both tracks share (the
// tracks' step-to-step changes of log rate correlate) and not one each track has on its own, nor
// the binomial noise of a few events a step, nor one track's stall (its exceedance ten times for
// one step at random), which the gate must keep out of the conditional test's first 50 steps
// (eventsFailTrimEvery); fewer than five steps read 0.
func TestCoMovement(t *testing.T) {
	const runs = 400
	ar := func(rng *rand.Rand, sd float64) func() float64 {
		const phi = 0.79
		v := sd * rng.NormFloat64()
		return func() float64 {
			v = phi*v + sd*math.Sqrt(1-phi*phi)*rng.NormFloat64()
			return v
		}
	}
	for _, c := range []struct {
		name        string
		shared, own float64
		stall       bool    // gray's exceedance ten times in one step
		steps       int     // 9: 3 minutes of 20 s steps; 49: the last before a step is trimmed
		lo, hi      float64 // the share of windows at or above coMoveMin must lie in [lo, hi]
	}{
		// sd 1 of the log exceedance at a p99 bound: the count evaluation's common model (sd 0.2
		// of log latency); 90/10, 4.5 and 40 events a step. Seeds 1-3 opened 64-69%, 8-13% and
		// 11-13% of the windows; with a stall, 10-14% with no drift, under 1% (0-2 of 400) at 49
		// steps with each track's own drift or none, and 36-41% under the shared drift (a stall
		// shuts a third of the windows the drift opens).
		{"shared drift", 1.0, 0, false, 9, 0.5, 1},
		{"each track's own drift", 0, 1.0, false, 9, 0, 0.2},
		{"no drift", 0, 0, false, 9, 0, 0.2},
		{"no drift, gray stalls", 0, 0, true, 9, 0, 0.2},
		{"each track's own drift, gray stalls, 49 steps", 0, 1.0, true, 49, 0, 0.02},
		{"shared drift, gray stalls", 1.0, 0, true, 9, 0, 0.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 54))
			open := 0
			for range runs {
				sh, os, og := ar(rng, c.shared), ar(rng, c.own), ar(rng, c.own)
				stalled := -1
				if c.stall {
					stalled = rng.IntN(c.steps)
				}
				j := &judge{}
				for i := range c.steps {
					x, f := sh(), 1.0
					if i == stalled {
						f = 10
					}
					j.obs = append(j.obs, obs{
						ns: poissonish(rng, 2700*0.015*math.Exp(x+os())), rs: 2700,
						ng: poissonish(rng, 300*0.015*math.Exp(x+og())*f), rg: 300,
					})
				}
				if j.coMovement() >= coMoveMin {
					open++
				}
			}
			share := float64(open) / runs
			t.Logf("%s: co-movement at least %g in %d of %d windows of %d steps", c.name, coMoveMin, open, runs, c.steps)
			if share < c.lo || share > c.hi {
				t.Errorf("%s: %.3f of windows open the conditional FAIL test, want within [%g, %g]", c.name, share, c.lo, c.hi)
			}
		})
	}
	j := &judge{obs: make([]obs, 4)}
	if got := j.coMovement(); got != 0 {
		t.Errorf("four steps: co-movement %g, want 0", got)
	}
}

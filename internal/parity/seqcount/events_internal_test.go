package seqcount

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCoMovement: the gate of the conditional FAIL test reads a drift both tracks share (the
// tracks' step-to-step changes of log rate correlate) and not one each track has on its own, nor
// the binomial noise of a few events a step; fewer than five steps read 0.
func TestCoMovement(t *testing.T) {
	const steps, runs = 9, 400 // 3 minutes of 20 s steps
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
		lo, hi      float64 // the share of windows at or above coMoveMin must lie in [lo, hi]
	}{
		// sd 1 of the log exceedance at a p99 bound: the count evaluation's common model (sd 0.2
		// of log latency); 90/10, 4.5 and 40 events a step. Seeds 1-3 opened 64-69%, 8-13% and
		// 11-13% of the windows.
		{"shared drift", 1.0, 0, 0.5, 1},
		{"each track's own drift", 0, 1.0, 0, 0.2},
		{"no drift", 0, 0, 0, 0.2},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 54))
			open := 0
			for range runs {
				sh, os, og := ar(rng, c.shared), ar(rng, c.own), ar(rng, c.own)
				j := &judge{}
				for range steps {
					x := sh()
					j.obs = append(j.obs, obs{
						ns: poissonish(rng, 2700*0.015*math.Exp(x+os())), rs: 2700,
						ng: poissonish(rng, 300*0.015*math.Exp(x+og())), rg: 300,
					})
				}
				if j.coMovement() >= coMoveMin {
					open++
				}
			}
			share := float64(open) / runs
			t.Logf("%s: co-movement at least %g in %d of %d windows of %d steps", c.name, coMoveMin, open, runs, steps)
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

package seqcount_test

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

// t0 is the start of every simulated window.
var t0 = time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)

// binomial draws Binomial(n, p) for small n*p by geometric gaps between successes.
func binomial(rng *rand.Rand, n int, p float64) float64 {
	if p <= 0 || n <= 0 {
		return 0
	}
	if p >= 1 {
		return float64(n)
	}
	lq := math.Log1p(-p)
	k, pos := 0, 0
	for {
		pos += int(math.Floor(math.Log(1-rng.Float64())/lq)) + 1
		if pos > n {
			return float64(k)
		}
		k++
	}
}

// errorSteps simulates steps of independent binomial error counts: rps requests per second split
// with a share to gray, step seconds long, error rates ps and pg.
func errorSteps(rng *rand.Rand, n int, rps, grayShare, stepSec, ps, pg float64) []seqcount.Step {
	rg := int(math.Round(rps * grayShare * stepSec))
	rs := int(math.Round(rps * (1 - grayShare) * stepSec))
	steps := make([]seqcount.Step, n)
	for i := range steps {
		steps[i] = seqcount.Step{
			T:      t0.Add(time.Duration(float64(i+1)*stepSec) * time.Second),
			Stable: seqcount.Counts{Num: binomial(rng, rs, ps), Requests: float64(rs)},
			Gray:   seqcount.Counts{Num: binomial(rng, rg, pg), Requests: float64(rg)},
		}
	}
	return steps
}

// errorLimits is the error-ratio SLI's limits of the tests: FAIL beyond +0.1 point, PASS within
// +0.25 points.
var errorLimits = seqcount.Limits{Floor: seqcount.Bound{Abs: 0.001}, Margin: seqcount.Bound{Abs: 0.0025}}

// wilson returns the 95% Wilson interval of k successes in n.
func wilson(k, n int) (lo, hi float64) {
	const z = 1.959963984540054
	p, fn := float64(k)/float64(n), float64(n)
	c := (p + z*z/(2*fn)) / (1 + z*z/fn)
	h := z / (1 + z*z/fn) * math.Sqrt(p*(1-p)/fn+z*z/(4*fn*fn))
	return c - h, c + h
}

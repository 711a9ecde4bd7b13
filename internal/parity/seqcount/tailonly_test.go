package seqcount_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

// drawnHistogram is one pod's cumulative histogram of Poisson(perStep) requests per step whose
// latencies have the distribution function cdf, each bucket's count drawn (Poisson per bucket
// interval).
func drawnHistogram(rng *rand.Rand, pod string, steps int, perStep float64, cdf func(float64) float64) seqcount.Histogram {
	h := seqcount.Histogram{Bounds: promBounds, Buckets: make([][]seqcount.Series, len(promBounds))}
	count := seqcount.Series{Pod: pod}
	buckets := make([]seqcount.Series, len(promBounds))
	cum := make([]float64, len(promBounds)+1)
	for i := 0; i <= steps; i++ {
		ts := at(float64(i)*20 - 10)
		if i > 0 {
			prev := 0.0
			for j := range cum {
				p := 1.0
				if j < len(promBounds) {
					p = cdf(promBounds[j])
				}
				k := poisson(rng, perStep*(p-prev))
				prev = p
				for m := j; m < len(cum); m++ {
					cum[m] += k
				}
			}
		}
		count.Samples = append(count.Samples, seqcount.Sample{T: ts, V: cum[len(promBounds)]})
		for j := range promBounds {
			buckets[j].Pod = pod
			buckets[j].Samples = append(buckets[j].Samples, seqcount.Sample{T: ts, V: cum[j]})
		}
	}
	h.Count = []seqcount.Series{count}
	for j := range buckets {
		h.Buckets[j] = []seqcount.Series{buckets[j]}
	}
	return h
}

// TestTailOnlyRegressions: latencies log-normal with a 20 ms median and a 60 ms p99 (the
// evaluations' service), 150 req/s split 90/10, an hour of 20 s steps, p99 judged with the
// catalog's ratio limits (floor 1.05, margin 1.10) and K = 9, two seeds of 100 runs. A gray whose
// slowest requests alone got slower must not PASS at the end: its slowest 3% 1.4 times as slow (the
// judged bound's count barely moves, and the PASS wins the race with the tail's FAIL test in about
// 45% of runs), or its slowest 1% twice as slow. The watch after a PASS (package doc) FAILs every
// one of them: measured, 100 of 100 per seed, within 10 minutes in 90 and 92 (3% x1.4; the
// issue's 95% is not met) and 100 and 100 (1% x2); before the watch about half the 3% x1.4 runs
// PASSed. A gray at parity PASSes and never FAILs.
func TestTailOnlyRegressions(t *testing.T) {
	mu, sigma := math.Log(0.020), math.Log(3)/2.3263478740408408
	base := func(x float64) float64 { return lognormalCDF(x, mu, sigma) }
	slowest := func(share, f float64) func(float64) float64 {
		xq := math.Exp(mu + sigma*normQuantile(1-share))
		return func(x float64) float64 {
			if x < xq {
				return base(x)
			}
			return base(max(xq, x/f))
		}
	}
	const steps, runs = 180, 100
	for _, tc := range []struct {
		name   string
		gray   func(float64) float64
		parity bool // PASS is the right verdict (else FAIL)
		within int  // the fewest FAILs within 10 minutes
	}{
		{"slowest 3% x1.4", slowest(0.03, 1.4), false, 85},
		{"slowest 1% x2", slowest(0.01, 2), false, 98},
		{"parity", base, true, 0},
	} {
		for _, seed := range []uint64{1, 2} {
			rng := rand.New(rand.NewPCG(seed, 77))
			count := map[seqcount.Outcome]int{}
			within, passedFirst := 0, 0
			for range runs {
				stable, gray := drawnHistogram(rng, "s", steps, 2700, base), drawnHistogram(rng, "g", steps, 300, tc.gray)
				l, err := seqcount.LatencyTest(stable, gray, stepEdges(steps), 0.99, 1.05, 1.10)
				if err != nil {
					t.Fatal(err)
				}
				r := seqcount.Test{K: 9}.JudgeTail(seqcount.Proportion, l.Limits, nil, l.Steps, l.Tail)
				count[r.Outcome]++
				if r.Outcome == seqcount.Fail && r.Rejected.Sub(at(0)).Minutes() <= 10 {
					within++
				}
				if !r.Passed.IsZero() {
					passedFirst++
				}
			}
			t.Logf("%s, seed %d: %v; FAIL within 10 min %d of %d; a PASS before the FAIL in %d", tc.name, seed, count, within, runs, passedFirst)
			if count[seqcount.Pass] > 0 != tc.parity || count[seqcount.Fail] > 0 == tc.parity || within < tc.within {
				t.Errorf("%s, seed %d: %v, %d FAILs within 10 minutes; want %s, and at least %d FAILs within 10 minutes",
					tc.name, seed, count, within, map[bool]string{true: "no FAIL", false: "no PASS"}[tc.parity], tc.within)
			}
		}
	}
}

// normQuantile is the standard normal's p-quantile (bisection on Erfc).
func normQuantile(p float64) float64 {
	lo, hi := -10.0, 10.0
	for range 200 {
		m := (lo + hi) / 2
		if 0.5*math.Erfc(-m/math.Sqrt2) < p {
			lo = m
		} else {
			hi = m
		}
	}
	return (lo + hi) / 2
}

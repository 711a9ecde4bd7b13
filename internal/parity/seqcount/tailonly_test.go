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
	return drawnHistogramAt(rng, pod, steps, perStep, func(int) func(float64) float64 { return cdf })
}

// drawnHistogramAt is drawnHistogram with the distribution function cdfAt(i) at step i (1, 2, ...).
func drawnHistogramAt(rng *rand.Rand, pod string, steps int, perStep float64, cdfAt func(int) func(float64) float64) seqcount.Histogram {
	h := seqcount.Histogram{Bounds: promBounds, Buckets: make([][]seqcount.Series, len(promBounds))}
	count := seqcount.Series{Pod: pod}
	buckets := make([]seqcount.Series, len(promBounds))
	cum := make([]float64, len(promBounds)+1)
	for i := 0; i <= steps; i++ {
		ts := at(float64(i)*20 - 10)
		if i > 0 {
			cdf := cdfAt(i)
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

// judgeDrawnP99 judges the p99 of steps drawn steps of stable's latencies (cdf stable, 2700
// requests a step) against gray's (cdf gray, 300), K = 9, with the tail's FAIL test.
func judgeDrawnP99(t *testing.T, rng *rand.Rand, steps int, stable, gray func(float64) float64, floor, margin float64) seqcount.Result {
	t.Helper()
	hs, hg := drawnHistogram(rng, "s", steps, 2700, stable), drawnHistogram(rng, "g", steps, 300, gray)
	l, err := seqcount.LatencyTest(hs, hg, stepEdges(steps), 0.99, floor, margin)
	if err != nil {
		t.Fatal(err)
	}
	return seqcount.Test{K: 9}.JudgeTail(seqcount.Proportion, l.Limits, nil, l.Steps, l.Tail)
}

// TestTailOnlyRegressions: latencies log-normal with a 20 ms median and a 60 ms p99 (the
// evaluations' service), 150 req/s split 90/10, an hour of 20 s steps, p99 judged with the
// catalog's ratio limits (floor 1.05, margin 1.10) and K = 9, two seeds of 100 runs. A gray whose
// slowest requests alone got slower must not PASS at the end: its slowest 3% 1.4 times as slow (the
// judged bound's count barely moves, and the PASS wins the race with the tail's FAIL test in about
// 45% of runs), or its slowest 1% twice as slow. The watch after a PASS (package doc) FAILs every
// one of them: measured, 100 of 100 per seed, within 10 minutes in 90 and 92 (3% x1.4: 90.0%
// [82.6, 94.5] and 92.0% [85.0, 95.9], 95% Wilson; the 95% is not met) and 100 and 100
// (1% x2). This regression is there from the start, so the FAIL test from the start, whose tail's
// test holds tailWeight of it, finds it; the watches' design does not move these counts (the same
// with a watch started only on the newest watch's PASS). A gray at parity PASSes and never FAILs.
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
				r := judgeDrawnP99(t, rng, steps, base, tc.gray, 1.05, 1.10)
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

// TestLatencyFailAtTheFloorSwitch: the catalog's latency floor is max(5 ms, 5% of stable's
// quantile) and its margin 1.10, widened to the floor + 0.10 where the floor reaches it
// (parity.CountLimits). With a stable p99 of 52 ms the floor is 5 ms, 1.096 as a ratio, and
// the margin 1.10 is barely beyond it: the FAIL test must still see p99 +20% (every request 1.2
// times as slow) within 10 minutes, at 150 req/s 90/10 with K = 9, as it does at 48 ms (floor
// 1.104, margin 1.204) and 70 ms (floor 1.071, margin 1.10): in at least 90 of 100 runs per seed
// and p99, and a gray at parity FAILs in none. Measured: 100, 100; 98, 95; 100, 100. With the
// FAIL test's prior tuned to the margin alone (before failTarget) the 52 ms case FAILed within 10
// minutes in 2 and 1 of 100.
func TestLatencyFailAtTheFloorSwitch(t *testing.T) {
	const steps, runs = 45, 100
	for _, p99 := range []float64{0.048, 0.052, 0.070} {
		sigma := math.Log(3) / 2.3263478740408408
		mu := math.Log(p99) - 2.3263478740408408*sigma
		base := func(x float64) float64 { return lognormalCDF(x, mu, sigma) }
		slow := func(x float64) float64 { return base(x / 1.2) }
		f := math.Max(0.005, 0.05*p99) / p99
		m := 0.10
		if m <= f {
			m = f + 0.10
		}
		for _, seed := range []uint64{1, 2} {
			rng := rand.New(rand.NewPCG(seed, 78))
			within := 0
			count := map[seqcount.Outcome]int{}
			for range runs {
				r := judgeDrawnP99(t, rng, steps, base, slow, 1+f, 1+m)
				count[r.Outcome]++
				if r.Outcome == seqcount.Fail && r.Rejected.Sub(at(0)).Minutes() <= 10 {
					within++
				}
			}
			aa := 0
			for range runs / 2 {
				if r := judgeDrawnP99(t, rng, steps, base, base, 1+f, 1+m); r.Outcome == seqcount.Fail {
					aa++
				}
			}
			t.Logf("stable p99 %g ms (floor %.3f, margin %.3f), seed %d: +20%%: %v, FAIL within 10 min %d of %d; parity: %d FAIL of %d", p99*1000, 1+f, 1+m, seed, count, within, runs, aa, runs/2)
			if within < 90 || aa > 0 {
				t.Errorf("stable p99 %g ms, seed %d: p99 +20%% FAILed within 10 minutes in %d of %d (want >= 90); parity FAILed %d times (want 0)", p99*1000, seed, within, runs, aa)
			}
		}
	}
}

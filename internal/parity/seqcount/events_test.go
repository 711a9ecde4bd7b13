package seqcount_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

// poisson draws a Poisson count of mean m (small m: by inversion).
func poisson(rng *rand.Rand, m float64) float64 {
	if !(m > 0) {
		return 0
	}
	if m > 50 {
		return math.Max(0, math.Round(m+math.Sqrt(m)*rng.NormFloat64()))
	}
	k, p, u := 0.0, math.Exp(-m), rng.Float64()
	for c := p; u > c; c += p {
		k++
		p *= m / k
	}
	return k
}

// rareSteps simulates n steps of a fast service's latency exceedance at a bound far above
// stable's quantile: r requests per track per step, stable's exceedance ps and gray's ratio x
// times it, both tracks' rate times a shared e^(sd z_i) (a drift of load that the conditional
// test must cancel) and, with own > 0, each track's times its own e^(own z).
func rareSteps(rng *rand.Rand, n int, r, ps, x, sd, own float64) []seqcount.Step {
	steps := make([]seqcount.Step, n)
	for i := range steps {
		shared := math.Exp(sd * rng.NormFloat64())
		ms, mg := r*ps*shared, r*ps*x*shared
		if own > 0 {
			ms *= math.Exp(own*rng.NormFloat64() - own*own/2)
			mg *= math.Exp(own*rng.NormFloat64() - own*own/2)
		}
		steps[i] = seqcount.Step{
			T:      t0.Add(time.Duration(20*(i+1)) * time.Second),
			Stable: seqcount.Counts{Num: poisson(rng, ms), Requests: r},
			Gray:   seqcount.Counts{Num: poisson(rng, mg), Requests: r},
		}
	}
	return steps
}

// TestRareEventsPass: the demo's p99, judged at a bound where stable has a few requests in minutes
// (exceedance 1e-4, 1500 requests per track per 20 s step, 150 req/s split 50/50) and where a gray
// at the margin would exceed it 300 times as often (a floor of milliseconds on a service answering
// in one or two). The unconditional PASS test weighs each of stable's events by the margin's ratio
// and never PASSed a gray at parity in 18 steps; the test conditioned on the steps' events does,
// in most runs, whatever load drift both tracks share. The same at the demo's A/A p99 (exceedance
// 1.4% at the bound, margin 3.1 x, floor 2.9 x), where the machine's stalls slow both tracks at
// once (shared bursts, sd 0.5 per step): those must not hold the PASS, and a track's own drift (sd
// 0.3 per step, overdispersion the conditional binomial does not have) must not let a gray at the
// margin through. A PASS of a gray at the margin is false: its rate must be consistent with Alpha
// (the Wilson interval's lower end at most Alpha), over two seeds.
func TestRareEventsPass(t *testing.T) {
	const (
		alpha = 0.01
		runs  = 300
		r     = 1500
	)
	rare := seqcount.Limits{Floor: seqcount.Bound{Rel: 199}, Margin: seqcount.Bound{Rel: 299}}
	aa := seqcount.Limits{Floor: seqcount.Bound{Rel: 1.9}, Margin: seqcount.Bound{Rel: 2.1}}
	for _, tc := range []struct {
		name        string
		lim         seqcount.Limits
		ps          float64
		x, sd, own  float64
		steps       int
		minPassRate float64 // at least this share PASSes (0: none asked)
		falsePass   bool    // a PASS is false
	}{
		{"rare: parity, 6 minutes", rare, 1e-4, 1, 0, 0, 18, 0.5, false},
		{"rare: parity, 6 minutes, shared drift sd 0.5", rare, 1e-4, 1, 0.5, 0, 18, 0.5, false},
		{"rare: parity, 20 minutes", rare, 1e-4, 1, 0, 0, 60, 0.95, false},
		{"rare: at the margin", rare, 1e-4, 300, 0, 0, 60, 0, true},
		{"rare: at the margin, shared drift sd 0.5", rare, 1e-4, 300, 0.5, 0, 60, 0, true},
		{"rare: at the margin, each track's own drift sd 0.3", rare, 1e-4, 300, 0, 0.3, 60, 0, true},
		{"1.4%: parity, 3 minutes, shared bursts sd 0.5", aa, 0.014, 1, 0.5, 0, 8, 0.95, false},
		{"1.4%: at the margin, shared bursts sd 0.5", aa, 0.014, 3.1, 0.5, 0, 60, 0, true},
		{"1.4%: at the margin, each track's own drift sd 0.3", aa, 0.014, 3.1, 0, 0.3, 60, 0, true},
	} {
		for _, seed := range []uint64{1, 2} {
			rng := rand.New(rand.NewPCG(seed, 37))
			count := map[seqcount.Outcome]int{}
			for range runs {
				res := seqcount.Test{}.Judge(seqcount.Proportion, tc.lim, rareSteps(rng, tc.steps, r, tc.ps, tc.x, tc.sd, tc.own))
				count[res.Outcome]++
			}
			pass := count[seqcount.Pass]
			lo, hi := wilson(pass, runs)
			t.Logf("%s, seed %d: PASS %d of %d [%.3f, %.3f]; outcomes %v", tc.name, seed, pass, runs, lo, hi, count)
			if tc.falsePass && lo > alpha {
				t.Errorf("%s, seed %d: false PASS %d of %d, Wilson lower end %.4f above alpha %g", tc.name, seed, pass, runs, lo, alpha)
			}
			if rate := float64(pass) / runs; rate < tc.minPassRate {
				t.Errorf("%s, seed %d: PASS in %.3f of runs, want at least %g", tc.name, seed, rate, tc.minPassRate)
			}
		}
	}
}

// BenchmarkRareEventsJudge measures a Proportion judge whose PASS test conditions on the steps'
// events (the demo's p99 at 5 ms): 60 steps, one look per step, each of which sums every step's
// likelihood ratio over the eventsGrid alternatives.
func BenchmarkRareEventsJudge(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 37))
	steps := rareSteps(rng, 60, 1500, 0.014, 3, 0.5, 0) // gray between floor and margin
	lim := seqcount.Limits{Floor: seqcount.Bound{Rel: 1.9}, Margin: seqcount.Bound{Rel: 2.1}}
	test := seqcount.Test{Alpha: 1e-9} // a bar no run reaches: every step is looked at
	b.ReportAllocs()
	for b.Loop() {
		if r := test.Judge(seqcount.Proportion, lim, steps); r.Outcome != seqcount.Inconclusive {
			b.Fatalf("outcome %v, want NO DATA at alpha 1e-9", r.Outcome)
		}
	}
}

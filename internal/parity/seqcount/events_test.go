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
			checkRate(t, tc.name, seed, count, seqcount.Pass, runs, alpha, tc.minPassRate, tc.falsePass)
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

// arSteps simulates n steps of a latency exceedance at a bound near stable's p99: rs and rg
// requests per step on stable and gray (150 req/s split 90/10 at 20 s steps), stable's exceedance
// ps and gray's x times it, both tracks' rate times e^(shared drift) and each track's times e^(its
// own drift), each drift a stationary AR(1) of the log rate with the sd given and correlation phi
// from one step to the next. With stall > 0, each track stalls in a step with that chance, and a
// stall multiplies its exceedance tenfold for the step (a third of its requests three times
// slower, the count evaluation's corpus model).
func arSteps(rng *rand.Rand, n int, rs, rg, ps, x, shared, own, phi, stall float64) []seqcount.Step {
	ar := func(sd float64) func() float64 {
		v := sd * rng.NormFloat64()
		return func() float64 {
			v = phi*v + sd*math.Sqrt(1-phi*phi)*rng.NormFloat64()
			return v
		}
	}
	stalled := func() float64 {
		if stall > 0 && rng.Float64() < stall {
			return 10
		}
		return 1
	}
	sh, os, og := ar(shared), ar(own), ar(own)
	steps := make([]seqcount.Step, n)
	for i := range steps {
		c := sh()
		steps[i] = seqcount.Step{
			T:      t0.Add(time.Duration(20*(i+1)) * time.Second),
			Stable: seqcount.Counts{Num: poisson(rng, rs*ps*math.Exp(c+os())*stalled()), Requests: rs},
			Gray:   seqcount.Counts{Num: poisson(rng, rg*ps*x*math.Exp(c+og())*stalled()), Requests: rg},
		}
	}
	return steps
}

// TestRareEventsFail: a latency SLI's FAIL test mixes in the test conditioned on the steps' events
// (a pure-ratio floor) where the tracks' step changes co-move (coMovement; package doc, "Rare
// events"). Its validity: a gray at parity under a drift both tracks share or each track's own
// (AR(1) of sd 0.35 on the log exceedance, phi 0.79 per 20 s step), or at the floor with no
// drift, or at the floor at 50/50 with each track stalling in 1% of the steps (its exceedance
// ten times for the step; the count evaluation's corpus model, whose stalls made the ungated
// mixture FAIL A/A rollouts), FAILs no more often than Alpha (the Wilson interval's lower end at
// most Alpha). With own drift and stalls, the hardest case, seeds 1-10 gave 18 FAILs of 3000
// (0.6%; 15 when a step was left out from the first step on). Its power: a gray at four
// times the floor under the shared drift still FAILs within 3 minutes in most runs (96% with
// the mixture, seeds 1 and 2; 94.7% without it). The evaluation's common model, whose shared
// drift is about three times this one's on the log exceedance, is where the mixture pays
// (docs/verdict-eval-counts.md).
func TestRareEventsFail(t *testing.T) {
	const (
		alpha  = 0.01
		runs   = 300
		rs, rg = 2700, 300
		ps     = 0.015
		sd     = 0.35
		phi    = 0.79
		lead   = 90 // stable's history: 30 minutes
	)
	lim := seqcount.Limits{Floor: seqcount.Bound{Rel: 0.35}, Margin: seqcount.Bound{Rel: 0.45}}
	for _, tc := range []struct {
		name        string
		x           float64
		shared, own float64
		stall       float64
		rs, rg      float64
		steps       int
		minFailRate float64 // at least this share FAILs (0: none asked)
		falseFail   bool    // a FAIL is false
	}{
		{"four times the floor, shared drift, 3 minutes", 5.4, sd, 0, 0, rs, rg, 9, 0.9, false},
		{"parity, shared drift, 60 minutes", 1, sd, 0, 0, rs, rg, 180, 0, true},
		{"parity, each track's own drift, 60 minutes", 1, 0, sd, 0, rs, rg, 180, 0, true},
		{"at the floor, no drift, 60 minutes", 1.35, 0, 0, 0, rs, rg, 180, 0, true},
		{"at the floor, 50/50, stalls in 1% of steps, 60 minutes", 1.35, 0, 0, 0.01, 1500, 1500, 180, 0, true},
		{"at the floor, 50/50, own drift 0.26 and stalls, 60 minutes", 1.35, 0, 0.26, 0.01, 1500, 1500, 180, 0, true},
	} {
		for _, seed := range []uint64{1, 2} {
			rng := rand.New(rand.NewPCG(seed, 41))
			count := map[seqcount.Outcome]int{}
			for range runs {
				all := arSteps(rng, lead+tc.steps, tc.rs, tc.rg, ps, tc.x, tc.shared, tc.own, phi, tc.stall)
				hist := make([]seqcount.Counts, lead)
				for i := range hist {
					hist[i] = all[i].Stable
				}
				res := seqcount.Test{K: 8}.JudgeAfter(seqcount.Proportion, lim, hist, all[lead:])
				count[res.Outcome]++
			}
			checkRate(t, tc.name, seed, count, seqcount.Fail, runs, alpha, tc.minFailRate, tc.falseFail)
		}
	}
}

// checkRate logs how often outcome came out of runs (count by outcome) and fails t where a false
// outcome's 95% Wilson interval lies wholly above alpha, or the outcome's rate is below minRate.
func checkRate(t *testing.T, name string, seed uint64, count map[seqcount.Outcome]int, outcome seqcount.Outcome, runs int, alpha, minRate float64, isFalse bool) {
	t.Helper()
	k := count[outcome]
	lo, hi := wilson(k, runs)
	t.Logf("%s, seed %d: %s %d of %d [%.3f, %.3f]; outcomes %v", name, seed, outcome, k, runs, lo, hi, count)
	if isFalse && lo > alpha {
		t.Errorf("%s, seed %d: false %s %d of %d, Wilson lower end %.4f above alpha %g", name, seed, outcome, k, runs, lo, alpha)
	}
	if rate := float64(k) / float64(runs); rate < minRate {
		t.Errorf("%s, seed %d: %s in %.3f of runs, want at least %g", name, seed, outcome, rate, minRate)
	}
}

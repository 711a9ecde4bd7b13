package seqcount_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

func TestJudge(t *testing.T) {
	constant := func(n int, num, req float64) []seqcount.Step {
		steps := make([]seqcount.Step, n)
		for i := range steps {
			steps[i] = seqcount.Step{T: t0.Add(time.Duration(i+1) * 20 * time.Second),
				Stable: seqcount.Counts{Num: num, Requests: req}, Gray: seqcount.Counts{Num: num, Requests: req}}
		}
		return steps
	}
	withGarbage := func(steps []seqcount.Step, every int, c seqcount.Counts) []seqcount.Step {
		for i := every - 1; i < len(steps); i += every {
			steps[i].Gray = c
		}
		return steps
	}
	rng := func(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 37)) }
	perReq := seqcount.Limits{Floor: seqcount.Bound{Rel: 0.05}, Margin: seqcount.Bound{Rel: 0.10}}
	cases := []struct {
		name     string
		kind     seqcount.Kind
		lim      seqcount.Limits
		steps    []seqcount.Step
		want     seqcount.Outcome
		note     string // a substring the Note must hold
		maxSteps int    // the verdict within this many steps (0: no check)
	}{
		{"parity at 150 req/s passes within 30 steps", seqcount.Proportion, errorLimits,
			errorSteps(rng(1), 90, 150, 0.5, 20, 0.001, 0.001), seqcount.Pass, "PASS: e-value", 30},
		{"gray at twice the error margin fails within 15 steps", seqcount.Proportion, errorLimits,
			errorSteps(rng(2), 90, 150, 0.5, 20, 0.001, 0.001+2*0.0025), seqcount.Fail, "FAIL: e-value", 15},
		{"zero errors on both tracks at 60 req/min for 15 steps is not a PASS", seqcount.Proportion, errorLimits,
			constant(15, 0, 20), seqcount.Inconclusive, "neither e-value reached the bar", 0},
		{"a constant per-request stream is NO DATA: no variation", seqcount.PerRequest, perReq,
			constant(30, 0.5, 100), seqcount.Inconclusive, "no variation", 0},
		{"NaN gray counts are left out, noted and never a PASS", seqcount.Proportion, errorLimits,
			withGarbage(errorSteps(rng(3), 90, 150, 0.5, 20, 0.001, 0.001), 10, seqcount.Counts{Num: math.NaN(), Requests: 1500}),
			seqcount.Inconclusive, "9 with non-finite counts", 0},
		{"Inf requests are left out, noted and never a PASS", seqcount.Proportion, errorLimits,
			withGarbage(errorSteps(rng(4), 90, 150, 0.5, 20, 0.001, 0.001), 30, seqcount.Counts{Num: 1, Requests: math.Inf(1)}),
			seqcount.Inconclusive, "PASS withheld", 0},
		{"a regression is still a FAIL beside an Inf step", seqcount.Proportion, errorLimits,
			withGarbage(errorSteps(rng(5), 90, 150, 0.5, 20, 0.001, 0.01), 30, seqcount.Counts{Num: 1, Requests: math.Inf(1)}),
			seqcount.Fail, "FAIL: e-value", 0},
		{"more than a fifth of steps with Num above Requests is NO DATA", seqcount.Proportion, errorLimits,
			withGarbage(errorSteps(rng(6), 60, 150, 0.5, 20, 0.001, 0.001), 3, seqcount.Counts{Num: 20, Requests: 10}),
			seqcount.Inconclusive, "more than a fifth", 0},
		{"too few steps is NO DATA", seqcount.Proportion, errorLimits,
			errorSteps(rng(7), 5, 150, 0.5, 20, 0.001, 0.02), seqcount.Inconclusive, "fewer than MinSteps 6", 0},
		{"a margin below the floor is rejected as bad limits", seqcount.Proportion,
			seqcount.Limits{Floor: seqcount.Bound{Abs: 0.003}, Margin: seqcount.Bound{Abs: 0.001}},
			errorSteps(rng(8), 90, 150, 0.5, 20, 0.001, 0.02), seqcount.Inconclusive, "bad limits: margin", 0},
		{"an unknown kind is rejected", seqcount.Kind(9), errorLimits,
			errorSteps(rng(9), 20, 150, 0.5, 20, 0.001, 0.001), seqcount.Inconclusive, "unknown kind", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := seqcount.Test{}.Judge(tc.kind, tc.lim, tc.steps)
			if r.Outcome != tc.want || !strings.Contains(r.Note, tc.note) {
				t.Fatalf("got %s, note %q; want %s with %q", r.Outcome, r.Note, tc.want, tc.note)
			}
			if tc.maxSteps > 0 && r.Steps > tc.maxSteps {
				t.Errorf("decided after %d steps, want at most %d (note %q)", r.Steps, tc.maxSteps, r.Note)
			}
			if (r.Outcome == seqcount.Inconclusive) != r.Rejected.IsZero() {
				t.Errorf("outcome %s with Rejected %v", r.Outcome, r.Rejected)
			}
			if r.Inflation < 1 || r.Bar != 100 {
				t.Errorf("inflation %g (want >= 1), bar %g (want 100)", r.Inflation, r.Bar)
			}
		})
	}
}

func TestJudgeStopsAtTheFirstCrossing(t *testing.T) {
	steps := errorSteps(rand.New(rand.NewPCG(11, 1)), 60, 150, 0.5, 20, 0.001, 0.01)
	r := seqcount.Test{}.Judge(seqcount.Proportion, errorLimits, steps)
	if r.Outcome != seqcount.Fail {
		t.Fatalf("got %s, want FAIL: %s", r.Outcome, r.Note)
	}
	// Appending parity steps after the crossing cannot undo it.
	more := append(steps, errorSteps(rand.New(rand.NewPCG(12, 1)), 200, 150, 0.5, 20, 0.001, 0.001)...)
	r2 := seqcount.Test{}.Judge(seqcount.Proportion, errorLimits, more)
	if r2.Outcome != seqcount.Fail || !r2.Rejected.Equal(r.Rejected) || r2.Steps != r.Steps {
		t.Errorf("with later steps: %s at %v after %d steps; before: FAIL at %v after %d", r2.Outcome, r2.Rejected, r2.Steps, r.Rejected, r.Steps)
	}
	if r.Rejected != steps[r.Steps-1].T {
		t.Errorf("Rejected %v, want the crossing step's end %v", r.Rejected, steps[r.Steps-1].T)
	}
}

func TestJudgePodOffsets(t *testing.T) {
	// Stable's pods differ lastingly by sd 0.3 on the log rate; gray runs at stable's mean rate.
	rng := rand.New(rand.NewPCG(5, 5))
	offsets := []float64{math.Exp(-0.3), 1, math.Exp(0.3)}
	var steps []seqcount.Step
	for i := range 60 {
		st := seqcount.Step{T: t0.Add(time.Duration(i+1) * 20 * time.Second)}
		for p, o := range offsets {
			c := seqcount.Counts{Pod: string(rune('a' + p)), Num: binomial(rng, 1000, 0.01*o), Requests: 1000}
			st.Stable.Pods = append(st.Stable.Pods, c)
			st.Stable.Num += c.Num
			st.Stable.Requests += c.Requests
		}
		st.Gray = seqcount.Counts{Num: binomial(rng, 1000, 0.01), Requests: 1000,
			Pods: []seqcount.Counts{{Pod: "g", Num: 0, Requests: 1000}}}
		st.Gray.Pods[0].Num = st.Gray.Num
		steps = append(steps, st)
	}
	lim := seqcount.Limits{Floor: seqcount.Bound{Rel: 0.1}, Margin: seqcount.Bound{Rel: 0.5}}
	estimated := seqcount.Test{}.Judge(seqcount.Proportion, lim, steps)
	if estimated.Bar != 200 || !strings.Contains(estimated.Note, "estimated from the pods within each track") ||
		!strings.Contains(estimated.Note, "over 1 gray and 3 stable pods") {
		t.Errorf("estimated spread: bar %g, note %q; want bar 200 and the allowance noted", estimated.Bar, estimated.Note)
	}
	impossible := seqcount.Test{PodSpread: 1}.Judge(seqcount.Proportion, lim, steps)
	if impossible.Outcome == seqcount.Pass || !strings.Contains(impossible.Note, "PASS impossible") {
		t.Errorf("a spread of 1 leaves no room to pass, got %s: %q", impossible.Outcome, impossible.Note)
	}
	// An absolute margin (errors: floor +0.1 points, margin +0.25) narrowed by a small allowance is
	// still beyond the widened floor at stable's rate, though not at a rate of 1: a PASS stays
	// possible (the limits were once compared at every rate, and any allowance made it impossible).
	small := seqcount.Test{PodSpread: 0.05}.Judge(seqcount.Proportion, errorLimits, errorSteps(rng, 90, 150, 0.5, 20, 0.001, 0.001))
	if small.Outcome != seqcount.Pass || strings.Contains(small.Note, "PASS impossible") {
		t.Errorf("absolute limits, spread 0.05, gray at parity: got %s: %q; want PASS", small.Outcome, small.Note)
	}
	none := seqcount.Test{}.Judge(seqcount.Proportion, lim, errorSteps(rng, 30, 150, 0.5, 20, 0.01, 0.01))
	if none.Bar != 100 || !strings.Contains(none.Note, "no per-pod counts") {
		t.Errorf("without pods: bar %g, note %q; want 100 and the missing allowance noted", none.Bar, none.Note)
	}
}

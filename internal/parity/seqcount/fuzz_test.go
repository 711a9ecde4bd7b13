package seqcount_test

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

// floats decodes data as little-endian float64s.
func floats(data []byte) []float64 {
	out := make([]float64, 0, len(data)/8)
	for i := 0; i+8 <= len(data); i += 8 {
		out = append(out, math.Float64frombits(binary.LittleEndian.Uint64(data[i:])))
	}
	return out
}

func encode(vs ...float64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// FuzzJudge: arbitrary counts and limits never panic, never give NaN e-values or an inflation
// below 1, and never PASS when any count is not finite, with or without a tail's test.
func FuzzJudge(f *testing.F) {
	f.Add(encode(1, 100, 1, 100, 0, 100, 2, 100, 1, 100, 1, 100, 0, 100, 0, 100, 1, 100, 1, 100, 2, 100, 1, 100, 1, 100, 0, 100), uint8(1), 0.0, 0.001, 0.0, 0.0025)
	f.Add(encode(math.NaN(), 1, 0, 1, math.Inf(1), 5, 0, 0, -1, 3), uint8(2), 0.05, 0.0, 0.1, 0.0)
	f.Add(encode(5, 2, 1, 1, 0, 0), uint8(1), math.Inf(1), 0.0, 0.1, 0.0)
	// Rare events against a margin of 300 x stable's rate: the PASS test that conditions on them.
	f.Add(encode(0, 1500, 1, 1500, 1, 1500, 0, 1500, 0, 1500, 0, 1500, 0, 1500, 1, 1500, 0, 1500, 0, 1500, 1, 1500, 0, 1500, 0, 1500, 0, 1500), uint8(1), 199.0, 0.0, 299.0, 0.0)
	f.Fuzz(func(t *testing.T, data []byte, kind uint8, fRel, fAbs, mRel, mAbs float64) {
		vs := floats(data)
		var steps []seqcount.Step
		nonFinite := false
		for i := 0; i+4 <= len(vs); i += 4 {
			steps = append(steps, seqcount.Step{T: t0.Add(time.Duration(i) * time.Second),
				Stable: seqcount.Counts{Num: vs[i], Requests: vs[i+1]}, Gray: seqcount.Counts{Num: vs[i+2], Requests: vs[i+3]}})
			for _, v := range vs[i : i+4] {
				nonFinite = nonFinite || math.IsNaN(v) || math.IsInf(v, 0)
			}
		}
		lim := seqcount.Limits{Floor: seqcount.Bound{Rel: fRel, Abs: fAbs}, Margin: seqcount.Bound{Rel: mRel, Abs: mAbs}}
		// The same counts in reverse as a tail's test (JudgeTail), whose garbage must not leak
		// either.
		tail := &seqcount.TailTest{Limits: lim, Bound: 0.1}
		for i := range steps {
			tail.Steps = append(tail.Steps, steps[len(steps)-1-i])
		}
		test := seqcount.Test{MinSteps: 2}
		for _, r := range []seqcount.Result{test.Judge(seqcount.Kind(kind%3), lim, steps), test.JudgeTail(seqcount.Kind(kind%3), lim, nil, steps, tail)} {
			if nonFinite && r.Outcome == seqcount.Pass {
				t.Fatalf("PASS on non-finite counts: %s", r.Note)
			}
			if math.IsNaN(r.EFail) || math.IsNaN(r.EPass) || !(r.Inflation >= 1) || r.Note == "" {
				t.Fatalf("EFail %g EPass %g inflation %g note %q", r.EFail, r.EPass, r.Inflation, r.Note)
			}
		}
	})
}

// FuzzIncrease: arbitrary samples never panic; increases are never negative or NaN; a step's
// increase is non-zero only where a sample fell.
func FuzzIncrease(f *testing.F) {
	f.Add([]byte{0, 5, 1, 30, 0, 25, 1, 40}, encode(10, 12, 3, math.NaN()))
	f.Add([]byte{2, 200, 2, 10, 2, 100}, encode(math.Inf(1), -1, 7))
	f.Fuzz(func(t *testing.T, where []byte, values []byte) {
		vs := floats(values)
		pods := make([]seqcount.Series, 3)
		for i := 0; i+1 < len(where) && i/2 < len(vs); i += 2 {
			p := int(where[i]) % 3
			pods[p].Pod = string(rune('a' + p))
			pods[p].Samples = append(pods[p].Samples, seqcount.Sample{T: at(float64(where[i+1]) - 20), V: vs[i/2]})
		}
		edges := stepEdges(8)
		inc, ok, _ := seqcount.Increase(pods, edges)
		if len(inc) != 8 || len(ok) != 8 {
			t.Fatalf("%d increases, %d flags for 8 steps", len(inc), len(ok))
		}
		for i, v := range inc {
			if math.IsNaN(v) || v < 0 || (!ok[i] && v != 0) {
				t.Fatalf("step %d: increase %g, ok %v", i, v, ok[i])
			}
		}
	})
}

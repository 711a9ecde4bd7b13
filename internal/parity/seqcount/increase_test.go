package seqcount_test

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

// at returns t0 plus s seconds.
func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// series builds a pod's series from (seconds, value) pairs.
func series(pod string, tv ...float64) seqcount.Series {
	s := seqcount.Series{Pod: pod}
	for i := 0; i+1 < len(tv); i += 2 {
		s.Samples = append(s.Samples, seqcount.Sample{T: at(tv[i]), V: tv[i+1]})
	}
	return s
}

func TestIncrease(t *testing.T) {
	edges := []time.Time{at(0), at(20), at(40), at(60)}
	cases := []struct {
		name   string
		series []seqcount.Series
		inc    []float64
		ok     []bool
		notes  []string // substrings, one per note, in order
	}{
		{"two pods summed, each increment in the step of its later sample",
			[]seqcount.Series{series("a", 5, 10, 15, 12, 25, 20, 45, 30), series("b", 10, 100, 30, 150, 50, 175)},
			[]float64{2, 58, 35}, []bool{true, true, true}, nil},
		{"a reset counts the new value",
			[]seqcount.Series{series("a", 5, 100, 25, 110, 35, 4, 55, 9)},
			[]float64{0, 14, 5}, []bool{true, true, true}, []string{"1 counter resets"}},
		{"a pod appearing and vanishing mid-step shows only its own samples",
			[]seqcount.Series{series("old", 5, 10, 15, 20, 25, 21), series("new", 35, 50, 45, 60, 55, 75)},
			[]float64{10, 1, 25}, []bool{true, true, true}, nil},
		{"NaN, Inf and negative samples are left out and noted",
			[]seqcount.Series{series("a", 5, 10, 15, math.NaN(), 25, 30, 30, math.Inf(1), 45, -1, 50, 40)},
			[]float64{0, 20, 10}, []bool{true, true, true}, []string{"2 NaN or Inf samples left out (pods \"a\")", "1 negative samples left out"}},
		{"a step with no sample is not OK, and its increase goes to the next sample's step",
			[]seqcount.Series{series("a", 5, 10, 45, 40, 55, 41)},
			[]float64{0, 0, 31}, []bool{true, false, true}, nil},
		{"out-of-order samples are sorted and noted",
			[]seqcount.Series{series("a", 25, 20, 5, 10, 45, 30)},
			[]float64{0, 10, 10}, []bool{true, true, true}, []string{"1 series with samples out of time order, sorted"}},
		{"samples outside the edges only difference the first sample inside",
			[]seqcount.Series{series("a", -10, 0, 5, 7, 70, 100)},
			[]float64{7, 0, 0}, []bool{true, false, false}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inc, ok, notes := seqcount.Increase(tc.series, edges)
			if !slices.Equal(inc, tc.inc) || !slices.Equal(ok, tc.ok) {
				t.Errorf("inc %v ok %v, want %v %v", inc, ok, tc.inc, tc.ok)
			}
			if len(notes) != len(tc.notes) {
				t.Fatalf("notes %q, want %d", notes, len(tc.notes))
			}
			for i, n := range tc.notes {
				if !strings.Contains(notes[i], n) {
					t.Errorf("note %d %q, want %q in it", i, notes[i], n)
				}
			}
		})
	}
}

func TestIncreaseBadEdges(t *testing.T) {
	for _, edges := range [][]time.Time{nil, {at(0)}, {at(0), at(20), at(20)}, {at(20), at(0)}} {
		inc, ok, notes := seqcount.Increase([]seqcount.Series{series("a", 5, 1)}, edges)
		if inc != nil || ok != nil || len(notes) != 1 || !strings.HasPrefix(notes[0], "no steps") {
			t.Errorf("edges %v: inc %v ok %v notes %q; want no steps and one note", edges, inc, ok, notes)
		}
	}
}

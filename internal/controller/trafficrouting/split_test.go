package trafficrouting_test

import (
	"math"
	"testing"

	"github.com/poolparity/poolparity/internal/controller/trafficrouting"
	"github.com/poolparity/poolparity/internal/controller/trafficrouting/replicasplit"
)

// splitCase is a replica count and weight and the split they should give.
type splitCase struct {
	name               string
	replicas, weight   int32
	wantStable, wantGr int32
}

// runSplitCases runs split (named name in the failures) on each case.
func runSplitCases(t *testing.T, name string, split func(replicas, weight int32) (stable, gray int32), tests []splitCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, g := split(tt.replicas, tt.weight)
			if s != tt.wantStable || g != tt.wantGr {
				t.Fatalf("%s(%d, %d) = %d stable + %d gray, want %d + %d", name, tt.replicas, tt.weight, s, g, tt.wantStable, tt.wantGr)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	runSplitCases(t, "replicasplit.Split", replicasplit.Split, []splitCase{
		{"zero replicas run nothing", 0, 50, 0, 0},
		{"negative replicas run nothing", -3, 50, 0, 0},
		{"weight zero puts everything on stable", 10, 0, 10, 0},
		{"negative weight puts everything on stable", 4, -5, 4, 0},
		{"ten percent of ten is one gray pod", 10, 10, 9, 1},
		{"a quarter of ten rounds up to three gray pods", 10, 25, 7, 3},
		{"half of ten is five each", 10, 50, 5, 5},
		{"ten percent of three rounds up to one gray pod", 3, 10, 2, 1},
		{"half of three rounds up to two gray pods", 3, 50, 1, 2},
		{"one percent of a hundred is one gray pod", 100, 1, 99, 1},
		{"ninety-nine percent of a hundred keeps one stable pod", 100, 99, 1, 99},
		{"weight 100 still keeps one stable pod", 5, 100, 1, 4},
		{"a weight above 100 is treated as 100", 5, 250, 1, 4},
		{"two replicas at ten percent run one of each", 2, 10, 1, 1},
		{"one replica cannot run a canary", 1, 50, 1, 0},
		{"large replica counts do not overflow", math.MaxInt32, 50, math.MaxInt32 / 2, math.MaxInt32/2 + 1},
	})
}

// TestSplitInvariants checks the documented properties over a grid of inputs.
func TestSplitInvariants(t *testing.T) {
	for r := int32(0); r <= 50; r++ {
		for w := int32(0); w <= 100; w++ {
			s, g := replicasplit.Split(r, w)
			if s+g != r {
				t.Fatalf("Split(%d, %d) = %d + %d: the tracks must add up to the replicas", r, w, s, g)
			}
			if r >= 1 && s < 1 {
				t.Fatalf("Split(%d, %d) = %d + %d: stable must keep a pod", r, w, s, g)
			}
			if w > 0 && r >= 2 && g < 1 {
				t.Fatalf("Split(%d, %d) = %d + %d: a positive weight must run a gray pod", r, w, s, g)
			}
			if w > 0 && r >= 2 {
				if s2, g2 := replicasplit.Split(r, w+1); g2 < g || s2 > s {
					t.Fatalf("Split(%d, %d..%d): gray must not shrink as the weight grows", r, w, w+1)
				}
			}
		}
	}
}

func TestSplitByWeight(t *testing.T) {
	runSplitCases(t, "SplitByWeight", trafficrouting.SplitByWeight, []splitCase{
		{"zero replicas run nothing", 0, 50, 0, 0},
		{"weight zero puts everything on stable", 10, 0, 10, 0},
		{"ten percent of ten is one gray pod beside nine stable", 10, 10, 9, 1},
		{"a quarter of ten rounds both tracks up", 10, 25, 8, 3},
		{"half of ten is five each", 10, 50, 5, 5},
		{"one replica runs one pod on each track", 1, 10, 1, 1},
		{"two replicas at ten percent run two stable pods and one gray", 2, 10, 2, 1},
		{"four replicas at ten percent run four stable pods and one gray", 4, 10, 4, 1},
		{"a quarter of four is three stable pods and one gray", 4, 25, 3, 1},
		{"weight 100 keeps one stable pod beside every replica on gray", 5, 100, 1, 5},
		{"a weight above 100 is treated as 100", 5, 250, 1, 5},
		{"large replica counts do not overflow", math.MaxInt32, 100, 1, math.MaxInt32},
	})
}

// TestSplitByWeightInvariants checks that each track carries its weight at the density of the
// replicas, with at most one pod over them, over a grid of inputs.
func TestSplitByWeightInvariants(t *testing.T) {
	for r := int32(1); r <= 50; r++ {
		for w := int32(1); w <= 100; w++ {
			s, g := trafficrouting.SplitByWeight(r, w)
			if s < 1 || g < 1 {
				t.Fatalf("SplitByWeight(%d, %d) = %d + %d: both tracks must run a pod during a rollout", r, w, s, g)
			}
			if 100*int64(g) < int64(r)*int64(w) || 100*int64(s) < int64(r)*int64(100-w) {
				t.Fatalf("SplitByWeight(%d, %d) = %d + %d: a track has fewer pods than its weight of the replicas", r, w, s, g)
			}
			if s+g > max(r+1, 2) {
				t.Fatalf("SplitByWeight(%d, %d) = %d + %d: more than one pod over the replicas", r, w, s, g)
			}
		}
	}
}

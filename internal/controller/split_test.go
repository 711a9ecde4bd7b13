package controller

import (
	"math"
	"testing"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name               string
		replicas, weight   int32
		wantStable, wantGr int32
	}{
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, g := Split(tt.replicas, tt.weight)
			if s != tt.wantStable || g != tt.wantGr {
				t.Fatalf("Split(%d, %d) = %d stable + %d gray, want %d + %d", tt.replicas, tt.weight, s, g, tt.wantStable, tt.wantGr)
			}
		})
	}
}

// TestSplitInvariants checks the documented properties over a grid of inputs.
func TestSplitInvariants(t *testing.T) {
	for r := int32(0); r <= 50; r++ {
		for w := int32(0); w <= 100; w++ {
			s, g := Split(r, w)
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
				if s2, g2 := Split(r, w+1); g2 < g || s2 > s {
					t.Fatalf("Split(%d, %d..%d): gray must not shrink as the weight grows", r, w, w+1)
				}
			}
		}
	}
}

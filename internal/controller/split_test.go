package controller

import (
	"math"
	"testing"

	"github.com/poolparity/poolparity/internal/controller/trafficrouting/replicasplit"
)

// TestReplicaShare holds the share a replica split really gives against the weight asked:
// with few replicas the ceiling and the minimums move it far from the weight.
func TestReplicaShare(t *testing.T) {
	tests := []struct {
		name             string
		replicas, weight int32
		baseline         int32
		want             string
	}{
		{"weight 10 on 2 replicas gives gray half the pods", 2, 10, 0, "50"},
		{"weight 10 on 10 replicas gives what was asked", 10, 10, 0, "10"},
		{"weight 25 on 10 replicas rounds up to 30", 10, 25, 0, "30"},
		{"weight 10 on 3 replicas is a third", 3, 10, 0, "33.3"},
		{"weight 50 on 17 replicas is 9 of 17", 17, 50, 0, "52.9"},
		{"weight 100 keeps a stable pod", 5, 100, 0, "80"},
		{"a fresh baseline as large as gray counts in the total", 10, 10, 1, "9.1"},
		{"weight 0 is no share", 4, 0, 0, "0"},
		{"one replica cannot give gray a pod", 1, 50, 0, "0"},
		{"no pod desired is unknown", 0, 50, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stable, gray := replicasplit.Split(tt.replicas, tt.weight)
			if got := percentText(ReplicaShare(stable, gray, tt.baseline)); got != tt.want {
				t.Errorf("share of %d + %d (+ %d baseline) = %q, want %q", stable, gray, tt.baseline, got, tt.want)
			}
		})
	}
}

func TestRequestShare(t *testing.T) {
	tests := []struct {
		name  string
		rates map[string][]float64
		want  string
	}{
		{"equal rates are half", map[string][]float64{"false": {20}, "true": {20}}, "50"},
		{"a tenth of the requests", map[string][]float64{"false": {90}, "true": {10}}, "10"},
		{"the fresh baseline's requests count in the total", map[string][]float64{"false": {80}, "true": {10}, "baseline": {10}}, "10"},
		{"a silent stable track leaves gray everything", map[string][]float64{"false": {0}, "true": {5}}, "100"},
		{"a gray track at zero is no share", map[string][]float64{"false": {5}, "true": {0}}, "0"},
		{"a missing stable track is unknown", map[string][]float64{"true": {3}}, ""},
		{"a missing gray track is unknown", map[string][]float64{"false": {20}}, ""},
		{"no traffic at all is unknown", map[string][]float64{"false": {0}, "true": {0}}, ""},
		{"two series on a track are unknown", map[string][]float64{"false": {20, 20}, "true": {20}}, ""},
		{"a NaN rate is unknown", map[string][]float64{"false": {math.NaN()}, "true": {20}}, ""},
		{"an infinite rate is unknown", map[string][]float64{"false": {math.Inf(1)}, "true": {20}}, ""},
		{"a negative rate is unknown", map[string][]float64{"false": {-1}, "true": {20}}, ""},
		{"no series is unknown", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentText(RequestShare(tt.rates)); got != tt.want {
				t.Errorf("RequestShare(%v) = %q, want %q", tt.rates, got, tt.want)
			}
		})
	}
}

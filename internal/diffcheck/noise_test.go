package diffcheck_test

import (
	"testing"

	"github.com/poolparity/poolparity/internal/diffcheck"
)

func TestLearn(t *testing.T) {
	ts := diffcheck.Diff{Path: "$.items[0].ts", Kind: diffcheck.KindValue}
	ts2 := diffcheck.Diff{Path: "$.items[7].ts", Kind: diffcheck.KindValue}
	id := diffcheck.Diff{Path: "$.id", Kind: diffcheck.KindValue}
	var samples []diffcheck.Sample
	for i := range 10 {
		s := diffcheck.Sample{Endpoint: "GET /items"}
		if i < 2 { // 2 of 10: at the threshold
			s.Diffs = append(s.Diffs, ts, ts2)
		}
		if i == 0 { // 1 of 10: under it
			s.Diffs = append(s.Diffs, id)
		}
		samples = append(samples, s)
	}
	// One sample of another endpoint, which differs at $.id: 1 of 1.
	samples = append(samples, diffcheck.Sample{Endpoint: "GET /report", Diffs: []diffcheck.Diff{id}})

	n := diffcheck.Learn(samples, 0)
	tests := []struct {
		endpoint string
		d        diffcheck.Diff
		want     bool
	}{
		{"GET /items", diffcheck.Diff{Path: "$.items[42].ts"}, true},
		{"GET /items", id, false},
		{"GET /report", id, true},
		{"GET /report", ts, false},
		{"GET /other", id, false},
	}
	for _, tt := range tests {
		if got := n.Ignores(tt.endpoint, tt.d); got != tt.want {
			t.Errorf("Ignores(%s, %s) = %v, want %v", tt.endpoint, tt.d.Path, got, tt.want)
		}
	}
	p := n.Paths()
	if len(p) != 2 || p[0].Endpoint != "GET /report" || p[0].Share != 1 || p[1].Pattern != "$.items[*].ts" || p[1].Share != 0.2 || p[1].Samples != 10 {
		t.Errorf("Paths() = %+v", p)
	}
	if diffcheck.Learn(samples, 0.5).Ignores("GET /items", ts) {
		t.Error("a path in 20% of the samples is noise at a threshold of 50%")
	}
	var zero diffcheck.Noise
	if zero.Ignores("GET /report", id) || len(zero.Paths()) != 0 {
		t.Error("the zero Noise ignores something")
	}
}

package parity

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/parity/promread"
)

func rawSeries(id, le string, t0 time.Time, vals ...float64) promread.RawSeries {
	rs := promread.RawSeries{ID: id, Le: le}
	for i, v := range vals {
		rs.Points = append(rs.Points, promread.Point{T: t0.Add(time.Duration(i) * 20 * time.Second), V: v})
	}
	return rs
}

// TestHistogramKeysLeByValue: every spelling of a bound is the same bucket,
// so Prometheus 3's le="1.0" is the bound 1 with its samples.
func TestHistogramKeysLeByValue(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	for _, spelling := range [][3]string{{"0.5", "1", "10"}, {"0.5", "1.0", "10.0"}, {"5e-01", "1e0", "1e+01"}} {
		t.Run(spelling[1], func(t *testing.T) {
			h, err := histogram([]promread.RawSeries{
				rawSeries(`pod="a"`, spelling[2], t0, 0, 9),
				rawSeries(`pod="a"`, spelling[0], t0, 0, 4),
				rawSeries(`pod="a"`, spelling[1], t0, 0, 7),
				rawSeries(`pod="a"`, "+Inf", t0, 0, 10),
			})
			if err != nil {
				t.Fatal(err)
			}
			want := []float64{0.5, 1, 10}
			if len(h.Bounds) != len(want) || len(h.Buckets) != len(want) || len(h.Count) != 1 {
				t.Fatalf("bounds %v with %d buckets and %d count series, want %v", h.Bounds, len(h.Buckets), len(h.Count), want)
			}
			for j, b := range want {
				if h.Bounds[j] != b || len(h.Buckets[j]) != 1 || h.Buckets[j][0].Samples[1].V != []float64{4, 7, 9}[j] {
					t.Errorf("bucket %d: bound %g with %+v, want %g", j, h.Bounds[j], h.Buckets[j], b)
				}
			}
		})
	}
}

func TestCountDefects(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	s := func(vals ...float64) promread.RawSeries { return rawSeries(`pod="a"`, "", t0, vals...) }
	tests := []struct {
		name string
		set  countSet
		want string // "" for no defect
	}{
		{name: "clean counters have no defect", set: countSet{reqs: []promread.RawSeries{s(0, 100, 200, 300)}, num: []promread.RawSeries{s(0, 1, 2, 2)}, part: true}},
		{name: "a restart of the whole pod is no defect", set: countSet{reqs: []promread.RawSeries{s(0, 100, 200, 40, 140)}, num: []promread.RawSeries{s(0, 10, 20, 3, 13)}}},
		{name: "a dip is not a restart", set: countSet{reqs: []promread.RawSeries{s(0, 100, 200, 194, 300)}}, want: "dip read as a reset"},
		{name: "a numerator falling alone", set: countSet{reqs: []promread.RawSeries{s(0, 100, 200, 300)}, num: []promread.RawSeries{s(0, 10, 20, 3, 13)}}, want: "falling while the pod's requests go on"},
		{name: "requests resetting alone", set: countSet{reqs: []promread.RawSeries{s(0, 100, 200, 40, 140)}, num: []promread.RawSeries{s(0, 10, 20, 30, 40)}}, want: "resetting alone"},
		{name: "5xx above the requests", set: countSet{reqs: []promread.RawSeries{s(0, 100, 200)}, num: []promread.RawSeries{s(0, 100, 260)}, part: true}, want: "above the requests"},
		{name: "5xx within the scrape's slack", set: countSet{reqs: []promread.RawSeries{s(0, 100, 200)}, num: []promread.RawSeries{s(0, 100, 202)}, part: true}},
		{name: "a repeated timestamp", set: countSet{reqs: []promread.RawSeries{{ID: "a", Points: []promread.Point{{T: t0, V: 1}, {T: t0, V: 1}}}}}, want: "repeated at one timestamp"},
		{name: "an infinite sample", set: countSet{reqs: []promread.RawSeries{s(0, math.Inf(1))}}, want: "NaN, infinite or negative"},
		{name: "two pods with one history", set: countSet{reqs: []promread.RawSeries{s(0, 100, 200), rawSeries(`pod="b"`, "", t0, 0, 100, 200)}}, want: "identical under two pods"},
		{name: "two pods with flat histories are no copy", set: countSet{reqs: []promread.RawSeries{s(0, 0, 0), rawSeries(`pod="b"`, "", t0, 0, 0, 0)}}},
		{
			name: "buckets rising with le and +Inf counting the requests",
			set: countSet{reqs: []promread.RawSeries{s(0, 100)}, part: true, buckets: true, num: []promread.RawSeries{
				rawSeries(`pod="a"`, "0.1", t0, 0, 50), rawSeries(`pod="a"`, "1.0", t0, 0, 90), rawSeries(`pod="a"`, "+Inf", t0, 0, 99),
			}},
		},
		{
			name: "a bucket above the next one up",
			set: countSet{reqs: []promread.RawSeries{s(0, 100)}, part: true, buckets: true, num: []promread.RawSeries{
				rawSeries(`pod="a"`, "0.1", t0, 0, 95), rawSeries(`pod="a"`, "1.0", t0, 0, 90), rawSeries(`pod="a"`, "+Inf", t0, 0, 100),
			}},
			want: "falling as le rises",
		},
		{
			name: "a +Inf bucket below the requests",
			set: countSet{reqs: []promread.RawSeries{s(0, 1000)}, part: true, buckets: true, num: []promread.RawSeries{
				rawSeries(`pod="a"`, "0.1", t0, 0, 500), rawSeries(`pod="a"`, "+Inf", t0, 0, 900),
			}},
			want: "+Inf buckets not counting the requests",
		},
		{
			name: "a bucket without a bound",
			set:  countSet{reqs: []promread.RawSeries{s(0, 1)}, buckets: true, num: []promread.RawSeries{rawSeries(`pod="a"`, "fast", t0, 0, 1)}},
			want: "buckets without a bound",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.set.track = "gray"
			got := countDefects(tt.set)
			switch {
			case tt.want == "" && got != "":
				t.Errorf("defects %q, want none", got)
			case tt.want != "" && !containsAll(got, tt.want, "gray"):
				t.Errorf("defects %q, want one naming %q", got, tt.want)
			}
		})
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

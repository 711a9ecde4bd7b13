package parity

import (
	"math"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/catalog"
)

func TestFirstBucketWarnings(t *testing.T) {
	p95, _ := catalog.Default().Get(catalog.LatencyP95)
	v := func(f float64) *float64 { return &f }
	tests := []struct {
		name  string
		vals  [2]*float64
		bound float64
		want  []string // substrings, one per warning, in order
	}{
		{"the project's 1 ms first bucket under a 4 ms p95 warns of nothing", [2]*float64{v(0.004), v(0.0041)}, 0.001, nil},
		{"otelhttp's 5 ms first bucket under the 5 ms floor warns of the floor", [2]*float64{v(0.012), v(0.013)}, 0.005, []string{"the latency p95 floor 5.00ms is not above the first bucket bound of b (le=0.005)"}},
		{"a gray p95 inside the first bucket warns, naming the track", [2]*float64{v(0.0015), v(0.0008)}, 0.001, []string{"latency p95 sits in the first bucket of b (le=0.001: gray 800µs): a regression under 1.00ms is invisible"}},
		{"a row without values warns only of the floor", [2]*float64{nil, nil}, 0.01, []string{"floor 5.00ms is not above"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := firstBucketWarnings(p95, tt.vals, "b", tt.bound)
			if len(got) != len(tt.want) {
				t.Fatalf("warnings %q, want %d", got, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %q lacks %q", got[i], w)
				}
			}
		})
	}
}

func TestPoolModeNote(t *testing.T) {
	e := evaluation{opts: Options{StablePoolMode: "unpooled", GrayPoolMode: "pooled"}}
	tests := []struct {
		name string
		e    evaluation
		ti   TrackInfo
		want string // "" for no note
	}{
		{"the expected mode is no note", e, TrackInfo{Track: "gray", PoolModes: []string{"pooled"}, Instances: 1}, ""},
		{"nothing expected is no note", evaluation{}, TrackInfo{Track: "gray", PoolModes: []string{"unpooled"}, Instances: 1}, ""},
		{"another mode is named", e, TrackInfo{Track: "stable", PoolModes: []string{"pooled"}, Instances: 1}, "the stable track carries pool_mode pooled, expected unpooled"},
		{"no pool_mode at all is named", e, TrackInfo{Track: "gray", Instances: 1}, "no series of the gray track carries pool_mode, expected pooled"},
		{"two modes are named even when none is expected", evaluation{}, TrackInfo{Track: "gray", PoolModes: []string{"pooled", "unpooled"}, Instances: 2},
			"the gray track carries pool_mode pooled and unpooled (2 instances)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.e.poolModeNote(tt.ti)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("note %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMissingSeries(t *testing.T) {
	has := map[string]map[string]bool{
		"a":                   {"false": true, "true": true},
		"b":                   {"false": true},
		"syncpool_gets_total": {"true": true},
	}
	readers := []reader{
		{name: "alert X", raw: []string{"a", "b", "c", "syncpool_misses_total"}},
		{name: `the "y" row`, raw: []string{"c"}},
		{name: "alert Z", grayOnly: true, raw: []string{"b"}},
	}
	got := missingSeries(readers, has, "false")
	want := []string{
		"the gray track does not export b, which alert X and alert Z read: blind to the gray's",
		`neither track exports c, which alert X and the "y" row read`,
		"the gray track does not export syncpool_misses_total, which alert X reads",
	}
	if len(got) != len(want) {
		t.Fatalf("blind spots %q, want %d", got, len(want))
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("blind spot %q lacks %q", got[i], w)
		}
	}
}

// TestSummaryOverflowedEValue: a count test's e-value beyond a float64 reads "over 1e308" in the
// row's summary, not "+Inf".
func TestSummaryOverflowedEValue(t *testing.T) {
	got := TestResult{Counts: true, E: 0.5, EPass: math.Inf(1), Bar: 1600, NGray: 9}.Summary()
	if want := "e=0.5 (FAIL), over 1e308 (PASS), bar 1.6e+03, 9 steps"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
}

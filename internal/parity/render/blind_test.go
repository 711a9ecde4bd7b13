package render_test

import (
	"io"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/render"
)

// TestTracksAndBlindSpotsAreWritten: every render of a report shows each track's pool_mode and
// instances and every blind spot.
func TestTracksAndBlindSpotsAreWritten(t *testing.T) {
	r := parity.Report{Title: "t", Verdict: parity.Pass, Reasons: []string{"all rows pass"},
		Tracks: []parity.TrackInfo{
			{Track: "stable", GrayStatus: "false", PoolModes: []string{"unpooled"}, Instances: 1},
			{Track: "gray", GrayStatus: "true", PoolModes: []string{"pooled", "unpooled"}, Instances: 2},
		},
		BlindSpots: []string{"neither track exports go_gc_heap_live_bytes, which alert PoolParityLiveHeapRegression reads"},
	}
	tests := []struct {
		name   string
		render func(io.Writer, parity.Report) error
		want   []string
	}{
		{"text", render.Text, []string{"  tracks: stable pool_mode unpooled, 1 instance; gray pool_mode pooled+unpooled, 2 instances\n",
			"  blind spot: neither track exports go_gc_heap_live_bytes, which alert PoolParityLiveHeapRegression reads\n"}},
		{"HTML", render.HTML, []string{"Tracks: stable pool_mode unpooled, 1 instance; gray pool_mode pooled&#43;unpooled, 2 instances",
			"<b>Blind spot:</b> neither track exports go_gc_heap_live_bytes"}},
		{"JSON", render.JSON, []string{`"tracks": [`, `"pool_modes": [`, `"instances": 2`, `"blind_spots": [`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := tt.render(&b, r); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("%s report lacks %q:\n%s", tt.name, w, b.String())
				}
			}
		})
	}
}

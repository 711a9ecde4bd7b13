package instrument_test

import (
	"strings"
	"testing"

	"github.com/poolparity/poolparity/instrument"
)

func TestParseTrack(t *testing.T) {
	tests := []struct {
		name             string
		grayStatus, mode string
		want             instrument.Track
		err              string
	}{
		{"the gray track", "true", "pooled", instrument.Track{GrayStatus: "true", PoolMode: "pooled"}, ""},
		{"a boolean in another spelling", "FALSE", "unpooled", instrument.Track{GrayStatus: "false", PoolMode: "unpooled"}, ""},
		{"the fresh baseline", "baseline", "unpooled", instrument.Track{GrayStatus: "baseline", PoolMode: "unpooled"}, ""},
		{"a build that pools differently", "1", "misuse-reset", instrument.Track{GrayStatus: "true", PoolMode: "misuse-reset"}, ""},
		{"a gray status that is no boolean", "canary", "pooled", instrument.Track{}, `gray status "canary"`},
		{"an empty pool mode", "true", "", instrument.Track{}, `pool mode ""`},
		{"a pool mode with capitals", "true", "Pooled", instrument.Track{}, `pool mode "Pooled"`},
		{"a pool mode longer than a label value", "true", strings.Repeat("p", 64), instrument.Track{}, "pool mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := instrument.ParseTrack(tt.grayStatus, tt.mode)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseTrack = %+v, %v; want an error containing %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseTrack = %+v, %v; want %+v", got, err, tt.want)
			}
			if l := got.Labels(); l[instrument.LabelGrayStatus] != tt.want.GrayStatus || l[instrument.LabelPoolMode] != tt.want.PoolMode || len(l) != 2 {
				t.Errorf("Labels() = %v", l)
			}
		})
	}
}

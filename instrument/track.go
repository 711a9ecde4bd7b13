package instrument

import (
	"fmt"
	"strconv"
)

// The track labels. Every series a poolparity-judged service exports carries
// them: gray_status tells the gray (canary) track from the stable one (and
// from a PoolCanary's fresh baseline), pool_mode says whether the process
// pools. The recording rules compare tracks by gray_status and sum
// pool_mode away.
const (
	LabelGrayStatus = "gray_status"
	LabelPoolMode   = "pool_mode"
)

// The gray_status values: the gray track, the stable track, and the fresh
// baseline (the stable build started with the gray track, judged in its
// place).
const (
	GrayStatusGray     = "true"
	GrayStatusStable   = "false"
	GrayStatusBaseline = "baseline"
)

// The pool_mode values.
const (
	PoolModePooled   = "pooled"
	PoolModeUnpooled = "unpooled"
)

// Track is the identity of one process: its gray_status and pool_mode
// label values. A Track is a plain value.
type Track struct {
	GrayStatus string
	PoolMode   string
}

// ParseGrayStatus returns the gray_status value s names: "baseline", or a
// boolean in any spelling strconv.ParseBool accepts ("1", "t", "TRUE"...),
// normalised to "true" or "false".
func ParseGrayStatus(s string) (string, error) {
	if s == GrayStatusBaseline {
		return s, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return "", fmt.Errorf("gray status %q: want true, false or baseline", s)
	}
	return strconv.FormatBool(b), nil
}

// ParseTrack returns the Track of a gray_status (as ParseGrayStatus reads
// it) and a pool_mode, the two values a process usually reads from its
// environment (in Kubernetes, from its pod's labels through the Downward
// API). The pool mode is usually PoolModePooled or PoolModeUnpooled; any
// other name of lower-case letters, digits and dashes (at most 63, a
// Kubernetes label value) is accepted for builds that pool differently,
// such as a deliberate misuse under test. One process has one value, so
// the label stays bounded.
func ParseTrack(grayStatus, poolMode string) (Track, error) {
	gs, err := ParseGrayStatus(grayStatus)
	if err != nil {
		return Track{}, err
	}
	if !validPoolMode(poolMode) {
		return Track{}, fmt.Errorf("pool mode %q: want %s, %s or another name of at most 63 lower-case letters, digits and dashes", poolMode, PoolModePooled, PoolModeUnpooled)
	}
	return Track{GrayStatus: gs, PoolMode: poolMode}, nil
}

func validPoolMode(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// Labels returns the track's labels as a map, for an exporter's constant
// labels or attributes.
func (t Track) Labels() map[string]string {
	return map[string]string{LabelGrayStatus: t.GrayStatus, LabelPoolMode: t.PoolMode}
}

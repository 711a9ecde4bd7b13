package controller

import (
	"math"
	"strconv"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
)

// ReplicaShare is the gray track's share of the desired pods in percent: gray / (stable + gray
// + baseline), the share of requests a Service that spreads them evenly over the pods of every
// track gives the gray track. ok is false when no pod is desired.
func ReplicaShare(stable, gray, baseline int32) (share float64, ok bool) {
	total := int64(stable) + int64(gray) + int64(baseline)
	if total <= 0 || gray < 0 || stable < 0 || baseline < 0 {
		return 0, false
	}
	return 100 * float64(gray) / float64(total), true
}

// RequestShare is the gray track's share of the requests in percent, from each track's
// request rates keyed by gray_status ("true", "false", "baseline"): gray's rate over the
// sum of every track's. ok is false when it cannot be told honestly: the gray or the stable
// track has no series (a track that is not scraped would make the share look larger or
// smaller than it is), a track has more than one (the selector matches more than one service, whose
// rates would mix), a rate is negative, NaN or infinite, or no track served a request.
func RequestShare(rates map[string][]float64) (share float64, ok bool) {
	if len(rates[grayStatus(v1alpha1.TrackGray)]) == 0 || len(rates[grayStatus(v1alpha1.TrackStable)]) == 0 {
		return 0, false
	}
	total := 0.0
	for _, rs := range rates {
		if len(rs) != 1 {
			return 0, false
		}
		if r := rs[0]; r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
			return 0, false
		}
		total += rs[0]
	}
	if total <= 0 {
		return 0, false
	}
	return 100 * rates[grayStatus(v1alpha1.TrackGray)][0] / total, true
}

// percentText renders a share for the status: percent with at most one decimal ("33.3",
// "10", "0"), or "" when it is unknown.
func percentText(share float64, ok bool) string {
	if !ok {
		return ""
	}
	return strconv.FormatFloat(math.Round(share*10)/10, 'f', -1, 64)
}

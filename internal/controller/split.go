package controller

import (
	"math"
	"strconv"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
)

// Split divides replicas between the stable and gray tracks for a gray weight in percent.
//
//   - gray = ceil(replicas * weight / 100) when weight > 0, so any positive weight gets the
//     gray track at least one pod (a 10% step on 3 replicas runs 1 gray pod, not 0);
//   - stable gets the rest, but never fewer than 1 while replicas >= 1: the gray track is
//     judged against a stable baseline running at the same time, so the last pod always
//     stays on stable and a weight of 100 still leaves one stable pod;
//   - so replicas == 1 cannot run a canary: it stays 1 stable + 0 gray and the analysis
//     holds on NoData. Use replicas (or an HPA's minReplicas) of 2 or more;
//   - replicas <= 0 gives 0 + 0 and weight <= 0 gives everything to stable.
//
// After a promotion or a rollback the weight is 0, so every replica runs on the stable track
// (with the gray pool mode after a promotion). stable + gray always equals max(replicas, 0).
func Split(replicas, weight int32) (stable, gray int32) {
	if replicas <= 0 {
		return 0, 0
	}
	if weight <= 0 {
		return replicas, 0
	}
	if weight > 100 {
		weight = 100
	}
	// int64: replicas * weight overflows int32 above ~21 million replicas.
	g := (int64(replicas)*int64(weight) + 99) / 100
	if g > int64(replicas)-1 {
		g = int64(replicas) - 1
	}
	return replicas - int32(g), int32(g)
}

// SplitRouted sizes the tracks for a gray weight in percent when a route (spec.trafficRouting)
// splits the traffic by weight: the replica counts no longer decide the share, so each track
// gets enough pods to carry its part of the traffic at the density of replicas pods for all of it.
//
//   - while weight > 0, gray = max(1, ceil(replicas * weight / 100)) and
//     stable = max(1, ceil(replicas * (100 - weight) / 100)): each track carries its weight,
//     and the stable baseline keeps one pod even at weight 100 (the route sends it nothing
//     then, but the gray track is judged against it). Rounding both up can give the tracks
//     one pod more than replicas (weight 25 of 10: 8 + 3), and a single replica runs 1 + 1;
//   - replicas <= 0 gives 0 + 0 and weight <= 0 (a promotion, a rollback) gives every replica
//     to stable, as Split does.
func SplitRouted(replicas, weight int32) (stable, gray int32) {
	if replicas <= 0 {
		return 0, 0
	}
	if weight <= 0 {
		return replicas, 0
	}
	weight = min(weight, 100)
	carry := func(w int32) int32 {
		// int64: replicas * weight overflows int32 above ~21 million replicas.
		return int32(max(1, (int64(replicas)*int64(w)+99)/100))
	}
	return carry(100 - weight), carry(weight)
}

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

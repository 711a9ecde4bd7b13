package controller

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

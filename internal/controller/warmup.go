package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
)

// CacheByObject narrows the manager's cache for the objects the reconciler lists: the warm-up
// reads only the pods of a canary's tracks, so only pods with the track label are cached and
// watched, not every pod of the cluster. Pass it as cache.Options.ByObject.
func CacheByObject() (map[client.Object]cache.ByObject, error) {
	withTrack, err := labels.Parse(v1alpha1.LabelTrack) // the label exists, whatever its value
	if err != nil {
		return nil, fmt.Errorf("the track label selector: %w", err)
	}
	return map[client.Object]cache.ByObject{&corev1.Pod{}: {Label: withTrack}}, nil
}

// maxExcluded bounds status.warmup.excluded: past it the two closest spans are merged, which
// leaves out a little more time rather than judging a cold pod's samples.
const maxExcluded = 16

// warmth is what the judged pods' readiness says about the warm-up.
type warmth struct {
	// WarmAt is when the last judged pod is warm (zero with no pod).
	WarmAt time.Time
	// Cold are the spans in which a judged pod was not yet warm: from its creation to its
	// Ready transition plus the warm-up (through now plus the warm-up while it is not Ready).
	Cold []v1alpha1.TimeRange
	// Waiting names the pods still warming up at now, e.g. "pc-gray-x (ready 40s of 2m)".
	Waiting []string
}

// warmState reads the warm-up of the judged pods (warmupPods: the gray track's, the fresh
// baseline's, and the stable pods new since the rollout started) from their Ready conditions. Readiness, not the step's start, decides: a pod rescheduled in
// the middle of a step is cold again, and a pod that was Ready long before the step is warm.
// The recording rules aggregate the pods of a track away, so a cold pod keeps its whole track's
// samples out of the test, not only its own.
func warmState(pods []corev1.Pod, warmup time.Duration, now time.Time) warmth {
	var w warmth
	for i := range pods {
		p := &pods[i]
		from := p.CreationTimestamp.Time
		var to time.Time
		ready := readySince(p)
		if ready.IsZero() {
			to = now.Add(warmup)
			w.Waiting = append(w.Waiting, fmt.Sprintf("%s (not ready)", p.Name))
		} else {
			to = ready.Add(warmup)
			if to.After(now) {
				w.Waiting = append(w.Waiting, fmt.Sprintf("%s (ready %s of %s)", p.Name, now.Sub(ready).Round(time.Second), warmup))
			}
		}
		if to.After(w.WarmAt) {
			w.WarmAt = to
		}
		if to.After(from) {
			w.Cold = append(w.Cold, v1alpha1.TimeRange{From: metav1.NewTime(from), To: metav1.NewTime(to)})
		}
	}
	sort.Strings(w.Waiting)
	return w
}

// warmupPods returns the pods whose warm-up counts, from each track's pods: every gray pod and,
// with a fresh baseline, every baseline pod (all made for the rollout), and without one every
// stable pod created after the rollout started (an HPA's scale-up mid-rollout, a replaced pod):
// a cold stable pod tilts the comparison toward a PASS as surely as a cold gray pod tilts it
// toward a FAIL. The stable pods that predate the rollout are warm.
func warmupPods(byTrack map[string][]corev1.Pod, fresh bool, since time.Time) []corev1.Pod {
	pods := slices.Clone(byTrack[v1alpha1.TrackGray])
	if fresh {
		return append(pods, byTrack[v1alpha1.TrackBaseline]...)
	}
	if since.IsZero() {
		return pods // no rollout under way: no stable pod is new to it
	}
	for _, p := range byTrack[v1alpha1.TrackStable] {
		if !p.CreationTimestamp.Time.Before(since) {
			pods = append(pods, p)
		}
	}
	return pods
}

// readySince is when the pod last became Ready, zero when it is not Ready (or terminating).
func readySince(p *corev1.Pod) time.Time {
	if p.DeletionTimestamp != nil {
		return time.Time{}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			if c.Status != corev1.ConditionTrue {
				return time.Time{}
			}
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// mergeSpans returns old and add as one sorted list of disjoint spans, clipped to start at
// since (spans that end before it are dropped) and at most maxExcluded long.
func mergeSpans(old, add []v1alpha1.TimeRange, since time.Time) []v1alpha1.TimeRange {
	all := slices.Concat(old, add)
	all = slices.DeleteFunc(all, func(r v1alpha1.TimeRange) bool { return r.To.Time.Before(since) })
	for i := range all {
		if all[i].From.Time.Before(since) {
			all[i].From = metav1.NewTime(since)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].From.Time.Before(all[j].From.Time) })
	var out []v1alpha1.TimeRange
	for _, r := range all {
		if n := len(out); n > 0 && !r.From.Time.After(out[n-1].To.Time) {
			if r.To.Time.After(out[n-1].To.Time) {
				out[n-1].To = r.To
			}
			continue
		}
		out = append(out, r)
	}
	for len(out) > maxExcluded {
		// Merge the two spans with the shortest gap between them.
		best := 0
		for i := 1; i < len(out)-1; i++ {
			if out[i+1].From.Sub(out[i].To.Time) < out[best+1].From.Sub(out[best].To.Time) {
				best = i
			}
		}
		if out[best+1].To.Time.After(out[best].To.Time) {
			out[best].To = out[best+1].To
		}
		out = slices.Delete(out, best+1, best+2)
	}
	return out
}

// warmupMessage says what the analysis waits for.
func warmupMessage(w warmth, warmup time.Duration) string {
	if len(w.Waiting) == 0 {
		return ""
	}
	return fmt.Sprintf("warming up until %s (%s after each pod is Ready): %s",
		w.WarmAt.UTC().Format(time.RFC3339), warmup, strings.Join(w.Waiting, ", "))
}

// warmedUp applies analysis.warmup before an analysis: it records the judged pods' cold spans
// in status.warmup (their samples are left out of the statistical test) and reports whether
// every judged pod is warm. When one is not, the step holds (no analysis, so no verdict drawn
// on thresholds from a cold pod) and wait says when to look again.
func (r *PoolCanaryReconciler) warmedUp(ctx context.Context, pc *v1alpha1.PoolCanary, now time.Time, out *pending) (wait time.Duration, ok bool) {
	spec, st := &pc.Spec, &pc.Status
	warmup := defaultWarmup
	if spec.Analysis.Warmup != nil {
		warmup = spec.Analysis.Warmup.Duration
	}
	if warmup <= 0 {
		st.Warmup = nil
		return 0, true
	}
	fresh := spec.Analysis.Baseline == v1alpha1.BaselineFresh
	tracks := []string{v1alpha1.TrackGray, v1alpha1.TrackStable}
	if fresh {
		tracks[1] = v1alpha1.TrackBaseline
	}
	sel := effectiveSelector(pc)
	byTrack := map[string][]corev1.Pod{}
	for _, track := range tracks {
		ls, err := metav1.LabelSelectorAsSelector(trackSelector(sel, track))
		if err != nil {
			return permanentRetry, false // reported in TracksReady by applyTracks
		}
		var list corev1.PodList
		if err := r.Client.List(ctx, &list, client.InNamespace(pc.Namespace), client.MatchingLabelsSelector{Selector: ls}); err != nil {
			msg := fmt.Sprintf("holding weight %d: listing the %s pods for the warm-up: %v", st.CurrentWeight, track, err)
			r.setParity(pc, metav1.ConditionUnknown, EventWarmingUp, msg)
			return analysisInterval(spec), false
		}
		byTrack[track] = list.Items
	}
	w := warmState(warmupPods(byTrack, fresh, st.RolloutStartedAt.Time), warmup, now)
	if st.Warmup == nil {
		st.Warmup = &v1alpha1.WarmupStatus{}
	}
	st.Warmup.Excluded = mergeSpans(st.Warmup.Excluded, w.Cold, st.RolloutStartedAt.Time)
	st.Warmup.WarmAt, st.Warmup.Message = nil, ""
	if len(w.Waiting) == 0 {
		return 0, true
	}
	msg := warmupMessage(w, warmup)
	st.Warmup.WarmAt, st.Warmup.Message = ptrTime(w.WarmAt), msg
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionParity); c == nil || c.Reason != EventWarmingUp {
		out.event(corev1.EventTypeNormal, EventWarmingUp, "Analyze", "holding weight %d: %s", st.CurrentWeight, msg)
	}
	r.setParity(pc, metav1.ConditionUnknown, EventWarmingUp, msg)
	r.setProgressing(pc, metav1.ConditionTrue, v1alpha1.ReasonStepping, fmt.Sprintf("holding weight %d: warming up", st.CurrentWeight))
	return max(time.Second, min(w.WarmAt.Sub(now), analysisInterval(spec))), false
}

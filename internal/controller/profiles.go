package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/promread"
	"github.com/poolparity/poolparity/internal/profdiff"
)

// Event reasons of the rollback profiles (analysis.profiles).
const (
	EventProfileDiff   = "ProfileDiff"   // Normal: the functions whose cost per request differs most.
	EventProfileFailed = "ProfileFailed" // Warning: the profiles could not be taken or compared.
)

// Defaults and bounds of the rollback profiles.
const (
	defaultProfileSeconds = 5
	// profileSlack bounds a capture beyond its seconds (pod lookup, the allocation
	// profiles, the request-rate query, the status write).
	profileSlack = 30 * time.Second
	// profileTop is how many functions of each kind the status and the Event keep.
	profileTop = 3
)

// PodIPAddr is the default PodAddr: the pod's IP (status.podIP) and port.
func PodIPAddr(pod *corev1.Pod, port int32) string {
	return net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port)))
}

// profiledPod is a pod chosen for profiling and the Ready pods of its track.
type profiledPod struct {
	name, addr string
	ready      int // Ready pods of its track, which share the track's requests
}

// startRollbackProfiles profiles one Ready gray and one Ready stable pod of pc in a goroutine
// bounded by analysis.profiles.cpuSeconds plus profileSlack, and returns at once: the
// rollback never waits for the profiles, nor fails because of them. The comparison goes
// into status.rollbackProfile and a ProfileDiff Event; a failure into a ProfileFailed
// Warning. The goroutine outlives the reconcile (its context drops ctx's cancellation, but
// not its values) and ends within its bound.
func (r *PoolCanaryReconciler) startRollbackProfiles(ctx context.Context, pc *v1alpha1.PoolCanary) {
	spec := pc.Spec.Analysis.Profiles
	if spec == nil {
		return
	}
	secs := int(spec.CPUSeconds)
	if secs <= 0 {
		secs = defaultProfileSeconds
	}
	pc = pc.DeepCopy()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(secs)*time.Second+profileSlack)
	go func() {
		defer cancel()
		st, err := r.rollbackProfiles(ctx, pc, spec.Port, secs)
		if err != nil {
			r.emit(pc, pendingEvent{corev1.EventTypeWarning, EventProfileFailed, "Profile", "rollback profiles not taken: " + err.Error()})
			return
		}
		if err := r.writeRollbackProfile(ctx, pc, st); err != nil {
			r.emit(pc, pendingEvent{corev1.EventTypeWarning, EventProfileFailed, "Profile", "rollback profiles taken, status not written: " + err.Error()})
		}
		r.emit(pc, pendingEvent{corev1.EventTypeNormal, EventProfileDiff, "Profile", profileNote(st)})
	}()
}

// rollbackProfiles picks the pods, profiles them and compares the profiles per request.
func (r *PoolCanaryReconciler) rollbackProfiles(ctx context.Context, pc *v1alpha1.PoolCanary, port int32, secs int) (*v1alpha1.ProfileStatus, error) {
	var pods [2]profiledPod
	for i, track := range []string{v1alpha1.TrackGray, v1alpha1.TrackStable} {
		p, err := r.pickPod(ctx, pc, track, port)
		if err != nil {
			return nil, err
		}
		pods[i] = p
	}
	a := &pc.Spec.Analysis
	_, opts, bad := evaluation(a, Input{Now: r.Clock.Now()})
	if len(bad) > 0 {
		return nil, fmt.Errorf("invalid analysis: %s", strings.Join(bad, "; "))
	}
	requests := func(ctx context.Context) (gray, stable float64, err error) {
		rates, err := r.trackRates(ctx, pc, opts.Guard.RateExpr)
		if err != nil {
			return 0, 0, err
		}
		var out [2]float64
		for i, gs := range []string{grayStatus(v1alpha1.TrackGray), grayStatus(v1alpha1.TrackStable)} {
			// The track's rate, shared by its Ready pods.
			out[i] = rates[gs] * float64(secs) / float64(pods[i].ready)
		}
		return out[0], out[1], nil
	}
	client := r.ProfileClient
	if client == nil {
		client = &http.Client{Transport: &http.Transport{Proxy: nil}} // bounded by ctx
		defer client.CloseIdleConnections()
	}
	st := &v1alpha1.ProfileStatus{Time: metav1.NewTime(r.Clock.Now()), GrayPod: pods[0].name, StablePod: pods[1].name}
	diffs, err := profdiff.Capture(ctx, client, "http://"+pods[0].addr, "http://"+pods[1].addr, secs, requests,
		profdiff.Options{Own: profdiff.ServiceCode(), Top: profileTop})
	if err != nil {
		if len(diffs) == 0 {
			return nil, fmt.Errorf("gray pod %s, stable pod %s: %w", pods[0].name, pods[1].name, err)
		}
		st.Message = truncate(strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	for _, d := range diffs {
		for _, row := range d.Rows {
			st.Functions = append(st.Functions, v1alpha1.ProfileFunction{
				Kind: string(d.Kind), Function: profdiff.ShortName(row.Function),
				GrayPerRequest: parity.FormatValue(d.Unit, row.Gray), StablePerRequest: parity.FormatValue(d.Unit, row.Stable),
			})
		}
	}
	return st, nil
}

// pickPod returns the first (by name) Ready pod of pc's track with an address, and how many
// Ready pods the track has.
func (r *PoolCanaryReconciler) pickPod(ctx context.Context, pc *v1alpha1.PoolCanary, track string, port int32) (profiledPod, error) {
	ls, err := metav1.LabelSelectorAsSelector(trackSelector(effectiveSelector(pc), track))
	if err != nil {
		return profiledPod{}, fmt.Errorf("the %s pods' selector: %w", track, err)
	}
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.InNamespace(pc.Namespace), client.MatchingLabelsSelector{Selector: ls}); err != nil {
		return profiledPod{}, fmt.Errorf("listing the %s pods: %w", track, err)
	}
	addr := r.PodAddr
	if addr == nil {
		addr = PodIPAddr
	}
	var ready []corev1.Pod
	for _, p := range list.Items {
		if !readySince(&p).IsZero() && p.Status.PodIP != "" {
			ready = append(ready, p)
		}
	}
	if len(ready) == 0 {
		return profiledPod{}, fmt.Errorf("no Ready %s pod with an IP", track)
	}
	slices.SortFunc(ready, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return profiledPod{name: ready[0].Name, addr: addr(&ready[0], port), ready: len(ready)}, nil
}

// trackRates reads expr, the traffic guard's request-rate query, through the canary's
// endpoint and namespace pin: the request rate per gray_status.
func (r *PoolCanaryReconciler) trackRates(ctx context.Context, pc *v1alpha1.PoolCanary, expr string) (map[string]float64, error) {
	q, refused := querier(r.Prometheus, &pc.Spec.Analysis, pc.Namespace)
	if refused != nil {
		return nil, refused
	}
	return promread.SumBy(ctx, q, expr, "gray_status", r.Clock.Now())
}

// writeRollbackProfile merge-patches status.rollbackProfile, unless a new rollout has started
// since pc was read.
func (r *PoolCanaryReconciler) writeRollbackProfile(ctx context.Context, pc *v1alpha1.PoolCanary, st *v1alpha1.ProfileStatus) error {
	var cur v1alpha1.PoolCanary
	if err := r.apiReader().Get(ctx, types.NamespacedName{Namespace: pc.Namespace, Name: pc.Name}, &cur); err != nil {
		return fmt.Errorf("reading the canary: %w", err)
	}
	if cur.Status.RolloutHash != pc.Status.RolloutHash {
		return fmt.Errorf("a new rollout has started")
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"rollbackProfile": st}})
	if err != nil {
		return fmt.Errorf("encoding the status patch: %w", err)
	}
	if err := r.Client.Status().Patch(ctx, &cur, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("writing status.rollbackProfile: %w", err)
	}
	return nil
}

// profileNote is the ProfileDiff Event's note.
func profileNote(st *v1alpha1.ProfileStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "gray pod %s against stable pod %s, per request (gray vs stable):", st.GrayPod, st.StablePod)
	for i, f := range st.Functions {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s %s %s %s vs %s", sep, f.Kind, f.Function, f.GrayPerRequest, f.StablePerRequest)
	}
	if st.Message != "" {
		b.WriteString("; " + st.Message)
	}
	return b.String()
}

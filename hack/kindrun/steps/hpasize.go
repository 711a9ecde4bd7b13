package steps

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
)

const (
	// scaleMargin is how far above the HPA's CPU target the sized load puts a track's pods.
	scaleMargin = 1.5
	// maxSizedRPS bounds the sized load: a target that needs more than this on this machine's
	// CPU per request is reported as out of reach, not run.
	maxSizedRPS = 1500
	// sizedLoadFor is how long the sized load may take to make an HPA scale.
	sizedLoadFor = 2 * time.Minute
)

// ScaleCheck is the scenarios step's proof that the per-track HPAs react to CPU: a load sized
// from this run's CPU per request, so that it must make an HPA scale on any machine, beyond the
// replicas the track had when it began.
type ScaleCheck struct {
	Track         string        `json:"track"`             // the track the load was sized for
	CPUPerRequest float64       `json:"cpu_per_request_s"` // the catalog's CPU per request of the track, measured in this run
	TargetPct     int           `json:"hpa_cpu_target_percent"`
	RequestCores  float64       `json:"cpu_request_cores"` // each pod's CPU request
	Replicas      int           `json:"replicas"`
	Share         float64       `json:"share"` // the track's share of the Service's requests
	RPS           float64       `json:"rps"`   // the sized rate
	Scaled        []string      `json:"scaled"`
	After         time.Duration `json:"after_ns"` // from the load's start to the first sample with a track scaled
}

// errAllAtMax is checkScaleOnCPU's error when every track is at its HPA's maximum before the sized
// load: no load can show a scale-up.
var errAllAtMax = errors.New("every track is at its HPA's maximum before the sized load: nothing left to scale")

// scaledToMax reports whether the scenarios' own load already proved what the sized load would:
// the sized load could not run because every track was at its HPA's maximum (err is errAllAtMax),
// and every track was seen scaled above its HPA's minimum with a CPU reading on the way there
// (on a machine whose CPU per request is high for the pods' request, the scenarios' load alone
// takes both HPAs to their maximum, and the scale-down window keeps them there).
func scaledToMax(err error, pts []ReplicaPoint) bool {
	if !errors.Is(err, errAllAtMax) {
		return false
	}
	var tracks []string
	for _, p := range pts {
		if !slices.Contains(tracks, p.Track) {
			tracks = append(tracks, p.Track)
		}
	}
	scaled := scaledTracks(pts)
	if len(tracks) == 0 {
		return false
	}
	for _, t := range tracks {
		if !slices.Contains(scaled, t) {
			return false
		}
	}
	return true
}

// sizedRPS is the request rate at the Service that puts a track's pods at margin times the HPA's
// CPU target: each of replicas pods requests requestCores, the track gets share of the requests,
// each costing cpuPerRequest CPU-seconds.
func sizedRPS(cpuPerRequest, requestCores float64, targetPct, replicas int, share, margin float64) (float64, error) {
	if !(cpuPerRequest > 0) || !(share > 0) || requestCores <= 0 || targetPct <= 0 || replicas <= 0 {
		return 0, fmt.Errorf("cannot size a load from CPU per request %g s, share %g, request %g cores, target %d%%, %d replicas", cpuPerRequest, share, requestCores, targetPct, replicas)
	}
	return margin * float64(targetPct) / 100 * requestCores * float64(replicas) / (share * cpuPerRequest), nil
}

// cpuTarget returns the CPU utilization target of h's resource metric, 0 when it has none.
func cpuTarget(h autoscalingv2.HorizontalPodAutoscaler) int {
	for _, m := range h.Spec.Metrics {
		if m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.AverageUtilization != nil {
			return int(*m.Resource.Target.AverageUtilization)
		}
	}
	return 0
}

// checkScaleOnCPU measures each track's CPU per request over the last minute of the scenarios'
// load (the catalog's cpu-per-request SLI), sizes the load that must take the cheapest track's pods to
// scaleMargin times its HPA's CPU target, runs it against the split Service and samples the
// tracks every 10 s until an HPA scaled a track above its minimum (or sizedLoadFor passed).
func checkScaleOnCPU(ctx context.Context, env *harness.Env, k *kube.Kube, q parity.Querier) (ScaleCheck, []ReplicaPoint, error) {
	ns, release := env.Cfg.Namespace, env.Cfg.Release
	gray, total, err := requestRates(ctx, q, ns, release, time.Now())
	if err != nil {
		return ScaleCheck{}, nil, fmt.Errorf("reading the tracks' shares of the requests: %w", err)
	}
	var best ScaleCheck
	from := map[string]int{} // replicas per track when the sized load starts
	for _, track := range []string{"stable", "gray"} {
		cpu, err := cpuPerRequest(ctx, q, ns, release, track)
		if err != nil {
			return ScaleCheck{}, nil, err
		}
		d, err := k.CS.AppsV1().Deployments(ns).Get(ctx, trackName(env, track), metav1.GetOptions{})
		if err != nil {
			return ScaleCheck{}, nil, fmt.Errorf("reading the %s track's Deployment: %w", track, err)
		}
		h, err := k.CS.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, trackName(env, track), metav1.GetOptions{})
		if err != nil {
			return ScaleCheck{}, nil, fmt.Errorf("reading the %s track's HPA: %w", track, err)
		}
		c := ScaleCheck{Track: track, CPUPerRequest: cpu, TargetPct: cpuTarget(*h), Replicas: int(d.Status.Replicas), Share: gray / total}
		from[track] = c.Replicas
		if int32(c.Replicas) >= h.Spec.MaxReplicas {
			env.Logf("hpa-cpu: %s is at its HPA's maximum, %d replicas: no load can scale it further", track, c.Replicas)
			continue
		}
		if track == "stable" {
			c.Share = 1 - c.Share
		}
		if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 {
			c.RequestCores = cs[0].Resources.Requests.Cpu().AsApproximateFloat64()
		}
		if c.RPS, err = sizedRPS(c.CPUPerRequest, c.RequestCores, c.TargetPct, c.Replicas, c.Share, scaleMargin); err != nil {
			return ScaleCheck{}, nil, fmt.Errorf("%s track: %w", track, err)
		}
		if best.Track == "" || c.RPS < best.RPS {
			best = c
		}
	}
	if best.Track == "" {
		return best, nil, errAllAtMax
	}
	c := best
	c.RPS = math.Ceil(c.RPS)
	env.Logf("hpa-cpu: %s's HPA targets %d%% of %.0fm per pod on %d pods; %.2f ms CPU per request and %.0f%% of the requests measured here: %.0f req/s must scale it",
		c.Track, c.TargetPct, 1000*c.RequestCores, c.Replicas, 1000*c.CPUPerRequest, 100*c.Share, c.RPS)
	if c.RPS > maxSizedRPS {
		return c, nil, fmt.Errorf("the HPAs' CPU target needs %.0f req/s here to scale a track, above the harness's %d", c.RPS, maxSizedRPS)
	}
	job, err := startLoadAt(ctx, env, k, "hpa-cpu", fmt.Sprintf("http://%s:80", fullname(env)), sizedLoadFor, c.RPS)
	if err != nil {
		return c, nil, err
	}
	defer func() { _ = k.DeleteJob(context.WithoutCancel(ctx), ns, job) }()
	start := time.Now()
	var pts []ReplicaPoint
	for time.Since(start) < sizedLoadFor {
		select {
		case <-ctx.Done():
			return c, pts, ctx.Err()
		case <-time.After(10 * time.Second):
		}
		at := time.Since(start).Round(time.Second)
		now, err := sampleTracks(ctx, k, ns, release, "hpa-cpu", at)
		if err != nil {
			env.Logf("sampling replicas: %v", err)
			continue
		}
		pts = append(pts, now...)
		env.Logf("hpa-cpu +%s: %s", at, formatPoints(now))
		if c.Scaled = scaledFrom(pts, from); len(c.Scaled) > 0 {
			c.After = at
			return c, pts, nil
		}
	}
	return c, pts, fmt.Errorf("a load sized to put %s's pods at %.1f times its HPA's CPU target (%.0f req/s) scaled no track in %s", c.Track, scaleMargin, c.RPS, sizedLoadFor)
}

// scaledFrom lists the tracks whose HPA wanted, or got, more replicas than the track had at the
// start (by track).
func scaledFrom(pts []ReplicaPoint, start map[string]int) []string {
	var out []string
	for _, p := range pts {
		if (p.Desired > start[p.Track] || p.Replicas > start[p.Track]) && !slices.Contains(out, p.Track) {
			out = append(out, p.Track)
		}
	}
	return out
}

// cpuPerRequest is track's CPU per request now, as the catalog defines it: its cpu-per-request
// SLI's per-track rule of the parityWindow family (the last minute).
func cpuPerRequest(ctx context.Context, q parity.Querier, ns, release, track string) (float64, error) {
	sli, ok := catalog.Default().Get(catalog.CPUPerRequest)
	if !ok {
		return 0, errors.New("the catalog has no CPU per request SLI")
	}
	sel := fmt.Sprintf(`%s,%s=%q`, releaseSelector(ns, release), instrument.LabelGrayStatus, grayStatus(track))
	v, err := vector(ctx, q, sli.TrackQuery(parityWindow, sel), time.Now())
	if err != nil {
		return 0, fmt.Errorf("reading the %s track's CPU per request: %w", track, err)
	}
	if len(v) == 0 || !(v[0].Value > 0) || math.IsInf(float64(v[0].Value), 0) {
		return 0, fmt.Errorf("the %s track's CPU per request: no data over the last %s", track, parityWindow)
	}
	return float64(v[0].Value), nil
}

// scaleNote says what the sized load did.
func scaleNote(c ScaleCheck) string {
	if len(c.Scaled) == 0 {
		return "none run (every track was already at its HPA's maximum)"
	}
	return fmt.Sprintf("%v scaled %s into %.0f req/s sized from %.2f ms CPU per request (target %d%%)", c.Scaled, c.After, c.RPS, 1000*c.CPUPerRequest, c.TargetPct)
}

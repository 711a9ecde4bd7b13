package steps

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
)

// The HPA groups (docs/hpa-groups.md): the same release, the same stepped load, three ways of
// scaling it. Each pod's CPU is limited to its request, 20m: about 25 requests/s of the API mix
// (0.8 ms of CPU each), so that the high step's concurrency turns into queueing latency (a pod
// cannot borrow the node's idle cores), as on a full node, and one replica per track is far too few.
const (
	hpaCPU              = "20m" // request and limit of each service pod
	hpaMaxReplicas      = 5
	hpaCPUTarget        = 60
	hpaLatencyThreshold = 0.5 // seconds of p95
	hpaSampleEvery      = 10 * time.Second
)

// hpaGroup is one way of scaling the tracks.
type hpaGroup struct {
	Name string // A, B, C
	Desc string
	Set  []string // helm --set values over the harness's usual ones
}

// hpaGroups returns groups A, B and C; promURL is the Prometheus KEDA queries.
func hpaGroups(promURL string) []hpaGroup {
	scaled := []string{"autoscaling.enabled=true", "autoscaling.minReplicas=1",
		fmt.Sprintf("autoscaling.maxReplicas=%d", hpaMaxReplicas), fmt.Sprintf("autoscaling.targetCPUUtilizationPercentage=%d", hpaCPUTarget)}
	return []hpaGroup{
		{Name: "A", Desc: "no HPA, 1 replica per track",
			Set: []string{"autoscaling.enabled=false", "tracks.stable.replicas=1", "tracks.gray.replicas=1"}},
		{Name: "B", Desc: fmt.Sprintf("HPA on CPU %d%%, 1-%d replicas", hpaCPUTarget, hpaMaxReplicas),
			Set: append(slices.Clone(scaled), "autoscaling.mode=hpa")},
		{Name: "C", Desc: fmt.Sprintf("KEDA: CPU %d%% plus p95 latency under %g s, 1-%d replicas", hpaCPUTarget, hpaLatencyThreshold, hpaMaxReplicas),
			Set: append(slices.Clone(scaled), "autoscaling.mode=keda", "autoscaling.keda.serverAddress="+promURL,
				fmt.Sprintf("autoscaling.keda.latencyThreshold=%g", hpaLatencyThreshold), "autoscaling.keda.window=1m")},
	}
}

// hpaPhase is one step of the load profile.
type hpaPhase struct {
	Name        string
	D           time.Duration
	RPS         float64
	Concurrency int
}

// hpaProfile returns the stepped load: low, high concurrency, low. The short profile (CI) is
// low then high only, and its high step may end as soon as the latency trigger has scaled.
func hpaProfile(full bool) []hpaPhase {
	if full {
		return []hpaPhase{{"low", time.Minute, 10, 4}, {"high", 3 * time.Minute, 200, 64}, {"low2", time.Minute, 10, 4}}
	}
	return []hpaPhase{{"low", 30 * time.Second, 10, 4}, {"high", 100 * time.Second, 200, 64}}
}

// hpaSample is one track at one moment of a group's run.
type hpaSample struct {
	At       time.Duration // since the load started
	Phase    string
	Track    string
	Ready    int
	Replicas int
	Min      int // 0: no HPA
	Desired  int
	CPU      int     // % of requests; -1: no reading
	Latency  float64 // the latency trigger's value (s); -1: none (no KEDA, or not read yet)
	Target   float64 // its target (s)
	Active   bool    // the HPA's ScalingActive condition
	Before   int     // the track's replicas at its previous sample (what the HPA computed from)
}

// hpaSampleOf joins a track's Deployment with the HPA that scales it (the chart's, or KEDA's).
func hpaSampleOf(d appsv1.Deployment, hs []autoscalingv2.HorizontalPodAutoscaler) hpaSample {
	s := hpaSample{Track: d.Labels[trackLabel], Ready: int(d.Status.ReadyReplicas), Replicas: int(d.Status.Replicas), CPU: -1, Latency: -1}
	for _, h := range hs {
		if h.Spec.ScaleTargetRef.Name != d.Name {
			continue
		}
		s.Min, s.Desired = 1, int(h.Status.DesiredReplicas)
		if h.Spec.MinReplicas != nil {
			s.Min = int(*h.Spec.MinReplicas)
		}
		for _, c := range h.Status.Conditions {
			if c.Type == autoscalingv2.ScalingActive {
				s.Active = c.Status == corev1.ConditionTrue
			}
		}
		for _, m := range h.Status.CurrentMetrics {
			switch {
			case m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil:
				s.CPU = int(*m.Resource.Current.AverageUtilization)
			case m.External != nil && m.External.Current.Value != nil:
				s.Latency = m.External.Current.Value.AsApproximateFloat64()
			}
		}
		for _, m := range h.Spec.Metrics {
			if m.External != nil && m.External.Target.Value != nil {
				s.Target = m.External.Target.Value.AsApproximateFloat64()
			}
		}
	}
	return s
}

// hpaTolerance is the HPA controller's default tolerance: it acts on a metric only when the
// metric's ratio to its target is beyond 1 +- 0.1.
const hpaTolerance = 0.1

// withBefore sets each sample's Before to its track's replicas at the previous sample.
func withBefore(samples []hpaSample) {
	last := map[string]int{}
	for i, s := range samples {
		samples[i].Before = s.Replicas
		if r, ok := last[s.Track]; ok {
			samples[i].Before = r
		}
		last[s.Track] = s.Replicas
	}
}

// latencyScaled returns the first sample of phase in which a track's latency trigger was above
// its target by more than the HPA's tolerance (so that latency alone asks for more replicas) and
// its HPA wanted more than its minimum: the latency trigger scaling the track.
func latencyScaled(samples []hpaSample, phase string) (hpaSample, bool) {
	for _, s := range samples {
		if s.Phase == phase && s.Target > 0 && s.Latency > s.Target*(1+hpaTolerance) && s.Min > 0 && s.Desired > s.Min {
			return s, true
		}
	}
	return hpaSample{}, false
}

// scaleOut returns how long after the high step began (at start, since the load started) the
// track's HPA first wanted more replicas than the track had at the step's first sample, and when
// more were first ready; -1 when it never did.
func scaleOut(samples []hpaSample, track string, start time.Duration) (wanted, ready time.Duration) {
	wanted, ready = -1, -1
	base := -1
	for _, s := range samples {
		if s.Track != track || s.Phase != "high" {
			continue
		}
		if base < 0 {
			base = max(s.Replicas, 1)
		}
		if wanted < 0 && s.Desired > base {
			wanted = s.At - start
		}
		if ready < 0 && s.Ready > base {
			ready = s.At - start
		}
	}
	return wanted, ready
}

// wantsFor is the replica count the HPA controller computes from one metric at ratio (current
// over target) with replicas running; within the tolerance it keeps replicas.
func wantsFor(replicas int, ratio float64) int {
	if math.Abs(ratio-1) <= hpaTolerance || ratio < 0 {
		return replicas
	}
	return int(math.Ceil(float64(max(replicas, 1)) * ratio))
}

// hpaStats are one track's figures over a group's high step, from Prometheus.
type hpaStats struct {
	Requests      float64
	P95, P99      float64 // seconds; NaN: no requests
	Errors        float64 // the catalog's error ratio (5xx)
	CPUPerRequest float64 // seconds
	MaxReplicas   int
}

// hpaRun is one group's measurements.
type hpaRun struct {
	Group     hpaGroup
	Samples   []hpaSample
	Stats     map[string]hpaStats // by track
	HighStart time.Duration       // the high step's start, since the load started
	HighLen   time.Duration
	IdleNote  string // what the latency trigger read before the load
	SizedHigh string // how the check sized its high step from the low step's CPU per request
}

// pooling names each track's build (values-kind.yaml's pool modes).
var pooling = map[string]string{"stable": "unpooled", "gray": "pooled"}

// hpaGroupsStep runs the HPA groups under the stepped load: the check (hpa-groups, in `all`)
// runs group C alone, short, and asserts that the latency trigger scaled a track; the
// experiment (hpa-groups-full, make hpa-groups) runs A, B and C with the full profile and writes
// docs/hpa-groups.md.
type hpaGroupsStep struct{ full bool }

// hpaGroupsDef declares the "hpa-groups" step: the check CI runs.
func hpaGroupsDef() harness.Def {
	return harness.Def{Step: hpaGroupsStep{}, Needs: []string{"env", "helm-install"}, Doc: "Group C of docs/hpa-groups.md, short: asserts that the latency trigger scaled a track (offline only).", Default: true}
}

// hpaGroupsFullDef declares the "hpa-groups-full" step: the experiment that writes the doc.
func hpaGroupsFullDef() harness.Def {
	return harness.Def{Step: hpaGroupsStep{full: true}, Needs: []string{"env", "helm-install"}, Target: "hpa-groups",
		Doc: "Offline cluster: groups A (no HPA), B (CPU) and C (KEDA: CPU + p95) under one stepped load, both builds; writes docs/hpa-groups.md, then deletes the cluster."}
}

// Name implements Step.
func (s hpaGroupsStep) Name() string {
	if s.full {
		return "hpa-groups-full"
	}
	return "hpa-groups"
}

// Run implements Step.
func (step hpaGroupsStep) Run(ctx context.Context, env *harness.Env) (harness.Outcome, error) {
	if env.Cfg.Mode == "online" {
		return harness.Outcome{Note: "skipped: KEDA runs in the offline cluster only"}, nil
	}
	k, err := env.Kube()
	if err != nil {
		return harness.Outcome{}, err
	}
	full := step.full
	promURL := fmt.Sprintf("http://%s.%s.svc:9090", promServiceOf(env), monitoringNS)
	groups := hpaGroups(promURL)
	if !full {
		groups = groups[2:] // C
	}
	prom, err := openProm(ctx, env, k)
	if err != nil {
		return harness.Outcome{}, err
	}
	defer prom.stop()
	begin := time.Now()
	var runs []hpaRun
	var res HPAGroupsResult
	for _, g := range groups {
		r, err := runHPAGroup(ctx, env, k, prom.q, g, hpaProfile(full), !full)
		if err != nil {
			return harness.Outcome{}, fmt.Errorf("group %s: %w", g.Name, err)
		}
		env.Print(formatHPARun(r))
		runs = append(runs, r)
		for _, s := range r.Samples {
			res.Replicas = append(res.Replicas, ReplicaPoint{At: s.At, Scenario: "hpa-" + g.Name, Track: s.Track,
				Replicas: s.Replicas, Ready: s.Ready, Min: s.Min, Desired: s.Desired, CPU: s.CPU})
		}
	}
	c := runs[len(runs)-1]
	s, ok := latencyScaled(c.Samples, "high")
	if !ok {
		return harness.Outcome{Result: res}, errors.New("group C: no track's latency trigger was above its target with the HPA wanting more replicas during the high step (table above)")
	}
	note := fmt.Sprintf("group C: the latency trigger scaled %s %s into the high step (p95 %.2fs > %gs: latency alone asks %d replicas, CPU %d%% asks %d, the HPA wants %d); %s; %s",
		s.Track, (s.At - c.HighStart).Round(time.Second), s.Latency, s.Target, wantsFor(s.Before, s.Latency/s.Target),
		s.CPU, wantsFor(s.Before, float64(s.CPU)/hpaCPUTarget), s.Desired, c.IdleNote, time.Since(begin).Round(time.Second))
	if c.SizedHigh != "" {
		note += "; " + c.SizedHigh
	}
	if full {
		path := filepath.Join(env.Cfg.Root, "docs", "hpa-groups.md")
		if err := os.WriteFile(path, []byte(hpaGroupsDoc(runs, time.Now())), 0o644); err != nil {
			return harness.Outcome{Result: res}, fmt.Errorf("writing %s: %w", path, err)
		}
		note += "; wrote docs/hpa-groups.md"
	}
	if releaseNeededAfter(env, step.Name()) {
		if err := helmInstall(ctx, env); err != nil {
			return harness.Outcome{Result: res}, fmt.Errorf("restoring the release's usual values: %w", err)
		}
		note += "; release restored"
	}
	return harness.Outcome{Note: note, Result: res}, nil
}

// hpaHighLoad is how many times the pods' CPU limit the check's high step offers: requests queue.
const hpaHighLoad = 4

// sizeHighStep returns the high step's rate for the check: hpaHighLoad times what the tracks'
// pods (samples' last ready count, each limited to hpaCPU) serve at the CPU per request the low
// step measured, for the track that costs least; and a note that says so.
func sizeHighStep(ctx context.Context, env *harness.Env, q parity.Querier, samples []hpaSample) (float64, string, error) {
	limit, err := resource.ParseQuantity(hpaCPU)
	if err != nil {
		return 0, "", err
	}
	ready := map[string]int{}
	for _, s := range samples {
		ready[s.Track] = s.Ready
	}
	best, note := 0.0, ""
	for _, t := range []string{"stable", "gray"} {
		cpu, err := cpuPerRequest(ctx, q, env.Cfg.Namespace, env.Cfg.Release, t)
		if err != nil {
			return 0, "", err
		}
		// Each track gets its share of the split Service's requests, its ready pods' share.
		share := float64(max(ready[t], 1)) / float64(max(ready["stable"], 1)+max(ready["gray"], 1))
		rps, err := sizedRPS(cpu, limit.AsApproximateFloat64(), 100, max(ready[t], 1), share, hpaHighLoad)
		if err != nil {
			return 0, "", fmt.Errorf("%s: %w", t, err)
		}
		if best == 0 || rps < best {
			best = math.Ceil(rps)
			note = fmt.Sprintf("high step at %.0f req/s: %d times what %d %s pod(s) limited to %s serve at the %.2f ms CPU per request the low step measured", best, hpaHighLoad, max(ready[t], 1), t, hpaCPU, 1000*cpu)
		}
	}
	return best, note, nil
}

// idleNote says what the latency trigger read before the load, with the HPAs active.
func idleNote(samples []hpaSample) string {
	var parts []string
	none := true
	for _, s := range samples {
		parts = append(parts, fmt.Sprintf("%s %.3fs", s.Track, s.Latency))
		none = none && s.Latency == 0
	}
	if none {
		return "before the load the latency trigger read " + strings.Join(parts, ", ") + " with the HPAs active: no latency data reads 0 and CPU decides"
	}
	return "before the load the latency trigger read " + strings.Join(parts, ", ") + " (the last minute's traffic) with the HPAs active"
}

// releaseNeededAfter reports whether a step after step (besides kind-down) uses the release.
func releaseNeededAfter(env *harness.Env, step string) bool {
	i := slices.Index(env.Cfg.Steps, step)
	return i >= 0 && slices.ContainsFunc(env.Cfg.Steps[i+1:], func(s string) bool { return s != "kind-down" })
}

// runHPAGroup installs group g on the release with both tracks at one replica, waits for the
// autoscalers to read their metrics, and runs the profile's load, sampling every 10 s. With
// stopEarly the high step ends two samples after the latency trigger has scaled a track.
func runHPAGroup(ctx context.Context, env *harness.Env, k *kube.Kube, q parity.Querier, g hpaGroup, profile []hpaPhase, stopEarly bool) (hpaRun, error) {
	r := hpaRun{Group: g, Stats: map[string]hpaStats{}}
	cpu := []string{"--set", "resources.requests.cpu=" + hpaCPU, "--set", "resources.limits.cpu=" + hpaCPU}
	// First without autoscaling (group A's values): the new pods start at one replica with the
	// group's CPU, and no HPA sees their start-up CPU (20m is soon exceeded while a Go service
	// starts), so every group begins from the same state and its HPA from no history.
	for _, set := range [][]string{hpaGroups("")[0].Set, g.Set} {
		args := slices.Clone(cpu)
		for _, v := range set {
			args = append(args, "--set", v)
		}
		if err := helmInstall(ctx, env, args...); err != nil {
			return r, err
		}
		if g.Name == "A" {
			break
		}
	}
	ns := env.Cfg.Namespace
	for _, t := range []string{"stable", "gray"} {
		name := trackName(env, t)
		if _, err := k.CS.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{FieldManager: kube.FieldManager}); err != nil {
			return r, fmt.Errorf("scaling %s to 1: %w", name, err)
		}
		if err := k.WaitDeployment(ctx, ns, name, 3*time.Minute); err != nil {
			return r, err
		}
	}
	// An idle release has no latency data (no requests in the rule's minute, or NaN): KEDA reads
	// 0, the HPA must stay active on CPU.
	if g.Name != "A" {
		var last []hpaSample
		err := kube.Until(ctx, 5*time.Second, 2*time.Minute, "group "+g.Name+"'s HPAs to read their metrics", func(ctx context.Context) (bool, error) {
			var err error
			if last, err = sampleHPAs(ctx, env, k); err != nil {
				return false, err
			}
			for _, s := range last {
				if s.Min == 0 || !s.Active || s.CPU < 0 || (g.Name == "C" && s.Latency < 0) {
					return false, nil
				}
			}
			return len(last) == 2, nil
		})
		if err != nil {
			return r, err
		}
		if g.Name == "C" {
			r.IdleNote = idleNote(last)
		}
	}
	target := fmt.Sprintf("http://%s:80", fullname(env))
	start := time.Now()
	var highEnd time.Time
	for _, ph := range profile {
		if ph.Name == "high" && stopEarly {
			// The check sizes its high step from this run's CPU per request (the low step's), so
			// that the pods' CPU limit queues the requests on any machine.
			rps, note, err := sizeHighStep(ctx, env, q, r.Samples)
			if err != nil {
				return r, fmt.Errorf("sizing the high step: %w", err)
			}
			ph.RPS, r.SizedHigh = rps, note
			env.Logf("group %s: %s", g.Name, note)
		}
		job, err := startLoadIn(ctx, env, k, ns, "hpa-"+strings.ToLower(g.Name)+"-"+ph.Name, target, ph.D, ph.RPS,
			"-concurrency", fmt.Sprint(ph.Concurrency), "-max-error-ratio", "1")
		if err != nil {
			return r, err
		}
		phStart := time.Now()
		if ph.Name == "high" {
			r.HighStart = phStart.Sub(start)
		}
		after := -1
		for time.Since(phStart) < ph.D {
			select {
			case <-ctx.Done():
				return r, ctx.Err()
			case <-time.After(hpaSampleEvery - time.Since(phStart)%hpaSampleEvery):
			}
			pts, err := sampleHPAs(ctx, env, k)
			if err != nil {
				return r, err
			}
			for i := range pts {
				pts[i].At, pts[i].Phase = time.Since(start).Round(time.Second), ph.Name
			}
			r.Samples = append(r.Samples, pts...)
			withBefore(r.Samples)
			if _, ok := latencyScaled(r.Samples, "high"); ok && stopEarly && ph.Name == "high" {
				if after++; after >= 2 {
					break
				}
			}
		}
		if ph.Name == "high" {
			highEnd = time.Now()
			r.HighLen = highEnd.Sub(phStart).Round(time.Second)
		}
		if err := k.DeleteJob(ctx, ns, job); err != nil {
			return r, err
		}
	}
	for _, t := range []string{"stable", "gray"} {
		st, err := hpaTrackStats(ctx, q, ns, env.Cfg.Release, t, r.HighLen, highEnd)
		if err != nil {
			return r, err
		}
		for _, s := range r.Samples {
			if s.Track == t && s.Phase == "high" {
				st.MaxReplicas = max(st.MaxReplicas, s.Ready)
			}
		}
		r.Stats[t] = st
	}
	return r, nil
}

// sampleHPAs reads both tracks' Deployments and the HPAs that scale them.
func sampleHPAs(ctx context.Context, env *harness.Env, k *kube.Kube) ([]hpaSample, error) {
	sel := "app.kubernetes.io/instance=" + env.Cfg.Release + ",app.kubernetes.io/component=app"
	ds, err := k.CS.AppsV1().Deployments(env.Cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing the tracks' deployments: %w", err)
	}
	hs, err := k.CS.AutoscalingV2().HorizontalPodAutoscalers(env.Cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing the tracks' HPAs: %w", err)
	}
	var out []hpaSample
	for _, d := range ds.Items {
		out = append(out, hpaSampleOf(d, hs.Items))
	}
	slices.SortFunc(out, func(a, b hpaSample) int { return strings.Compare(a.Track, b.Track) })
	return out, nil
}

// hpaSLIs are the catalog's SLIs the groups report per track, in hpaStats' fields.
func hpaSLIs(st *hpaStats) map[catalog.ID]*float64 {
	return map[catalog.ID]*float64{
		catalog.LatencyP95: &st.P95, catalog.LatencyP99: &st.P99, catalog.ErrorRatio: &st.Errors, catalog.CPUPerRequest: &st.CPUPerRequest,
	}
}

// grayStatus is the gray_status value of the chart's track t.
func grayStatus(t string) string {
	if t == "gray" {
		return instrument.GrayStatusGray
	}
	return instrument.GrayStatusStable
}

// hpaTrackStats reads one track's requests over the d before at, and its SLIs as the catalog
// defines them (latency p95 and p99, error ratio, CPU per request): each SLI's per-track rule of
// the parityWindow family, averaged over the d before at.
func hpaTrackStats(ctx context.Context, q parity.Querier, ns, release, track string, d time.Duration, at time.Time) (hpaStats, error) {
	st := hpaStats{P95: math.NaN(), P99: math.NaN()}
	if d < time.Second {
		return st, nil
	}
	sel := fmt.Sprintf(`%s,%s=%q`, releaseSelector(ns, release), instrument.LabelGrayStatus, grayStatus(track))
	api := sel + `,route!~".*(healthz|readyz|metrics).*"`
	secs := int(d.Seconds())
	exprs := map[*float64]string{&st.Requests: fmt.Sprintf(`sum(increase(http_requests_total{%s}[%ds]))`, api, secs)}
	cat := catalog.Default()
	for id, dst := range hpaSLIs(&st) {
		sli, ok := cat.Get(id)
		if !ok {
			return st, fmt.Errorf("the catalog has no SLI %s", id)
		}
		exprs[dst] = fmt.Sprintf(`avg_over_time((%s)[%ds:10s])`, sli.TrackQuery(parityWindow, sel), secs)
	}
	for dst, expr := range exprs {
		v, err := vector(ctx, q, expr, at)
		if err != nil {
			return st, err
		}
		*dst = math.NaN()
		if len(v) > 0 {
			*dst = float64(v[0].Value)
		}
	}
	return st, nil
}

// formatHPARun is a group's time series (one row per 10 s sample) and its figures, as text.
func formatHPARun(r hpaRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n== hpa-groups: group %s (%s); stable unpooled, gray pooled\n", r.Group.Name, r.Group.Desc)
	b.WriteString(hpaSeriesTable(r, false))
	b.WriteString(hpaStatsTable(r, false))
	return b.String()
}

// hpaSeriesTable is one row per sample: each track's ready/total replicas, the HPA's desired
// count, CPU (% of requests) and the latency trigger's p95 (s); markdown when md.
func hpaSeriesTable(r hpaRun, md bool) string {
	var b strings.Builder
	row := func(cells ...string) {
		if md {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
			return
		}
		fmt.Fprintf(&b, "  %-6s %-6s %-34s %-34s\n", cells[0], cells[1], cells[2], cells[3])
	}
	row("t", "phase", "stable (ready/total, want, cpu, p95)", "gray (ready/total, want, cpu, p95)")
	if md {
		b.WriteString("|---|---|---|---|\n")
	}
	cell := func(s hpaSample) string {
		c := fmt.Sprintf("%d/%d", s.Ready, s.Replicas)
		if s.Min > 0 {
			c += fmt.Sprintf(" want %d", s.Desired)
			if s.CPU >= 0 {
				c += fmt.Sprintf(" cpu %d%%", s.CPU)
			} else {
				c += " cpu ?"
			}
		}
		if s.Latency >= 0 {
			c += fmt.Sprintf(" p95 %.3fs", s.Latency)
		}
		return c
	}
	for i := 0; i+1 < len(r.Samples); i += 2 {
		a, g := r.Samples[i], r.Samples[i+1]
		if a.Track == "gray" {
			a, g = g, a
		}
		row(a.At.String(), a.Phase, cell(a), cell(g))
	}
	return b.String()
}

// hpaStatsTable is each track's figures over the high step.
func hpaStatsTable(r hpaRun, md bool) string {
	var b strings.Builder
	head := []string{"track (build)", "HPA wants more after", "ready after", "max ready", "p95", "p99", "error ratio (5xx)", "CPU/request", "requests"}
	if md {
		fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	} else {
		fmt.Fprintf(&b, "  high step %s:\n", r.HighLen)
	}
	for _, t := range []string{"stable", "gray"} {
		st := r.Stats[t]
		wanted, ready := scaleOut(r.Samples, t, r.HighStart)
		cells := []string{t + " (" + pooling[t] + ")", fmtWait(wanted), fmtWait(ready), fmt.Sprint(st.MaxReplicas),
			ms(st.P95), ms(st.P99), fmt.Sprintf("%.2f%%", 100*st.Errors), fmt.Sprintf("%.2f ms", 1000*st.CPUPerRequest), fmt.Sprintf("%.0f", st.Requests)}
		if r.Group.Name == "A" {
			cells[1], cells[2] = "no HPA", "no HPA"
		}
		if md {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
		} else {
			fmt.Fprintf(&b, "  %-18s wants more %-7s ready %-7s max %s  p95 %s p99 %s  errors %s  cpu/req %s  requests %s\n", cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6], cells[7], cells[8])
		}
	}
	return b.String()
}

// ms formats seconds as milliseconds; NaN (no requests) as "-".
func ms(s float64) string {
	if math.IsNaN(s) {
		return "-"
	}
	return fmt.Sprintf("%.0f ms", 1000*s)
}

// hpaGroupsDoc is docs/hpa-groups.md from the runs of groups A, B and C.
func hpaGroupsDoc(runs []hpaRun, at time.Time) string {
	var b strings.Builder
	b.WriteString(`# Autoscaling groups: no HPA, CPU, CPU plus p95 latency (KEDA)

Measured by ` + "`make hpa-groups`" + ` (hack/kindrun, step ` + "`hpa-groups-full`" + `) on the
offline kind cluster (one node, 2 cores), ` + at.UTC().Format("2006-01-02") + `. Written by that run; do not edit the tables.

Each group is the chart's release with both tracks at once, stable unpooled and gray pooled (the
two builds), CPU request and limit ` + hpaCPU + ` per pod (so that high concurrency queues instead of
borrowing the node's idle cores), started from 1 replica per track, under one stepped
load from an in-cluster ` + "`poolparity-load`" + ` Job against the split Service:
`)
	for _, ph := range hpaProfile(true) {
		fmt.Fprintf(&b, "- %s: %s at %g req/s, at most %d in flight\n", ph.Name, ph.D, ph.RPS, ph.Concurrency)
	}
	b.WriteString(`
"HPA wants more after" is the time from the high step's start to the first 10 s sample in which the
track's HPA desired more replicas than it had; "ready after" when they were ready. p95, p99, the error
ratio (5xx) and CPU per request are the parity catalog's SLIs (internal/catalog): each one's per-track 1m
recording rule, averaged over the high step. Group C's latency trigger reads the chart's recording rule
job_gray_status:http_request_duration_seconds:p95_rate1m of its track (autoscaling.mode keda).
`)
	for _, r := range runs {
		fmt.Fprintf(&b, "\n## Group %s: %s\n\n%s\n<details><summary>replicas every 10 s</summary>\n\n%s\n</details>\n", r.Group.Name, r.Group.Desc, hpaStatsTable(r, true), hpaSeriesTable(r, true))
	}
	b.WriteString("\n## The seed's claim beside the measurement\n\n| claim | measured |\n|---|---|\n")
	fmt.Fprintf(&b, "| group C reacts faster under high concurrency | %s |\n", hpaClaim(runs))
	fmt.Fprintf(&b, "\nOne run of each group, one after the other on one node. The times are read from samples %s\napart, so a difference of one sample is within the sampling: repeat `make hpa-groups` before\nreading more into it.\n", hpaSampleEvery)
	return b.String()
}

// hpaClaim compares groups B and C's time to want more replicas, per track.
func hpaClaim(runs []hpaRun) string {
	var b, c *hpaRun
	for i := range runs {
		switch runs[i].Group.Name {
		case "B":
			b = &runs[i]
		case "C":
			c = &runs[i]
		}
	}
	if b == nil || c == nil {
		return "not measured (groups B and C are both needed)"
	}
	var parts []string
	for _, t := range []string{"stable", "gray"} {
		wb, _ := scaleOut(b.Samples, t, b.HighStart)
		wc, _ := scaleOut(c.Samples, t, c.HighStart)
		verdict := "the same 10 s sample"
		switch {
		case wc < 0 && wb < 0:
			verdict = "neither scaled"
		case wc < 0:
			verdict = "only B scaled"
		case wb < 0 || wc < wb:
			verdict = "C faster"
		case wc > wb:
			verdict = "B faster"
		}
		parts = append(parts, fmt.Sprintf("%s (%s): B %s, C %s: %s", t, pooling[t], fmtWait(wb), fmtWait(wc), verdict))
	}
	return strings.Join(parts, "; ")
}

// fmtWait formats a time to scale out; -1 as never.
func fmtWait(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return d.Round(time.Second).String()
}

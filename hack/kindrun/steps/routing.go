package steps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
	"github.com/poolparity/poolparity/internal/scenario"
)

// RoutePoint is one 10 s sample of the weighted split through the Gateway: the replicas and HPA
// wishes of both tracks, the gray weight on the HTTPRoute, and the requests Traefik sent to each
// track's Service in the window.
type RoutePoint struct {
	At            time.Duration `json:"at_ns"` // since the load started
	Run           string        `json:"run"`
	StableReady   int           `json:"stable_ready"`
	StableDesired int           `json:"stable_desired"`
	GrayReady     int           `json:"gray_ready"`
	GrayDesired   int           `json:"gray_desired"`
	StableMin     int           `json:"stable_min"` // the HPA's minReplicas
	GrayMin       int           `json:"gray_min"`
	Forced        bool          `json:"forced,omitempty"` // gray's replica bounds moved by the run
	Weight        float64       `json:"weight_percent"`   // the gray backend's share of the route's weights
	Requests      float64       `json:"requests"`         // Traefik's requests to both tracks in the window
	Share         float64       `json:"gray_share"`       // gray's share of them, 0-1
}

// routedRun is one hold of the route at routeWeight: the gray pool mode and the load's length.
// At force into the load the run moves the gray track by forceReplicas through its HPA's bounds
// (forcedRange), so that the replicas move whatever the load makes the HPAs do (the bounds are
// restored at the run's end).
type routedRun struct {
	name, gray string
	load       time.Duration
	force      time.Duration
}

// forceReplicas is how many replicas the routed runs move the gray track by.
const forceReplicas = 2

// routingStep holds the chart's HTTPRoute at routeWeight (a 90/10 split by weight through
// Traefik) while load drives the per-track HPAs, once with a gray that costs more CPU per
// request than stable and once with a good one, and measures at the Gateway the share of
// requests the gray track gets every 10 s. The replica split's drift under the same load is the
// scenarios step's split table (same rate, same HPAs, the split Service).
type routingStep struct{}

// routingDef declares the "routing" step.
func routingDef() harness.Def {
	return harness.Def{Step: routingStep{}, Needs: []string{"env", "helm-install"}, Target: "routing", Doc: "Hold the chart's HTTPRoute at gray 10% through Traefik while load drives the HPAs; the share at the Gateway every 10 s.", Default: true, Beside: BesideRouting}
}

// Name implements Step.
func (routingStep) Name() string { return "routing" }

const (
	// routeWeight is the gray weight the routing step holds.
	routeWeight = 10
	// maxRouteGap is how far (in percentage points) the gray share at the Gateway may stray from
	// the weight in a 10 s window or over a run.
	maxRouteGap = 3.0
	// minWindowRequests: a window with fewer requests is shown, not judged.
	minWindowRequests = 100
)

// defaultRoutedRuns: misuse-reset (scrubs every pooled buffer, more CPU per request than the
// unpooled stable) for most of a load phase (the HPAs scaled 40-70 s into one here: 100 s of the
// default 130), then the pooled gray for 45 s (four 10 s windows).
func defaultRoutedRuns(env *harness.Env) []routedRun {
	return []routedRun{
		{name: "routed-costly", gray: "misuse-reset", load: max(env.Cfg.LoadDuration-30*time.Second, 60*time.Second), force: 20 * time.Second},
		{name: "routed-good", gray: scenario.Pooled, load: 45 * time.Second, force: 10 * time.Second},
	}
}

// routingValues are the chart values of a routed run: the route by weight through the run's
// Gateway, the gray pool mode, an unpooled stable.
func routingValues(gray string) []string {
	return []string{
		"--set", "routing.mode=gatewayAPI",
		"--set", "routing.gatewayAPI.parentRefs[0].name=" + gatewayName,
		"--set", "routing.gatewayAPI.parentRefs[0].namespace=" + gatewayNS,
		"--set", fmt.Sprintf("routing.gatewayAPI.weights.stable=%d", 100-routeWeight),
		"--set", fmt.Sprintf("routing.gatewayAPI.weights.gray=%d", routeWeight),
		"--set", "tracks.stable.poolMode=" + scenario.Unpooled,
		"--set", "tracks.gray.poolMode=" + gray,
	}
}

// Run implements Step.
func (routingStep) Run(ctx context.Context, env *harness.Env) (harness.Outcome, error) {
	k, err := env.Kube()
	if err != nil {
		return harness.Outcome{}, err
	}
	runs := defaultRoutedRuns(env)
	var o outcome[RoutingResult]
	var failed []string
	for _, r := range runs {
		pts, err := routedRunOnce(ctx, env, k, r)
		o.Result.Routed = append(o.Result.Routed, pts...)
		if err != nil {
			return o.done(), fmt.Errorf("%s: %w", r.name, err)
		}
		if err := checkRouted(r.name, pts); err != nil {
			failed = append(failed, err.Error())
		}
	}
	env.Print(routedTable(o.Result.Routed))
	moved := replicasMoved(o.Result.Routed)
	if len(moved) == 0 {
		failed = append(failed, fmt.Sprintf("no track's replicas moved during the routed runs, not even gray's after its HPA's bounds were moved by %d: the weight was not held against moving replicas", forceReplicas))
	}
	// The chart's usual values for the steps after this one (the split Service, no route).
	if err := helmInstall(ctx, env); err != nil {
		return o.done(), err
	}
	if len(failed) > 0 {
		return o.done(), errors.New(strings.Join(failed, "; "))
	}
	o.Note = fmt.Sprintf("gray share at the Gateway held at %d%% within %.0f points while %v moved (gray moved by %d through its HPA's bounds; the HPAs by themselves wanted more than their minimum for %v) (%s)",
		routeWeight, maxRouteGap, moved, forceReplicas, hpaScaled(o.Result.Routed), routedSummary(o.Result.Routed))
	return o.done(), nil
}

// routedRunOnce installs the chart with the route at routeWeight and r's gray, loads it through
// the Gateway and samples every 10 s.
func routedRunOnce(ctx context.Context, env *harness.Env, k *kube.Kube, r routedRun) ([]RoutePoint, error) {
	ns, release, route := env.Cfg.Namespace, env.Cfg.Release, fullname(env)
	env.Logf("%s: the route at gray %d%% with gray %s", r.name, routeWeight, r.gray)
	if err := helmInstall(ctx, env, routingValues(r.gray)...); err != nil {
		return nil, err
	}
	err := kube.Poll(ctx, 2*time.Second, 2*time.Minute, "Traefik to accept HTTPRoute "+route, func() (bool, error) {
		return k.RouteProgrammed(ctx, ns, route)
	})
	if err != nil {
		return nil, err
	}
	logw, err := env.LogFile("port-forward-traefik")
	if err != nil {
		return nil, err
	}
	defer logw.Close()
	metricsURL, stop, err := k.PortForward(ctx, gatewayNS, "traefik-metrics", traefikMetricsPort, logw)
	if err != nil {
		return nil, fmt.Errorf("port-forwarding Traefik's metrics: %w", err)
	}
	defer stop()
	backends := map[string]string{
		ns + "-" + trackName(env, "stable") + "-http-": "stable",
		ns + "-" + trackName(env, "gray") + "-http-":   "gray",
	}
	prev, err := traefikRequests(ctx, metricsURL, backends)
	if err != nil {
		return nil, err
	}
	job, err := startLoadAt(ctx, env, k, r.name, fmt.Sprintf("http://%s.%s:80", traefikService, gatewayNS), r.load, env.Cfg.LoadRPS)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var pts []RoutePoint
	var restore *kube.HPARange // the gray HPA's bounds before the run moved them
	defer func() {
		if restore != nil {
			restoreRange(context.WithoutCancel(ctx), env, k, r, *restore)
		}
	}()
	for time.Since(start) < r.load {
		select {
		case <-ctx.Done():
			return pts, ctx.Err()
		case <-time.After(10 * time.Second):
		}
		at := time.Since(start).Round(time.Second)
		now, err := traefikRequests(ctx, metricsURL, backends)
		if err != nil {
			env.Logf("%s +%s: reading Traefik's metrics: %v", r.name, at, err)
			continue
		}
		p := RoutePoint{At: at, Run: r.name}
		gray, all := now["gray"]-prev["gray"], now["gray"]+now["stable"]-prev["gray"]-prev["stable"]
		prev = now
		p.Requests = all
		if all > 0 {
			p.Share = gray / all
		}
		if w, err := k.RouteWeights(ctx, ns, route); err == nil {
			if sum := w[trackName(env, "gray")] + w[trackName(env, "stable")]; sum > 0 {
				p.Weight = 100 * float64(w[trackName(env, "gray")]) / float64(sum)
			}
		} else {
			env.Logf("%s +%s: %v", r.name, at, err)
		}
		if tracks, err := sampleTracks(ctx, k, ns, release, r.name, at); err == nil {
			for _, t := range tracks {
				if t.Track == "gray" {
					p.GrayReady, p.GrayDesired, p.GrayMin = t.Ready, t.Desired, t.Min
				} else {
					p.StableReady, p.StableDesired, p.StableMin = t.Ready, t.Desired, t.Min
				}
			}
		}
		if restore == nil && at >= r.force {
			restore = moveGray(ctx, env, k, r, p.GrayReady)
			p.Forced = restore != nil
		}
		pts = append(pts, p)
		env.Logf("%s", routedRow(p))
	}
	if err := k.WaitJob(ctx, ns, job, 2*time.Minute); err != nil {
		logs, _ := k.PodLogs(ctx, ns, "job-name="+job, 30)
		return pts, fmt.Errorf("load Job %s did not complete: %w\n%s", job, err, harness.Indent(logs))
	}
	if logs, err := k.PodLogs(ctx, ns, "job-name="+job, 0); err == nil {
		env.Logf("%s: load generator counts: %s", r.name, strings.Join(strings.Fields(logs), " "))
	}
	return pts, nil
}

// moveGray moves the gray track by forceReplicas through its HPA's bounds (forcedRange). It
// returns the bounds to restore, or nil when it moved nothing.
func moveGray(ctx context.Context, env *harness.Env, k *kube.Kube, r routedRun, ready int) *kube.HPARange {
	name := trackName(env, "gray")
	cur, err := k.HPARange(ctx, env.Cfg.Namespace, name)
	if err != nil {
		env.Logf("%s: %v", r.name, err)
		return nil
	}
	to, ok := forcedRange(cur, int32(ready))
	if !ok {
		env.Logf("%s: the gray HPA's bounds %d-%d leave no room to move %d ready replicas", r.name, cur.Min, cur.Max, ready)
		return nil
	}
	if err := k.SetHPARange(ctx, env.Cfg.Namespace, name, to); err != nil {
		env.Logf("%s: %v", r.name, err)
		return nil
	}
	env.Logf("%s: the gray HPA's bounds moved from %d-%d to %d-%d (%d ready)", r.name, cur.Min, cur.Max, to.Min, to.Max, ready)
	return &cur
}

// forcedRange returns the HPA bounds that move a track at ready replicas by up to
// forceReplicas: up through minReplicas while maxReplicas leaves room (the scenarios' loads may
// have left a track at its maximum), else down through maxReplicas, never below one replica.
// ok is false when neither way moves it (bounds 1-1).
func forcedRange(cur kube.HPARange, ready int32) (kube.HPARange, bool) {
	ready = max(ready, 1)
	switch {
	case ready < cur.Max:
		return kube.HPARange{Min: min(ready+forceReplicas, cur.Max), Max: cur.Max}, true
	case ready > 1:
		down := max(ready-forceReplicas, 1)
		return kube.HPARange{Min: min(cur.Min, down), Max: down}, true
	}
	return cur, false
}

// restoreRange sets the gray HPA's bounds back to r, the release's.
func restoreRange(ctx context.Context, env *harness.Env, k *kube.Kube, run routedRun, r kube.HPARange) {
	if err := k.SetHPARange(ctx, env.Cfg.Namespace, trackName(env, "gray"), r); err != nil {
		env.Logf("%s: restoring the gray HPA's bounds: %v", run.name, err)
	}
}

// trackName is the name the chart gives each object of one track: its Deployment, its HPA or
// ScaledObject, and its Service (a backendRef of the chart's HTTPRoute).
func trackName(env *harness.Env, track string) string { return fullname(env) + "-" + track }

// traefikRequests scrapes Traefik's /metrics and sums traefik_service_requests_total by track:
// backends maps the prefix of a Traefik service name (namespace-Service-http-port, as its
// Gateway API provider names a backendRef) to the track.
func traefikRequests(ctx context.Context, base string, backends map[string]string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping Traefik: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping Traefik: %s", resp.Status)
	}
	return parseTraefikRequests(resp.Body, backends)
}

// parseTraefikRequests sums traefik_service_requests_total of the text exposition in r by track.
func parseTraefikRequests(r io.Reader, backends map[string]string) (map[string]float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing Traefik's metrics: %w", err)
	}
	out := map[string]float64{}
	fam, ok := fams["traefik_service_requests_total"]
	if !ok {
		return out, nil
	}
	for _, m := range fam.GetMetric() {
		var svc string
		for _, l := range m.GetLabel() {
			if l.GetName() == "service" {
				svc = l.GetValue()
			}
		}
		for prefix, track := range backends {
			if strings.HasPrefix(svc, prefix) {
				out[track] += m.GetCounter().GetValue()
			}
		}
	}
	return out, nil
}

// checkRouted requires windows with enough requests, each and all of them together within
// maxRouteGap points of routeWeight.
func checkRouted(run string, pts []RoutePoint) error {
	var gray, all float64
	judged := 0
	for _, p := range pts {
		gray += p.Share * p.Requests
		all += p.Requests
		if p.Requests < minWindowRequests {
			continue
		}
		judged++
		if math.Abs(100*p.Share-routeWeight) > maxRouteGap {
			return fmt.Errorf("%s at %s: the gray track got %.1f%% of %.0f requests at the Gateway, weight %d%%", run, p.At, 100*p.Share, p.Requests, routeWeight)
		}
		if math.Abs(p.Weight-routeWeight) > 0.5 {
			return fmt.Errorf("%s at %s: the route's gray weight is %.1f%%, want %d%%", run, p.At, p.Weight, routeWeight)
		}
	}
	if judged < 3 {
		return fmt.Errorf("%s: %d windows with %d requests or more, want 3: the share was not measured", run, judged, minWindowRequests)
	}
	if math.Abs(100*gray/all-routeWeight) > maxRouteGap {
		return fmt.Errorf("%s: the gray track got %.1f%% of %.0f requests at the Gateway, weight %d%%", run, 100*gray/all, all, routeWeight)
	}
	return nil
}

// replicasMoved lists the tracks whose ready replicas or HPA wish changed during the runs.
func replicasMoved(pts []RoutePoint) []string {
	var moved []string
	for _, track := range []string{"stable", "gray"} {
		seen := map[[2]int]bool{}
		for _, p := range pts {
			if track == "gray" {
				seen[[2]int{p.GrayReady, p.GrayDesired}] = true
			} else {
				seen[[2]int{p.StableReady, p.StableDesired}] = true
			}
		}
		if len(seen) > 1 {
			moved = append(moved, track)
		}
	}
	return moved
}

// hpaScaled lists the tracks whose HPA, by itself, wanted more replicas than its minimum at some
// sample of the runs (the load's doing, not the run's raised minimum).
func hpaScaled(pts []RoutePoint) []string {
	var out []string
	for _, track := range []string{"stable", "gray"} {
		for _, p := range pts {
			desired, min := p.StableDesired, p.StableMin
			if track == "gray" {
				desired, min = p.GrayDesired, p.GrayMin
			}
			if desired > min {
				out = append(out, track)
				break
			}
		}
	}
	return out
}

// routedSummary gives each run's share range at the Gateway.
func routedSummary(pts []RoutePoint) string {
	type span struct{ lo, hi float64 }
	spans := map[string]*span{}
	var order []string
	for _, p := range pts {
		if p.Requests < minWindowRequests {
			continue
		}
		s, ok := spans[p.Run]
		if !ok {
			s = &span{lo: 1, hi: 0}
			spans[p.Run] = s
			order = append(order, p.Run)
		}
		s.lo, s.hi = min(s.lo, p.Share), max(s.hi, p.Share)
	}
	var parts []string
	for _, r := range order {
		parts = append(parts, fmt.Sprintf("%s %.1f-%.1f%%", r, 100*spans[r].lo, 100*spans[r].hi))
	}
	return strings.Join(parts, ", ")
}

func routedRow(p RoutePoint) string {
	forced := ""
	if p.Forced {
		forced = "  (gray's HPA bounds moved)"
	}
	return fmt.Sprintf("  %-14s %5s  stable %d ready (HPA %d, min %d)  gray %d ready (HPA %d, min %d)  weight %4.1f%%  requests %5.0f  gray share %5.1f%%%s",
		p.Run, p.At, p.StableReady, p.StableDesired, p.StableMin, p.GrayReady, p.GrayDesired, p.GrayMin, p.Weight, p.Requests, 100*p.Share, forced)
}

// routedTable prints every sample of the routed runs.
func routedTable(pts []RoutePoint) string {
	if len(pts) == 0 {
		return ""
	}
	var w strings.Builder
	fmt.Fprintf(&w, "\n== routed split: gray weight %d%% on the HTTPRoute, share of the requests Traefik sent to each track every 10 s\n", routeWeight)
	for _, p := range pts {
		w.WriteString(routedRow(p) + "\n")
	}
	return w.String()
}

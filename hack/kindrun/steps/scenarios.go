package steps

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/images"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/scenario"
)

// ReplicaPoint is one sample of a track's Deployment and HPA during load.
type ReplicaPoint struct {
	At       time.Duration `json:"at_ns"` // since the load started
	Scenario string        `json:"scenario"`
	Track    string        `json:"track"`
	Replicas int           `json:"replicas"`
	Ready    int           `json:"ready"`
	Min      int           `json:"hpa_min"`
	Desired  int           `json:"hpa_desired"`
	CPU      int           `json:"hpa_cpu_percent"` // -1 when the HPA has no CPU reading yet
}

// SplitPoint compares the gray track's share of requests with its share of ready replicas.
type SplitPoint struct {
	At         time.Duration `json:"at_ns"`
	Scenario   string        `json:"scenario"`
	ReadyGray  int           `json:"ready_gray"`
	ReadyTotal int           `json:"ready_total"`
	ReadyShare float64       `json:"ready_share"`   // gray ready / all ready, averaged over the rate window
	ReqShare   float64       `json:"request_share"` // gray requests / all requests over the last minute
	Steady     bool          `json:"steady"`        // ready replicas did not change during the window
}

// Scenario is one verdict read from the cluster's Prometheus.
type Scenario struct {
	Name      string         `json:"name"`
	Want      parity.Verdict `json:"want"`    // PASS or FAIL
	Verdict   parity.Verdict `json:"verdict"` // what the parity report said
	WantAlert []string       `json:"want_alert,omitempty"`
	Firing    []string       `json:"firing"` // poolparity alerts firing at the end
	Report    string         `json:"report"`
	OK        bool           `json:"ok"`
}

// scenarioValues are the chart values (helm --set) that run sc's tracks: both pool modes and
// the gray track's fault environment, set every time, so that no scenario inherits the last
// one's settings.
func scenarioValues(sc scenario.Scenario) []string {
	set := []string{"--set", "tracks.stable.poolMode=" + sc.StableMode, "--set", "tracks.gray.poolMode=" + sc.GrayMode}
	for i, kv := range sc.GrayEnv() {
		k, v, _ := strings.Cut(kv, "=")
		set = append(set, "--set", fmt.Sprintf("tracks.gray.env[%d].name=%s", i, k), "--set-string", fmt.Sprintf("tracks.gray.env[%d].value=%s", i, v))
	}
	return set
}

// scenariosStep runs each scenario in turn on the installed chart: configure its tracks, load
// them, watch the HPAs and the split, and judge the verdict and the alerts from Prometheus.
// The names are internal/scenario's.
type scenariosStep struct{ names []string }

// kindScenarios are the scenarios the kind run runs, in order: a pooled gray (PASS), the same
// with 40 ms injected into every API request of the gray track (FAIL,
// PoolParityLatencyRegression), and a real pool misuse, POOL_MODE=misuse-dirty (a reset that
// forgets the decoded item, which the pool sanitizer catches and PoolParityDirtyObjects names;
// docs/pool-misuse.md).
func kindScenarios() []string {
	return []string{scenario.Good, scenario.Regression, scenario.MisuseDirty}
}

// scenariosDef declares the "scenarios" step.
func scenariosDef() harness.Def {
	return harness.Def{Step: scenariosStep{names: kindScenarios()}, Needs: []string{"env", "helm-install"}, Doc: "The scenarios good, regression and misuse-dirty under load on the split Service: HPAs, the split, verdicts and alerts.", Default: true, Beside: SideBySide}
}

// Name implements Step.
func (scenariosStep) Name() string { return "scenarios" }

// Run implements Step.
func (s scenariosStep) Run(ctx context.Context, env *harness.Env) (harness.Outcome, error) {
	var scs []scenario.Scenario
	for _, n := range s.names {
		sc, err := scenario.Lookup(n)
		if err != nil {
			return harness.Outcome{}, err
		}
		scs = append(scs, sc)
	}
	k, err := env.Kube()
	if err != nil {
		return harness.Outcome{}, err
	}
	ps, err := openProm(ctx, env, k)
	if err != nil {
		return harness.Outcome{}, err
	}
	defer ps.stop()
	q := ps.q
	var res ScenariosResult
	var failed []string
	for _, sc := range scs {
		env.Logf("scenario %s: configuring the chart", sc.Name)
		if err := helmInstall(ctx, env, scenarioValues(sc)...); err != nil {
			return harness.Outcome{Result: res}, err
		}
		m, err := runScenario(ctx, env, k, q, sc)
		res.merge(m)
		if err != nil {
			return harness.Outcome{Result: res}, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		if r := m.Scenarios[0]; !r.OK {
			failed = append(failed, fmt.Sprintf("%s: verdict %s (want %s), firing %v (want %s)", sc.Name, r.Verdict, r.Want, r.Firing, wantAlerts(sc)))
		}
	}
	// What the HPAs did under the scenarios' load is reported; that they react to CPU is proved
	// by a load sized from this run's CPU per request, which must make one scale.
	res.Scaled = scaledTracks(res.Replicas)
	check, pts, err := checkScaleOnCPU(ctx, env, k, q)
	res.Replicas, res.SizedScale = append(res.Replicas, pts...), &check
	switch {
	case scaledToMax(err, res.Replicas):
		env.Logf("hpa-cpu: no sized load: the scenarios' load already took every track's HPA from its minimum to its maximum on CPU")
	case err != nil:
		failed = append(failed, "hpa-cpu: "+err.Error())
	}
	if err := checkSplit(res.Split); err != nil {
		failed = append(failed, err.Error())
	}
	if len(failed) > 0 {
		return harness.Outcome{Result: res}, errors.New(strings.Join(failed, "; "))
	}
	return harness.Outcome{Note: fmt.Sprintf("%d scenarios as expected; HPA scaled %v under their load; sized load: %s", len(scs), res.Scaled, scaleNote(check)), Result: res}, nil
}

// wantAlerts says which alerts a scenario wants firing.
func wantAlerts(sc scenario.Scenario) string {
	if len(sc.Alerts) == 0 {
		return "none"
	}
	return "one of " + strings.Join(sc.Alerts, ", ")
}

// promServiceOf is the Service of the cluster's Prometheus.
func promServiceOf(env *harness.Env) string {
	if env.Cfg.Mode == "online" {
		return kpsRelease + "-prometheus"
	}
	return promService
}

// portForwardProm forwards a loopback port to the cluster's Prometheus and waits until it
// answers; it returns its base URL and the function that stops the forward.
func portForwardProm(ctx context.Context, env *harness.Env, k *kube.Kube) (string, func(), error) {
	logw, err := env.LogFile("port-forward")
	if err != nil {
		return "", nil, err
	}
	var base string
	stop := func() {}
	err = kube.Until(ctx, 2*time.Second, 90*time.Second, "Prometheus through a port-forward", func(ctx context.Context) (bool, error) {
		b, st, err := k.PortForward(ctx, monitoringNS, promServiceOf(env), 9090, logw)
		if err != nil {
			return false, err
		}
		if !httpOK(ctx, b+"/-/ready") {
			st()
			return false, nil
		}
		base, stop = b, st
		return true, nil
	})
	if err != nil {
		logw.Close()
		return "", nil, err
	}
	return base, func() { stop(); logw.Close() }, nil
}

// runScenario runs one load phase and judges it near its end, while the load still runs. It
// returns the scenario's outcome (Scenarios has its one entry) and what it sampled.
func runScenario(ctx context.Context, env *harness.Env, k *kube.Kube, q parity.Querier, sc scenario.Scenario) (ScenariosResult, error) {
	var m ScenariosResult
	res := Scenario{Name: sc.Name, Want: sc.Want, WantAlert: sc.Alerts}
	ns, release := env.Cfg.Namespace, env.Cfg.Release
	err := kube.Poll(ctx, 3*time.Second, 3*time.Minute, "Prometheus to scrape both tracks and load the rules", func() (bool, error) {
		return scrapedAndRuled(ctx, q, ns, release)
	})
	if err != nil {
		return m, err
	}
	job, err := startLoadAt(ctx, env, k, sc.Name, fmt.Sprintf("http://%s:80", fullname(env)), env.Cfg.LoadDuration, env.Cfg.LoadRPS)
	if err != nil {
		return m, err
	}
	start := time.Now()
	judgeAt := env.Cfg.LoadDuration - 15*time.Second
	var ready []readySample
	for time.Since(start) < judgeAt {
		select {
		case <-ctx.Done():
			return m, ctx.Err()
		case <-time.After(10 * time.Second):
		}
		at := time.Since(start).Round(time.Second)
		pts, err := sampleTracks(ctx, k, ns, release, sc.Name, at)
		if err != nil {
			env.Logf("sampling replicas: %v", err)
			continue
		}
		m.Replicas = append(m.Replicas, pts...)
		ready = append(ready, readyOf(at, pts))
		env.Logf("%s +%s: %s", sc.Name, at, formatPoints(pts))
		if at < 70*time.Second {
			continue
		}
		gray, total, err := requestRates(ctx, q, ns, release, time.Now())
		if err != nil {
			continue
		}
		if sp, err := splitPoint(sc.Name, at, gray/total, ready); err == nil {
			m.Split = append(m.Split, sp)
			env.Logf("%s +%s: split gray requests %.0f%% vs gray ready %.0f%% (%d/%d)%s", sc.Name, at,
				100*sp.ReqShare, 100*sp.ReadyShare, sp.ReadyGray, sp.ReadyTotal, map[bool]string{true: "", false: " (replicas changing)"}[sp.Steady])
		}
	}
	var text strings.Builder
	report, err := judgeParity(ctx, q, ns, release, filepath.Join(env.Cfg.OutDir, "parity", sc.Name), &text)
	env.Print(text.String())
	if err != nil {
		return m, err
	}
	res.Verdict, res.Report = report.Verdict, strings.TrimSpace(text.String())
	if res.Firing, err = firingAlerts(ctx, q, ns, release); err != nil {
		return m, err
	}
	env.Logf("%s: verdict %s, alerts firing %v", sc.Name, res.Verdict, res.Firing)
	res.OK = sc.Met(res.Verdict, res.Firing)
	m.Scenarios = []Scenario{res}
	if err := k.WaitJob(ctx, ns, job, 2*time.Minute); err != nil {
		logs, _ := k.PodLogs(ctx, ns, "job-name="+job, 30)
		return m, fmt.Errorf("load Job %s did not complete: %w\n%s", job, err, harness.Indent(logs))
	}
	if logs, err := k.PodLogs(ctx, ns, "job-name="+job, 0); err == nil {
		env.Logf("%s: load generator counts: %s", sc.Name, strings.Join(strings.Fields(logs), " "))
	}
	return m, nil
}

// loadJob renders the bounded load Job named job: the in-cluster load generator against target
// at rps for d, with the generator's extra flags (e.g. -get for the example service). Its CPU
// request follows the rate (50m at 60 req/s, at least 10m): the node's requests are shared by
// the steps side by side.
func loadJob(job, image, target string, d time.Duration, rps float64, extra ...string) []byte {
	cpu := max(10, int(math.Ceil(rps*50/60)))
	var flags strings.Builder
	for _, f := range extra {
		fmt.Fprintf(&flags, ", %q", f)
	}
	return []byte(fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %[1]s
  labels: {app.kubernetes.io/name: poolparity-load}
spec:
  backoffLimit: 0
  activeDeadlineSeconds: %[2]d
  template:
    metadata:
      labels: {app.kubernetes.io/name: poolparity-load}
    spec:
      restartPolicy: Never
      automountServiceAccountToken: false
      enableServiceLinks: false
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        seccompProfile: {type: RuntimeDefault}
      containers:
        - name: load
          image: %[3]s
          imagePullPolicy: IfNotPresent
          command: ["/poolparity-load"]
          # A new connection per request, so kube-proxy spreads requests (not just connections)
          # over the ready pods of both tracks.
          args: ["-target", "%[4]s", "-duration", "%[5]s", "-rps", "%[6]g", "-concurrency", "16", "-keep-alive=false", "-max-error-ratio", "0.05"%[7]s]
          resources:
            requests: {cpu: %[8]dm, memory: 32Mi}
            limits: {memory: 128Mi}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: ["ALL"]}
`, job, int(d.Seconds())+120, image, target, d, rps, flags.String(), cpu))
}

// startLoadAt (re)creates a bounded load Job named after name against target and returns its
// name.
func startLoadAt(ctx context.Context, env *harness.Env, k *kube.Kube, name, target string, d time.Duration, rps float64) (string, error) {
	return startLoadIn(ctx, env, k, env.Cfg.Namespace, name, target, d, rps)
}

// startLoadIn (re)creates a bounded load Job named after name in namespace ns against target,
// with the generator's extra flags, and returns its name.
func startLoadIn(ctx context.Context, env *harness.Env, k *kube.Kube, ns, name, target string, d time.Duration, rps float64, extra ...string) (string, error) {
	job := "poolparity-load-" + name
	if err := k.DeleteJob(ctx, ns, job); err != nil {
		return "", err
	}
	if err := k.Apply(ctx, loadJob(job, images.ServiceImage(env), target, d, rps, extra...), ns); err != nil {
		return "", fmt.Errorf("starting load Job %s: %w", job, err)
	}
	env.Logf("load Job %s: %g req/s for %s against %s", job, rps, d, target)
	return job, nil
}

// loadStep runs one load phase on its own (the Makefile's `load`).
type loadStep struct{}

// loadDef declares the "load" step.
func loadDef() harness.Def {
	return harness.Def{Step: loadStep{}, Needs: []string{"env", "helm-install"}, Target: "load", Doc: "Run the in-cluster load generator Job against the split Service."}
}

// Name implements Step.
func (loadStep) Name() string { return "load" }

// Run implements Step.
func (loadStep) Run(ctx context.Context, env *harness.Env) (harness.Outcome, error) {
	k, err := env.Kube()
	if err != nil {
		return harness.Outcome{}, err
	}
	job, err := startLoadAt(ctx, env, k, "manual", fmt.Sprintf("http://%s:80", fullname(env)), env.Cfg.LoadDuration, env.Cfg.LoadRPS)
	if err != nil {
		return harness.Outcome{}, err
	}
	return harness.Outcome{Note: job}, k.WaitJob(ctx, env.Cfg.Namespace, job, env.Cfg.LoadDuration+2*time.Minute)
}

// parityStep prints the parity report from the cluster's Prometheus (the Makefile's `parity`)
// and writes it under OutDir/parity.
type parityStep struct{}

// parityDef declares the "parity" step.
func parityDef() harness.Def {
	return harness.Def{Step: parityStep{}, Needs: []string{"env", "helm-install"}, Target: "parity", Doc: "Port-forward Prometheus and print the parity table."}
}

// Name implements Step.
func (parityStep) Name() string { return "parity" }

// Run implements Step.
func (parityStep) Run(ctx context.Context, env *harness.Env) (harness.Outcome, error) {
	k, err := env.Kube()
	if err != nil {
		return harness.Outcome{}, err
	}
	ps, err := openProm(ctx, env, k)
	if err != nil {
		return harness.Outcome{}, err
	}
	defer ps.stop()
	var text strings.Builder
	r, err := judgeParity(ctx, ps.q, env.Cfg.Namespace, env.Cfg.Release, filepath.Join(env.Cfg.OutDir, "parity"), &text)
	env.Print(text.String())
	return harness.Outcome{Note: string(r.Verdict)}, err
}

// fullname is the chart's object name prefix for the release (see _helpers.tpl).
func fullname(env *harness.Env) string { return fullnameOf(env.Cfg.Release) }

// fullnameOf is the chart's object name prefix of release (_helpers.tpl "poolparity.fullname"):
// the release name, plus "-poolparity" unless it already holds it.
func fullnameOf(release string) string {
	if strings.Contains(release, "poolparity") {
		return release
	}
	return release + "-poolparity"
}

func httpOK(ctx context.Context, u string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// trackLabel is the label naming a Deployment's track.
const trackLabel = "poolparity.dev/track"

// sampleTracks reads both tracks' Deployments and HPAs of the release.
func sampleTracks(ctx context.Context, k *kube.Kube, ns, release, scenario string, at time.Duration) ([]ReplicaPoint, error) {
	sel := "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=app"
	ds, err := k.CS.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing the tracks' deployments: %w", err)
	}
	hs, err := k.CS.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing the tracks' HPAs: %w", err)
	}
	return replicaPoints(ds.Items, hs.Items, scenario, at), nil
}

// replicaPoints joins each track's Deployment with the HPA that scales it.
func replicaPoints(ds []appsv1.Deployment, hs []autoscalingv2.HorizontalPodAutoscaler, scenario string, at time.Duration) []ReplicaPoint {
	var pts []ReplicaPoint
	for _, d := range ds {
		p := ReplicaPoint{At: at, Scenario: scenario, Track: d.Labels[trackLabel],
			Replicas: int(d.Status.Replicas), Ready: int(d.Status.ReadyReplicas), CPU: -1}
		for _, h := range hs {
			if h.Spec.ScaleTargetRef.Name != d.Name {
				continue
			}
			p.Desired = int(h.Status.DesiredReplicas)
			p.Min = 1
			if h.Spec.MinReplicas != nil {
				p.Min = int(*h.Spec.MinReplicas)
			}
			for _, m := range h.Status.CurrentMetrics {
				if m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
					p.CPU = int(*m.Resource.Current.AverageUtilization)
				}
			}
		}
		pts = append(pts, p)
	}
	slices.SortFunc(pts, func(a, b ReplicaPoint) int { return strings.Compare(a.Track, b.Track) })
	return pts
}

// scaledTracks lists the tracks whose HPA, with a CPU reading, had raised the replicas above its
// minimum in some sample, in the order first seen.
func scaledTracks(pts []ReplicaPoint) []string {
	var out []string
	for _, p := range pts {
		if p.Min > 0 && p.Replicas > p.Min && p.CPU >= 0 && !slices.Contains(out, p.Track) {
			out = append(out, p.Track)
		}
	}
	return out
}

func formatPoints(pts []ReplicaPoint) string {
	var parts []string
	for _, p := range pts {
		cpu := "cpu ?"
		if p.CPU >= 0 {
			cpu = fmt.Sprintf("cpu %d%%", p.CPU)
		}
		parts = append(parts, fmt.Sprintf("%s %d/%d ready (HPA wants %d, %s)", p.Track, p.Ready, p.Replicas, p.Desired, cpu))
	}
	return strings.Join(parts, ", ")
}

type readySample struct {
	at          time.Duration
	gray, total int
}

func readyOf(at time.Duration, pts []ReplicaPoint) readySample {
	s := readySample{at: at}
	for _, p := range pts {
		s.total += p.Ready
		if p.Track == "gray" {
			s.gray += p.Ready
		}
	}
	return s
}

// splitPoint compares the gray share of requests over the last minute with the gray share of
// ready replicas over the same minute.
func splitPoint(scenario string, at time.Duration, reqShare float64, ready []readySample) (SplitPoint, error) {
	sp := SplitPoint{At: at, Scenario: scenario, ReqShare: reqShare, Steady: true}
	if len(ready) == 0 {
		return SplitPoint{}, errors.New("no ready replicas sampled")
	}
	var sum float64
	n := 0
	last := ready[len(ready)-1]
	for _, r := range ready {
		if r.at < at-time.Minute || r.total == 0 {
			continue
		}
		sum += float64(r.gray) / float64(r.total)
		n++
		if r.gray != last.gray || r.total != last.total {
			sp.Steady = false
		}
	}
	if n == 0 {
		return SplitPoint{}, errors.New("no ready replicas sampled")
	}
	sp.ReadyShare, sp.ReadyGray, sp.ReadyTotal = sum/float64(n), last.gray, last.total
	return sp, nil
}

// maxSplitGap is how far the gray share of requests may stray from its share of ready replicas
// over a minute with steady replicas (kube-proxy picks an endpoint at random per connection).
const maxSplitGap = 0.10

// checkSplit requires at least one steady sample, and every steady one within maxSplitGap.
func checkSplit(pts []SplitPoint) error {
	steady := 0
	for _, p := range pts {
		if !p.Steady {
			continue
		}
		steady++
		if d := p.ReqShare - p.ReadyShare; d > maxSplitGap || d < -maxSplitGap {
			return fmt.Errorf("split at %s of %s: gray got %.1f%% of requests with %.1f%% of the ready replicas", p.At, p.Scenario, 100*p.ReqShare, 100*p.ReadyShare)
		}
	}
	if steady == 0 {
		return errors.New("no split sample with steady replicas: the split was not measured")
	}
	return nil
}

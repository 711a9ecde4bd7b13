package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

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

// kindScenarios are the scenarios the kind run runs, in order, on the installed chart: a pooled
// gray (PASS), the same with 40 ms injected into every API request of the gray track (FAIL,
// PoolParityLatencyRegression), and a real pool misuse, POOL_MODE=misuse-dirty (a reset that
// forgets the decoded item, which the pool sanitizer catches and PoolParityDirtyObjects names;
// docs/pool-misuse.md). internal/scenario says what each one runs and must show.
func kindScenarios() ([]scenario.Scenario, error) {
	var out []scenario.Scenario
	for _, name := range []string{scenario.Good, scenario.Regression, scenario.MisuseDirty} {
		sc, err := scenario.Lookup(name)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
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

// stepScenarios runs each scenario: configure the chart, load it, watch the HPAs and the split,
// and read the verdict and the alerts from Prometheus.
func (h *Harness) stepScenarios(ctx context.Context) (string, error) {
	prom, stop, err := h.portForward(ctx, monitoringNS, "svc/"+h.promService(), 9090)
	if err != nil {
		return "", err
	}
	defer stop()
	q, err := newPromAPI(prom)
	if err != nil {
		return "", err
	}
	scenarios, err := kindScenarios()
	if err != nil {
		return "", err
	}
	var failed []string
	for _, sc := range scenarios {
		h.logf("scenario %s: configuring the chart", sc.Name)
		if err := h.helmInstall(ctx, scenarioValues(sc)...); err != nil {
			return "", err
		}
		res, err := h.runScenario(ctx, q, sc)
		if err != nil {
			return "", fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		h.res.Scenarios = append(h.res.Scenarios, res)
		if !res.OK {
			failed = append(failed, fmt.Sprintf("%s: verdict %s (want %s), firing %v (want one of %q)", sc.Name, res.Verdict, res.Want, res.Firing, sc.Alerts))
		}
	}
	if len(h.res.Scaled) == 0 {
		failed = append(failed, "no HPA scaled a track above its minimum on CPU during the load")
	}
	if err := checkSplit(h.res.Split); err != nil {
		failed = append(failed, err.Error())
	}
	if len(failed) > 0 {
		return "", errors.New(strings.Join(failed, "; "))
	}
	return fmt.Sprintf("%d scenarios as expected; HPA scaled %v", len(scenarios), h.res.Scaled), nil
}

func (h *Harness) promService() string {
	if h.cfg.Mode == "online" {
		return kpsRelease + "-prometheus"
	}
	return promService
}

// runScenario runs one load phase and judges it near its end, while the load still runs.
func (h *Harness) runScenario(ctx context.Context, q parity.Querier, sc scenario.Scenario) (Scenario, error) {
	res := Scenario{Name: sc.Name, Want: sc.Want, WantAlert: sc.Alerts}
	if err := h.waitTargets(ctx, q); err != nil {
		return res, err
	}
	job, err := h.startLoad(ctx, sc.Name)
	if err != nil {
		return res, err
	}
	start := time.Now()
	judgeAt := h.cfg.LoadDuration - 15*time.Second
	var ready []readySample
	for time.Since(start) < judgeAt {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(10 * time.Second):
		}
		at := time.Since(start).Round(time.Second)
		pts, err := h.sampleTracks(ctx, sc.Name, at)
		if err != nil {
			h.logf("sampling replicas: %v", err)
			continue
		}
		h.res.Replicas = append(h.res.Replicas, pts...)
		ready = append(ready, readyOf(at, pts))
		h.logf("%s +%s: %s", sc.Name, at, formatPoints(pts))
		if at >= 70*time.Second {
			if sp, err := h.sampleSplit(ctx, q, sc.Name, at, ready); err == nil {
				h.res.Split = append(h.res.Split, sp)
				h.logf("%s +%s: split gray requests %.0f%% vs gray ready %.0f%% (%d/%d)%s", sc.Name, at,
					100*sp.ReqShare, 100*sp.ReadyShare, sp.ReadyGray, sp.ReadyTotal, map[bool]string{true: "", false: " (replicas changing)"}[sp.Steady])
			}
		}
	}
	var text strings.Builder
	report, err := judgeParity(ctx, q, h.cfg.Namespace, h.cfg.Release, filepath.Join(h.cfg.OutDir, "parity", sc.Name), io.MultiWriter(h.out, &text))
	if err != nil {
		return res, err
	}
	res.Verdict, res.Report = report.Verdict, strings.TrimSpace(text.String())
	res.Firing, err = firingAlerts(ctx, q)
	if err != nil {
		return res, err
	}
	h.logf("%s: verdict %s, alerts firing %v", sc.Name, res.Verdict, res.Firing)
	res.OK = sc.Met(res.Verdict, res.Firing)
	if _, err := h.kubectl(ctx, "load", "-n", h.cfg.Namespace, "wait", "--for=condition=complete", "job/"+job, "--timeout=120s"); err != nil {
		logs, _ := h.kubectl(ctx, "load", "-n", h.cfg.Namespace, "logs", "job/"+job, "--tail=30")
		return res, fmt.Errorf("load Job %s did not complete: %w\n%s", job, err, indent(logs))
	}
	if logs, err := h.kubectl(ctx, "load", "-n", h.cfg.Namespace, "logs", "job/"+job); err == nil {
		h.logf("%s: load generator counts: %s", sc.Name, strings.Join(strings.Fields(logs), " "))
	}
	return res, nil
}

// startLoad starts the in-cluster load generator against the split Service.
func (h *Harness) startLoad(ctx context.Context, name string) (string, error) {
	return h.startLoadAt(ctx, name, fmt.Sprintf("http://%s:80", h.fullname()), h.cfg.LoadDuration, h.cfg.LoadRPS)
}

// startLoadAt starts a bounded load Job named after name against target.
func (h *Harness) startLoadAt(ctx context.Context, name, target string, d time.Duration, rps float64) (string, error) {
	job := "poolparity-load-" + name
	image := h.serviceImage()
	yaml := fmt.Sprintf(`apiVersion: batch/v1
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
          args: ["-target", "%[4]s", "-duration", "%[5]s", "-rps", "%[6]g", "-concurrency", "16", "-keep-alive=false", "-max-error-ratio", "0.05"]
          resources:
            requests: {cpu: 50m, memory: 32Mi}
            limits: {memory: 128Mi}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: ["ALL"]}
`, job, int(d.Seconds())+120, image, target, d, rps)
	_, _ = h.kubectl(ctx, "load", "-n", h.cfg.Namespace, "delete", "job", job, "--ignore-not-found", "--wait=true")
	if err := h.kubectlApply(ctx, "load", []byte(yaml), "-n", h.cfg.Namespace); err != nil {
		return "", err
	}
	h.logf("load Job %s: %g req/s for %s against %s", job, rps, d, target)
	return job, nil
}

// stepLoadJob runs one load phase on its own (the Makefile's `load`).
func (h *Harness) stepLoadJob(ctx context.Context) (string, error) {
	job, err := h.startLoad(ctx, "manual")
	if err != nil {
		return "", err
	}
	_, err = h.kubectl(ctx, "load", "-n", h.cfg.Namespace, "wait", "--for=condition=complete", "job/"+job,
		fmt.Sprintf("--timeout=%ds", int(h.cfg.LoadDuration.Seconds())+120))
	return job, err
}

// stepParity prints the parity report from the cluster's Prometheus (the Makefile's `parity`)
// and writes it under OutDir/parity.
func (h *Harness) stepParity(ctx context.Context) (string, error) {
	prom, stop, err := h.portForward(ctx, monitoringNS, "svc/"+h.promService(), 9090)
	if err != nil {
		return "", err
	}
	defer stop()
	q, err := newPromAPI(prom)
	if err != nil {
		return "", err
	}
	r, err := judgeParity(ctx, q, h.cfg.Namespace, h.cfg.Release, filepath.Join(h.cfg.OutDir, "parity"), h.out)
	return string(r.Verdict), err
}

// fullname is the chart's object name prefix for the release (see _helpers.tpl).
func (h *Harness) fullname() string {
	if strings.Contains(h.cfg.Release, "poolparity") {
		return h.cfg.Release
	}
	return h.cfg.Release + "-poolparity"
}

// portForward forwards a free loopback port to target's port and returns the base URL.
func (h *Harness) portForward(ctx context.Context, ns, target string, port int) (string, func(), error) {
	k, err := h.tool("k8s/kubectl")
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	local := l.Addr().(*net.TCPAddr).Port
	l.Close()
	logf, err := os.OpenFile(filepath.Join(h.logDir, "port-forward.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", nil, err
	}
	pctx, cancel := context.WithCancel(ctx)
	c := exec.CommandContext(pctx, k, "--kubeconfig", h.kube, "-n", ns, "port-forward", "--address", "127.0.0.1", target, fmt.Sprintf("%d:%d", local, port))
	c.Stdout, c.Stderr = logf, logf
	if err := c.Start(); err != nil {
		cancel()
		logf.Close()
		return "", nil, err
	}
	stop := func() { cancel(); _ = c.Wait(); logf.Close() }
	base := fmt.Sprintf("http://127.0.0.1:%d", local)
	err = poll(ctx, time.Second, 90*time.Second, "Prometheus through port-forward", func() (bool, error) {
		return httpOK(ctx, base+"/-/ready"), nil
	})
	if err != nil {
		stop()
		return "", nil, err
	}
	return base, stop, nil
}

func httpOK(ctx context.Context, u string) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// waitTargets waits until Prometheus scrapes both tracks of the release and has loaded the
// chart's rules.
func (h *Harness) waitTargets(ctx context.Context, q parity.Querier) error {
	return poll(ctx, 3*time.Second, 3*time.Minute, "Prometheus to scrape both tracks and load the rules", func() (bool, error) {
		return scrapedAndRuled(ctx, q, h.cfg.Namespace, h.cfg.Release)
	})
}

// sampleTracks reads both tracks' Deployments and HPAs.
func (h *Harness) sampleTracks(ctx context.Context, scenario string, at time.Duration) ([]ReplicaPoint, error) {
	sel := "app.kubernetes.io/instance=" + h.cfg.Release + ",app.kubernetes.io/component=app"
	out, err := h.kubectl(ctx, "sample", "-n", h.cfg.Namespace, "get", "deploy,hpa", "-l", sel, "-o", "json")
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []struct {
			Kind     string
			Metadata struct {
				Name   string
				Labels map[string]string
			}
			Spec struct {
				MinReplicas    int
				ScaleTargetRef struct{ Name string }
			}
			Status struct {
				Replicas, ReadyReplicas          int
				CurrentReplicas, DesiredReplicas int
				CurrentMetrics                   []struct {
					Resource struct {
						Name    string
						Current struct{ AverageUtilization *int }
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, err
	}
	byDeploy := map[string]*ReplicaPoint{}
	var pts []ReplicaPoint
	for _, it := range list.Items {
		if it.Kind == "Deployment" {
			pts = append(pts, ReplicaPoint{At: at, Scenario: scenario, Track: it.Metadata.Labels["poolparity.dev/track"],
				Replicas: it.Status.Replicas, Ready: it.Status.ReadyReplicas, CPU: -1})
		}
	}
	for i := range pts {
		for _, it := range list.Items {
			if it.Kind == "Deployment" && it.Metadata.Labels["poolparity.dev/track"] == pts[i].Track {
				byDeploy[it.Metadata.Name] = &pts[i]
			}
		}
	}
	for _, it := range list.Items {
		p := byDeploy[it.Spec.ScaleTargetRef.Name]
		if it.Kind != "HorizontalPodAutoscaler" || p == nil {
			continue
		}
		p.Desired = it.Status.DesiredReplicas
		for _, m := range it.Status.CurrentMetrics {
			if m.Resource.Name == "cpu" && m.Resource.Current.AverageUtilization != nil {
				p.CPU = *m.Resource.Current.AverageUtilization
			}
		}
		if p.Replicas > it.Spec.MinReplicas && p.CPU >= 0 && !slices.Contains(h.res.Scaled, p.Track) {
			h.res.Scaled = append(h.res.Scaled, p.Track)
		}
	}
	slices.SortFunc(pts, func(a, b ReplicaPoint) int { return strings.Compare(a.Track, b.Track) })
	return pts, nil
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

// sampleSplit compares the gray share of requests over the last minute with the gray share of
// ready replicas over the same minute.
func (h *Harness) sampleSplit(ctx context.Context, q parity.Querier, scenario string, at time.Duration, ready []readySample) (SplitPoint, error) {
	gray, total, err := requestRates(ctx, q, h.cfg.Namespace, h.cfg.Release, time.Now())
	if err != nil {
		return SplitPoint{}, err
	}
	sp := SplitPoint{At: at, Scenario: scenario, ReqShare: gray / total, Steady: true}
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

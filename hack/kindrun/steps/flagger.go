package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/images"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
	"github.com/poolparity/poolparity/internal/parity"
)

// The flagger step (issue 39): Flagger's controller, built here from github.com/fluxcd/flagger
// (hack/tools/flagger) and installed from its module's kustomize/base/flagger with that image,
// rolls out the reference service with its Gateway API provider through the run's Traefik
// Gateway, gated by the chart's judge (docs/flagger.md). Everything of the step but the
// controller lives in its own namespace, so it can run beside the canary step.
const (
	flaggerNS       = "flagger-system" // the controller; the judge's NetworkPolicy admits its hooks from there
	flaggerModule   = "github.com/fluxcd/flagger"
	flaggerRunNS    = "poolparity-flagger" // the Canaries, their Deployments, and a release of the chart
	flaggerRelease  = "flagger"            // that release: Redis, the rules scoped to flaggerRunNS, the judge
	flaggerInterval = "15s"                // each Canary's analysis interval
	// flaggerWatch bounds one Canary's rollout from its trigger, and its load. The rollouts end
	// after about 3m45s; one CI run's pooled Canary still waited for its promotion after 10
	// minutes, so the bound leaves room for a slow verdict, and a rollout that outlasts it is
	// reported with the judge's reading (flaggerStuck).
	flaggerWatch = 15 * time.Minute
	// flaggerSettle is how long the promoted pods' series are looked for after the promotion.
	flaggerSettle = 2 * time.Minute
)

// canaryGVR is Flagger's Canary resource.
var canaryGVR = schema.GroupVersionResource{Group: "flagger.app", Version: "v1beta1", Resource: "canaries"}

// flaggerSpec is one Canary the flagger step runs: the Deployment starts in pool mode stable,
// is changed to gray, and the rollout must end in phase want.
type flaggerSpec struct{ name, stable, gray, want string }

// defaultFlaggerCanaries: the pooled gray is promoted (it allocates less per request); a pool
// misuse against a pooled stable, misuse-reset (buffers pre-sized to 8 MiB and zeroed on every
// Put, docs/pool-misuse.md), is rolled back by the judge's FAIL on CPU per request. Its heap
// bytes allocated per request did not tell: in a kind run the judge never FAILed them (the 8 MiB
// buffers are allocated again only when a GC empties the pools).
func defaultFlaggerCanaries() []flaggerSpec {
	return []flaggerSpec{
		{name: "flagger-pooled", stable: "unpooled", gray: "pooled", want: "Succeeded"},
		{name: "flagger-misuse", stable: "pooled", gray: "misuse-reset", want: "Failed"},
	}
}

// flaggerStep installs Flagger and the judge and runs its Canaries at once.
type flaggerStep struct{ canaries []flaggerSpec }

// flaggerDef declares the "flagger" step, beside the scenarios. At its end it deletes its
// namespaces: what it left there once held the canary step's pods Pending.
func flaggerDef() harness.Def {
	return harness.Def{Step: flaggerStep{canaries: defaultFlaggerCanaries()}, Needs: []string{"env", "helm-install"}, Default: true,
		Doc: "Flagger (Gateway API provider) rolls out two Canaries through the Gateway on the judge's webhooks: the pooled one promoted, a pool misuse rolled back.", Beside: SideBySide}
}

// Name implements Step.
func (flaggerStep) Name() string { return "flagger" }

// FlaggerResult is what the flagger step measured.
type FlaggerResult struct {
	Runs []FlaggerRun `json:"runs"`
}

// FlaggerRun is one Canary's rollout, timed from the change of its Deployment (the trigger).
type FlaggerRun struct {
	Name  string `json:"name"`
	Modes string `json:"pool_modes"` // stable -> gray
	Want  string `json:"want"`
	Phase string `json:"phase"`
	OK    bool   `json:"ok"`
	// Trigger is when the Deployment's pool mode was changed.
	Trigger time.Time `json:"trigger"`
	// Points are the Canary's statuses as seen, each once.
	Points []flaggerPoint `json:"points"`
	// Promoting is the trigger to the Promoting phase (Flagger copies the spec to the primary),
	// End the trigger to the final phase; zero when not seen.
	Promoting time.Duration `json:"promoting_after"`
	End       time.Duration `json:"end_after"`
	// StableSeries is how long after Promoting the promoted pods' series (gray's pool mode)
	// carried gray_status="false" in Prometheus; OldGone how long until no series of stable's
	// old pool mode did (the old primary pods gone): between the two, the stable track runs both
	// modes. -1 when not within flaggerSettle.
	StableSeries time.Duration `json:"stable_series_after"`
	OldGone      time.Duration `json:"old_stable_gone_after"`
	// Fails are the judge's FAIL answers Flagger recorded; Confirmed whether the promotion hook
	// answered 2xx (only a PASS does).
	Fails     int  `json:"judge_fails"`
	Confirmed bool `json:"promotion_confirmed"`
	// Reading is, when the rollout reached Promoting or its end, the judge's last answer from
	// its log and the hooks judged again in process from the judge's start (flaggerReading):
	// what the judge saw in each SLI.
	Reading string `json:"judge_reading,omitempty"`
	// Tracks are the gray_status/pool_mode pairs of the service's series since the trigger.
	Tracks   []string `json:"tracks"`
	Problems []string `json:"problems,omitempty"`
}

// flaggerPoint is one Canary status as the harness saw it.
type flaggerPoint struct {
	After  time.Duration `json:"after"` // since the trigger (negative before it)
	Status flaggerStatus `json:"status"`
}

// flaggerStatus is the part of a Canary's status the step follows.
type flaggerStatus struct {
	Phase        string `json:"phase"`
	CanaryWeight int64  `json:"canaryWeight"`
	FailedChecks int64  `json:"failedChecks"`
	Iterations   int64  `json:"iterations"`
}

// String is phase@weight% with the failed checks.
func (s flaggerStatus) String() string {
	return fmt.Sprintf("%s@%d%% failed %d", s.Phase, s.CanaryWeight, s.FailedChecks)
}

// canaryStatusOf reads a Canary's status from its object; a Canary Flagger has not reported on
// yet has phase "".
func canaryStatusOf(obj map[string]any) (flaggerStatus, error) {
	var s flaggerStatus
	st, found, err := unstructured.NestedMap(obj, "status")
	if err != nil {
		return s, fmt.Errorf("reading the Canary's status: %w", err)
	}
	if !found {
		return s, nil
	}
	if v, ok := st["phase"]; ok {
		p, isString := v.(string)
		if !isString {
			return s, fmt.Errorf("the Canary's status.phase is %T, want a string", v)
		}
		s.Phase = p
	}
	for key, dst := range map[string]*int64{"canaryWeight": &s.CanaryWeight, "failedChecks": &s.FailedChecks, "iterations": &s.Iterations} {
		v, ok := st[key]
		if !ok {
			continue
		}
		switch n := v.(type) {
		case int64:
			*dst = n
		case float64:
			*dst = int64(n)
		default:
			return s, fmt.Errorf("the Canary's status.%s is %T, want a number", key, v)
		}
	}
	return s, nil
}

// flaggerFinal reports whether phase ends a rollout.
func flaggerFinal(phase string) bool { return phase == "Succeeded" || phase == "Failed" }

// Table implements harness.Result.
func (r FlaggerResult) Table(harness.Results) string {
	var w strings.Builder
	fmt.Fprintf(&w, "\n== Flagger Canaries (Gateway API provider, the judge's webhooks), timed from the Deployment's change\n")
	fmt.Fprintf(&w, "  (stable series: after Promoting, the promoted pods' first series with gray_status=\"false\" / the old mode's last gone)\n")
	fmt.Fprintf(&w, "  %-18s %-24s %-10s %-10s %10s %10s %14s %6s %9s  %s\n", "canary", "modes", "want", "phase", "promoting", "end", "stable series", "FAILs", "confirmed", "tracks seen")
	for _, run := range r.Runs {
		stable := "-"
		if run.Promoting > 0 {
			stable = sinceCell(run.StableSeries) + " / " + sinceCell(run.OldGone)
		}
		fmt.Fprintf(&w, "  %-18s %-24s %-10s %-10s %10s %10s %14s %6d %9v  %s%s\n", run.Name, run.Modes, run.Want, run.Phase,
			durationCell(run.Promoting), durationCell(run.End), stable, run.Fails, run.Confirmed, strings.Join(run.Tracks, " "), okText(run.OK))
		for _, p := range run.Problems {
			fmt.Fprintf(&w, "    problem: %s\n", p)
		}
	}
	return w.String()
}

// sinceCell is +d rounded to the second, "never" for a negative d.
func sinceCell(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return "+" + d.Round(time.Second).String()
}

// durationCell is d rounded to the second, "-" for zero.
func durationCell(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.Round(time.Second).String()
}

// flaggerEdits are what the offline cluster changes in kustomize/base/flagger's rendering: the
// image built here, and the arguments of the module's kustomize/gatewayapi overlay with the
// cluster's Prometheus, watching only ns. flaggerManifest fails when one is not there.
func flaggerEdits(prometheus, ns string) map[string]string {
	args := []string{"-log-level=info", "-include-label-prefix=app.kubernetes.io", "-mesh-provider=gatewayapi:v1",
		"-metrics-server=" + prometheus, "-namespace=" + ns}
	var b strings.Builder
	b.WriteString("      - args:\n")
	for _, a := range args {
		b.WriteString("        - " + a + "\n")
	}
	b.WriteString("        image: " + images.FlaggerImage + "\n")
	return map[string]string{"      - image: ghcr.io/fluxcd/flagger:" + strings.TrimPrefix(images.FlaggerVersion, "v") + "\n": b.String()}
}

// flaggerManifest applies flaggerEdits to kustomize/base/flagger as kustomize renders it.
func flaggerManifest(rendered []byte, prometheus, ns string) ([]byte, error) {
	m, err := overrideImages(rendered, flaggerEdits(prometheus, ns))
	if err != nil {
		return nil, fmt.Errorf("the kustomize/base/flagger of %s@%s: %w", flaggerModule, images.FlaggerVersion, err)
	}
	return m, nil
}

// installFlagger renders Flagger's kustomize/base/flagger with the pinned kustomize, applies it
// with the image built here, and waits for the Canary CRD and the controller.
func installFlagger(ctx context.Context, env *harness.Env, k *kube.Kube, prometheus string) error {
	dir, err := images.ModuleDir(ctx, env, flaggerModule+"@"+images.FlaggerVersion)
	if err != nil {
		return err
	}
	kustomize, err := env.Tool("kustomize")
	if err != nil {
		return err
	}
	out, err := env.Output(ctx, "flagger", harness.Cmd{Name: kustomize, Args: []string{"build", filepath.Join(dir, "kustomize", "base", "flagger")}})
	if err != nil {
		return fmt.Errorf("rendering Flagger's kustomize/base/flagger: %w", err)
	}
	m, err := flaggerManifest([]byte(out), prometheus, flaggerRunNS)
	if err != nil {
		return err
	}
	nsYAML := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", flaggerNS)
	if err := k.Apply(ctx, []byte(nsYAML), ""); err != nil {
		return fmt.Errorf("creating namespace %s: %w", flaggerNS, err)
	}
	if err := k.Apply(ctx, m, flaggerNS); err != nil {
		return fmt.Errorf("applying Flagger's kustomize/base/flagger: %w", err)
	}
	if err := k.WaitEstablished(ctx, time.Minute, "canaries.flagger.app"); err != nil {
		return err
	}
	return k.WaitDeployment(ctx, flaggerNS, "flagger", 3*time.Minute)
}

// flaggerChartValues install the chart in flaggerRunNS for the step: no tracks of its own, the
// rules scoped to the namespace, and the judge answering for it alone.
func flaggerChartValues(env *harness.Env) []string {
	repo, tag, _ := strings.Cut(images.ServiceImage(env), ":")
	v := append(rulesInNamespace(flaggerRunNS), chartValues(env)...)
	return append(v,
		"--set", "tracks.stable.enabled=false", "--set", "tracks.gray.enabled=false",
		"--set", "judge.enabled=true", "--set", "judge.namespaces={"+flaggerRunNS+"}",
		"--set", "judge.image.repository="+repo, "--set", "judge.image.tag="+tag,
		"--set", "judge.prometheus.endpoints={"+promURL(env)+"}",
		"--set", "redis.resources.requests.cpu=10m",
	)
}

// promURL is the cluster's Prometheus as the pods reach it.
func promURL(env *harness.Env) string {
	return fmt.Sprintf("http://%s.%s.svc:9090", promServiceOf(env), monitoringNS)
}

// flaggerScrapeTmpl is what Prometheus scrapes of one Canary: deploy/flagger/canary.yaml's
// ServiceMonitor, which takes the track from the primary and canary Services' labels (Flagger
// copies every pod label to the primary, so no pod label can tell the tracks apart) and sets
// one job for both.
const flaggerScrapeTmpl = `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{.Name}}-tracks
  labels: {release: kube-prometheus-stack}
spec:
  selector:
    matchLabels: {kindrun.poolparity.dev/flagger: {{.Name}}}
    matchExpressions:
      - {key: poolparity.dev/gray-status, operator: Exists}
  endpoints:
    - port: http
      path: /metrics
      interval: 5s
      scrapeTimeout: 4s
      relabelings:
        - sourceLabels: [__meta_kubernetes_service_label_poolparity_dev_gray_status]
          regex: (.+)
          targetLabel: gray_status
          action: replace
        - {targetLabel: job, replacement: {{.Name}}}
        - {targetLabel: service, replacement: {{.Name}}}
      metricRelabelings:
        - {action: labeldrop, regex: exported_gray_status}
`

// flaggerCanaryTmpl is one Canary and the Deployment it targets: the reference service in pool
// mode Stable, with the release's Redis; the Gateway API provider routes it through the run's
// Gateway by its host name; the judge's two hooks gate the steps and the promotion with the
// sequential test on heap bytes allocated and CPU per request sampled every 20 s, as the canary step's
// PoolCanaries.
const flaggerCanaryTmpl = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{.Name}}
  labels: {app: {{.Name}}, app.kubernetes.io/name: poolparity, app.kubernetes.io/instance: {{.Name}}}
spec:
  replicas: 1
  selector:
    matchLabels: {app: {{.Name}}}
  template:
    metadata:
      labels: {app: {{.Name}}, app.kubernetes.io/name: poolparity, app.kubernetes.io/instance: {{.Name}}, app.kubernetes.io/component: app}
    spec:
{{template "servicePod" .}}---
apiVersion: flagger.app/v1beta1
kind: Canary
metadata:
  name: {{.Name}}
spec:
  provider: gatewayapi:v1
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: {{.Name}}}
  progressDeadlineSeconds: 180
  service:
    port: 8080
    portName: http
    hosts: ["{{.Host}}"]
    gatewayRefs:
      - {name: {{.Gateway}}, namespace: {{.GatewayNamespace}}}
    primary:
      labels: {poolparity.dev/gray-status: "false", kindrun.poolparity.dev/flagger: {{.Name}}}
    canary:
      labels: {poolparity.dev/gray-status: "true", kindrun.poolparity.dev/flagger: {{.Name}}}
  analysis:
    interval: {{.Interval}}
    # A FAIL is kept once shown: two failed checks roll back within two intervals.
    threshold: 2
    maxWeight: 50
    stepWeight: 50
    webhooks:
      - name: poolparity-judge
        type: rollout
        url: {{.Judge}}/flagger/rollout
        timeout: 15s
        metadata: {{.JudgeMeta}}
      - name: poolparity-judge-promotion
        type: confirm-promotion
        url: {{.Judge}}/flagger/confirm-promotion
        timeout: 15s
        metadata: {{.JudgeMeta}}`

// flaggerJudgeMeta is both hooks' metadata for Canary name: heap bytes allocated and CPU per
// request, the count-based test (its steps the poolparity.counts rules' 20 s interval; step and
// sample are the thresholds' and a Sequential judge's), as the canary step's PoolCanaries.
func flaggerJudgeMeta(name string) map[string]string {
	return map[string]string{"selector": "job=" + name, "slis": "heap-alloc-per-request,cpu-per-request",
		"mode": "Counts", "window": "1m", "warmup": "20s", "step": "20s", "sample": "20s"}
}

// renderFlagger renders tmpl (flaggerScrapeTmpl or flaggerCanaryTmpl) for c, with the judge at
// judgeBase.
func renderFlagger(tmpl string, c flaggerSpec, image, judgeBase string) ([]byte, error) {
	full := fullnameOf(flaggerRelease)
	meta, err := json.Marshal(flaggerJudgeMeta(c.name)) // a JSON object is a YAML flow mapping
	if err != nil {
		return nil, fmt.Errorf("the judge's metadata of Canary %s: %w", c.name, err)
	}
	return renderWithServicePod("Canary "+c.name, tmpl, map[string]any{"JudgeMeta": string(meta),
		"Name": c.name, "PoolMode": c.stable, "Image": image, "Redis": full + "-redis:6379", "RedisSecret": full + "-redis",
		"Host": canaryHost(c.name), "Gateway": gatewayName, "GatewayNamespace": gatewayNS, "Judge": judgeBase, "Interval": flaggerInterval,
	})
}

// judgeURL is the base URL of the release's judge.
func judgeURL() string {
	return fmt.Sprintf("http://%s-judge.%s.svc:8080", fullnameOf(flaggerRelease), flaggerRunNS)
}

// Run implements Step.
func (s flaggerStep) Run(ctx context.Context, env *harness.Env) (harness.Outcome, error) {
	if env.Cfg.Mode != "offline" {
		return harness.Outcome{}, harness.Prereq("the flagger step runs Flagger's image built here: offline mode only")
	}
	start := time.Now()
	k, err := env.Kube()
	if err != nil {
		return harness.Outcome{}, err
	}
	// The Canaries' primaries, the judge, Redis and Flagger hold CPU and memory requests the
	// steps after this one need.
	return thenDeleteNamespaces(ctx, env, k, "flagger", func() (harness.Outcome, error) { return s.run(ctx, env, k, start) }, flaggerRunNS, flaggerNS)
}

// thenDeleteNamespaces runs a step's work, then deletes its namespaces whatever the outcome,
// even when ctx is cancelled (a step beside it failed): a failed deletion is part of the step's
// error.
func thenDeleteNamespaces(ctx context.Context, env *harness.Env, k *kube.Kube, step string, work func() (harness.Outcome, error), namespaces ...string) (harness.Outcome, error) {
	o, err := work()
	start := time.Now()
	if derr := k.DeleteNamespaces(context.WithoutCancel(ctx), 3*time.Minute, namespaces...); derr != nil {
		return o, errors.Join(err, derr)
	}
	env.Logf("%s: namespaces %s deleted in %s", step, strings.Join(namespaces, ", "), time.Since(start).Round(time.Second))
	return o, err
}

// run is the step's work, before the clean-up.
func (s flaggerStep) run(ctx context.Context, env *harness.Env, k *kube.Kube, start time.Time) (harness.Outcome, error) {
	if err := restrictedNamespace(ctx, env, flaggerRunNS); err != nil {
		return harness.Outcome{}, err
	}
	// First, for the minutes Prometheus takes to pick up a new ServiceMonitor.
	for _, c := range s.canaries {
		y, err := renderFlagger(flaggerScrapeTmpl, c, "", "")
		if err != nil {
			return harness.Outcome{}, err
		}
		if err := k.Apply(ctx, y, flaggerRunNS); err != nil {
			return harness.Outcome{}, fmt.Errorf("creating the ServiceMonitor of Canary %s: %w", c.name, err)
		}
	}
	if err := helmInstallIn(ctx, env, flaggerRunNS, flaggerRelease, nil, flaggerChartValues(env)...); err != nil {
		return harness.Outcome{}, err
	}
	if err := installFlagger(ctx, env, k, promURL(env)); err != nil {
		return harness.Outcome{}, err
	}
	env.Logf("flagger: Flagger %s and the judge installed after %s", images.FlaggerVersion, time.Since(start).Round(time.Second))
	prom, err := openProm(ctx, env, k)
	if err != nil {
		return harness.Outcome{}, err
	}
	defer prom.stop()
	runs := make([]FlaggerRun, len(s.canaries))
	errs := make([]error, len(s.canaries))
	var wg sync.WaitGroup
	for i, c := range s.canaries {
		wg.Go(func() { runs[i], errs[i] = runFlaggerCanary(ctx, env, k, prom, c) })
	}
	wg.Wait()
	o := outcome[FlaggerResult]{Result: FlaggerResult{Runs: runs}}
	var failed []string
	for i, r := range runs {
		if errs[i] != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", s.canaries[i].name, errs[i]))
		}
		for _, p := range r.Problems {
			failed = append(failed, r.Name+": "+p)
		}
	}
	if len(failed) > 0 {
		return o.done(), errors.New(strings.Join(failed, "; "))
	}
	o.Note = fmt.Sprintf("Flagger promoted the pooled gray and rolled back the pool misuse on the judge's verdicts (%s before the clean-up)", time.Since(start).Round(time.Second))
	return o.done(), nil
}

// runFlaggerCanary creates one Canary and its Deployment, loads it through the Gateway, changes
// its pool mode and follows the rollout to its end; then it times the promoted pods' series and
// checks the tracks Prometheus saw.
func runFlaggerCanary(ctx context.Context, env *harness.Env, k *kube.Kube, prom promSession, c flaggerSpec) (FlaggerRun, error) {
	ns, q := flaggerRunNS, prom.q
	r := FlaggerRun{Name: c.name, Modes: c.stable + " -> " + c.gray, Want: c.want, StableSeries: -1, OldGone: -1}
	y, err := renderFlagger(flaggerCanaryTmpl, c, images.ServiceImage(env), judgeURL())
	if err != nil {
		return r, err
	}
	if err := k.Apply(ctx, y, ns); err != nil {
		return r, fmt.Errorf("creating the Deployment and Canary: %w", err)
	}
	if _, err := waitCanaryPhase(ctx, k, c.name, 3*time.Minute, "Initialized"); err != nil {
		return r, err
	}
	err = kube.Until(ctx, 2*time.Second, 2*time.Minute, "HTTPRoute "+c.name+" to be accepted", func(ctx context.Context) (bool, error) {
		return k.RouteProgrammed(ctx, ns, c.name)
	})
	if err != nil {
		return r, err
	}
	job, err := startLoadIn(ctx, env, k, ns, c.name, fmt.Sprintf("http://%s.%s:80", traefikService, gatewayNS), flaggerWatch+2*time.Minute, rolloutLoadRPS,
		"-host", canaryHost(c.name))
	if err != nil {
		return r, err
	}
	defer func() {
		if err := k.DeleteJob(context.WithoutCancel(ctx), ns, job); err != nil {
			env.Logf("%v", err)
		}
	}()
	// The judge's first hook must find the rules and the stable track's series: an ERROR counts
	// as a failed check.
	rate := fmt.Sprintf(`job_gray_status:http_requests:rate1m{namespace=%q,job=%q,gray_status="false"}`, ns, c.name)
	err = kube.Poll(ctx, 3*time.Second, 4*time.Minute, c.name+"'s stable track in the rules", func() (bool, error) {
		v, err := vector(ctx, q, rate, time.Now())
		return err == nil && len(v) > 0 && v[0].Value > 0, nil
	})
	if err != nil {
		return r, err
	}
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"poolparity","env":[{"name":"POOL_MODE","value":%q}]}]}}}}`, c.gray)
	if _, err := k.CS.AppsV1().Deployments(ns).Patch(ctx, c.name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: kube.FieldManager}); err != nil {
		return r, fmt.Errorf("changing %s's pool mode to %s: %w", c.name, c.gray, err)
	}
	r.Trigger = time.Now()
	env.Logf("%s: pool mode %s -> %s", c.name, c.stable, c.gray)
	stableOf := func(mode string) string {
		return fmt.Sprintf(`count(process_cpu_seconds_total{namespace=%q,job=%q,gray_status="false",pool_mode=%q})`, ns, c.name, mode)
	}
	var promotingAt time.Time
	// promotedSeries times the promoted pods' series on the stable track, and the old ones'
	// end; it reports whether both are timed.
	promotedSeries := func(now time.Time) bool {
		if r.StableSeries < 0 {
			if v, err := vector(ctx, q, stableOf(c.gray), now); err == nil && len(v) > 0 {
				r.StableSeries = now.Sub(promotingAt)
			}
		}
		if r.OldGone < 0 {
			if v, err := vector(ctx, q, stableOf(c.stable), now); err == nil && len(v) == 0 {
				r.OldGone = now.Sub(promotingAt)
			}
		}
		return r.StableSeries >= 0 && r.OldGone >= 0
	}
	err = kube.Until(ctx, 2*time.Second, flaggerWatch, c.name+" to finish its rollout", func(ctx context.Context) (bool, error) {
		u, err := k.Dyn.Resource(canaryGVR).Namespace(ns).Get(ctx, c.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st, err := canaryStatusOf(u.Object)
		if err != nil {
			return false, err
		}
		now := time.Now()
		if len(r.Points) == 0 || r.Points[len(r.Points)-1].Status != st {
			r.Points = append(r.Points, flaggerPoint{After: now.Sub(r.Trigger), Status: st})
			env.Logf("%s (%s): %s", c.name, r.Modes, st)
		}
		if st.Phase == "Promoting" && promotingAt.IsZero() {
			promotingAt, r.Promoting = now, now.Sub(r.Trigger)
		}
		if !promotingAt.IsZero() {
			promotedSeries(now)
		}
		r.Phase = st.Phase
		if r.Reading == "" && (st.Phase == "Promoting" || flaggerFinal(st.Phase)) {
			r.Reading = flaggerReading(ctx, k, prom.url, c, r.Trigger)
			env.Logf("%s: the judge's reading at %s: %s", c.name, st.Phase, r.Reading)
		}
		if flaggerFinal(st.Phase) {
			r.End = now.Sub(r.Trigger)
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		if ctx.Err() == nil {
			err = fmt.Errorf("%w; %s", err, flaggerStuck(ctx, k, prom, c, r))
		}
		return r, err
	}
	if !promotingAt.IsZero() && !promotedSeries(time.Now()) {
		err := kube.Poll(ctx, 2*time.Second, flaggerSettle, c.name+"'s stable track to run only the promoted pods", func() (bool, error) {
			return promotedSeries(time.Now()), nil
		})
		if err != nil {
			env.Logf("%s: %v", c.name, err)
		}
	}
	msgs, err := canaryEvents(ctx, k, ns, c.name)
	if err != nil {
		return r, err
	}
	r.Fails, r.Confirmed = judgeAnswers(msgs)
	span := time.Since(r.Trigger).Round(time.Second) + 10*time.Second
	tracks := fmt.Sprintf(`count by (gray_status, pool_mode) (count_over_time(process_cpu_seconds_total{namespace=%q,job=%q}[%s]))`, ns, c.name, promDuration(span))
	v, err := vector(ctx, q, tracks, time.Now())
	if err != nil {
		return r, fmt.Errorf("reading the tracks seen: %w", err)
	}
	for _, s := range v {
		r.Tracks = append(r.Tracks, string(s.Metric["gray_status"])+"/"+string(s.Metric["pool_mode"]))
	}
	slices.Sort(r.Tracks)
	r.Problems = flaggerProblems(c, r)
	r.OK = len(r.Problems) == 0
	env.Logf("%s: %s after %s, judge FAILs %d, promotion confirmed %v, tracks %v", c.name, r.Phase, r.End.Round(time.Second), r.Fails, r.Confirmed, r.Tracks)
	return r, nil
}

// flaggerJudgeSelector selects the release's judge pod.
const flaggerJudgeSelector = "app.kubernetes.io/instance=" + flaggerRelease + ",app.kubernetes.io/component=judge"

// flaggerReading is what the judge last answered Canary c's hooks, from its log (judgedLine),
// and the judgement of the same hooks read in process (judgeReading) from the start the judge
// logged, or from trigger when it logged none, with each SLI's values and test, in one line.
// The judge answered at its last call and the harness reads now, so the two may differ by the
// samples between.
func flaggerReading(ctx context.Context, k *kube.Kube, promBase string, c flaggerSpec, trigger time.Time) string {
	var parts []string
	since, from := trigger, "the trigger"
	logs, err := k.PodLogs(ctx, flaggerRunNS, flaggerJudgeSelector, 400)
	if j, ok := judgedLine(logs, c.name); err == nil && ok {
		parts = append(parts, fmt.Sprintf("the judge's last answer (%s hook at %s): %s %s", j.Hook, j.Time.Format(time.TimeOnly), j.Verdict, j.Reasons))
		if !j.Since.IsZero() {
			since, from = j.Since, "the judge's start"
		}
	} else {
		no := "no answer of the judge to " + c.name + " in its log"
		if err != nil {
			no += " (" + err.Error() + ")"
		}
		parts = append(parts, no)
	}
	res, err := judgeReading(ctx, promBase, flaggerRunNS, flaggerJudgeMeta(c.name), since)
	if err != nil {
		parts = append(parts, "read now: "+err.Error())
	} else {
		parts = append(parts, fmt.Sprintf("read now from %s (%s): %s", from, since.Format(time.TimeOnly), readingLine(res)))
	}
	return strings.Join(parts, "; ")
}

// judged is one answer of the judge as it logs it (internal/judge/judgehttp: "judged").
type judged struct {
	Time    time.Time `json:"time"`
	Msg     string    `json:"msg"`
	Hook    string    `json:"hook"`
	Name    string    `json:"name"`
	Verdict string    `json:"verdict"`
	Since   time.Time `json:"since"`
	Reasons string    `json:"reasons"`
}

// judgedLine returns the last answer to Canary name in the judge's JSON log lines; lines that
// are not such an answer are skipped.
func judgedLine(logs, name string) (judged, bool) {
	var last judged
	found := false
	for line := range strings.Lines(logs) {
		var j judged
		if json.Unmarshal([]byte(line), &j) == nil && j.Msg == "judged" && j.Name == name {
			last, found = j, true
		}
	}
	return last, found
}

// flaggerStuck says why Canary c's rollout r has not ended: its last status, the weights of its
// HTTPRoute, each track's request rate, and the judge's reading.
func flaggerStuck(ctx context.Context, k *kube.Kube, prom promSession, c flaggerSpec, r FlaggerRun) string {
	var parts []string
	if n := len(r.Points); n > 0 {
		parts = append(parts, fmt.Sprintf("last status %s since %s after the trigger", r.Points[n-1].Status, r.Points[n-1].After.Round(time.Second)))
	}
	if w, err := k.RouteWeights(ctx, flaggerRunNS, c.name); err != nil {
		parts = append(parts, err.Error())
	} else {
		parts = append(parts, fmt.Sprintf("HTTPRoute weights %v", w))
	}
	if gray, total, err := requestRates(ctx, prom.q, flaggerRunNS, c.name, time.Now()); err != nil {
		parts = append(parts, "request rates: "+err.Error())
	} else {
		parts = append(parts, fmt.Sprintf("requests/s over the last minute: gray %.1f of %.1f", gray, total))
	}
	return strings.Join(append(parts, flaggerReading(ctx, k, prom.url, c, r.Trigger)), "; ")
}

// promDuration is d as a PromQL duration in whole seconds.
func promDuration(d time.Duration) string { return fmt.Sprintf("%ds", int64(d.Seconds())) }

// waitCanaryPhase waits until Canary name in the step's namespace reports one of phases.
func waitCanaryPhase(ctx context.Context, k *kube.Kube, name string, timeout time.Duration, phases ...string) (flaggerStatus, error) {
	var st flaggerStatus
	err := kube.Until(ctx, 2*time.Second, timeout, "Canary "+name+" to be "+strings.Join(phases, " or "), func(ctx context.Context) (bool, error) {
		u, err := k.Dyn.Resource(canaryGVR).Namespace(flaggerRunNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if st, err = canaryStatusOf(u.Object); err != nil {
			return false, err
		}
		return slices.Contains(phases, st.Phase), nil
	})
	return st, err
}

// canaryEvents are the messages of the events Flagger recorded on Canary ns/name.
func canaryEvents(ctx context.Context, k *kube.Kube, ns, name string) ([]string, error) {
	evs, err := k.CS.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Canary,involvedObject.name=" + name})
	if err != nil {
		return nil, fmt.Errorf("listing the events of Canary %s: %w", name, err)
	}
	var out []string
	for _, e := range evs.Items {
		out = append(out, e.Message)
	}
	return out, nil
}

// judgeVerdict finds the judge's verdict in the body Flagger quotes in a failed check's event.
var judgeVerdict = regexp.MustCompile(`"verdict":\s*"([A-Z ]+)"`)

// judgeAnswers reads Flagger's events of one Canary: how many of them quote a FAIL of the judge
// (a failed rollout check), and whether the promotion hook passed (only a PASS answers 2xx).
// Flagger folds repeated events into one, so fails counts distinct messages.
func judgeAnswers(msgs []string) (fails int, confirmed bool) {
	for _, m := range msgs {
		if strings.Contains(m, "Confirm-promotion check poolparity-judge-promotion passed") {
			confirmed = true
		}
		if strings.Contains(m, "check poolparity-judge failed") {
			if v := judgeVerdict.FindStringSubmatch(m); v != nil && v[1] == string(parity.Fail) {
				fails++
			}
		}
	}
	return fails, confirmed
}

// flaggerProblems says what is wrong with a finished run: the phase, the judge's part in it,
// and the tracks. The track pairs are read from the trigger on: the gray track never runs
// stable's pool mode; once promoted, gray's mode runs as stable within flaggerSettle; rolled
// back, it never does.
func flaggerProblems(c flaggerSpec, r FlaggerRun) []string {
	var p []string
	if r.Phase != c.want {
		var seen []string
		for _, pt := range r.Points {
			seen = append(seen, pt.Status.String())
		}
		p = append(p, fmt.Sprintf("ended %s, want %s (%s)", r.Phase, c.want, strings.Join(seen, " -> ")))
	}
	has := func(track, mode string) bool { return slices.Contains(r.Tracks, track+"/"+mode) }
	if has("true", c.stable) {
		p = append(p, fmt.Sprintf("a gray series ran stable's pool mode %s", c.stable))
	}
	if !has("true", c.gray) {
		p = append(p, fmt.Sprintf("no gray series of pool mode %s", c.gray))
	}
	switch c.want {
	case "Succeeded":
		if !r.Confirmed {
			p = append(p, "promoted without the judge's confirm-promotion answering 2xx")
		}
		if r.StableSeries < 0 {
			p = append(p, fmt.Sprintf("no stable series of pool mode %s within %s of the promotion", c.gray, flaggerSettle))
		}
		if r.OldGone < 0 {
			p = append(p, fmt.Sprintf("stable series of the old pool mode %s still there %s after the promotion", c.stable, flaggerSettle))
		}
		if r.Fails > 0 {
			p = append(p, fmt.Sprintf("the judge answered FAIL %d times to a gray at parity", r.Fails))
		}
	case "Failed":
		if r.Fails == 0 {
			p = append(p, "rolled back without a FAIL of the judge")
		}
		if r.Confirmed {
			p = append(p, "the judge confirmed the promotion of a regressed gray")
		}
		if has("false", c.gray) {
			p = append(p, fmt.Sprintf("a stable series ran the rolled-back pool mode %s", c.gray))
		}
	}
	return p
}

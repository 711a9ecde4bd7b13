package steps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/images"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
)

// CanaryRun is one PoolCanary rollout watched to its end.
type CanaryRun struct {
	Name  string   `json:"name"`
	Modes string   `json:"pool_modes"` // stable -> gray
	Want  string   `json:"want"`
	Phase string   `json:"phase"`
	Steps []string `json:"steps"` // the phases, weights and verdicts seen, in order
	OK    bool     `json:"ok"`
	// Judge is the statistical test's message of the last analysis (status.lastAnalysis.statistical):
	// why a canary that stalled was neither passed nor failed.
	Judge string `json:"judge,omitempty"`
	// History is every status seen, in order (polled every canaryPoll).
	History []canaryPoint `json:"history"`
}

// canaryPoint is one PoolCanary status as the harness saw it.
type canaryPoint struct {
	At        time.Time `json:"at"`
	Phase     string    `json:"phase"`
	Step      int32     `json:"step"`
	Weight    int32     `json:"weight"`
	StepStart time.Time `json:"step_started_at"`
	Analysis  time.Time `json:"analysis_at"`  // the last analysis
	Verdict   string    `json:"verdict"`      // its verdict
	Parity    string    `json:"parity"`       // the Parity condition's status/reason
	Route     int32     `json:"route_weight"` // status.routeWeight: the gray weight in force on the HTTPRoute (-1 unread)
	Measured  string    `json:"measured_share,omitempty"`
}

// pointOf is the part of pc's status the harness follows.
func pointOf(pc *v1alpha1.PoolCanary, at time.Time) canaryPoint {
	p := canaryPoint{At: at, Phase: string(pc.Status.Phase), Step: pc.Status.CurrentStep, Weight: pc.Status.CurrentWeight,
		Route: -1, Measured: pc.Status.MeasuredShare}
	if pc.Status.RouteWeight != nil {
		p.Route = *pc.Status.RouteWeight
	}
	if pc.Status.StepStartedAt != nil {
		p.StepStart = pc.Status.StepStartedAt.Time
	}
	if la := pc.Status.LastAnalysis; la != nil {
		p.Analysis, p.Verdict = la.Time.Time, string(la.Verdict)
	}
	if c := meta.FindStatusCondition(pc.Status.Conditions, v1alpha1.ConditionParity); c != nil {
		p.Parity = string(c.Status) + "/" + c.Reason
	}
	return p
}

// same reports whether two points show the same status (their times aside).
func (p canaryPoint) same(q canaryPoint) bool {
	p.At, q.At = time.Time{}, time.Time{}
	return p == q
}

// canaryPoll is how often the harness reads a PoolCanary's status.
const canaryPoll = 2 * time.Second

// canaryWatch bounds one canary's rollout in the kind run, and its load. Measured (2026-11-25):
// Prometheus scrapes a new canary's targets 2-2.5 minutes after its ServiceMonitor is created
// (kubelet's syncFrequency is 10 s here, so not only the config Secret's refresh), so the
// helm-install step creates the ServiceMonitors minutes ahead (applyCanaryScrape); the count-based
// judge decides from its sixth usable 20 s step, so the first step ends 2-4 minutes in. The
// promoted one's evidence then starts again after the Prometheus outage (its data are gone):
// about 2.5 minutes more after Prometheus is back. The watch only bounds the step: a canary
// that ends sooner ends it sooner.
const canaryWatch = 13 * time.Minute

// canarySpec is one PoolCanary the canary step runs: its track pool modes, its steps (gray
// weights in percent) and the phase it must end in. faults runs the controller's faults on its
// rollout (controllerFaults).
type canarySpec struct {
	name, stable, gray, want string
	steps                    []int
	faults                   bool
}

// canaryStep installs the controller with the chart and runs its PoolCanaries at once, each
// under its own load, against the cluster's Prometheus.
type canaryStep struct{ canaries []canarySpec }

// defaultCanaries: a pooled gray against an unpooled stable (pooling cuts the bytes allocated
// per request, so the canary is promoted) and the reverse (the gray allocates more, so it is
// rolled back). The candidate is a real pool mode, not an injected fault.
//
// The promoted one has two steps and carries the controller's faults (issue 26): its controller
// pod is deleted during the first step, and Prometheus is scaled to 0 during the second.
func defaultCanaries() []canarySpec {
	return []canarySpec{
		{name: "canary-pooled", stable: "unpooled", gray: "pooled", want: "Promoted", steps: []int{25, 50}, faults: true},
		{name: "canary-unpooled", stable: "pooled", gray: "unpooled", want: "RolledBack", steps: []int{50}},
	}
}

// canaryDef declares the "canary" step.
func canaryDef() harness.Def {
	return harness.Def{Step: canaryStep{canaries: defaultCanaries()}, Needs: []string{"env", "helm-install"}, Doc: "Two PoolCanaries through the Gateway, one Promoted under the controller's faults, one RolledBack.", Default: true}
}

// Name implements Step.
func (canaryStep) Name() string { return "canary" }

// Run implements Step.
func (s canaryStep) Run(ctx context.Context, env *harness.Env) (harness.Outcome, error) {
	if err := helmInstall(ctx, env, "--set", "controller.enabled=true"); err != nil {
		return harness.Outcome{}, err
	}
	k, err := env.Kube()
	if err != nil {
		return harness.Outcome{}, err
	}
	if err := k.WaitDeployment(ctx, env.Cfg.Namespace, fullname(env)+"-controller", 2*time.Minute); err != nil {
		return harness.Outcome{}, err
	}
	// Already there when helm-install ran before (applying again changes nothing).
	if err := applyCanaryScrape(ctx, env, k, s.canaries); err != nil {
		return harness.Outcome{}, err
	}
	runs := make([]CanaryRun, len(s.canaries))
	errs := make([]error, len(s.canaries))
	// The controller faults of each canary that carries them, in its own slot.
	faultRows := make([][]FaultRow, len(s.canaries))
	faultErrs := make([]error, len(s.canaries))
	var wg sync.WaitGroup
	for i, c := range s.canaries {
		y, err := renderCanary(env, "canary.yaml", c)
		if err != nil {
			return harness.Outcome{}, err
		}
		if err := k.Apply(ctx, y, env.Cfg.Namespace); err != nil {
			return harness.Outcome{}, fmt.Errorf("creating PoolCanary %s: %w", c.name, err)
		}
		runs[i] = CanaryRun{Name: c.name, Modes: c.stable + " -> " + c.gray, Want: c.want}
		wg.Go(func() { runs[i], errs[i] = watchCanary(ctx, env, k, runs[i]) })
		if c.faults {
			wg.Go(func() { faultRows[i], faultErrs[i] = controllerFaults(ctx, env, k, c.name) })
		}
	}
	wg.Wait()
	var faults []FaultRow
	var faultErr error
	for i, c := range s.canaries {
		if !c.faults {
			continue
		}
		if faultErrs[i] == nil && errs[i] == nil {
			faultRows[i] = checkResumed(faultRows[i], runs[i])
		}
		faults = append(faults, faultRows[i]...)
		faultErr = errors.Join(faultErr, faultErrs[i])
	}
	o := outcome[CanaryResult]{Result: CanaryResult{Canary: runs, Chaos: faults}}
	var failed []string
	if faultErr != nil {
		failed = append(failed, "controller faults: "+faultErr.Error())
	}
	for _, r := range faults {
		if !r.OK() {
			failed = append(failed, r.Fault+": "+strings.Join(r.Problems, "; "))
		}
	}
	if len(faults) > 0 {
		env.Print(chaosTable(faults))
	}
	for i, r := range runs {
		if errs[i] != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", r.Name, errs[i]))
			continue
		} else if !r.OK {
			failed = append(failed, fmt.Sprintf("%s ended %s, want %s (%s; the judge's last word: %s)", r.Name, r.Phase, r.Want, strings.Join(r.Steps, " -> "), r.Judge))
		}
		w, err := k.RouteWeights(ctx, env.Cfg.Namespace, r.Name)
		if err != nil {
			failed = append(failed, err.Error())
			continue
		}
		if p := checkRouteHistory(r, s.canaries[i].steps, w[r.Name+"-stable"], w[r.Name+"-gray"]); p != "" {
			failed = append(failed, p)
		}
	}
	if len(failed) > 0 {
		return o.done(), errors.New(strings.Join(failed, "; "))
	}
	o.Note = "promoted the pooled gray through a controller restart and a Prometheus outage, rolled back the unpooled one"
	return o.done(), nil
}

// checkRouteHistory says what is wrong with a finished canary's route: every step's weight must
// have been in force on the HTTPRoute (status.routeWeight) at some point, and the rollout must
// leave stable 100 and gray 0 on it, promoted (stable runs the gray's pool mode) or rolled back.
func checkRouteHistory(r CanaryRun, steps []int, stable, gray int64) string {
	var missing []string
	for _, w := range steps {
		if !slices.ContainsFunc(r.History, func(p canaryPoint) bool { return p.Route == int32(w) }) {
			missing = append(missing, fmt.Sprintf("%d%%", w))
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("%s: the route never carried the weight of step %s", r.Name, strings.Join(missing, ", "))
	}
	if stable != 100 || gray != 0 {
		return fmt.Sprintf("%s ended %s with the route at stable %d, gray %d; want 100/0", r.Name, r.Phase, stable, gray)
	}
	return ""
}

// renderCanary renders one of the canary templates (images/canary.yaml, canary-scrape.yaml) for c.
func renderCanary(env *harness.Env, file string, c canarySpec) ([]byte, error) {
	tmpl, err := template.ParseFS(images.Files, file)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", file, err)
	}
	var y bytes.Buffer
	err = tmpl.Option("missingkey=error").Execute(&y, map[string]any{
		"Name": c.name, "Stable": c.stable, "Gray": c.gray, "Image": images.ServiceImage(env), "Namespace": env.Cfg.Namespace,
		"Redis": fullname(env) + "-redis:6379", "RedisSecret": fullname(env) + "-redis", "PromService": promServiceOf(env), "Steps": c.steps,
		"Gateway": gatewayName, "GatewayNamespace": gatewayNS, "Host": canaryHost(c.name),
	})
	if err != nil {
		return nil, fmt.Errorf("rendering %s for PoolCanary %s: %w", file, c.name, err)
	}
	return y.Bytes(), nil
}

// applyCanaryScrape creates what Prometheus scrapes of each canary (images/canary-scrape.yaml):
// the helm-install step does it minutes ahead of the canary step, as it installs the example.
func applyCanaryScrape(ctx context.Context, env *harness.Env, k *kube.Kube, canaries []canarySpec) error {
	for _, c := range canaries {
		y, err := renderCanary(env, "canary-scrape.yaml", c)
		if err != nil {
			return err
		}
		if err := k.Apply(ctx, y, env.Cfg.Namespace); err != nil {
			return fmt.Errorf("creating the Service and ServiceMonitor of PoolCanary %s: %w", c.name, err)
		}
	}
	return nil
}

// canaryHost is the host name a canary's HTTPRoute answers on the run's Gateway.
func canaryHost(name string) string { return name + ".poolparity.test" }

// getCanary reads the PoolCanary ns/name.
func getCanary(ctx context.Context, k *kube.Kube, ns, name string) (*v1alpha1.PoolCanary, error) {
	u, err := k.Dyn.Resource(poolCanaryResource()).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var pc v1alpha1.PoolCanary
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pc); err != nil {
		return nil, fmt.Errorf("reading PoolCanary %s: %w", name, err)
	}
	return &pc, nil
}

// poolCanaryResource is the PoolCanary resource.
func poolCanaryResource() schema.GroupVersionResource {
	return v1alpha1.GroupVersion.WithResource("poolcanaries")
}

// seenStep is a PoolCanary's status as one step of its rollout: phase@weight% and the last
// verdict.
func seenStep(s v1alpha1.PoolCanaryStatus) string {
	out := fmt.Sprintf("%s@%d%%", s.Phase, s.CurrentWeight)
	if s.RouteWeight != nil {
		out += fmt.Sprintf(" route %d%%", *s.RouteWeight)
	}
	if s.LastAnalysis != nil {
		out += " " + string(s.LastAnalysis.Verdict)
	}
	return out
}

// finished reports whether phase ends a rollout.
func finished(phase string) bool {
	switch phase {
	case "Promoted", "RolledBack", "Failed", "Paused":
		return true
	}
	return false
}

// watchCanary loads one canary's Service and follows its status until the rollout ends; it
// returns r with the steps seen and the outcome.
func watchCanary(ctx context.Context, env *harness.Env, k *kube.Kube, r CanaryRun) (CanaryRun, error) {
	ns := env.Cfg.Namespace
	err := kube.Until(ctx, 5*time.Second, 2*time.Minute, r.Name+"'s tracks", func(ctx context.Context) (bool, error) {
		for _, t := range []string{"-stable", "-gray"} {
			d, err := k.CS.AppsV1().Deployments(ns).Get(ctx, r.Name+t, metav1.GetOptions{})
			if err != nil || d.Status.ReadyReplicas == 0 {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return r, err
	}
	// The load lasts as long as the watch may (the Job is deleted when the rollout ends): a canary
	// held by the Prometheus outage must not run out of traffic, which would hold it on NoData.
	// Through the Gateway, by the canary's host name: the route's weights split it.
	job, err := startLoadIn(ctx, env, k, ns, r.Name, fmt.Sprintf("http://%s.%s:80", traefikService, gatewayNS), canaryWatch, env.Cfg.LoadRPS,
		"-host", canaryHost(r.Name))
	if err != nil {
		return r, err
	}
	defer func() {
		if err := k.DeleteJob(context.WithoutCancel(ctx), ns, job); err != nil {
			env.Logf("%v", err)
		}
	}()
	last := ""
	err = kube.Until(ctx, canaryPoll, canaryWatch, r.Name+" to finish its rollout", func(ctx context.Context) (bool, error) {
		pc, err := getCanary(ctx, k, ns, r.Name)
		if err != nil {
			return false, err
		}
		if p := pointOf(pc, time.Now()); len(r.History) == 0 || !p.same(r.History[len(r.History)-1]) {
			r.History = append(r.History, p)
		}
		if seen := seenStep(pc.Status); seen != last {
			r.Steps = append(r.Steps, seen)
			env.Logf("%s (%s): %s", r.Name, r.Modes, seen)
			last = seen
		}
		if la := pc.Status.LastAnalysis; la != nil && la.Statistical != nil {
			r.Judge = la.Statistical.Message
		}
		r.Phase = string(pc.Status.Phase)
		r.OK = r.Phase == r.Want
		return finished(r.Phase), nil
	})
	return r, err
}

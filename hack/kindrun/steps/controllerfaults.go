package steps

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
	"github.com/poolparity/poolparity/internal/controller"
)

// The controller's faults (issue 26), run on one PoolCanary's rollout by the canary step.
const (
	// canaryStepInterval is canary.yaml's stepInterval: no step may end sooner.
	canaryStepInterval = 60 * time.Second
	// promOutageMax bounds how long Prometheus stays scaled to 0.
	promOutageMax = 2 * time.Minute
	// promOutageAnalyses is how many analyses must hold on the outage before Prometheus returns.
	promOutageAnalyses = 2
	// promName is the Prometheus (prometheus-operator's resource) of images/prometheus.yaml.
	promName = "poolparity"
)

// controllerFaults deletes the controller's pod during the first step of PoolCanary name, then
// scales Prometheus to 0 during its second step until promOutageAnalyses analyses have held
// on it, and brings it back. It returns a row per fault; checkResumed completes them from the
// rollout's history once it has ended. Prometheus is back when it returns, whatever happened.
func controllerFaults(ctx context.Context, env *harness.Env, k *kube.Kube, name string) ([]FaultRow, error) {
	ns := env.Cfg.Namespace
	del := FaultRow{Fault: "controller pod deleted", WritesAcked: -1, MaxFailed: -1, MaxConnErrs: -1, noLoad: true}
	s0, err := waitStep(ctx, k, ns, name, 0, 15*time.Second)
	if err != nil {
		return nil, err
	}
	del.Before = parityText(s0)
	sel := "app.kubernetes.io/instance=" + env.Cfg.Release + ",app.kubernetes.io/component=controller"
	start := time.Now()
	pods, err := k.CS.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil || len(pods.Items) == 0 {
		return nil, fmt.Errorf("finding the controller pod (%s): %v", sel, err)
	}
	var gone []types.UID
	for _, p := range pods.Items {
		if err := k.CS.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return nil, fmt.Errorf("deleting the controller pod %s: %w", p.Name, err)
		}
		gone = append(gone, p.UID)
		env.Logf("chaos: %s at step %d (%d%%), %s into it: deleted the controller pod %s", name, s0.Step, s0.Weight, time.Since(s0.StepStart).Round(time.Second), p.Name)
	}
	err = kube.Until(ctx, time.Second, 2*time.Minute, "a new controller pod to be ready", func(ctx context.Context) (bool, error) {
		pods, err := k.CS.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, err
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; !slices.Contains(gone, p.UID) && kube.PodReady(p) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	del.Elapsed = time.Since(start).Round(time.Second)
	del.at, del.step = start, s0
	env.Logf("chaos: a new controller pod is ready after %s", del.Elapsed)

	out := FaultRow{Fault: "prometheus scaled to 0", WritesAcked: -1, MaxFailed: -1, MaxConnErrs: -1, noLoad: true}
	// Late in the step, so that its analysis falls due soon after Prometheus is gone.
	s1, err := waitStep(ctx, k, ns, name, 1, canaryStepInterval-20*time.Second)
	if err != nil {
		return []FaultRow{del}, err
	}
	out.Before = parityText(s1)
	start = time.Now()
	if err := scalePrometheus(ctx, k, 0); err != nil {
		return []FaultRow{del}, err
	}
	restored := false
	defer func() {
		if !restored {
			_ = scalePrometheus(context.WithoutCancel(ctx), k, 1)
		}
	}()
	err = kube.Until(ctx, time.Second, time.Minute, "the Prometheus pods to go", func(ctx context.Context) (bool, error) {
		pods, err := k.CS.CoreV1().Pods(monitoringNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=prometheus"})
		return err == nil && len(pods.Items) == 0, err
	})
	if err != nil {
		return []FaultRow{del}, err
	}
	env.Logf("chaos: %s at step %d (%d%%): Prometheus scaled to 0", name, s1.Step, s1.Weight)
	held := map[time.Time]bool{}
	var last canaryPoint
	err = kube.Until(ctx, time.Second, promOutageMax, fmt.Sprintf("%d analyses of %s to hold on the outage", promOutageAnalyses, name), func(ctx context.Context) (bool, error) {
		pc, err := getCanary(ctx, k, ns, name)
		if err != nil {
			return false, err
		}
		last = pointOf(pc, time.Now())
		if last.Phase != string(v1alpha1.PhaseProgressing) || last.Step != s1.Step || last.Weight != s1.Weight {
			out.problem("the rollout moved while Prometheus was away: %s at step %d (%d%%)", last.Phase, last.Step, last.Weight)
			return true, nil
		}
		c := meta.FindStatusCondition(pc.Status.Conditions, v1alpha1.ConditionParity)
		if last.Analysis.After(start) && c != nil && c.Status == metav1.ConditionUnknown && c.Reason == controller.EventPrometheusUnavailable {
			held[last.Analysis] = true
		}
		return len(held) >= promOutageAnalyses, nil
	})
	if err != nil {
		out.problem("%v (last status: %+v)", err, last)
	}
	if err := scalePrometheus(ctx, k, 1); err != nil {
		return []FaultRow{del, out}, err
	}
	restored = true
	out.at = time.Now()
	if err := k.WaitPodsReady(ctx, monitoringNS, "app.kubernetes.io/name=prometheus", 3*time.Minute); err != nil {
		return []FaultRow{del, out}, err
	}
	out.Elapsed = time.Since(start).Round(time.Second)
	out.Note = fmt.Sprintf("held at %d%% through %d analyses (Parity %s), Prometheus away %s", s1.Weight, len(held), last.Parity, out.at.Sub(start).Round(time.Second))
	env.Logf("chaos: Prometheus is back; %s", out.Note)
	return []FaultRow{del, out}, nil
}

// waitStep waits until PoolCanary name runs step step and has run it for at least into (mid-step),
// and returns its status then. A rollout that ends first is an error. It waits as long as the
// harness watches the rollout: a sequential step ends only once the evidence is in, which for the
// first step includes the minutes before Prometheus scrapes the new targets at all (run of
// 2026-11-25: the first traffic sample 2m30s after the load started, step 0 ended at 3m52s).
func waitStep(ctx context.Context, k *kube.Kube, ns, name string, step int32, into time.Duration) (canaryPoint, error) {
	var p canaryPoint
	err := kube.Until(ctx, time.Second, canaryWatch, fmt.Sprintf("%s to be %s into step %d", name, into, step), func(ctx context.Context) (bool, error) {
		pc, err := getCanary(ctx, k, ns, name)
		if err != nil {
			return false, err
		}
		p = pointOf(pc, time.Now())
		if finished(p.Phase) || p.Step > step {
			return false, fmt.Errorf("%s is past step %d: %s at step %d", name, step, p.Phase, p.Step)
		}
		return p.Phase == string(v1alpha1.PhaseProgressing) && p.Step == step && p.Weight > 0 &&
			!p.StepStart.IsZero() && time.Since(p.StepStart) >= into, nil
	})
	return p, err
}

// scalePrometheus sets the replicas of the cluster's Prometheus (the operator scales its
// StatefulSet).
func scalePrometheus(ctx context.Context, k *kube.Kube, replicas int) error {
	gvr := schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheuses"}
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	_, err := k.Dyn.Resource(gvr).Namespace(monitoringNS).Patch(ctx, promName, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: kube.FieldManager})
	if err != nil {
		return fmt.Errorf("scaling Prometheus %s/%s to %d: %w", monitoringNS, promName, replicas, err)
	}
	return nil
}

// parityText is a rollout's position for the table: phase@weight.
func parityText(p canaryPoint) string { return fmt.Sprintf("%s@%d%%", p.Phase, p.Weight) }

// checkResumed completes the controller's fault rows from the rollout's history: after its pod
// was deleted, the controller kept the step it was in (the same start, so no step repeated),
// ended it no sooner than stepInterval after that start, on a passed analysis, and went to the
// next step (none skipped); through the Prometheus outage it held, and it promoted only on an
// analysis made after Prometheus returned.
func checkResumed(rows []FaultRow, run CanaryRun) []FaultRow {
	out := slices.Clone(rows)
	for i := range out {
		r := &out[i]
		switch r.Fault {
		case "controller pod deleted":
			r.After = run.Phase
			checkStepKept(r, run.History)
		case "prometheus scaled to 0":
			r.After = run.Phase
			checkPromotedOnData(r, run.History)
		}
	}
	return out
}

// checkStepKept is checkResumed's part for the controller pod's deletion at r.at, during the
// step r.step.
func checkStepKept(r *FaultRow, h []canaryPoint) {
	var seen []int32
	for i, p := range h {
		if p.Phase != string(v1alpha1.PhaseProgressing) {
			continue
		}
		if len(seen) == 0 || seen[len(seen)-1] != p.Step {
			seen = append(seen, p.Step)
		}
		if p.Step == r.step.Step && !p.StepStart.Equal(r.step.StepStart) {
			r.problem("step %d restarted at %s (it started at %s): a step repeated", p.Step, p.StepStart.Format(time.TimeOnly), r.step.StepStart.Format(time.TimeOnly))
			return
		}
		if p.Step == r.step.Step+1 && (i == 0 || h[i-1].Step == r.step.Step) {
			switch {
			case p.Verdict != string(v1alpha1.VerdictPass):
				r.problem("step %d ended on a %q analysis, not a pass", r.step.Step, p.Verdict)
			case p.Analysis.Before(r.step.StepStart.Add(canaryStepInterval)):
				r.problem("step %d ended after %s, before its interval %s", r.step.Step, p.Analysis.Sub(r.step.StepStart).Round(time.Second), canaryStepInterval)
			default:
				r.Note = fmt.Sprintf("step %d (%d%%) kept its start; analysed %s after it; then step %d (%d%%)",
					r.step.Step, r.step.Weight, p.Analysis.Sub(r.step.StepStart).Round(time.Second), p.Step, p.Weight)
			}
		}
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] != seen[i-1]+1 {
			r.problem("steps went %v: a step skipped or repeated", seen)
			return
		}
	}
	if r.Note == "" && len(r.Problems) == 0 {
		r.problem("the rollout never left step %d after the controller restarted (steps seen %v)", r.step.Step, seen)
	}
}

// checkPromotedOnData is checkResumed's part for the Prometheus outage that ended at r.at.
func checkPromotedOnData(r *FaultRow, h []canaryPoint) {
	for _, p := range h {
		if p.Phase == string(v1alpha1.PhasePromoted) {
			if p.Analysis.Before(r.at) || p.Verdict != string(v1alpha1.VerdictPass) {
				r.problem("promoted on a %q analysis at %s, Prometheus returned at %s", p.Verdict, p.Analysis.Format(time.TimeOnly), r.at.Format(time.TimeOnly))
			}
			r.Note += fmt.Sprintf("; promoted %s after Prometheus returned", p.Analysis.Sub(r.at).Round(time.Second))
			return
		}
	}
}

package steps

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kindnodes "sigs.k8s.io/kind/pkg/cluster/nodes"

	"github.com/poolparity/poolparity/hack/kindrun/cluster"
	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
	"github.com/poolparity/poolparity/hack/kindrun/probeapi"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/render"
	"github.com/poolparity/poolparity/internal/scenario"
)

// FaultRow is one fault of the chaos phase and what the load and the verifying client saw
// from its start until the cluster was back to normal.
type FaultRow struct {
	Fault       string        `json:"fault"`
	Sent        uint64        `json:"sent"`
	Failed      uint64        `json:"failed"`                   // no answer or a 5xx
	JSON5xx     uint64        `json:"json_5xx"`                 // of Failed: the service's JSON 503s
	ConnErrors  uint64        `json:"connection_errors"`        // of Failed: no answer, or a 5xx that is not the service's
	MaxFailed   int64         `json:"max_failed"`               // failed requests promised at most; -1: not bounded
	MaxConnErrs int64         `json:"max_conn_errors"`          // connection errors promised at most; -1: not bounded
	WritesAcked int           `json:"writes_acked"`             // acknowledged writes read back after the fault; -1: none
	WritesLost  int           `json:"writes_lost"`              // of those: gone or changed
	ReadyDrops  int           `json:"readiness_changes"`        // app pods that left readiness
	Before      string        `json:"verdict_before,omitempty"` // parity verdict; a rollout's phase@weight for the controller's faults
	After       string        `json:"verdict_after,omitempty"`
	Elapsed     time.Duration `json:"elapsed_ns"`
	Note        string        `json:"note,omitempty"`
	Problems    []string      `json:"problems,omitempty"`

	noLoad bool        // a controller fault: no load counts
	at     time.Time   // when the fault began (controller) or ended (Prometheus outage)
	step   canaryPoint // the rollout when the controller's pod was deleted
}

// OK reports whether every figure of the row is as promised.
func (r FaultRow) OK() bool { return len(r.Problems) == 0 }

// problem records a broken promise.
func (r *FaultRow) problem(format string, a ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, a...))
}

// The chaos load: small, keep-alive, through the release's Service from a pod in the cluster.
const (
	chaosRPS         = 40
	chaosConcurrency = 8
	chaosFresh       = 5                // req/s more, each on a new connection: what an emptied Service refuses
	chaosLoadMax     = 15 * time.Minute // the load's own bound; the step stops it sooner
	chaosWrites      = 60               // items the verifying client writes before a Redis fault
	redisFreeze      = 15 * time.Second
	// verdictWarmup is the load before the first verdict: the 1m rules' window full of pods that
	// all served the whole minute, and the statistical test's 8 samples a track (5 s scrapes).
	verdictWarmup = 100 * time.Second
	// verdictLag is how long after a moment the 1m rules have moved past it: a scrape (5 s),
	// a rule evaluation (5 s) and slack for a busy machine.
	verdictLag     = 20 * time.Second
	recoverTimeout = 2 * time.Minute // a fault's cluster must be back to normal within this
	chaosReplicas  = 2               // per track, so that one pod deleted leaves one serving
)

// chaosStep runs the chaos phase: faults in the cluster under a bounded keep-alive load, each
// with its figures printed and asserted (docs/reliability.md).
type chaosStep struct{}

// chaosDef declares the "chaos" step.
func chaosDef() harness.Def {
	return harness.Def{Step: chaosStep{}, Needs: []string{"env", "helm-install"}, Target: "chaos", Doc: "Faults under keep-alive load (restarts, pod and Redis deletions, a Redis freeze), each asserted (docs/reliability.md).", Default: true}
}

// Name implements Step.
func (chaosStep) Name() string { return "chaos" }

// chaos is what the faults share: the cluster, the probe, Prometheus and the readiness log.
type chaos struct {
	env       *harness.Env
	k         *kube.Kube
	probe     probeapi.Client
	q         parity.Querier
	ready     *readinessLog
	loadStart time.Time
	// preFreeze is the parity report judged before the Redis freeze.
	preFreeze parity.Report
}

// appSelector selects the release's app pods and Deployments (both tracks).
func appSelector(env *harness.Env) string {
	return "app.kubernetes.io/instance=" + env.Cfg.Release + ",app.kubernetes.io/component=app"
}

// redisSelector selects the release's Redis pod.
func redisSelector(env *harness.Env) string {
	return "app.kubernetes.io/instance=" + env.Cfg.Release + ",app.kubernetes.io/component=redis"
}

// Run implements Step.
func (chaosStep) Run(ctx context.Context, env *harness.Env) (harness.Outcome, error) {
	k, err := env.Kube()
	if err != nil {
		return harness.Outcome{}, err
	}
	good, err := scenario.Lookup(scenario.Good)
	if err != nil {
		return harness.Outcome{}, err
	}
	env.Logf("chaos: a good gray, %d replicas a track", chaosReplicas)
	if err := helmInstall(ctx, env, append(scenarioValues(good), "--set", fmt.Sprintf("autoscaling.minReplicas=%d", chaosReplicas))...); err != nil {
		return harness.Outcome{}, err
	}
	c := &chaos{env: env, k: k}
	if err := c.waitNormal(ctx); err != nil {
		return harness.Outcome{}, err
	}
	probe, stopProbe, err := startProbe(ctx, env, k)
	if err != nil {
		return harness.Outcome{}, err
	}
	defer stopProbe()
	c.probe = probe
	ps, err := openProm(ctx, env, k)
	if err != nil {
		return harness.Outcome{}, err
	}
	defer ps.stop()
	c.q = ps.q
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if c.ready, err = watchReadiness(wctx, k, env.Cfg.Namespace, appSelector(env)); err != nil {
		return harness.Outcome{}, err
	}
	if err := probe.StartLoad(ctx, chaosRPS, chaosConcurrency, chaosFresh, chaosLoadMax); err != nil {
		return harness.Outcome{}, err
	}
	c.loadStart = time.Now()
	env.Logf("chaos: load %d req/s on %d keep-alive connections and %d req/s on new ones through Service %s, from pod %s",
		chaosRPS, chaosConcurrency, chaosFresh, fullname(env), probeName)
	faults := []struct {
		name    string
		prepare func(context.Context, *FaultRow) error // before the fault's window
		run     func(context.Context, *FaultRow) error
	}{
		{"redis frozen 15s", c.beforeFreeze, c.freezeRedis},
		{"rolling restart stable", nil, func(ctx context.Context, r *FaultRow) error { return c.restartTrack(ctx, r, "stable") }},
		{"rolling restart gray", nil, func(ctx context.Context, r *FaultRow) error { return c.restartTrack(ctx, r, "gray") }},
		{"pod deleted: gray+stable", nil, c.deletePods},
		{"redis pod deleted", c.beforeRedisDeletion, c.deleteRedis},
	}
	var o outcome[ChaosResult]
	var failed []string
	for _, f := range faults {
		row, err := c.fault(ctx, f.name, f.prepare, f.run)
		o.Result.Chaos = append(o.Result.Chaos, row)
		if err != nil {
			env.Print(chaosTable(o.Result.Chaos))
			c.printEvidence(ctx)
			return o.done(), fmt.Errorf("fault %q: %w", f.name, err)
		}
		if !row.OK() {
			failed = append(failed, f.name+": "+strings.Join(row.Problems, "; "))
		}
	}
	final, err := probe.StopLoad(ctx)
	if err != nil {
		return o.done(), err
	}
	env.Print(chaosTable(o.Result.Chaos))
	if len(failed) > 0 {
		c.printEvidence(ctx)
		return o.done(), errors.New(strings.Join(failed, "; "))
	}
	o.Note = fmt.Sprintf("%d faults as promised; %d requests, %d failed", len(faults), final.Requests, final.Failed())
	return o.done(), nil
}

// fault runs one fault and fills its row with the load's counts and the readiness drops from
// its start until the cluster was back to normal (the fault waits for that).
func (c *chaos) fault(ctx context.Context, name string, prepare, run func(context.Context, *FaultRow) error) (FaultRow, error) {
	row := FaultRow{Fault: name, WritesAcked: -1, MaxConnErrs: -1}
	c.env.Logf("chaos: %s", name)
	if prepare != nil {
		if err := prepare(ctx, &row); err != nil {
			return row, err
		}
	}
	before, err := c.probe.Counts(ctx)
	if err != nil {
		return row, err
	}
	start := time.Now()
	runErr := run(ctx, &row)
	after, err := c.probe.Counts(ctx)
	if err != nil {
		return row, errors.Join(runErr, err)
	}
	row.Elapsed = time.Since(start).Round(time.Second)
	d := after.Sub(before)
	row.Sent, row.Failed, row.JSON5xx, row.ConnErrors = d.Requests, d.Failed(), d.JSON5xx, d.ConnectionErrors()
	if row.MaxFailed >= 0 && row.Failed > uint64(row.MaxFailed) {
		row.problem("%d failed requests, at most %d promised", row.Failed, row.MaxFailed)
	}
	if row.MaxConnErrs >= 0 && row.ConnErrors > uint64(row.MaxConnErrs) {
		row.problem("%d requests got no answer or a non-JSON 5xx (connection errors), at most %d promised: the service must answer a JSON 503", row.ConnErrors, row.MaxConnErrs)
	}
	if row.WritesLost > 0 {
		row.problem("%d of %d acknowledged writes lost or changed", row.WritesLost, row.WritesAcked)
	}
	for _, drop := range c.ready.between(start, time.Now()) {
		row.ReadyDrops++
		how := ""
		switch {
		case drop.Deleted:
			how = " (deleted)"
		case drop.Terminating:
			how = " (terminating)"
		}
		c.env.Logf("chaos: %s: pod %s left readiness at +%s%s", name, drop.Pod, drop.At.Sub(start).Round(100*time.Millisecond), how)
	}
	c.env.Logf("chaos: %s: %d requests, %d failed (%d JSON 5xx, %d connection errors), codes %v, %d readiness drops, in %s",
		name, row.Sent, row.Failed, row.JSON5xx, row.ConnErrors, d.ByCode, row.ReadyDrops, row.Elapsed)
	for _, e := range errorKinds(d.Errors, 5) {
		c.env.Logf("chaos: %s: %s", name, e)
	}
	return row, runErr
}

// --- the faults

// freezeRedis freezes the Redis container for redisFreeze (containerd's pause: the cgroup
// freezer, what `docker pause` does; a SIGSTOP from inside the container would not reach its
// PID 1), with the parity verdict of the good gray before and after. Promise: no app pod leaves
// readiness, requests needing Redis get the service's JSON 503 (no connection errors), the
// acknowledged writes are all there afterwards, and the verdict stays PASS (or the freeze leaves
// nothing behind a baseline that FAILs on CPU per request alone: overheadOnly).
func (c *chaos) freezeRedis(ctx context.Context, row *FaultRow) error {
	row.MaxFailed, row.MaxConnErrs = -1, 0
	pod, err := c.redisPod(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := c.pauseContainer(ctx, pod, true); err != nil {
		return err
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = c.pauseContainer(context.WithoutCancel(ctx), pod, false)
		}
	}()
	if err := sleep(ctx, redisFreeze); err != nil {
		return err
	}
	if err := c.pauseContainer(ctx, pod, false); err != nil {
		return err
	}
	resumed = true
	thawed := time.Now()
	c.env.Logf("chaos: redis %s frozen for %s", pod.Name, thawed.Sub(start).Round(100*time.Millisecond))
	if err := c.readBack(ctx, row, "freeze"); err != nil {
		return err
	}
	if err := c.waitNormal(ctx); err != nil {
		return err
	}
	// Judged twice. With the freeze inside the 1m window the verdict is printed, not asserted:
	// both tracks answer 503s, but a 15 s fault over keep-alive connections that stay with their
	// pods need not split evenly, and the error SLI's threshold (0.5 points) is smaller than that
	// chance. Once the window has passed the freeze, the good gray must be PASS again: a fault
	// that hit both tracks left no regression behind.
	if err := sleep(ctx, time.Until(start.Add(40*time.Second))); err != nil {
		return err
	}
	during, err := c.verdict(ctx, "with the freeze in the 1m window")
	if err != nil {
		return err
	}
	row.Note += "verdict with the freeze in the window: " + string(during.Verdict)
	if err := sleep(ctx, time.Until(thawed.Add(time.Minute+verdictLag))); err != nil {
		return err
	}
	after, err := c.verdict(ctx, "after the freeze left the window")
	// An alert the freeze set firing (its 1m window skewed by an uneven split) resolves a rule
	// evaluation or two after its expression clears: judge again, every 30 s, for at most 2 more
	// minutes, before calling a FAIL the fault's.
	left, already := leftBehind(c.preFreeze, after, start)
	for i := 0; err == nil && len(left) > 0 && i < 4; i++ {
		if err = sleep(ctx, 30*time.Second); err == nil {
			after, err = c.verdict(ctx, fmt.Sprintf("after the freeze, again (%d of 4)", i+1))
			left, already = leftBehind(c.preFreeze, after, start)
		}
	}
	if err != nil {
		return err
	}
	row.After = string(after.Verdict)
	switch {
	case (row.Before != string(parity.Pass) && !overheadOnly(c.preFreeze)) || len(left) > 0:
		row.problem("parity verdict of a good gray %s before and %s after the freeze (left behind: %s), want PASS both", row.Before, row.After, strings.Join(left, "; "))
	case len(already) > 0:
		// A FAIL whose every cause was active before the freeze began is not the freeze's (in
		// CI run 8 the CPU-per-request alert went pending before it: the load's keep-alive
		// connections had split the tracks unevenly, and per-pod overhead dominates CPU per
		// request at this load).
		row.After += " (present before the freeze: " + strings.Join(already, "; ") + ")"
	}
	// A pod that leaves readiness because it is being deleted (in CI run 12, two stable pods of a
	// scale-down, 33 s after the thaw) is not one whose readiness depended on Redis.
	var failed []string
	for _, d := range c.ready.between(start, time.Now()) {
		if !d.Terminating {
			failed = append(failed, d.Pod)
		}
	}
	if len(failed) > 0 {
		row.problem("%d app pods left readiness while Redis was frozen (readiness must not depend on Redis): %s", len(failed), strings.Join(failed, ", "))
	}
	return nil
}

// beforeFreeze writes the items the freeze must keep, and judges parity once the 1m rules have a
// minute of the load on both tracks.
func (c *chaos) beforeFreeze(ctx context.Context, row *FaultRow) error {
	if err := c.writeSet(ctx, "freeze"); err != nil {
		return err
	}
	if wait := verdictWarmup - time.Since(c.loadStart); wait > 0 {
		c.env.Logf("chaos: waiting %s for a minute of load in Prometheus", wait.Round(time.Second))
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
	before, err := c.verdict(ctx, "before the freeze")
	// The freeze is judged against a good gray that PASSes under the same load, so a verdict
	// other than PASS here is judged again, every 30 s, for at most 2 more minutes:
	//   - under the confirmed gate a row over its threshold whose test has too few samples yet is
	//     NO DATA (the baseline at 100 s of load was, in the CI run of stop 40);
	//   - the confirmed gate is a fast judge with a false FAIL rate of a few percent per rollout
	//     (docs/verdict-eval.md): in the CI run of stop 45 a good gray was FAILed before the freeze.
	// More minutes of the same load decide it; the earlier verdicts go into the row's note, and a
	// gray that stays FAIL or NO DATA for the 2 minutes still fails the row.
	var earlier []string
	for i := 0; err == nil && before.Verdict != parity.Pass && !overheadOnly(before) && i < 4; i++ {
		earlier = append(earlier, verdictCause(before))
		if err = sleep(ctx, 30*time.Second); err == nil {
			before, err = c.verdict(ctx, fmt.Sprintf("before the freeze, again (%d of 4)", i+1))
		}
	}
	if len(earlier) > 0 {
		row.Note = "judged before the freeze: " + strings.Join(append(earlier, string(before.Verdict)), ", then ") + "; "
	}
	if overheadOnly(before) {
		row.Note += "before the freeze " + verdictCause(before) + ", only CPU per request (uneven keep-alive split; per-pod overhead), so judged for what the freeze leaves behind; "
	}
	c.preFreeze = before
	row.Before = string(before.Verdict)
	return err
}

// overheadOnly reports whether r FAILs on CPU per request alone, its row or its alert. Under the
// chaos load (40 req/s, most of it over 8 keep-alive connections that stay with their pods) the
// tracks' shares of the requests are uneven, and each pod's fixed overhead (GC, scrapes, probes)
// then dominates its CPU per request: a good gray read 1.5-1.8x stable's, with its alert firing
// since the step before, in CI run 8 and in the runs of stops 45 and 46. Such a baseline is no
// fault's doing: the freeze is judged for what it leaves behind (leftBehind), every other SLI
// still having to PASS before it.
func overheadOnly(r parity.Report) bool {
	if r.Verdict != parity.Fail {
		return false
	}
	cpuAlert := catalog.Default().AlertOf(catalog.CPUPerRequest)
	causes := 0
	for _, row := range r.GateRows() {
		if row.Verdict == parity.Fail {
			if row.ID != catalog.CPUPerRequest {
				return false
			}
			causes++
		}
	}
	for _, a := range r.Alerts {
		if parity.AlertFails(a) {
			if a.Name != cpuAlert {
				return false
			}
			causes++
		}
	}
	return causes > 0
}

// verdictCause is a report's verdict with what caused it: the SLIs its gate FAILed, or its
// reasons.
func verdictCause(r parity.Report) string {
	var failed []string
	for _, row := range r.GateRows() {
		if row.Verdict == parity.Fail {
			failed = append(failed, row.SLI)
		}
	}
	if len(failed) == 0 {
		failed = r.Reasons
	}
	if len(failed) == 0 {
		return string(r.Verdict)
	}
	return string(r.Verdict) + " (" + strings.Join(failed, "; ") + ")"
}

// writeSet writes chaosWrites items of set through the verifying client; each must be
// acknowledged.
func (c *chaos) writeSet(ctx context.Context, set string) error {
	w, err := c.probe.Write(ctx, set, chaosWrites)
	if err != nil {
		return err
	}
	if w.Failed > 0 {
		return fmt.Errorf("writing the items of %s: %d of %d failed: %v", set, w.Failed, chaosWrites, w.Errors)
	}
	c.env.Logf("chaos: wrote %d items of %s, each acknowledged", w.Acked, set)
	return nil
}

// restartTrack restarts one track's Deployment (what `kubectl rollout restart` does: a new pod
// template annotation) and waits until the old pods are gone. Promise: no failed request; the
// old pods drain (readiness false, Connection: close, then shutdown) while the new ones serve.
func (c *chaos) restartTrack(ctx context.Context, row *FaultRow, track string) error {
	d, err := c.trackDeployment(ctx, track)
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339))
	_, err = c.k.CS.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: kube.FieldManager})
	if err != nil {
		return fmt.Errorf("restarting deployment %s: %w", d.Name, err)
	}
	if err := c.k.WaitDeployment(ctx, d.Namespace, d.Name, recoverTimeout); err != nil {
		return err
	}
	return c.waitNormal(ctx)
}

// deletePods deletes one ready pod of each track at once, gracefully (as `kubectl delete pod`
// or an eviction), while the other pod of each track serves. Bound: each of the load's
// chaosConcurrency connections can lose at most the one request it has in flight when its pod
// closes it, so at most chaosConcurrency failed requests; the drain (readiness false,
// Connection: close, then shutdown) should make it 0.
func (c *chaos) deletePods(ctx context.Context, row *FaultRow) error {
	row.MaxFailed = chaosConcurrency
	for _, track := range []string{"gray", "stable"} {
		pods, err := c.k.CS.CoreV1().Pods(c.env.Cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: appSelector(c.env) + "," + trackLabel + "=" + track})
		if err != nil {
			return err
		}
		i := slices.IndexFunc(pods.Items, func(p corev1.Pod) bool { return kube.PodReady(&p) && p.DeletionTimestamp == nil })
		if i < 0 {
			return fmt.Errorf("no ready %s pod to delete", track)
		}
		p := pods.Items[i]
		if err := c.k.CS.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting pod %s: %w", p.Name, err)
		}
		c.env.Logf("chaos: deleted %s pod %s", track, p.Name)
	}
	return c.waitNormal(ctx)
}

// deleteRedis writes items, deletes the Redis pod (gracefully) and reads every acknowledged item
// back once Redis is back. Promise: no acknowledged write lost (AOF on a PersistentVolume), and
// the requests during the gap get the service's JSON 503, not connection errors from a Service
// whose pods all left readiness.
func (c *chaos) deleteRedis(ctx context.Context, row *FaultRow) error {
	row.MaxFailed, row.MaxConnErrs = -1, 0
	pod, err := c.redisPod(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := c.k.CS.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting the Redis pod %s: %w", pod.Name, err)
	}
	c.env.Logf("chaos: deleted redis pod %s", pod.Name)
	err = kube.Until(ctx, time.Second, recoverTimeout, "a new Redis pod to be ready", func(ctx context.Context) (bool, error) {
		p, err := c.redisPod(ctx)
		return err == nil && p.Name != pod.Name || err == nil && p.UID != pod.UID, nil
	})
	if err != nil {
		return err
	}
	c.env.Logf("chaos: redis ready again after %s", time.Since(start).Round(100*time.Millisecond))
	if err := c.readBack(ctx, row, "redis"); err != nil {
		return err
	}
	return c.waitNormal(ctx)
}

// beforeRedisDeletion writes the items the Redis pod's deletion must keep.
func (c *chaos) beforeRedisDeletion(ctx context.Context, _ *FaultRow) error {
	return c.writeSet(ctx, "redis")
}

// --- helpers

// readBack reads the acknowledged items of set until every one answers (Redis back and
// reconnected), bounded by recoverTimeout, and records what was lost or changed.
func (c *chaos) readBack(ctx context.Context, row *FaultRow, set string) error {
	var v probeapi.Verified
	err := kube.Until(ctx, 2*time.Second, recoverTimeout, "the acknowledged items of "+set+" to answer", func(ctx context.Context) (bool, error) {
		var err error
		v, err = c.probe.Verify(ctx, set)
		return err == nil && v.Unavailable == 0, err
	})
	if err != nil {
		return fmt.Errorf("%w (last read-back: %+v)", err, v)
	}
	row.WritesAcked, row.WritesLost = v.Checked, v.Lost+v.Mismatched
	c.env.Logf("chaos: read back %d acknowledged items of %s: %d byte for byte, %d lost, %d changed", v.Checked, set, v.Matched, v.Lost, v.Mismatched)
	for i, m := range v.Mismatches {
		if i == 10 {
			c.env.Logf("chaos: ... %d more mismatches", len(v.Mismatches)-i)
			break
		}
		c.env.Logf("chaos: mismatch: %s", m)
	}
	return nil
}

// verdict judges the release's parity in process (parity.Evaluate, as the scenarios step), and
// prints the report when it is not PASS.
func (c *chaos) verdict(ctx context.Context, when string) (parity.Report, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := parity.Evaluate(ctx, c.q, catalog.Default(), parityOptions(c.env.Cfg.Namespace, c.env.Cfg.Release, time.Now()))
	if err != nil {
		return r, fmt.Errorf("judging parity %s: %w", when, err)
	}
	c.env.Logf("chaos: parity verdict %s: %s", when, r.Verdict)
	if r.Verdict != parity.Pass {
		var b strings.Builder
		_ = render.Text(&b, r)
		c.env.Print(b.String())
	}
	return r, nil
}

// leftBehind returns what fails the report after a fault that began at start and was not
// there before it: a firing alert that became active at or after start, and an SLI row that
// fails now, as the report's gate decides its rows, but did not in the report judged before. An empty list for a FAIL means
// that every cause was already present before the fault (already is filled with those): the
// fault left nothing behind. A verdict other than FAIL is returned as it is, a cause itself.
func leftBehind(before, after parity.Report, start time.Time) (left, already []string) {
	switch after.Verdict {
	case parity.Pass:
		return nil, nil
	case parity.Fail:
	default:
		return []string{string(after.Verdict) + ": " + strings.Join(after.Reasons, "; ")}, nil
	}
	failedBefore := map[string]bool{}
	for _, row := range before.GateRows() {
		if row.Verdict == parity.Fail {
			failedBefore[row.SLI] = true
		}
	}
	for _, a := range after.Alerts {
		if !parity.AlertFails(a) {
			continue
		}
		what := "alert " + a.Name + " (active since " + a.ActiveAt.UTC().Format(time.TimeOnly) + ")"
		if a.ActiveAt.IsZero() || !a.ActiveAt.Before(start) {
			left = append(left, what)
		} else {
			already = append(already, what)
		}
	}
	for _, row := range after.GateRows() {
		if row.Verdict != parity.Fail {
			continue
		}
		if failedBefore[row.SLI] {
			already = append(already, row.SLI+" (failing before too)")
		} else {
			left = append(left, row.SLI)
		}
	}
	if len(left) == 0 && len(already) == 0 {
		left = []string{"FAIL: " + strings.Join(after.Reasons, "; ")}
	}
	return left, already
}

// trackDeployment returns the Deployment of one track of the release.
func (c *chaos) trackDeployment(ctx context.Context, track string) (*appsv1.Deployment, error) {
	ds, err := c.k.CS.AppsV1().Deployments(c.env.Cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: appSelector(c.env) + "," + trackLabel + "=" + track})
	if err != nil {
		return nil, err
	}
	if len(ds.Items) != 1 {
		return nil, fmt.Errorf("want one %s deployment, found %d", track, len(ds.Items))
	}
	return &ds.Items[0], nil
}

// redisPod returns the release's ready Redis pod.
func (c *chaos) redisPod(ctx context.Context) (*corev1.Pod, error) {
	pods, err := c.k.CS.CoreV1().Pods(c.env.Cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: redisSelector(c.env)})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; kube.PodReady(p) && p.DeletionTimestamp == nil {
			return p, nil
		}
	}
	return nil, errors.New("no ready Redis pod")
}

// pauseContainer freezes (or thaws) the first container of pod through the containerd of its
// kind node: `ctr tasks pause`, the cgroup freezer.
func (c *chaos) pauseContainer(ctx context.Context, pod *corev1.Pod, pause bool) error {
	if len(pod.Status.ContainerStatuses) == 0 {
		return fmt.Errorf("pod %s has no container status", pod.Name)
	}
	_, id, ok := strings.Cut(pod.Status.ContainerStatuses[0].ContainerID, "://")
	if !ok {
		return fmt.Errorf("pod %s: container ID %q", pod.Name, pod.Status.ContainerStatuses[0].ContainerID)
	}
	nodes, err := cluster.Provider(c.env).ListInternalNodes(c.env.Cfg.Cluster)
	if err != nil {
		return fmt.Errorf("listing the nodes: %w", err)
	}
	i := slices.IndexFunc(nodes, func(n kindnodes.Node) bool { return n.String() == pod.Spec.NodeName })
	if i < 0 {
		return fmt.Errorf("pod %s runs on %s, which is no node of %s", pod.Name, pod.Spec.NodeName, c.env.Cfg.Cluster)
	}
	verb := map[bool]string{true: "pause", false: "resume"}[pause]
	var out strings.Builder
	cmd := nodes[i].CommandContext(ctx, "ctr", "--namespace", "k8s.io", "tasks", verb, id)
	cmd.SetStdout(&out)
	cmd.SetStderr(&out)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ctr tasks %s %s on %s: %w: %s", verb, id, pod.Spec.NodeName, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// waitNormal waits until the release is back to normal: each track's Deployment rolled out with
// every replica ready, no app pod terminating, Redis ready.
func (c *chaos) waitNormal(ctx context.Context) error {
	ns := c.env.Cfg.Namespace
	return kube.Until(ctx, time.Second, recoverTimeout, "the release to be back to normal", func(ctx context.Context) (bool, error) {
		ds, err := c.k.CS.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: appSelector(c.env)})
		if err != nil {
			return false, err
		}
		if len(ds.Items) < 2 {
			return false, fmt.Errorf("want both tracks' deployments, found %d", len(ds.Items))
		}
		for i := range ds.Items {
			d := &ds.Items[i]
			if !kube.DeploymentRolledOut(d) || d.Status.ReadyReplicas != d.Status.Replicas {
				return false, nil
			}
		}
		pods, err := c.k.CS.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: appSelector(c.env)})
		if err != nil {
			return false, err
		}
		for i := range pods.Items {
			if pods.Items[i].DeletionTimestamp != nil {
				return false, nil
			}
		}
		_, err = c.redisPod(ctx)
		return err == nil, nil
	})
}

// printEvidence prints what explains a broken promise beyond diagnose's pods and events: the
// recent logs of the app and Redis pods.
func (c *chaos) printEvidence(ctx context.Context) {
	for _, sel := range []string{appSelector(c.env), redisSelector(c.env)} {
		logs, err := c.k.PodLogs(ctx, c.env.Cfg.Namespace, sel, 15)
		if err != nil {
			logs += "\n(" + err.Error() + ")"
		}
		c.env.Print(fmt.Sprintf("----- logs %s\n%s\n", sel, harness.Indent(strings.TrimSpace(logs))))
	}
}

// chaosTable is the chaos phase's table.
func chaosTable(rows []FaultRow) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n== chaos: faults under load through the Service from a pod (%d req/s on %d keep-alive connections, %d req/s on new ones)\n", chaosRPS, chaosConcurrency, chaosFresh)
	fmt.Fprintf(&b, "  %-26s %6s %6s %9s %9s %11s %11s %-15s %6s  %s\n", "fault", "sent", "failed", "json-5xx", "conn-err", "writes-lost", "ready-drops", "verdict", "time", "")
	for _, r := range rows {
		if r.noLoad {
			status := "ok: " + r.Note
			if !r.OK() {
				status = "FAILED: " + strings.Join(r.Problems, "; ")
			}
			fmt.Fprintf(&b, "  %-26s %6s %6s %9s %9s %11s %11s %-15s %6s  %s\n", r.Fault, "-", "-", "-", "-", "-", "-", r.Before+" -> "+orDash(r.After), r.Elapsed, status)
			continue
		}
		lost := "-"
		if r.WritesAcked >= 0 {
			lost = fmt.Sprintf("%d/%d", r.WritesLost, r.WritesAcked)
		}
		verdict := "-"
		if r.Before != "" || r.After != "" {
			verdict = fmt.Sprintf("%s -> %s", orDash(string(r.Before)), orDash(string(r.After)))
		}
		status := "ok"
		if r.Note != "" {
			status += ": " + r.Note
		}
		if !r.OK() {
			status = "FAILED: " + strings.Join(r.Problems, "; ")
		}
		fmt.Fprintf(&b, "  %-26s %6d %6d %9d %9d %11s %11d %-15s %6s  %s\n", r.Fault, r.Sent, r.Failed, r.JSON5xx, r.ConnErrors, lost, r.ReadyDrops, verdict, r.Elapsed, status)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// errorKinds counts the distinct error messages and describes the most frequent, at most n.
func errorKinds(errs []string, n int) []string {
	count := map[string]int{}
	for _, e := range errs {
		count[e]++
	}
	kinds := slices.Collect(maps.Keys(count))
	slices.SortFunc(kinds, func(a, b string) int { return cmp.Or(count[b]-count[a], strings.Compare(a, b)) })
	var out []string
	for i, k := range kinds {
		if i == n {
			out = append(out, fmt.Sprintf("... and %d other errors", len(kinds)-n))
			break
		}
		out = append(out, fmt.Sprintf("%dx %s", count[k], k))
	}
	return out
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

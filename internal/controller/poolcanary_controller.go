// Package controller holds the PoolCanary reconciler: it runs a stable and a gray track of the
// poolparity service as two Deployments, gives the gray track the current weight through the
// canary's traffic router (package trafficrouting: the replica split, or a route's weights),
// judges the gray track against the stable one through the parity recording rules in
// Prometheus at the end of every step, and promotes or rolls back.
package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/controller/trafficrouting"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// Event reasons (besides the Progressing reasons, v1alpha1.Reason*, which are also Events).
const (
	EventRolloutStarted        = "RolloutStarted"
	EventStepAdvanced          = "StepAdvanced"
	EventAnalysisFailed        = "AnalysisFailed"
	EventAnalysisInconclusive  = "AnalysisInconclusive"
	EventPrometheusUnavailable = "PrometheusUnavailable"
	EventApplyFailed           = "ApplyFailed"
	EventOwnershipConflict     = "OwnershipConflict"
	EventWarmingUp             = "WarmingUp"
	EventRequestIgnored        = "RequestIgnored" // a promote or abort request the rollout's state refuses
)

// DefaultReconcileTimeout bounds one reconcile when ReconcileTimeout is 0: longer than the
// longest analysis (maxAnalysisTimeout), so that an analysis ends on its own timeout first.
const DefaultReconcileTimeout = 2 * time.Minute

// defaultWarmup is analysis.warmup when the API server's default was bypassed.
const defaultWarmup = catalog.DefaultWarmup

// PoolCanaryReconciler reconciles PoolCanary objects. Create it with its fields set and call
// SetupWithManager. Reconcile may run concurrently for different canaries; the Analyzer,
// Recorder and Metrics must allow that (the provided ones do).
type PoolCanaryReconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads PoolCanaries straight from the API server (the manager's
	// GetAPIReader): a step decision from a stale cache could apply an old split for a
	// moment. nil means Client.
	APIReader client.Reader
	// Recorder emits Events (the manager's GetEventRecorder).
	Recorder events.EventRecorder
	// Analyzer judges the tracks; nil means a PrometheusAnalyzer over Prometheus.
	Analyzer Analyzer
	// Prometheus are the endpoints the cluster admin allows, with their clients: the
	// default Analyzer and the rollback profiles' request rates read through them, pinned to
	// each canary's namespace. SetupWithManager fails when both it and Analyzer are nil.
	Prometheus *promread.Clients
	// ReconcileTimeout bounds one reconcile (its analysis included); 0 means
	// DefaultReconcileTimeout.
	ReconcileTimeout time.Duration
	// Metrics records the controller's own series; nil records nothing.
	Metrics *Metrics
	// Clock tells the time; nil means the real clock.
	Clock clock.PassiveClock
	// MaxConcurrentReconciles bounds parallel reconciles (of different canaries); 0 means 1.
	MaxConcurrentReconciles int
	// PodAddr returns the host:port at which a pod's pprof port is reached for the rollback
	// profiles (analysis.profiles); nil means PodIPAddr (status.podIP). Tests on envtest,
	// whose pods never run, point it at a test server.
	PodAddr func(pod *corev1.Pod, port int32) string
	// ProfileClient fetches the rollback profiles; nil means a client without proxy, bounded
	// by the capture's context.
	ProfileClient *http.Client
	// RouteResync is how often a canary whose router weighs on an object of its own (any
	// spec.trafficRouting) is reconciled at least, since those objects are not watched: a route
	// created late, or whose weights someone else changed, is set within it. 0 means 30s.
	RouteResync time.Duration
	// Routers makes each canary's traffic router from the member of spec.trafficRouting it
	// sets; nil means DefaultRouters.
	Routers *trafficrouting.Registry
}

// +kubebuilder:rbac:groups=poolparity.dev,resources=poolcanaries,verbs=get;list;watch
// +kubebuilder:rbac:groups=poolparity.dev,resources=poolcanaries/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the reconciler: it watches PoolCanaries (spec changes, which
// include the scale subresource's writes to spec.replicas, and annotation changes, which carry
// an operator's promote and abort requests) and the Deployments they own.
func (r *PoolCanaryReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Analyzer == nil {
		if r.Prometheus == nil {
			return errors.New("the PoolCanary reconciler has neither an Analyzer nor Prometheus endpoints")
		}
		r.Analyzer = &PrometheusAnalyzer{Clients: r.Prometheus}
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Routers == nil {
		routers, err := DefaultRouters()
		if err != nil {
			return err
		}
		r.Routers = routers
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.PoolCanary{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&appsv1.Deployment{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Named("poolcanary").
		Complete(r)
}

// Reconcile moves one PoolCanary a step: set up its router, start or resume its rollout,
// analyse when the step is due, apply both track Deployments with the split, set the router's
// weight, and write the status.
func (r *PoolCanaryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	timeout := r.ReconcileTimeout
	if timeout <= 0 {
		timeout = DefaultReconcileTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pc, err := r.fetch(ctx, req)
	if pc == nil || err != nil {
		return ctrl.Result{}, err
	}
	before := pc.DeepCopy()
	now := r.Clock.Now()

	// Events and outcome metrics wait until the status that records them is written: a
	// reconcile that read a stale cache loses the optimistic-lock race and says nothing.
	out := &pending{}
	router, err := r.router(pc)
	if err != nil {
		return ctrl.Result{}, err
	}
	held, err := r.setUpRouting(ctx, pc, router, now, out)
	if err != nil {
		return ctrl.Result{}, err
	}
	requeue := r.advance(ctx, pc, now, out, held)

	sel := effectiveSelector(pc)
	stable, gray, applyErr := r.applyTracks(ctx, pc, router, sel, out)
	if applyErr == nil && !held {
		applyErr = r.setWeight(ctx, pc, router, out)
	}
	requeue = r.routeRequeue(pc, router, requeue)
	setShares(&pc.Status)
	return r.finish(ctx, before, pc, sel, deploymentReplicas(stable)+deploymentReplicas(gray), applyErr, requeue, out)
}

// fetch reads the canary from the API server; nil when it is gone or going (its Deployments go
// with it, by their owner references).
func (r *PoolCanaryReconciler) fetch(ctx context.Context, req ctrl.Request) (*v1alpha1.PoolCanary, error) {
	var pc v1alpha1.PoolCanary
	if err := r.apiReader().Get(ctx, req.NamespacedName, &pc); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.forget(req.Namespace, req.Name)
			return nil, nil
		}
		return nil, err
	}
	if !pc.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return &pc, nil
}

// finish writes the status, starts the rollback profiles a rollback asked for, and says when to
// look again. A transient applyErr (a conflict, a timeout) is returned for controller-runtime's
// backoff once the state machine's progress is written; a permanent one is in TracksReady.
// replicas is the tracks' pod count the Deployments had (status.replicas, the scale
// subresource's), kept as it was after a transient error.
func (r *PoolCanaryReconciler) finish(ctx context.Context, before, pc *v1alpha1.PoolCanary, sel *metav1.LabelSelector, replicas int32, applyErr error, requeue time.Duration, out *pending) (ctrl.Result, error) {
	if applyErr != nil && !isPermanent(applyErr) {
		if res, err := r.writeStatus(ctx, before, pc, out); err != nil || res.RequeueAfter > 0 {
			return res, err
		}
		return ctrl.Result{}, applyErr
	}
	st := &pc.Status
	st.Replicas = replicas
	if s, err := selectorString(sel); err == nil {
		st.Selector = s
	}
	st.ObservedGeneration = pc.Generation
	st.Phase = phaseOf(pc)
	if res, err := r.writeStatus(ctx, before, pc, out); err != nil || res.RequeueAfter > 0 {
		return res, err
	}
	if out.profile {
		// The rollback is written; its profiles come later, or a Warning says why not.
		r.startRollbackProfiles(ctx, pc)
	}
	r.Metrics.setState(pc.Namespace, pc.Name, st.Phase, st.CurrentWeight)
	if applyErr != nil {
		// Reported in TracksReady. A spec change retries at once; a conflicting Deployment that
		// is deleted is not ours to watch, so look again after a while.
		return ctrl.Result{RequeueAfter: permanentRetry}, nil
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// advance runs the rollout state machine on pc.Status and returns when to look again
// (0: only on a change). held holds a running rollout where it is (its router cannot set the
// weight); an operator's promote or abort still acts. Its phases: gate (a new rollout, the
// operator's requests, an ended, paused or held rollout), syncStep (the step the spec now
// asks for), schedule (whether an analysis is due), then the warm-up, the analysis and the
// verdict's decision; schedule also says when to look again after it (nextLook).
func (r *PoolCanaryReconciler) advance(ctx context.Context, pc *v1alpha1.PoolCanary, now time.Time, out *pending, held bool) time.Duration {
	if !r.gate(pc, now, out, held) {
		return 0
	}
	syncStep(&pc.Spec, &pc.Status, now)
	look, ok := schedule(&pc.Spec, &pc.Status, now)
	if !ok {
		return look.wait
	}
	if wait, ok := r.warmedUp(ctx, pc, now, out); !ok {
		return wait
	}
	if res, ok := r.analyze(ctx, pc, now, look, out); ok {
		r.decide(pc, res, now, look, out)
	}
	return nextLook(pc, now)
}

// nextLook says when to look again after an analysis (or a refused one), from the status it
// left: schedule's wait, so that one rule decides every look. After a passed step that is the
// new step's first interim look in the anytime-valid modes (an analysis interval), its end in
// the others; after an interim look the next one; after a step held at its end an analysis
// interval. 0 once the rollout has ended.
func nextLook(pc *v1alpha1.PoolCanary, now time.Time) time.Duration {
	if pc.RolloutEnded() {
		return 0
	}
	l, due := schedule(&pc.Spec, &pc.Status, now)
	if due {
		// An analysis is due again at once only for a step of no length, or an Analyzer that
		// stamps its result before now: look again after an analysis interval, not in a loop.
		return analysisInterval(&pc.Spec)
	}
	return l.wait
}

// gate starts a new rollout when the spec asks for one and acts on the operator's requests, and
// reports whether the rollout runs on: not when it has ended, is paused (spec.paused), or is
// held. A resumed rollout's step gets a full interval again.
func (r *PoolCanaryReconciler) gate(pc *v1alpha1.PoolCanary, now time.Time, out *pending, held bool) bool {
	spec, st := &pc.Spec, &pc.Status
	if hash := rolloutHash(spec); st.RolloutHash != hash {
		r.startRollout(pc, hash, now, out)
	}
	if r.handleRequests(pc, out) {
		return false // promoted or aborted by hand: the rollout has ended
	}
	prog := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing)
	if prog == nil || pc.RolloutEnded() {
		return false // the rollout has ended; a new trigger or pool mode starts another
	}
	if spec.Paused {
		if prog.Reason != v1alpha1.ReasonPaused {
			r.setProgressing(pc, metav1.ConditionFalse, v1alpha1.ReasonPaused, fmt.Sprintf("paused at weight %d", st.CurrentWeight))
			out.event(corev1.EventTypeNormal, v1alpha1.ReasonPaused, "Pause", "paused at weight %d", st.CurrentWeight)
		}
		return false
	}
	if prog.Reason == v1alpha1.ReasonPaused {
		st.StepStartedAt = ptrTime(now)
		r.setProgressing(pc, metav1.ConditionTrue, v1alpha1.ReasonStepping, fmt.Sprintf("resumed at weight %d", st.CurrentWeight))
		out.event(corev1.EventTypeNormal, "Resumed", "Resume", "resumed at weight %d", st.CurrentWeight)
	}
	return !held // a held rollout's router is read again within RouteResync
}

// syncStep clamps the current step to the steps, which may have been edited, and restarts the
// step timer when its weight changed.
func syncStep(spec *v1alpha1.PoolCanarySpec, st *v1alpha1.PoolCanaryStatus, now time.Time) {
	if int(st.CurrentStep) >= len(spec.Steps) {
		st.CurrentStep = int32(len(spec.Steps) - 1)
	}
	if st.CurrentStep < 0 {
		st.CurrentStep = 0
	}
	if w := spec.Steps[st.CurrentStep]; st.CurrentWeight != w {
		st.CurrentWeight = w
		st.StepStartedAt = ptrTime(now)
	}
	if st.StepStartedAt == nil {
		st.StepStartedAt = ptrTime(now)
	}
	if st.RolloutStartedAt == nil {
		st.RolloutStartedAt = st.StepStartedAt // a rollout started before the field existed
	}
}

// look is schedule's answer: how long until the next analysis (when none is due now), and
// whether a due one is an interim look before the step's end, and when it was due.
type look struct {
	wait    time.Duration
	interim bool
	due     time.Time
}

// gridAfter returns the first time origin + k*every (k >= 1) after t: the looks of a step
// keep to a fixed clock from its start, so an analysis that ran late does not push every
// later one back by its lateness.
func gridAfter(origin, t time.Time, every time.Duration) time.Time {
	if every <= 0 || t.Before(origin) {
		return origin.Add(max(every, 0))
	}
	return origin.Add((t.Sub(origin)/every + 1) * every)
}

// schedule says whether an analysis is due now (ok), or how long until one is; it is asked
// before an analysis and again after it (nextLook), so it alone decides every look, the first
// of a step just entered included. The anytime-valid modes' evidence (Sequential, Counts)
// stays valid however often it is read, so it is read every analysis interval during the step
// too, and a conclusive regression fails the canary without waiting for the step's end. The
// other modes judge a window at the end of the step only: looking more often would multiply
// their false alarms.
func schedule(spec *v1alpha1.PoolCanarySpec, st *v1alpha1.PoolCanaryStatus, now time.Time) (look, bool) {
	var l look
	stepEnd := st.StepStartedAt.Add(spec.StepInterval.Duration)
	due := stepEnd
	la := st.LastAnalysis
	atThisStep := la != nil && la.Weight == st.CurrentWeight && !la.Time.Time.Before(st.StepStartedAt.Time)
	if atThisStep && !la.Time.Time.Before(stepEnd) {
		// This step was analysed at its end already and held: look again on the step end's
		// clock of analysis intervals.
		due = gridAfter(stepEnd, la.Time.Time, analysisInterval(spec))
	}
	wait := due.Sub(now)
	if wait <= 0 {
		l.due = due
		return l, true
	}
	if !anytimeValid(spec.Analysis.Statistical.Mode) {
		l.wait = wait
		return l, false
	}
	next := st.StepStartedAt.Add(analysisInterval(spec))
	if atThisStep {
		next = gridAfter(st.StepStartedAt.Time, la.Time.Time, analysisInterval(spec))
	}
	if wait2 := next.Sub(now); wait2 > 0 {
		l.wait = min(wait2, wait)
		return l, false
	}
	l.interim, l.due = true, next
	return l, true
}

// lateAfter is how late an analysis may run after its due time before its status says so
// (status.lastAnalysis.lateBy): a reconcile's ordinary delay is well under it.
const lateAfter = time.Second

// analyze runs the analysis and records it in status.lastAnalysis, or holds the step (ok
// false) when the analysis is refused: nothing is sent to Prometheus until the spec is mended.
func (r *PoolCanaryReconciler) analyze(ctx context.Context, pc *v1alpha1.PoolCanary, now time.Time, l look, out *pending) (res v1alpha1.AnalysisStatus, ok bool) {
	spec, st := &pc.Spec, &pc.Status
	if ref := refuseAnalysis(&spec.Analysis, pc.Namespace, r.Prometheus); ref != nil {
		res := errorStatus(now, "refused: "+ref.Error())
		res.Weight = st.CurrentWeight
		st.LastAnalysis = &res
		r.setParity(pc, metav1.ConditionUnknown, ReasonAnalysisRefused, ref.Error())
		r.setProgressing(pc, metav1.ConditionTrue, v1alpha1.ReasonStepping, fmt.Sprintf("holding weight %d: analysis refused (%s)", st.CurrentWeight, ref.Field))
		out.event(corev1.EventTypeWarning, ReasonAnalysisRefused, "Analyze", "holding weight %d: %s", st.CurrentWeight, ref.Error())
		return res, false
	}
	start := time.Now()
	in := Input{Now: now, Since: st.RolloutStartedAt.Time, Namespace: pc.Namespace}
	if st.Warmup != nil {
		in.Exclude = st.Warmup.Excluded
	}
	res = r.Analyzer.Analyze(ctx, &spec.Analysis, in)
	late := max(now.Sub(l.due), 0)
	r.Metrics.observeAnalysis(pc.Namespace, pc.Name, res.Verdict, time.Since(start).Seconds(), late.Seconds())
	res.Weight = st.CurrentWeight
	if late >= lateAfter {
		res.LateBy = &metav1.Duration{Duration: late.Round(time.Millisecond)}
	}
	st.LastAnalysis = &res
	log.FromContext(ctx).V(1).Info("analysis", "weight", res.Weight, "verdict", res.Verdict, "message", res.Message, "interim", l.interim, "lateBy", late)
	return res, true
}

// decide acts on an analysis' verdict (see verdictOf for the Parity condition and the Event
// each verdict gives): a pass moves to the next step or ends the rollout, a failure counts
// toward failureLimit, and anything else holds the step. In an interim look only a conclusive
// regression acts before the step's end. When to look next is nextLook's, from the status
// decide leaves.
func (r *PoolCanaryReconciler) decide(pc *v1alpha1.PoolCanary, res v1alpha1.AnalysisStatus, now time.Time, l look, out *pending) {
	spec, st := &pc.Spec, &pc.Status
	v := verdictOf(res.Verdict)
	if l.interim && res.Verdict != v1alpha1.VerdictFail {
		r.setParity(pc, v.parity, v.interimReason, res.Message)
		return
	}
	r.setParity(pc, v.parity, v.reason, res.Message)
	switch res.Verdict {
	case v1alpha1.VerdictPass:
		r.passStep(pc, res.Weight, now, out)
		return
	case v1alpha1.VerdictFail:
		st.FailedAnalyses++
		out.event(v.eventType, v.event, "Analyze", "weight %d, failure %d of %d: %s", res.Weight, st.FailedAnalyses, failureLimit(spec), res.Message)
		if st.FailedAnalyses >= failureLimit(spec) {
			r.fail(pc, out)
			return
		}
		r.setProgressing(pc, metav1.ConditionTrue, v1alpha1.ReasonStepping, fmt.Sprintf("holding weight %d after %d failed analyses", st.CurrentWeight, st.FailedAnalyses))
		return
	}
	r.setProgressing(pc, metav1.ConditionTrue, v1alpha1.ReasonStepping, fmt.Sprintf("holding weight %d: %s", st.CurrentWeight, v.holding))
	out.event(v.eventType, v.event, "Analyze", "holding weight %d: %s", res.Weight, res.Message)
}

// passStep moves to the next step after a passed analysis at weight, or applies onSuccess
// after the last.
func (r *PoolCanaryReconciler) passStep(pc *v1alpha1.PoolCanary, weight int32, now time.Time, out *pending) {
	spec, st := &pc.Spec, &pc.Status
	if int(st.CurrentStep) >= len(spec.Steps)-1 {
		r.succeed(pc, out)
		return
	}
	st.CurrentStep++
	st.CurrentWeight = spec.Steps[st.CurrentStep]
	st.StepStartedAt = ptrTime(now)
	r.setProgressing(pc, metav1.ConditionTrue, v1alpha1.ReasonStepping, fmt.Sprintf("step %d of %d: weight %d", st.CurrentStep+1, len(spec.Steps), st.CurrentWeight))
	out.event(corev1.EventTypeNormal, EventStepAdvanced, "Step", "parity held at weight %d; weight is now %d", weight, st.CurrentWeight)
}

// startRollout resets the status for a new rollout from the first step.
func (r *PoolCanaryReconciler) startRollout(pc *v1alpha1.PoolCanary, hash string, now time.Time, out *pending) {
	spec, st := &pc.Spec, &pc.Status
	st.RolloutHash = hash
	st.CurrentStep = 0
	st.FailedAnalyses = 0
	st.LastAnalysis = nil
	st.RollbackProfile = nil
	st.StablePoolMode = spec.PoolModes.Stable
	st.StepStartedAt = ptrTime(now)
	st.RolloutStartedAt = ptrTime(now)
	st.Warmup = nil
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionParity)
	if spec.PoolModes.Stable == spec.PoolModes.Gray {
		st.CurrentWeight = 0
		msg := fmt.Sprintf("both tracks run %s: nothing to compare, every replica runs on stable", spec.PoolModes.Stable)
		r.setProgressing(pc, metav1.ConditionFalse, v1alpha1.ReasonNothingToCompare, msg)
		out.event(corev1.EventTypeNormal, v1alpha1.ReasonNothingToCompare, "Rollout", "%s", msg)
		return
	}
	st.CurrentWeight = spec.Steps[0]
	msg := fmt.Sprintf("gray (%s) against stable (%s): step 1 of %d, weight %d", spec.PoolModes.Gray, spec.PoolModes.Stable, len(spec.Steps), st.CurrentWeight)
	r.setProgressing(pc, metav1.ConditionTrue, v1alpha1.ReasonStepping, msg)
	out.event(corev1.EventTypeNormal, EventRolloutStarted, "Rollout", "%s", msg)
}

// succeed applies onSuccess after the last step passed.
func (r *PoolCanaryReconciler) succeed(pc *v1alpha1.PoolCanary, out *pending) {
	spec, st := &pc.Spec, &pc.Status
	if spec.OnSuccess == v1alpha1.SuccessNone {
		msg := fmt.Sprintf("parity held through every step; holding weight %d (onSuccess: None)", st.CurrentWeight)
		r.setProgressing(pc, metav1.ConditionFalse, v1alpha1.ReasonPausedOnSuccess, msg)
		out.event(corev1.EventTypeNormal, v1alpha1.ReasonPausedOnSuccess, "Promote", "%s", msg)
		out.outcome = "paused_on_success"
		return
	}
	r.promote(pc, out, fmt.Sprintf("parity held through every step; stable now runs %s", spec.PoolModes.Gray))
}

// promote ends the rollout with a promotion: the stable track adopts the gray pool mode and
// carries every replica (weight 0). msg says why.
func (r *PoolCanaryReconciler) promote(pc *v1alpha1.PoolCanary, out *pending, msg string) {
	st := &pc.Status
	st.StablePoolMode = pc.Spec.PoolModes.Gray
	st.CurrentWeight = 0
	r.setProgressing(pc, metav1.ConditionFalse, v1alpha1.ReasonPromoted, msg)
	out.event(corev1.EventTypeNormal, v1alpha1.ReasonPromoted, "Promote", "%s", msg)
	out.outcome = "promoted"
}

// handleRequests acts on the operator's promote and abort annotations whose values it has not
// handled yet, before any analysis: an abort never waits for Prometheus, nor is it held by
// one that is down. Each value is recorded in status.handledRequests (acted on or refused) so
// that it acts once. An abort wins over a promotion asked at the same time. It reports whether
// the rollout ended by a request.
func (r *PoolCanaryReconciler) handleRequests(pc *v1alpha1.PoolCanary, out *pending) bool {
	st := &pc.Status
	var handled v1alpha1.HandledRequests
	if st.HandledRequests != nil {
		handled = *st.HandledRequests
	}
	abort, promote := pc.Annotations[v1alpha1.AnnotationAbort], pc.Annotations[v1alpha1.AnnotationPromote]
	newAbort, newPromote := abort != "" && abort != handled.Abort, promote != "" && promote != handled.Promote
	if !newAbort && !newPromote {
		return false
	}
	if newAbort {
		handled.Abort = abort
	}
	if newPromote {
		handled.Promote = promote
	}
	st.HandledRequests = &handled

	if why := pc.RequestRefusal(); why != "" {
		if newAbort {
			out.event(corev1.EventTypeNormal, EventRequestIgnored, "Abort", "abort request %q ignored: %s", abort, why)
		}
		if newPromote {
			out.event(corev1.EventTypeNormal, EventRequestIgnored, "Promote", "promote request %q ignored: %s", promote, why)
		}
		return false
	}
	weight := st.CurrentWeight
	if !newAbort {
		r.promote(pc, out, fmt.Sprintf("promoted by %s=%s at weight %d, skipping the remaining analysis; stable now runs %s",
			v1alpha1.AnnotationPromote, promote, weight, pc.Spec.PoolModes.Gray))
		return true
	}
	if newPromote {
		out.event(corev1.EventTypeWarning, EventRequestIgnored, "Promote", "promote request %q ignored: an abort was asked at the same time", promote)
	}
	msg := fmt.Sprintf("aborted by %s=%s at weight %d; gray is at 0", v1alpha1.AnnotationAbort, abort, weight)
	st.CurrentWeight = 0
	r.setProgressing(pc, metav1.ConditionFalse, v1alpha1.ReasonAborted, msg)
	out.event(corev1.EventTypeWarning, v1alpha1.ReasonAborted, "Abort", "%s", msg)
	out.outcome = "aborted"
	return true
}

// setShares sets the traffic shares the split gives: the gray track's share of the desired
// pods, and the share of the requests the last analysis measured while it judged the current
// weight (empty otherwise: a measurement of another split is not this one's).
func setShares(st *v1alpha1.PoolCanaryStatus) {
	st.ReplicaShare = percentText(ReplicaShare(st.StableReplicas, st.GrayReplicas, st.BaselineReplicas))
	st.MeasuredShare = ""
	if la := st.LastAnalysis; la != nil && la.Weight == st.CurrentWeight && st.CurrentWeight > 0 {
		st.MeasuredShare = la.MeasuredShare
	}
}

// fail applies onFailure after failureLimit breached analyses.
func (r *PoolCanaryReconciler) fail(pc *v1alpha1.PoolCanary, out *pending) {
	spec, st := &pc.Spec, &pc.Status
	if spec.OnFailure == v1alpha1.FailurePause {
		msg := fmt.Sprintf("%d failed analyses; holding weight %d (onFailure: Pause)", st.FailedAnalyses, st.CurrentWeight)
		r.setProgressing(pc, metav1.ConditionFalse, v1alpha1.ReasonPausedOnFailure, msg)
		out.event(corev1.EventTypeWarning, v1alpha1.ReasonPausedOnFailure, "Rollback", "%s", msg)
		out.outcome = "paused_on_failure"
		return
	}
	msg := fmt.Sprintf("%d failed analyses at weight %d; gray is at 0", st.FailedAnalyses, st.CurrentWeight)
	st.CurrentWeight = 0
	r.setProgressing(pc, metav1.ConditionFalse, v1alpha1.ReasonRolledBack, msg)
	out.event(corev1.EventTypeWarning, v1alpha1.ReasonRolledBack, "Rollback", "%s", msg)
	out.outcome = "rolled_back"
	out.profile = spec.Analysis.Profiles != nil
}

// applyTracks server-side applies both Deployments with the router's split, and the track
// Services the router names, and returns the Deployments as the cache last saw them (for their
// pod counts). It sets TracksReady.
func (r *PoolCanaryReconciler) applyTracks(ctx context.Context, pc *v1alpha1.PoolCanary, router trafficrouting.Router, sel *metav1.LabelSelector, out *pending) (stable, gray *appsv1.Deployment, err error) {
	st := &pc.Status
	stableSvc, graySvc, services := router.Services()
	deps := map[string]*appsv1.Deployment{}
	for _, t := range trackPlan(pc, router) {
		if deps[t.track], err = r.applyDeployment(ctx, pc, sel, t, out); err != nil {
			return nil, nil, err
		}
		if t.track == v1alpha1.TrackBaseline || !services {
			continue
		}
		name := stableSvc
		if t.track == v1alpha1.TrackGray {
			name = graySvc
		}
		if err := r.applyService(ctx, pc, sel, t, name, out); err != nil {
			return nil, nil, err
		}
	}
	msg := fmt.Sprintf("stable %d (%s), gray %d (%s)", st.StableReplicas, st.StablePoolMode, st.GrayReplicas, pc.Spec.PoolModes.Gray)
	if pc.Spec.Analysis.Baseline == v1alpha1.BaselineFresh {
		msg += fmt.Sprintf(", baseline %d (%s)", st.BaselineReplicas, st.StablePoolMode)
	}
	if services {
		msg += fmt.Sprintf("; Services %s and %s", stableSvc, graySvc)
	}
	r.setTracksReady(pc, metav1.ConditionTrue, "Applied", msg)
	return deps[v1alpha1.TrackStable], deps[v1alpha1.TrackGray], nil
}

// trackSpec is one track's Deployment as the current weight asks for it.
type trackSpec struct {
	track    string
	mode     v1alpha1.PoolMode
	replicas int32
}

// trackPlan splits spec.replicas by the router for the current weight into the status'
// replica counts (with a Fresh baseline as large as gray while a rollout runs), and returns
// each track's Deployment to apply.
func trackPlan(pc *v1alpha1.PoolCanary, router trafficrouting.Router) []trackSpec {
	st := &pc.Status
	replicas := int32(0)
	if pc.Spec.Replicas != nil {
		replicas = *pc.Spec.Replicas
	}
	st.StableReplicas, st.GrayReplicas = router.Split(replicas, st.CurrentWeight)
	st.BaselineReplicas = 0
	if pc.Spec.Analysis.Baseline == v1alpha1.BaselineFresh && st.CurrentWeight > 0 && !pc.RolloutEnded() {
		st.BaselineReplicas = st.GrayReplicas // as many as gray, started with it
	}
	plan := []trackSpec{
		{v1alpha1.TrackStable, st.StablePoolMode, st.StableReplicas},
		{v1alpha1.TrackGray, pc.Spec.PoolModes.Gray, st.GrayReplicas},
		{v1alpha1.TrackBaseline, st.StablePoolMode, st.BaselineReplicas},
	}
	for i := range plan {
		if plan[i].mode == "" {
			plan[i].mode = v1alpha1.PoolModeUnpooled
		}
	}
	return plan
}

// applyDeployment applies a track's Deployment and returns it as the cache saw it before (nil
// when there was none). A Concurrent canary has no baseline Deployment: none is created.
func (r *PoolCanaryReconciler) applyDeployment(ctx context.Context, pc *v1alpha1.PoolCanary, sel *metav1.LabelSelector, t trackSpec, out *pending) (*appsv1.Deployment, error) {
	name := pc.TrackName(t.track)
	var cur *appsv1.Deployment
	var got appsv1.Deployment
	switch err := r.Client.Get(ctx, types.NamespacedName{Namespace: pc.Namespace, Name: name}, &got); {
	case apierrors.IsNotFound(err) && t.track == v1alpha1.TrackBaseline && pc.Spec.Analysis.Baseline != v1alpha1.BaselineFresh:
		return nil, nil
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading Deployment %s: %w", name, err)
	case !metav1.IsControlledBy(&got, pc):
		return nil, r.ownershipConflict(pc, "Deployment", name, out)
	default:
		cur = &got
	}
	d, err := trackDeployment(pc, sel, t.track, t.mode, t.replicas)
	if err != nil {
		r.setTracksReady(pc, metav1.ConditionFalse, EventApplyFailed, err.Error())
		out.event(corev1.EventTypeWarning, EventApplyFailed, "Apply", "%v", err)
		return nil, reconcile.TerminalError(err)
	}
	if err := r.Client.Apply(ctx, d, client.FieldOwner(managerName), client.ForceOwnership); err != nil {
		return nil, r.applyFailed(pc, "Deployment", name, err, out)
	}
	return cur, nil
}

// applyService applies the track's Service of the given name, which the router's backends
// address. It is read from the API server: Services are not cached (nor watched), and one the
// canary does not own is never taken over.
func (r *PoolCanaryReconciler) applyService(ctx context.Context, pc *v1alpha1.PoolCanary, sel *metav1.LabelSelector, t trackSpec, name string, out *pending) error {
	var svc corev1.Service
	switch err := r.apiReader().Get(ctx, types.NamespacedName{Namespace: pc.Namespace, Name: name}, &svc); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading Service %s: %w", name, err)
	case !metav1.IsControlledBy(&svc, pc):
		return r.ownershipConflict(pc, "Service", name, out)
	}
	if err := r.Client.Apply(ctx, trackService(pc, sel, t.track, name, t.mode), client.FieldOwner(managerName), client.ForceOwnership); err != nil {
		return r.applyFailed(pc, "Service", name, err, out)
	}
	return nil
}

// ownershipConflict reports an object of a track's name that the canary does not control:
// TracksReady False and a Warning Event. The returned error is terminal.
func (r *PoolCanaryReconciler) ownershipConflict(pc *v1alpha1.PoolCanary, kind, name string, out *pending) error {
	msg := fmt.Sprintf("%s %s exists and is not controlled by this PoolCanary", kind, name)
	r.setTracksReady(pc, metav1.ConditionFalse, EventOwnershipConflict, msg)
	out.event(corev1.EventTypeWarning, EventOwnershipConflict, "Apply", "%s", msg)
	return reconcile.TerminalError(errors.New(msg))
}

// applyFailed classifies an error applying a track's object: one the API server refuses for
// what the canary asks (invalid, bad request, forbidden) turns TracksReady False with a Warning
// Event and is terminal; any other is returned for a retry.
func (r *PoolCanaryReconciler) applyFailed(pc *v1alpha1.PoolCanary, kind, name string, err error, out *pending) error {
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) {
		msg := fmt.Sprintf("applying %s %s: %v", kind, name, err)
		r.setTracksReady(pc, metav1.ConditionFalse, EventApplyFailed, msg)
		out.event(corev1.EventTypeWarning, EventApplyFailed, "Apply", "%s", msg)
		return reconcile.TerminalError(err)
	}
	return fmt.Errorf("applying %s %s: %w", kind, name, err)
}

// writeStatus patches the status subresource when it changed, with an optimistic lock: a
// reconcile that started from a stale cache gets a conflict and is retried shortly from fresh
// data, instead of repeating an analysis's consequences. Once written, the pending Events
// and outcome metrics are emitted.
func (r *PoolCanaryReconciler) writeStatus(ctx context.Context, before, pc *v1alpha1.PoolCanary, out *pending) (ctrl.Result, error) {
	if !statusEqual(&before.Status, &pc.Status) {
		err := r.Client.Status().Patch(ctx, pc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) {
			log.FromContext(ctx).V(1).Info("status conflict (stale cache): retrying")
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("writing status: %w", err)
		}
	}
	for _, e := range out.events {
		r.emit(pc, e)
	}
	if out.outcome != "" {
		r.Metrics.observeOutcome(pc.Namespace, pc.Name, out.outcome)
	}
	return ctrl.Result{}, nil
}

// conflictRetry is how soon a reconcile that lost an optimistic-lock race runs again.
const conflictRetry = 200 * time.Millisecond

// pending holds what one reconcile will announce once its status is written.
type pending struct {
	events  []pendingEvent
	outcome string // poolparity_canary_rollouts_total outcome, if the rollout ended
	profile bool   // the rollout rolled back on a failed analysis: profile the tracks
}

type pendingEvent struct{ typ, reason, action, note string }

func (p *pending) event(typ, reason, action, note string, args ...any) {
	p.events = append(p.events, pendingEvent{typ, reason, action, fmt.Sprintf(note, args...)})
}

// phaseOf derives the phase from the conditions: Failed while TracksReady is False, else the
// Progressing reason's (v1alpha1.ReasonPhase), Progressing before there is one.
func phaseOf(pc *v1alpha1.PoolCanary) v1alpha1.Phase {
	if meta.IsStatusConditionFalse(pc.Status.Conditions, v1alpha1.ConditionTracksReady) {
		return v1alpha1.PhaseFailed
	}
	prog := meta.FindStatusCondition(pc.Status.Conditions, v1alpha1.ConditionProgressing)
	if prog == nil {
		return v1alpha1.PhaseProgressing
	}
	if ph, ok := v1alpha1.ReasonPhase(prog.Reason); ok {
		return ph
	}
	return v1alpha1.PhaseProgressing
}

func (r *PoolCanaryReconciler) setProgressing(pc *v1alpha1.PoolCanary, s metav1.ConditionStatus, reason, msg string) {
	setCondition(pc, v1alpha1.ConditionProgressing, s, reason, msg)
}

func (r *PoolCanaryReconciler) setParity(pc *v1alpha1.PoolCanary, s metav1.ConditionStatus, reason, msg string) {
	setCondition(pc, v1alpha1.ConditionParity, s, reason, msg)
}

func (r *PoolCanaryReconciler) setTracksReady(pc *v1alpha1.PoolCanary, s metav1.ConditionStatus, reason, msg string) {
	setCondition(pc, v1alpha1.ConditionTracksReady, s, reason, msg)
}

func setCondition(pc *v1alpha1.PoolCanary, typ string, s metav1.ConditionStatus, reason, msg string) {
	if len(msg) > 32768 {
		msg = msg[:32768]
	}
	meta.SetStatusCondition(&pc.Status.Conditions, metav1.Condition{
		Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: pc.Generation,
	})
}

func (r *PoolCanaryReconciler) emit(pc *v1alpha1.PoolCanary, e pendingEvent) {
	if r.Recorder == nil {
		return
	}
	msg := e.note
	if len(msg) > maxEventNote {
		msg = msg[:maxEventNote-3] + "..."
	}
	r.Recorder.Eventf(pc, nil, e.typ, e.reason, e.action, "%s", msg)
}

// maxEventNote keeps an Event's note under the events.k8s.io limit (1 kB).
const maxEventNote = 1000

// permanentRetry is how long the reconciler waits before retrying an error a retry is not
// expected to fix (an ownership conflict, a refused template).
const permanentRetry = time.Minute

func (r *PoolCanaryReconciler) routeResync() time.Duration {
	if r.RouteResync > 0 {
		return r.RouteResync
	}
	return defaultRouteResync
}

func analysisInterval(spec *v1alpha1.PoolCanarySpec) time.Duration {
	if d := spec.Analysis.Interval.Duration; d > 0 {
		return d
	}
	return time.Minute
}

func failureLimit(spec *v1alpha1.PoolCanarySpec) int32 {
	if spec.Analysis.FailureLimit > 0 {
		return spec.Analysis.FailureLimit
	}
	return 1
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// isPermanent reports whether err is marked with controller-runtime's reconcile.TerminalError:
// a retry cannot fix it, only a change to the canary or to the conflicting object can. The
// reconciler reports it in TracksReady and looks again after permanentRetry instead of
// returning it (a returned terminal error would never be retried, and a conflicting
// Deployment that is deleted is not ours to watch).
func isPermanent(err error) bool {
	return errors.Is(err, reconcile.TerminalError(nil))
}

func statusEqual(a, b *v1alpha1.PoolCanaryStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}

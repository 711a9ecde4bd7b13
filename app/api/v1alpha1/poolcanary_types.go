package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PoolMode is the POOL_MODE a track's pods run with: pooled, unpooled, or one of the
// misuse modes that reproduce pooling gone wrong: the reference service's (internal/pools,
// docs/pool-misuse.md) and the example service's misuse-cap (examples/imagesvc). The
// controller passes the mode on as it is (the POOL_MODE variable and the pool-mode label), so
// every mode of either service can be canaried; a test holds the enum to both services' modes.
// +kubebuilder:validation:Enum=unpooled;pooled;misuse-hold;misuse-reset;misuse-retain;misuse-dirty;misuse-cap
type PoolMode string

// The pool modes of the service (docs/contracts.md, section 1).
const (
	PoolModePooled   PoolMode = "pooled"
	PoolModeUnpooled PoolMode = "unpooled"
)

// SuccessAction is what the controller does once the last step's analysis passed.
// +kubebuilder:validation:Enum=Promote;None
type SuccessAction string

const (
	// SuccessPromote makes the stable track adopt the gray track's pool mode and moves all
	// replicas to it (the gray track goes to 0).
	SuccessPromote SuccessAction = "Promote"
	// SuccessNone keeps the last step's split and pauses, for a person to decide.
	SuccessNone SuccessAction = "None"
)

// FailureAction is what the controller does once failureLimit analyses have breached.
// +kubebuilder:validation:Enum=Rollback;Pause
type FailureAction string

const (
	// FailureRollback moves every replica back to the stable track (the gray track goes to 0).
	FailureRollback FailureAction = "Rollback"
	// FailurePause keeps the current split and pauses, for a person to look.
	FailurePause FailureAction = "Pause"
)

// Phase is the coarse state of a PoolCanary.
// +kubebuilder:validation:Enum=Progressing;Paused;Promoted;RolledBack;Failed
type Phase string

// The phases of a PoolCanary.
const (
	// PhaseProgressing: stepping through the weights, or holding a step until the analysis
	// is conclusive.
	PhaseProgressing Phase = "Progressing"
	// PhasePaused: spec.paused is set, or onSuccess/onFailure asked for a pause.
	PhasePaused Phase = "Paused"
	// PhasePromoted: the last step passed (or an operator promoted, annotation
	// poolparity.dev/promote) and the stable track runs gray's pool mode.
	PhasePromoted Phase = "Promoted"
	// PhaseRolledBack: failureLimit analyses breached, or an operator aborted (annotation
	// poolparity.dev/abort), and the gray track is at 0.
	PhaseRolledBack Phase = "RolledBack"
	// PhaseFailed: the controller cannot run the tracks (e.g. a Deployment it does not own
	// has a track's name, or the API server rejects the pod template).
	PhaseFailed Phase = "Failed"
)

// Verdict is the outcome of one SLI or of one analysis.
// +kubebuilder:validation:Enum=Pass;Fail;NoData;Error
type Verdict string

// The verdicts of an analysis.
const (
	// VerdictPass: within the threshold.
	VerdictPass Verdict = "Pass"
	// VerdictFail: over the threshold; counts toward failureLimit.
	VerdictFail Verdict = "Fail"
	// VerdictNoData: a track has no series or too few requests; the step holds.
	VerdictNoData Verdict = "NoData"
	// VerdictError: Prometheus could not be queried; the step holds.
	VerdictError Verdict = "Error"
)

// Condition types set on a PoolCanary.
const (
	// ConditionProgressing is True while a rollout is under way and False once it has
	// ended (promoted, rolled back, paused or failed); the reason says which.
	ConditionProgressing = "Progressing"
	// ConditionParity is the last analysis: True (passed), False (breached), Unknown (no
	// data or Prometheus unreachable).
	ConditionParity = "Parity"
	// ConditionTracksReady is True when both track Deployments were applied; False (and
	// phase Failed) when the API server refused them or a Deployment of the same name
	// belongs to something else.
	ConditionTracksReady = "TracksReady"
	// ConditionDegraded is set with spec.trafficRouting only: True when the controller cannot
	// set the weights on the HTTPRoute (it does not exist, or names no backend for one of the
	// track Services; the message says which route and what is missing), and then it touches
	// no weight and the rollout does not advance; False once the weights are set.
	ConditionDegraded = "Degraded"
)

// Label keys shared with the Helm chart (docs/contracts.md, section 2).
const (
	LabelName       = "app.kubernetes.io/name"
	LabelInstance   = "app.kubernetes.io/instance"
	LabelComponent  = "app.kubernetes.io/component"
	LabelManagedBy  = "app.kubernetes.io/managed-by"
	LabelTrack      = "poolparity.dev/track"
	LabelGrayStatus = "poolparity.dev/gray-status"
	LabelPoolMode   = "poolparity.dev/pool-mode"
)

// Annotations an operator sets on a PoolCanary (kubectl poolcanary promote, abort) for the
// controller to act on. The value is opaque (the plugin writes the time of the request): the
// controller acts once per new value and records it in status.handledRequests, so a request
// left on the object never acts again, not even after a new rollout starts.
const (
	// AnnotationPromote promotes now: the remaining steps and analyses are skipped and the
	// controller does what a passed last step with onSuccess Promote does (the stable track
	// adopts the gray pool mode and gets every replica), whatever onSuccess says. It acts on a
	// rollout that runs, is paused, or ended paused (onSuccess None, onFailure Pause).
	AnnotationPromote = "poolparity.dev/promote"
	// AnnotationAbort rolls back now: the gray track goes to 0 and the stable track carries
	// every replica, without an analysis (Prometheus is not asked). It acts on a rollout that
	// runs, is paused, or ended paused; phase RolledBack, Progressing reason Aborted.
	AnnotationAbort = "poolparity.dev/abort"
)

// Track names, the values of LabelTrack.
const (
	TrackStable = "stable"
	TrackGray   = "gray"
	// TrackBaseline is the fresh baseline of analysis.baseline Fresh: the stable build,
	// started with the gray track and the same size, judged in place of the stable track.
	TrackBaseline = "baseline"
)

// BaselineMode says which track the gray track is judged against.
// +kubebuilder:validation:Enum=Concurrent;Fresh
type BaselineMode string

// The baseline modes.
const (
	// BaselineConcurrent judges gray against the stable track's pods, which have run (and
	// warmed their caches and pools) for as long as the stable build has.
	BaselineConcurrent BaselineMode = "Concurrent"
	// BaselineFresh starts a third Deployment, <name>-baseline, of the stable build with the
	// stable pool mode, as many pods as the gray track and started with it, and judges gray
	// against it (the Kayenta recommendation): pod age, warm caches and node placement then
	// weigh alike on both sides. Its pods carry gray-status "baseline", come on top of
	// spec.replicas, and go to 0 when the rollout ends.
	BaselineFresh BaselineMode = "Fresh"
)

// TrafficRouting says what decides the gray track's share of the traffic: a union of routers,
// of which exactly one is set. Unset, the share is the replica split behind one Service that
// selects both tracks. Each member is served by one router package under
// internal/controller/trafficrouting; a new member also joins the list of the rule below.
// +kubebuilder:validation:XValidation:rule="[has(self.gatewayAPI)].filter(m, m).size() == 1",message="trafficRouting: set exactly one router: gatewayAPI"
type TrafficRouting struct {
	// GatewayAPI sets the backendRef weights of a Gateway API HTTPRoute.
	// +optional
	GatewayAPI GatewayAPIRouting `json:"gatewayAPI,omitzero"`
}

// GatewayAPIRouting names the HTTPRoute whose backendRef weights the controller sets and the
// per-track Services those backendRefs name. The controller creates the Services itself: a
// ClusterIP Service per track, owned by the canary, selecting that track's pods.
type GatewayAPIRouting struct {
	// HTTPRoute is the name of a gateway.networking.k8s.io/v1 HTTPRoute in the canary's
	// namespace. In every rule that has a backendRef naming the stable Service and one naming
	// the gray Service, the controller sets the gray backend's weight to the current weight
	// and the stable backend's to 100 minus it; nothing else on the route changes.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	HTTPRoute string `json:"httpRoute"`

	// StableService is the name of the stable track's Service; default <canary>-stable.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	StableService string `json:"stableService,omitempty"`

	// GrayService is the name of the gray track's Service; default <canary>-gray.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	GrayService string `json:"grayService,omitempty"`
}

// TrackPoolModes sets the pool mode of each track.
type TrackPoolModes struct {
	// Stable is the pool mode of the stable (baseline) track.
	// +kubebuilder:default=unpooled
	// +optional
	Stable PoolMode `json:"stable,omitempty"`

	// Gray is the pool mode of the gray (canary) track: the candidate.
	// +kubebuilder:default=pooled
	// +optional
	Gray PoolMode `json:"gray,omitempty"`
}

// GoRuntime is one track's Go runtime settings. The controller sets them as GOGC and
// GOMEMLIMIT on every container of the track's pods that does not set that variable itself.
// +kubebuilder:validation:XValidation:rule="!(has(self.gomemlimit) && has(self.gomemlimitPercent))",message="set gomemlimit or gomemlimitPercent, not both"
type GoRuntime struct {
	// GOGC is the garbage collector's target percentage: a whole number or "off".
	// +kubebuilder:validation:Pattern=`^(off|[0-9]+)$`
	// +optional
	GOGC string `json:"gogc,omitempty"`

	// GOMEMLIMIT is the runtime's soft memory limit: bytes with an optional B, KiB, MiB, GiB
	// or TiB suffix, or "off".
	// +kubebuilder:validation:Pattern=`^(off|[0-9]+(B|KiB|MiB|GiB|TiB)?)$`
	// +optional
	GOMEMLIMIT string `json:"gomemlimit,omitempty"`

	// GOMEMLIMITPercent sets GOMEMLIMIT to this percent of each container's memory limit, in
	// bytes (90 is the usual choice). A container without a memory limit is refused: the
	// TracksReady condition turns False and names it.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	GOMEMLIMITPercent int32 `json:"gomemlimitPercent,omitempty"`
}

// TrackGoRuntimes sets the Go runtime of each track, so that the tracks can be tuned apart:
// a pooled gray against an unpooled stable, each under its own GOGC and GOMEMLIMIT.
type TrackGoRuntimes struct {
	// Stable is the stable track's settings, and a fresh baseline's.
	// +optional
	Stable *GoRuntime `json:"stable,omitempty"`

	// Gray is the gray track's settings: part of the candidate, so a change starts a new
	// rollout from the first step, as a change of poolModes does.
	// +optional
	Gray *GoRuntime `json:"gray,omitempty"`
}

// SLIName is the ID of a parity SLI of the catalog (internal/catalog); a test holds this
// enum to it.
// +kubebuilder:validation:Enum=latency-p95;latency-p99;error-ratio;cpu-per-request;heap-alloc-per-request;response-bytes-per-request;gc-cpu-share;syncpool-hit-ratio;redis-pool-hit-ratio
type SLIName string

// SLI is one parity check of the catalog, named by its ID. Everything else is optional and
// defaults to the catalog (docs/contracts.md, "The SLI catalog"): the per-track recording
// rule of the 5m family, the rule the statistical test samples (the 1m family), the
// comparison, its threshold and floor. At most one threshold is set, and it must be the
// catalog's kind of limit for the SLI (maxRatio for latency, CPU and heap per request,
// maxDelta for the error ratio and GC share, minDelta for the Redis pool hit ratio,
// minGray for the sync.Pool hit ratio).
// +kubebuilder:validation:XValidation:rule="[has(self.maxRatio), has(self.maxDelta), has(self.minDelta), has(self.minGray)].filter(x, x).size() <= 1",message="set at most one of maxRatio, maxDelta, minDelta, minGray"
type SLI struct {
	// Name is the SLI's ID in the catalog, e.g. latency-p99.
	Name SLIName `json:"name"`

	// Rule is the name of a per-track recording rule labelled gray_status, read instead of
	// the catalog's, e.g. job_gray_status:http_request_duration_seconds:p99_rate5m.
	// +kubebuilder:validation:Pattern=`^[a-zA-Z_:][a-zA-Z0-9_:]*$`
	// +optional
	Rule string `json:"rule,omitempty"`

	// SampleRule is the per-track rule the statistical test samples every statistical.step;
	// empty means the catalog's rule of the 1m family (or Rule, when Rule is set). Samples of
	// a rule whose range is longer than the step overlap (a 5m rate read every minute shares
	// four fifths of its requests with the next sample), and the test, which assumes
	// independent samples, becomes overconfident. A rule whose name ends in a range longer
	// than the step gets a note in the SLI's test result.
	// +kubebuilder:validation:Pattern=`^[a-zA-Z_:][a-zA-Z0-9_:]*$`
	// +optional
	SampleRule string `json:"sampleRule,omitempty"`

	// MatchLabels narrow this SLI's query beyond analysis.matchLabels (e.g. {pool: json_buffer}
	// for the sync.Pool hit ratio of one pool). Each track must end up with one series. A
	// namespace label other than the canary's own namespace is refused.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 128 && k.matches('^[a-zA-Z_][a-zA-Z0-9_]*$'))",message="label names are letters, digits and '_', not starting with a digit, at most 128 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 1024)",message="label values are at most 1024 characters"
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`

	// MaxRatio fails the SLI when gray/stable is above it (e.g. "1.2" allows 20% worse);
	// for SLIs where higher is worse (latency, CPU or bytes per request). Above 0: a limit of 0
	// would have no margin on the judges' log scale.
	// +kubebuilder:validation:Pattern=`^(0\.[0-9]*[1-9][0-9]*|[1-9][0-9]*(\.[0-9]+)?)$`
	// +optional
	MaxRatio *string `json:"maxRatio,omitempty"`

	// MaxDelta fails the SLI when gray - stable is above it (e.g. "0.01" for one point of
	// error ratio); for ratios near zero, whose quotient explodes.
	// +kubebuilder:validation:Pattern=`^-?(0|[1-9][0-9]*)(\.[0-9]+)?$`
	// +optional
	MaxDelta *string `json:"maxDelta,omitempty"`

	// MinDelta fails the SLI when gray - stable is below it (e.g. "-0.10": gray's Redis pool
	// may hit ten points less often).
	// +kubebuilder:validation:Pattern=`^-?(0|[1-9][0-9]*)(\.[0-9]+)?$`
	// +optional
	MinDelta *string `json:"minDelta,omitempty"`

	// MinGray fails the SLI when the gray value itself is below it (e.g. "0.5" for a sync.Pool
	// hit ratio).
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]*)(\.[0-9]+)?$`
	// +optional
	MinGray *string `json:"minGray,omitempty"`

	// Floor is the SLI's absolute effect-size floor, in the rule's unit: gray breaches (by
	// the threshold and by the statistical tests) only when it is worse than stable by more
	// than the floor: seconds for latency (e.g. "0.01", 10 ms: a p99 of 4 ms at +12% is
	// 0.48 ms, less than a busy node jitters), CPU seconds or bytes per request, ratio points
	// for the error ratio, the GC CPU share and the hit ratios. Empty means the catalog's
	// floor (docs/contracts.md, section 5), which for latency also scales with the stable
	// track's own level.
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]*)(\.[0-9]+)?$`
	// +optional
	Floor *string `json:"floor,omitempty"`
}

// StatisticalMode says what the statistical second opinion does.
// +kubebuilder:validation:Enum=Off;Report;Gate;Confirm;Sequential;Counts
type StatisticalMode string

// The statistical modes.
const (
	// StatisticalOff runs no test.
	StatisticalOff StatisticalMode = "Off"
	// StatisticalReport runs the test and shows its result beside the threshold verdict; the
	// thresholds alone decide.
	StatisticalReport StatisticalMode = "Report"
	// StatisticalGate is retired (use Counts): the windowed test failing a passing analysis.
	// The API server refuses it with that message (the CRD's rule); no evaluation measured a
	// row it wins.
	StatisticalGate StatisticalMode = "Gate"
	// StatisticalConfirm makes the test a condition of a breach: an SLI over its threshold
	// (and floor) fails only when the test also finds it significantly worse, each analysis
	// window on its own. It trades a little detection for fewer false alarms than the
	// thresholds alone, but its false-alarm rate grows with every window read
	// (docs/verdict-eval.md).
	StatisticalConfirm StatisticalMode = "Confirm"
	// StatisticalSequential is retired (use Counts): the anytime-valid sequential test of
	// per-minute samples as the judge. The API server refuses it with that message (the CRD's
	// rule); Counts beat it on every target row of docs/verdict-eval.md and
	// docs/verdict-eval-counts.md.
	StatisticalSequential StatisticalMode = "Sequential"
	// StatisticalCounts, the default, is the anytime-valid count-based test: the latency,
	// 5xx, CPU and heap SLIs are judged from the raw per-pod counters of the poolparity.counts
	// rules, step by step (every rules.counts.interval), with two anytime-valid tests per SLI:
	// one against its floor (FAIL) and one against its margin (PASS) (docs/controller.md).
	StatisticalCounts StatisticalMode = "Counts"
)

// StatisticalDefault is the mode of a PoolCanary that names none.
const StatisticalDefault = StatisticalCounts

// OrDefault returns m, or StatisticalDefault when m is empty (an object the API server did
// not default, such as one built in a test).
func (m StatisticalMode) OrDefault() StatisticalMode {
	if m == "" {
		return StatisticalDefault
	}
	return m
}

// StatisticalTest configures the statistical second opinion: for each SLI a one-sided
// Mann-Whitney U test of the gray track's samples against the stable track's, taken every
// step over the window from a range query of the SLI's sampleRule (or rule), with an
// effect-size bar.
type StatisticalTest struct {
	// Mode is Counts, Confirm, Report or Off (parity.Modes, the registry; Sequential and Gate were
	// retired, and the API server refuses them naming their replacement). Counts, the default, keeps its
	// false-alarm rate however often the canary is analysed and decides from the raw counters
	// (it needs the chart's poolparity.counts rules: without them the analysis is an error);
	// Confirm judges each analysis window on its own. docs/verdict-eval.md and
	// docs/verdict-eval-counts.md measure them, with intervals.
	// +kubebuilder:default=Counts
	// +kubebuilder:validation:XValidation:rule="self != 'Sequential'",message="statistical mode Sequential was retired: use Counts (the count-based test beat the sequential test of per-minute samples on every target row of docs/verdict-eval.md and docs/verdict-eval-counts.md)"
	// +kubebuilder:validation:XValidation:rule="self != 'Gate'",message="statistical mode Gate was retired: use Counts (no evaluation measured a row the windowed gate wins, and read again and again it has no error control)"
	// +optional
	Mode StatisticalMode `json:"mode,omitempty"`

	// Confidence is the confidence level: a regression is significant when the p-value is
	// below 1 - confidence.
	// +kubebuilder:default="0.99"
	// +kubebuilder:validation:Pattern=`^0\.[0-9]+$`
	// +optional
	Confidence string `json:"confidence,omitempty"`

	// MinEffect is the smallest effect that counts: the probability that a gray sample is
	// worse than a stable one (Vargha-Delaney A; 0.5 is none).
	// +kubebuilder:default="0.71"
	// +kubebuilder:validation:Pattern=`^(0\.[0-9]+|1)$`
	// +optional
	MinEffect string `json:"minEffect,omitempty"`

	// Window is how far back the samples reach.
	// +kubebuilder:default="10m"
	// +optional
	Window metav1.Duration `json:"window,omitempty"`

	// Step is the range query's step: one sample per track every step. Sample rules whose
	// range is at most the step (SLI sampleRule) so that the samples do not overlap.
	// +kubebuilder:default="1m"
	// +optional
	Step metav1.Duration `json:"step,omitempty"`

	// MinSamples is the fewest samples per track for the test to judge.
	// +kubebuilder:default=8
	// +kubebuilder:validation:Minimum=3
	// +optional
	MinSamples int32 `json:"minSamples,omitempty"`

	// Alpha is the anytime-valid test's false-alarm budget for a whole rollout, spent across
	// the judged SLIs (alpha/k each): the chance that a gray at parity is ever failed,
	// however long the rollout runs and however often it is read. Empty means the catalog's
	// (0.01).
	// +kubebuilder:validation:Pattern=`^0\.[0-9]+$`
	// +optional
	Alpha string `json:"alpha,omitempty"`
}

// Analysis says where and how the parity of the two tracks is judged.
type Analysis struct {
	// PrometheusURL is the base URL of the Prometheus HTTP API that evaluates the poolparity
	// recording rules, e.g. http://prometheus-operated.monitoring.svc:9090. It must be one of
	// the endpoints the cluster admin lists (the controller's PROMETHEUS_ENDPOINTS, the
	// chart's controller.prometheus.endpoints); empty means the first of them. Any other URL
	// is refused (condition Parity, reason AnalysisRefused) and never called.
	// +kubebuilder:validation:Pattern=`^https?://[^\s?#@]+$`
	// +kubebuilder:validation:MaxLength=512
	// +optional
	PrometheusURL string `json:"prometheusURL,omitempty"`

	// Interval is how often a holding step is analysed again (no data, Prometheus down, or a
	// breach below failureLimit).
	// Between 1s and 1h.
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('1h')",message="interval must be between 1s and 1h"
	// +optional
	Interval metav1.Duration `json:"interval,omitempty"`

	// Timeout bounds one analysis (all its queries): between 1s and 60s.
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('60s')",message="timeout must be between 1s and 60s"
	// +optional
	Timeout metav1.Duration `json:"timeout,omitempty"`

	// MatchLabels are added to every query so that only this canary's series are read, e.g.
	// {job: poolparity}. Every query is pinned to the canary's own namespace anyway (the
	// namespace label); a namespace label naming another namespace is refused.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 128 && k.matches('^[a-zA-Z_][a-zA-Z0-9_]*$'))",message="label names are letters, digits and '_', not starting with a digit, at most 128 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 1024)",message="label values are at most 1024 characters"
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`

	// RequestRateRule is the per-track request-rate recording rule used for the traffic guard.
	// +kubebuilder:default="job_gray_status:http_requests:rate5m"
	// +kubebuilder:validation:Pattern=`^[a-zA-Z_:][a-zA-Z0-9_:]*$`
	// +optional
	RequestRateRule string `json:"requestRateRule,omitempty"`

	// RequestWindow is the range of RequestRateRule (5m for the rate5m family): a track's
	// request count is its rate times this window.
	// +kubebuilder:default="5m"
	// +optional
	RequestWindow metav1.Duration `json:"requestWindow,omitempty"`

	// MinRequests is the request count each track must exceed in RequestWindow before its SLIs
	// are judged (like the rules' minRequestRate, which both tracks must exceed); at or below
	// it the analysis is inconclusive (NoData) and the step holds. 0 disables the guard.
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinRequests int64 `json:"minRequests,omitempty"`

	// SLIs are the parity checks; all must pass for a step to advance. Empty means every SLI
	// of the catalog with its defaults.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	// +listType=map
	// +listMapKey=name
	SLIs []SLI `json:"slis,omitempty"`

	// Statistical configures the statistical second opinion.
	// +kubebuilder:default={}
	// +optional
	Statistical StatisticalTest `json:"statistical,omitempty"`

	// Warmup is how long each gray (and fresh baseline) pod, and each stable pod created
	// after the rollout started (an HPA's scale-up, a replaced pod), must have been Ready
	// before its samples are judged: a new or rescheduled pod starts with empty pools and new
	// Redis connections. Until every such pod is warm the analysis waits (the status says for
	// what), and the time each pod was cold is left out of the statistical samples, with every
	// sample whose rule evaluation window overlaps it. It is tied to each pod's Ready
	// condition, not to the step's start. 0 disables it.
	// +kubebuilder:default="2m"
	// +optional
	Warmup *metav1.Duration `json:"warmup,omitempty"`

	// Baseline is what gray is judged against: Concurrent (the stable track) or Fresh (a
	// baseline Deployment of the stable build started with the gray track).
	// +kubebuilder:default=Concurrent
	// +optional
	Baseline BaselineMode `json:"baseline,omitempty"`

	// Profiles, when set, makes a rollback on a failed analysis also profile one Ready gray
	// and one Ready stable pod on their pprof port and record the functions whose cost per
	// request differs most (status.rollbackProfile and a ProfileDiff Event). Unset: no
	// profiles. The rollback never waits for them.
	// +optional
	Profiles *ProfilesSpec `json:"profiles,omitempty"`

	// FailureLimit is the number of breached analyses during one rollout that triggers onFailure.
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +optional
	FailureLimit int32 `json:"failureLimit,omitempty"`
}

// ProfilesSpec says where the pods serve their profiles and how long a CPU profile runs.
type ProfilesSpec struct {
	// Port is the pods' pprof port (the service's PPROF_ADDR), reached at the pod's IP.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// CPUSeconds is the length of the CPU profile, and the window of the allocation profile
	// taken at the same time.
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=30
	// +optional
	CPUSeconds int32 `json:"cpuSeconds,omitempty"`
}

// PoolCanarySpec is the desired state of a PoolCanary.
type PoolCanarySpec struct {
	// Replicas is the pod count of both tracks together. The scale subresource reads and
	// writes it, so one HorizontalPodAutoscaler can target the PoolCanary; the controller
	// splits it by the current weight. With trafficRouting each track gets enough replicas to
	// carry its weight, at least one while a rollout runs, so the tracks may hold one pod
	// more than replicas between them.
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector selects the pods of both tracks. Empty means the chart's labels:
	// app.kubernetes.io/name=poolparity, app.kubernetes.io/instance=<name>,
	// app.kubernetes.io/component=app. Its matchLabels are added to the pod template. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="selector is immutable"
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Template is the pod template of both tracks. The controller adds the track labels
	// (poolparity.dev/track, gray-status, pool-mode) and the GRAY_STATUS and POOL_MODE env
	// (from those labels through the Downward API) to every container that lacks them.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Template corev1.PodTemplateSpec `json:"template"`

	// PoolModes are the tracks' pool modes; the gray track's is the candidate.
	// +kubebuilder:default={}
	// +optional
	PoolModes TrackPoolModes `json:"poolModes,omitempty"`

	// GoRuntime sets GOGC and GOMEMLIMIT per track; unset, the template's env (or the Go
	// defaults) apply. The settings stay with their track: a promotion gives the stable track
	// the gray's pool mode, not its Go runtime (set goRuntime.stable to keep the gray's).
	// +optional
	GoRuntime *TrackGoRuntimes `json:"goRuntime,omitempty"`

	// Steps are the gray track's weights in percent, strictly increasing, e.g. [10, 25, 50].
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=100
	// +kubebuilder:validation:XValidation:rule="self.isSorted()",message="steps must be increasing"
	// +listType=set
	Steps []int32 `json:"steps"`

	// StepInterval is how long each step runs before its analysis decides.
	// +kubebuilder:default="5m"
	// +optional
	StepInterval metav1.Duration `json:"stepInterval,omitempty"`

	// Analysis judges the gray track against the stable track at the end of each step.
	Analysis Analysis `json:"analysis"`

	// TrafficRouting routes the traffic by weight through a Gateway API HTTPRoute instead of
	// by the replica split: each step sets the route's backend weights (gray: the weight,
	// stable: 100 minus it), and each track gets enough replicas to carry its weight.
	// +optional
	TrafficRouting *TrafficRouting `json:"trafficRouting,omitempty"`

	// OnSuccess is the action after the last step passed.
	// +kubebuilder:default=Promote
	// +optional
	OnSuccess SuccessAction `json:"onSuccess,omitempty"`

	// OnFailure is the action after failureLimit breached analyses.
	// +kubebuilder:default=Rollback
	// +optional
	OnFailure FailureAction `json:"onFailure,omitempty"`

	// Paused holds the current split: no analysis, no step.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Trigger is free text (a date, a Git SHA): changing it starts a new rollout from the
	// first step, e.g. to retry after a rollback. A change of poolModes does the same; a
	// change of the template or of replicas does not (both tracks roll to the new template
	// and the rollout goes on, since both still run the same image).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Trigger string `json:"trigger,omitempty"`
}

// SLIResult is one SLI of the last analysis. Values are decimal strings ("NaN" and "+Inf"
// are possible) so that the status stays exact and portable.
type SLIResult struct {
	// Name of the SLI.
	Name string `json:"name"`
	// Stable is the stable track's value; empty when it had no data.
	// +optional
	Stable string `json:"stable,omitempty"`
	// Gray is the gray track's value; empty when it had no data.
	// +optional
	Gray string `json:"gray,omitempty"`
	// Ratio is gray/stable.
	// +optional
	Ratio string `json:"ratio,omitempty"`
	// Delta is gray - stable.
	// +optional
	Delta string `json:"delta,omitempty"`
	// Threshold is the limit the SLI was judged against, e.g. "maxRatio 1.2, floor 0.01".
	// +optional
	Threshold string `json:"threshold,omitempty"`
	// Verdict of this SLI.
	Verdict Verdict `json:"verdict"`
	// Note explains a NoData or Error, or a pass held by the floor.
	// +optional
	Note string `json:"note,omitempty"`
	// Test is the statistical second opinion on this SLI, when it ran.
	// +optional
	Test *SLITestResult `json:"test,omitempty"`
	// Time the values were read.
	Time metav1.Time `json:"time"`
}

// SLITestResult is the statistical test of one SLI.
type SLITestResult struct {
	// Verdict of the test: Fail when gray is significantly and substantially worse.
	Verdict Verdict `json:"verdict"`
	// P is the one-sided p-value.
	// +optional
	P string `json:"p,omitempty"`
	// Effect is the probability that a gray sample is worse than a stable one.
	// +optional
	Effect string `json:"effect,omitempty"`
	// StableSamples and GraySamples are the sample counts.
	// +optional
	StableSamples int32 `json:"stableSamples,omitempty"`
	// +optional
	GraySamples int32 `json:"graySamples,omitempty"`
	// EValue is the anytime-valid test's largest e-value for "gray worse than the floor" since
	// the rollout's start; the SLI fails once it reaches Bar (k/alpha).
	// +optional
	EValue string `json:"eValue,omitempty"`
	// Bar is the e-value at which the anytime-valid test fails the SLI.
	// +optional
	Bar string `json:"bar,omitempty"`
	// Estimate is the anytime-valid test's estimated effect: gray/stable for a ratio SLI, else
	// gray - stable.
	// +optional
	Estimate string `json:"estimate,omitempty"`
	// Worst is the worst effect the anytime-valid test's confidence sequence has not ruled out
	// (same scale as Estimate); the SLI passes only once it is within Margin, the worst effect
	// the SLI's threshold (or its floor, if larger) allows. Until then, without a rejection,
	// the SLI is NoData: no regression shown, none ruled out.
	// +optional
	Worst string `json:"worst,omitempty"`
	// Margin is the worst effect that passes the SLI (see Worst).
	// +optional
	Margin string `json:"margin,omitempty"`
	// Gaps is how many steps since the anytime-valid test's first paired sample have none; a
	// test whose last paired sample is more than two steps old is NoData.
	// +optional
	Gaps int32 `json:"gaps,omitempty"`
	// RejectedAt is when the anytime-valid evidence became conclusive.
	// +optional
	RejectedAt *metav1.Time `json:"rejectedAt,omitempty"`
	// Note explains a NoData or a pass held by the floor.
	// +optional
	Note string `json:"note,omitempty"`
}

// StatisticalStatus is the statistical second opinion on the whole analysis.
type StatisticalStatus struct {
	// Mode the test ran in.
	Mode StatisticalMode `json:"mode"`
	// Verdict over every SLI's test.
	Verdict Verdict `json:"verdict"`
	// Message explains the verdict and lists every SLI where the thresholds and the test
	// disagree.
	// +optional
	Message string `json:"message,omitempty"`
}

// TimeRange is a span of time, both ends included.
type TimeRange struct {
	// From is the span's start.
	From metav1.Time `json:"from"`
	// To is the span's end.
	To metav1.Time `json:"to"`
}

// WarmupStatus records the warm-up of the judged pods.
type WarmupStatus struct {
	// Excluded are the spans (merged, oldest first, at most 16) in which a judged pod was
	// not yet warm; their samples are not judged.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Excluded []TimeRange `json:"excluded,omitempty"`
	// WarmAt is when the last of the current judged pods is warm; the analysis waits until
	// then.
	// +optional
	WarmAt *metav1.Time `json:"warmAt,omitempty"`
	// Message says which pods are warming up.
	// +optional
	Message string `json:"message,omitempty"`
}

// AnalysisStatus is the result of the last analysis.
type AnalysisStatus struct {
	// Time of the analysis.
	Time metav1.Time `json:"time"`
	// Weight the analysis judged.
	Weight int32 `json:"weight"`
	// LateBy is how long after its due time the analysis ran, when a second or more: the
	// controller is behind (its workers busy, a long queue). Looks keep to a fixed clock from
	// the step's start, so a late one does not delay the next.
	// +optional
	LateBy *metav1.Duration `json:"lateBy,omitempty"`
	// Verdict of the whole analysis: Fail if any SLI failed, else Error or NoData if any
	// SLI lacked data, else Pass.
	Verdict Verdict `json:"verdict"`
	// Message explains the verdict.
	// +optional
	Message string `json:"message,omitempty"`
	// Statistical is the statistical second opinion, shown beside the threshold verdict.
	// +optional
	Statistical *StatisticalStatus `json:"statistical,omitempty"`
	// MeasuredShare is the gray track's share of the requests at this analysis, in percent as a
	// decimal string (e.g. "9.8"): gray's rate over the sum of every track's rate, read from
	// the request-rate rule of the traffic guard (analysis.requestRateRule, over
	// requestWindow). Empty when unknown: a query failed, the gray track has no series, a
	// track has more than one, or no track served a request.
	// +optional
	MeasuredShare string `json:"measuredShare,omitempty"`
	// SLIs are the per-SLI results.
	// +optional
	// +listType=map
	// +listMapKey=name
	SLIs []SLIResult `json:"slis,omitempty"`
}

// ProfileFunction is one function's cost per request on each track.
type ProfileFunction struct {
	// Kind of profile: cpu (CPU time per request) or alloc_space (bytes allocated per request).
	Kind string `json:"kind"`
	// Function is the function charged, without its package path (pools.ScrubBytes).
	Function string `json:"function"`
	// GrayPerRequest and StablePerRequest are its cost per request on each track, with a unit
	// (e.g. "1.58ms", "12.0KiB").
	GrayPerRequest   string `json:"grayPerRequest"`
	StablePerRequest string `json:"stablePerRequest"`
}

// ProfileStatus is the comparison of a gray and a stable pod's profiles taken at a rollback.
type ProfileStatus struct {
	// Time the profiles were taken.
	Time metav1.Time `json:"time"`
	// GrayPod and StablePod are the pods profiled.
	GrayPod   string `json:"grayPod"`
	StablePod string `json:"stablePod"`
	// Functions are the largest differences, gray minus stable, of each kind (at most 3 each).
	// +kubebuilder:validation:MaxItems=6
	// +optional
	Functions []ProfileFunction `json:"functions,omitempty"`
	// Message says what could not be compared, if anything.
	// +optional
	Message string `json:"message,omitempty"`
}

// HandledRequests records the value of each operator annotation the controller last acted on
// (or refused), so that it acts once per request.
type HandledRequests struct {
	// Promote is the last poolparity.dev/promote value handled.
	// +optional
	Promote string `json:"promote,omitempty"`
	// Abort is the last poolparity.dev/abort value handled.
	// +optional
	Abort string `json:"abort,omitempty"`
}

// PoolCanaryStatus is the observed state of a PoolCanary.
type PoolCanaryStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is the coarse state.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// CurrentStep is the index of the current step in spec.steps.
	// +optional
	CurrentStep int32 `json:"currentStep"`

	// CurrentWeight is the gray track's weight in percent (0 after promotion or rollback).
	// +optional
	CurrentWeight int32 `json:"currentWeight"`

	// ReplicaShare is the gray track's share of the desired pods in percent, as a decimal
	// string (e.g. "33.3"): gray / (stable + gray + baseline). Without trafficRouting the
	// Service spreads requests over the pods of every track, so this is the traffic share the
	// replica split gives, which differs from currentWeight when the replicas are few (weight
	// 10 on 2 replicas is 1 stable + 1 gray: 50). With trafficRouting it is only the share of
	// the pods: the route's weights (routeWeight) decide the traffic. Empty when no pod is
	// desired.
	// +optional
	ReplicaShare string `json:"replicaShare,omitempty"`

	// RouteWeight is, with trafficRouting, the gray backend's share of the weights on the
	// HTTPRoute in percent (gray / (stable + gray)), read back from the route as the API
	// server stored it after the controller set it: the traffic split in force. Unset
	// without trafficRouting and while the route cannot be set (condition Degraded).
	// +optional
	RouteWeight *int32 `json:"routeWeight,omitempty"`

	// MeasuredShare is lastAnalysis.measuredShare while the last analysis judged the current
	// weight: the gray track's share of the requests as Prometheus measured it. Empty when
	// unknown, and once the weight changes (a new step, a promotion, a rollback) until the
	// next analysis measures it again.
	// +optional
	MeasuredShare string `json:"measuredShare,omitempty"`

	// HandledRequests records the operator annotations (poolparity.dev/promote, abort) the
	// controller has acted on.
	// +optional
	HandledRequests *HandledRequests `json:"handledRequests,omitempty"`

	// StepStartedAt is when the current step's weight was set.
	// +optional
	StepStartedAt *metav1.Time `json:"stepStartedAt,omitempty"`

	// RolloutStartedAt is when this rollout began: the anytime-valid evidence starts here.
	// +optional
	RolloutStartedAt *metav1.Time `json:"rolloutStartedAt,omitempty"`

	// Warmup says which spans of this rollout were left out of the statistical samples
	// because a gray or baseline pod was warming up, and whether the analysis waits.
	// +optional
	Warmup *WarmupStatus `json:"warmup,omitempty"`

	// BaselineReplicas is the fresh baseline's desired replica count (analysis.baseline
	// Fresh; 0 otherwise).
	// +optional
	BaselineReplicas int32 `json:"baselineReplicas,omitempty"`

	// FailedAnalyses counts breached analyses in this rollout.
	// +optional
	FailedAnalyses int32 `json:"failedAnalyses"`

	// StablePoolMode is the pool mode the stable track runs: spec.poolModes.stable, or the
	// gray track's after a promotion.
	// +optional
	StablePoolMode PoolMode `json:"stablePoolMode,omitempty"`

	// RolloutHash identifies the pool modes and trigger this rollout runs; a change starts
	// a new rollout from the first step.
	// +optional
	RolloutHash string `json:"rolloutHash,omitempty"`

	// StableReplicas is the stable track's desired replica count.
	// +optional
	StableReplicas int32 `json:"stableReplicas"`

	// GrayReplicas is the gray track's desired replica count.
	// +optional
	GrayReplicas int32 `json:"grayReplicas"`

	// Replicas is the pod count of both Deployments (for the scale subresource).
	// +optional
	Replicas int32 `json:"replicas"`

	// Selector is spec.selector as a string (for the scale subresource, which an HPA uses to
	// find the pods of both tracks).
	// +optional
	Selector string `json:"selector,omitempty"`

	// LastAnalysis is the result of the last analysis.
	// +optional
	LastAnalysis *AnalysisStatus `json:"lastAnalysis,omitempty"`

	// RollbackProfile is the profile comparison taken at this rollout's rollback
	// (analysis.profiles), once it is in.
	// +optional
	RollbackProfile *ProfileStatus `json:"rollbackProfile,omitempty"`

	// Conditions: Progressing, Parity, TracksReady and, with trafficRouting, Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PoolCanary runs a stable and a gray track of the poolparity service, shifts replicas to
// the gray track step by step while the parity SLIs hold, then promotes (stable adopts the
// gray pool mode) or rolls back (gray goes to 0).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 56",message="name must be at most 56 characters: the Deployments are <name>-stable and <name>-gray"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.analysis.baseline) || self.spec.analysis.baseline != 'Fresh' || size(self.metadata.name) <= 54",message="with analysis.baseline Fresh the name must be at most 54 characters: the baseline Deployment is <name>-baseline"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.trafficRouting) || !has(self.spec.trafficRouting.gatewayAPI) || (has(self.spec.trafficRouting.gatewayAPI.stableService) && has(self.spec.trafficRouting.gatewayAPI.grayService)) || self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="with trafficRouting the default Service names <name>-stable and <name>-gray need a name that is a DNS-1035 label (lower case letters, digits and '-', starting with a letter); or set stableService and grayService"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.trafficRouting) || !has(self.spec.trafficRouting.gatewayAPI) || (has(self.spec.trafficRouting.gatewayAPI.stableService) ? self.spec.trafficRouting.gatewayAPI.stableService : self.metadata.name + '-stable') != (has(self.spec.trafficRouting.gatewayAPI.grayService) ? self.spec.trafficRouting.gatewayAPI.grayService : self.metadata.name + '-gray')",message="trafficRouting: the stable and gray Services must have different names"
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=pcanary,categories=poolparity
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Weight",type=integer,JSONPath=`.status.currentWeight`,description="gray weight asked, percent"
// +kubebuilder:printcolumn:name="Share",type=string,JSONPath=`.status.replicaShare`,description="gray share of the desired pods, percent"
// +kubebuilder:printcolumn:name="Route",type=integer,JSONPath=`.status.routeWeight`,description="gray weight in force on the HTTPRoute (trafficRouting), percent"
// +kubebuilder:printcolumn:name="Measured",type=string,JSONPath=`.status.measuredShare`,description="gray share of the requests at the last analysis of this weight, percent"
// +kubebuilder:printcolumn:name="Stable",type=integer,JSONPath=`.status.stableReplicas`
// +kubebuilder:printcolumn:name="Gray",type=integer,JSONPath=`.status.grayReplicas`
// +kubebuilder:printcolumn:name="Parity",type=string,JSONPath=`.status.lastAnalysis.verdict`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PoolCanary struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PoolCanarySpec   `json:"spec,omitempty"`
	Status PoolCanaryStatus `json:"status,omitempty"`
}

// PoolCanaryList is a list of PoolCanary.
//
// +kubebuilder:object:root=true
type PoolCanaryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PoolCanary `json:"items"`
}

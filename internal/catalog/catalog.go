// Package catalog is the parity contract as typed values: every service level
// indicator (SLI) that compares the gray (pooled) track with the stable one,
// defined once.
//
// Each SLI has an ID (the name PoolCanary's analysis.slis uses), a display
// name (the parity table's row), a unit, the per-track recording rule it
// reads for every window family, the parity series the rules record for it,
// the comparison and its default threshold and effect-size floor, the alert
// that raises it and whether it is always judged. The statistical defaults
// and the traffic guard's defaults live here too.
//
// Everything that spells a part of the contract derives from Default: the
// judge's rows (internal/parity), the PoolCanary CRD's enum and defaults
// (app/api/v1alpha1, checked by a test), the chart's alert thresholds and its
// Argo Rollouts and Flagger checks, the dashboards' threshold lines and the
// docs' threshold table (written by hack/gen). Adding an SLI is one entry in
// Default plus its recording rule in deploy/helm/poolparity/files/rules.yaml.tmpl.
//
// A Catalog is a plain value: copy it to change a threshold (WithThreshold)
// or to narrow it to some SLIs (Select). It holds no state and is safe for
// concurrent use.
package catalog

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
)

// ID identifies an SLI: lower-case words joined by hyphens, e.g.
// "latency-p99". It is the SLI's name in PoolCanary's analysis.slis and in
// the canary's status.
type ID string

// The SLIs of the default catalog.
const (
	LatencyP95          ID = "latency-p95"
	LatencyP99          ID = "latency-p99"
	ErrorRatio          ID = "error-ratio"
	CPUPerRequest       ID = "cpu-per-request"
	HeapAllocPerRequest ID = "heap-alloc-per-request"
	GCCPUShare          ID = "gc-cpu-share"
	SyncPoolHitRatio    ID = "syncpool-hit-ratio"
	RedisPoolHitRatio   ID = "redis-pool-hit-ratio"
	// ResponseBytesPerRequest is the response body bytes per request: a
	// pooled buffer reused without a reset answers with the previous
	// requests' bytes too.
	ResponseBytesPerRequest ID = "response-bytes-per-request"
)

// Comparison says how an SLI's compared value is formed and tested.
type Comparison string

// The comparisons.
const (
	// RatioAtMost: gray/stable must be <= Threshold (with a Floor: or
	// gray-stable <= Floor). Higher is worse.
	RatioAtMost Comparison = "ratio<="
	// RatioAtLeast: gray/stable must be >= Threshold. Lower is worse.
	RatioAtLeast Comparison = "ratio>="
	// DeltaAtMost: gray-stable must be <= Threshold. Higher is worse.
	DeltaAtMost Comparison = "delta<="
	// DeltaAtLeast: gray-stable must be >= Threshold. Lower is worse.
	DeltaAtLeast Comparison = "delta>="
	// GrayAtLeast: the gray value itself must be >= Threshold. Lower is worse.
	GrayAtLeast Comparison = "gray>="
)

// HigherIsWorse reports whether a higher gray value is a regression under c.
func (c Comparison) HigherIsWorse() bool { return c == RatioAtMost || c == DeltaAtMost }

// IsRatio reports whether c compares gray/stable.
func (c Comparison) IsRatio() bool { return c == RatioAtMost || c == RatioAtLeast }

// Unit says how an SLI's values are printed.
type Unit string

// The units.
const (
	Seconds Unit = "seconds"
	Bytes   Unit = "bytes"
	Ratio   Unit = "ratio" // a fraction of one, printed as a percentage
	PerSec  Unit = "per_second"
)

// Judged says when an SLI is judged.
type Judged string

// When an SLI is judged.
const (
	// Always: the SLI is required; no series is NO DATA for the verdict.
	Always Judged = "always"
	// WhenGrayPooled: judged only when the gray track exposes sync.Pool
	// series (runs pooled); otherwise left out with a note.
	WhenGrayPooled Judged = "when-gray-pooled"
	// WhenPresent: judged where the service exposes the SLI's Presence
	// series. When neither compared track has any, the SLI is absent by
	// design (a service without go-redis has no Redis pool; one with
	// OpenTelemetry's runtime instrumentation only has no GC-CPU or process
	// CPU series) and is left out with a note, never NO DATA for the
	// verdict; when one track has them and its row has no value, the row is
	// NO DATA as for Always. An SLI read from a rule given in its place
	// (parity.Override.Rule, an analysis' slis[].rule) is required.
	WhenPresent Judged = "when-present"
)

// Alert is the alerting rule that raises an SLI's regression.
type Alert struct {
	// Name of the alerting rule, e.g. PoolParityLatencyRegression.
	Name string
	// ValuesKey is the rule's key under the chart's rules.alerts, e.g.
	// latencyRegression; its `threshold` is the SLI's Threshold.
	ValuesKey string
	// Labels tell this SLI's rule apart when one alert covers several
	// SLIs, e.g. {quantile: p99}.
	Labels map[string]string
}

// The alerting rules that raise no SLI's regression (the chart's rules
// define them beside the SLIs' alerts): what pooling costs or breaks beyond
// the parity table, and the guards that say a comparison cannot be made.
// With the SLIs' Alert names they are every alert of the rules (Alerts).
const (
	// AlertNoAllocationGain (info): the gray track allocates about as many
	// bytes per request as stable: pooling does not pay.
	AlertNoAllocationGain = "PoolParityNoAllocationGain"
	// AlertLiveHeapRegression: the gray pods hold more live heap than
	// stable's (a pool that retains or hoards).
	AlertLiveHeapRegression = "PoolParityLiveHeapRegression"
	// AlertDirtyObjects: a pool handed out objects its reset left dirty
	// (the pool sanitizer).
	AlertDirtyObjects = "PoolParityDirtyObjects"
	// AlertRedisPoolTimeouts: a track's Redis connection pool times out.
	AlertRedisPoolTimeouts = "PoolParityRedisPoolTimeouts"
	// AlertTrackMissing, AlertTrackTooQuiet and AlertNoData: a track has
	// no series, too little traffic to judge, or no track has any.
	AlertTrackMissing  = "PoolParityTrackMissing"
	AlertTrackTooQuiet = "PoolParityTrackTooQuiet"
	AlertNoData        = "PoolParityNoData"
)

// Alerts returns the name of every alerting rule: the SLIs' alerts, in
// catalog order and each once, then the others (AlertNoAllocationGain...).
func (c Catalog) Alerts() []string {
	var out []string
	for _, s := range c.SLIs {
		if s.Alert != nil && !slices.Contains(out, s.Alert.Name) {
			out = append(out, s.Alert.Name)
		}
	}
	return append(out, AlertNoAllocationGain, AlertLiveHeapRegression, AlertDirtyObjects,
		AlertRedisPoolTimeouts, AlertTrackMissing, AlertTrackTooQuiet, AlertNoData)
}

// FaultAlerts returns the names of the alerts on a fault of gray's own that
// no SLI judges: PoolParityDirtyObjects (a reset that left a previous
// request's state, which the sanitizer caught) and
// PoolParityLiveHeapRegression (pools that hoard what they grew). A firing
// one fails a verdict in every gate (parity's sequential gates read the
// SLIs' alerts as notes); the other alerts that raise no SLI watch a shared
// dependency or the traffic (PoolParityRedisPoolTimeouts on either track, the
// traffic guard's), or inform (PoolParityNoAllocationGain).
func FaultAlerts() map[string]bool {
	return map[string]bool{AlertDirtyObjects: true, AlertLiveHeapRegression: true}
}

// AlertOf returns the name of the alert that raises the SLI id, or "" when
// the catalog has no such SLI or no alert raises it.
func (c Catalog) AlertOf(id ID) string {
	s, ok := c.Get(id)
	if !ok || s.Alert == nil {
		return ""
	}
	return s.Alert.Name
}

// SLI is one parity indicator.
type SLI struct {
	// ID is the SLI's stable identifier.
	ID ID
	// Name is the display name, the parity table's row, e.g. "latency p99".
	Name string
	// Unit of the per-track values.
	Unit Unit
	// Comparison and Threshold define the parity test.
	Comparison Comparison
	Threshold  float64
	// Floor is the absolute part of the SLI's effect-size floor, in Unit
	// (seconds, bytes or ratio points): a difference between the tracks no
	// larger than the floor is not a regression, however significant. For a
	// RatioAtMost SLI a ratio above Threshold fails only when gray - stable
	// is also above the floor. Zero means none. See FloorAt.
	Floor float64
	// RelFloor is the relative part of the floor, a fraction of the
	// baseline track's own level (0.05: 5% of stable's value), so that the
	// floor scales with the service. Zero means none. See FloorAt.
	RelFloor float64
	// Rule is the per-track recording rule (one series per gray_status)
	// without its window: the rule of window family W is Rule+W, e.g.
	// job_gray_status:http_request_duration_seconds:p99_rate + 5m.
	Rule string
	// WeightRule, when set, makes the track's value the average of Rule's
	// series (one per pool) weighted by WeightRule's (e.g. each pool's gets
	// per second), again without the window.
	WeightRule string
	// ParityRule is the rule recording gray against stable (one series per
	// job), without its window, e.g.
	// job:http_request_duration_seconds_p99:gray_over_stable_rate. Empty
	// when the rules record none; the chart's Argo Rollouts and Flagger
	// checks are made from the SLIs that have one and an Alert.
	ParityRule string
	// FloorRule is the gray-minus-stable rule Floor is checked against in
	// the Argo Rollouts and Flagger checks, without its window.
	FloorRule string
	// Alert is the alert that raises this SLI, nil when none does.
	Alert *Alert
	// Counts names the raw counters the count-based judge reads for this
	// SLI; nil when it has none (the judge then tests the SLI's per-minute
	// samples).
	Counts *CountInputs
	// Judged says when the SLI counts.
	Judged Judged
	// Presence is the raw metric whose series, on either compared track,
	// make a WhenPresent SLI count, e.g. redis_pool_hit_total.
	Presence string
	// CountRule, set for a proportion (a share of counted events, e.g. the
	// 5xx share of requests), is the per-track rate rule of the events it
	// is a share of, without its window (the guard's request-rate rule for
	// the error ratio). The sequential test reads it at each sample to
	// count the events: a proportion passes only once the counts bound the
	// tracks' rates within its margin, since a few minutes without a single
	// error on small traffic has zero variance but proves nothing.
	CountRule string
	// Doc is one sentence on what the SLI catches, for the docs' table.
	Doc string
}

// CountInputs names the raw counters of an SLI for the count-based judge:
// rules of the poolparity.counts group, one series per pod and track,
// summed and never rated (docs/contracts.md section 4).
type CountInputs struct {
	// Requests is the rule counting the requests.
	Requests string
	// Num is the rule of the numerator: the 5xx counter, CPU seconds or
	// heap bytes; for a latency SLI the bucket counter, by le.
	Num string
	// Proportion is true when Num counts requests (5xx), false when it is
	// an amount summed over them (CPU seconds, heap bytes).
	Proportion bool
	// Quantile, for a latency SLI, is the quantile judged (0.95, 0.99):
	// Num is then a histogram's buckets.
	Quantile float64
}

// The count rules of the poolparity.counts group.
const (
	CountRequestsRule = "job_gray_status_pod:http_requests:total"
	countErrorsRule   = "job_gray_status_pod:http_request_errors:total"
	countBucketsRule  = "job_gray_status_pod_le:http_request_duration_seconds_bucket:total"
	countCPURule      = "job_gray_status_pod:process_cpu_seconds:total"
	countHeapRule     = "job_gray_status_pod:go_heap_allocs_bytes:total"
	// The response-size histogram's _count and _sum: the response SLI's
	// requests are those the histogram observed.
	countSizeCountRule = "job_gray_status_pod:http_response_size_bytes_count:total"
	countSizeSumRule   = "job_gray_status_pod:http_response_size_bytes_sum:total"
)

// FloorAt returns the SLI's effect-size floor, in Unit, when the baseline
// (stable) track's level is stable: max(Floor, RelFloor*|stable|). It is the
// one floor every judge uses: the thresholds of a RatioAtMost SLI, the
// Mann-Whitney test's median difference and Confirm, and the sequential
// test's null hypothesis (gray worse by at most the floor).
func (s SLI) FloorAt(stable float64) float64 { return FloorAt(s.Floor, s.RelFloor, stable) }

// FloorAt is SLI.FloorAt for a floor given by its parts: max(abs,
// rel*|level|), 0 when both are zero or the level is not finite.
func FloorAt(abs, rel, level float64) float64 {
	f := abs
	if r := rel * math.Abs(level); rel > 0 && !math.IsNaN(r) && !math.IsInf(r, 0) && r > f {
		f = r
	}
	return f
}

// TrackRule returns the SLI's per-track rule of window family w.
func (s SLI) TrackRule(w string) string { return s.Rule + w }

// Rules returns the recording rules of window family w the SLI reads.
func (s SLI) Rules(w string) []string {
	out := []string{s.Rule + w}
	if s.WeightRule != "" {
		out = append(out, s.WeightRule+w)
	}
	return out
}

// Query returns the PromQL giving one series per track (label gray_status)
// of window family w, with the label matchers sel (without braces; may be
// empty) on every series.
func (s SLI) Query(w, sel string) string {
	m := "{" + sel + "}"
	if s.WeightRule == "" {
		return s.Rule + w + m
	}
	return fmt.Sprintf("sum by (gray_status) (%[1]s%[3]s%[4]s * %[2]s%[3]s%[4]s) / sum by (gray_status) (%[2]s%[3]s%[4]s)",
		s.Rule, s.WeightRule, w, m)
}

// TrackQuery is Query for one track: sel must select it. It returns one
// series (the weighted average over pools for a WeightRule SLI; the largest
// series otherwise).
func (s SLI) TrackQuery(w, sel string) string {
	m := "{" + sel + "}"
	if s.WeightRule == "" {
		return "max(" + s.Rule + w + m + ")"
	}
	return fmt.Sprintf("sum(%[1]s%[3]s%[4]s * %[2]s%[3]s%[4]s) / sum(%[2]s%[3]s%[4]s)", s.Rule, s.WeightRule, w, m)
}

// Stat are the statistical test's defaults: a one-sided Mann-Whitney U test
// of each SLI's gray samples against its stable samples.
type Stat struct {
	// Confidence: an SLI is significantly worse when the p-value is below
	// 1 - Confidence (before the correction for the number of SLIs).
	Confidence float64
	// MinEffect is the smallest Vargha-Delaney A (P(a gray sample is worse))
	// that counts.
	MinEffect float64
	// MinSamples is the fewest samples per track the test judges.
	MinSamples int
	// Window is how far back the samples reach; Step how often one is taken.
	Window, Step time.Duration
	// SampleFamily is the window family of the rules the test samples: a
	// range no longer than Step, so that samples do not overlap.
	SampleFamily string
	// SequentialAlpha is the per-rollout false-FAIL rate of the sequential
	// test (statistical.mode Sequential), however often it is read; it is
	// spent over the SLIs tested together by Bonferroni (alpha/k each).
	SequentialAlpha float64
	// Warmup is how long a new pod must have been Ready before its track's
	// samples are judged: the PoolCanary controller's default
	// analysis.warmup and verdict-eval's (DefaultWarmup).
	Warmup time.Duration
	// RuleInterval is the recording rules' evaluation interval assumed when
	// Prometheus does not report a rule's own (DefaultRuleInterval): a
	// sample at t summarises (t - range - interval, t], so a warm-up span
	// leaves out the samples whose window that wide overlaps it.
	RuleInterval time.Duration
}

// Defaults shared by the controller, the evaluator and verdict-eval.
const (
	// DefaultWarmup is Stat.Warmup of the default catalog and PoolCanary's
	// analysis.warmup when the API server's default was bypassed.
	DefaultWarmup = 2 * time.Minute
	// DefaultRuleInterval is Stat.RuleInterval of the default catalog: the
	// evaluation interval of a Prometheus configured as the docs show (30
	// s); Prometheus reports the real one with its rules, which wins.
	DefaultRuleInterval = 30 * time.Second
)

// Guard is the traffic guard: below MinRequestRate on either track no SLI
// counts.
type Guard struct {
	// RequestRule is the per-track request-rate rule, without its window.
	RequestRule string
	// MinTrackRule records the slower track's rate, without its window.
	MinTrackRule string
	// MinRequestRate is the rate (req/s) both tracks must exceed: the
	// chart's rules.minRequestRate.
	MinRequestRate float64
	// MinRequests and RequestWindow are the same guard as PoolCanary
	// counts it: more than MinRequests per track in RequestWindow.
	MinRequests   int64
	RequestWindow time.Duration
}

// Catalog is a set of SLIs with their statistical and guard defaults.
type Catalog struct {
	SLIs  []SLI
	Stat  Stat
	Guard Guard
	// Window is the default window family of the thresholds and alerts.
	Window string
}

// Default returns the poolparity catalog: the nine SLIs of the parity
// table, in the table's order.
func Default() Catalog {
	latency := func(id ID, q string, quantile float64) SLI {
		return SLI{
			ID: id, Name: "latency " + q, Unit: Seconds, Comparison: RatioAtMost, Threshold: 1.10, Floor: 0.005, RelFloor: 0.05,
			Rule:       "job_gray_status:http_request_duration_seconds:" + q + "_rate",
			ParityRule: "job:http_request_duration_seconds_" + q + ":gray_over_stable_rate",
			FloorRule:  "job:http_request_duration_seconds_" + q + ":gray_minus_stable_rate",
			Counts:     &CountInputs{Requests: CountRequestsRule, Num: countBucketsRule, Quantile: quantile},
			Alert:      &Alert{Name: "PoolParityLatencyRegression", ValuesKey: "latencyRegression", Labels: map[string]string{"quantile": q}},
			Judged:     Always,
			Doc: "the gray track's " + q + " request latency against stable's; floor max(5 ms, 5% of stable's " + q +
				"): an A/A " + q + " ratio wanders by a few percent (docs/verdict-eval.md), and 5 ms is less than a busy node jitters",
		}
	}
	return Catalog{
		Window: "5m",
		SLIs: []SLI{
			latency(LatencyP95, "p95", 0.95),
			latency(LatencyP99, "p99", 0.99),
			{
				ID: ErrorRatio, Name: "error ratio (5xx)", Unit: Ratio, Comparison: DeltaAtMost, Threshold: 0.005, Floor: 0.001,
				Rule:       "job_gray_status:http_request_errors:ratio_rate",
				ParityRule: "job:http_request_errors:gray_minus_stable_rate",
				CountRule:  "job_gray_status:http_requests:rate",
				Alert:      &Alert{Name: "PoolParityErrorRegression", ValuesKey: "errorRegression"},
				Counts:     &CountInputs{Requests: CountRequestsRule, Num: countErrorsRule, Proportion: true},
				Judged:     Always,
				Doc:        "5xx share of requests; a difference, since ratios of near-zero error rates explode; floor 0.1 points, the base error ratio of the synthetic corpus and a fifth of the threshold",
			},
			{
				ID: CPUPerRequest, Name: "CPU per request", Unit: Seconds, Comparison: RatioAtMost, Threshold: 1.15, Floor: 0.0001,
				Rule:       "job_gray_status:process_cpu_seconds_per_request:ratio_rate",
				ParityRule: "job:process_cpu_seconds_per_request:gray_over_stable_rate",
				FloorRule:  "job:process_cpu_seconds_per_request:gray_minus_stable_rate",
				Counts:     &CountInputs{Requests: CountRequestsRule, Num: countCPURule},
				Alert:      &Alert{Name: "PoolParityCPUPerRequestRegression", ValuesKey: "cpuPerRequestRegression"},
				Judged:     WhenPresent,
				Presence:   "process_cpu_seconds_total",
				Doc:        "process CPU seconds per request: what a Reset that zeroes too much costs; floor 100 µs, what equal builds differ by at ~1.4 ms per request (ratios 1.01 to 1.11, docs/pool-misuse.md)",
			},
			{
				ID: HeapAllocPerRequest, Name: "heap alloc per request", Unit: Bytes, Comparison: RatioAtMost, Threshold: 1.10, Floor: 1024,
				Rule:       "job_gray_status:go_gc_heap_allocs_bytes_per_request:ratio_rate",
				ParityRule: "job:go_gc_heap_allocs_bytes_per_request:gray_over_stable_rate",
				Counts:     &CountInputs{Requests: CountRequestsRule, Num: countHeapRule},
				Judged:     Always,
				Doc:        "heap bytes allocated per request: parity asks only that gray be no worse (PoolParityNoAllocationGain tells whether pooling pays); floor 1 KiB, a small buffer per request, 2% of the synthetic corpus' 50 KB, whose noise is 2%",
			},
			{
				ID: ResponseBytesPerRequest, Name: "response bytes per request", Unit: Bytes, Comparison: RatioAtMost, Threshold: 1.25, Floor: 64, RelFloor: 0.10,
				Rule:       "job_gray_status:http_response_size_bytes_per_request:ratio_rate",
				ParityRule: "job:http_response_size_bytes_per_request:gray_over_stable_rate",
				FloorRule:  "job:http_response_size_bytes_per_request:gray_minus_stable_rate",
				Counts:     &CountInputs{Requests: countSizeCountRule, Num: countSizeSumRule},
				Alert:      &Alert{Name: "PoolParityResponseSizeRegression", ValuesKey: "responseSizeRegression"},
				Judged:     WhenPresent,
				Presence:   "http_response_size_bytes_count",
				Doc:        "response body bytes per request (a response-size histogram's _sum over its _count): what a pooled buffer reused without a reset answers, the previous requests' bytes with its own, while heap per request may even fall; threshold 1.25, since a bursty mix of small and large answers moves a track's mean by up to 20% in a minute (the demo's misuse-retain waves: 1.20 on equal bodies), far below the 6.8x of a buffer never reset; floor max(64 B, 10% of stable's), a few JSON fields",
			},
			{
				ID: GCCPUShare, Name: "GC share of CPU", Unit: Ratio, Comparison: DeltaAtMost, Threshold: 0.05, Floor: 0.005,
				Rule:     "job_gray_status:go_gc_cpu:ratio_rate",
				Judged:   WhenPresent,
				Presence: "go_cpu_classes_gc_total_cpu_seconds_total",
				Doc:      "GC CPU over total CPU, in ratio points; floor 0.5 points, a tenth of the threshold and a quarter of a 2% GC share",
			},
			{
				ID: SyncPoolHitRatio, Name: "sync.Pool hit ratio", Unit: Ratio, Comparison: GrayAtLeast, Threshold: 0.5, Floor: 0.02,
				Rule:       "job_gray_status_pool:syncpool_hits:ratio_rate",
				WeightRule: "job_gray_status_pool:syncpool_gets:rate",
				Alert:      &Alert{Name: "PoolParityLowSyncPoolHitRatio", ValuesKey: "lowSyncPoolHitRatio"},
				Judged:     WhenGrayPooled,
				Doc:        "the gray track's hit ratio over all its pools, weighted by gets (the alert judges each pool); floor 2 points below the threshold",
			},
			{
				ID: RedisPoolHitRatio, Name: "Redis pool hit ratio", Unit: Ratio, Comparison: DeltaAtLeast, Threshold: -0.10, Floor: 0.02,
				Rule:     "job_gray_status:redis_pool_hits:ratio_rate",
				Judged:   WhenPresent,
				Presence: "redis_pool_hit_total",
				Doc:      "go-redis connection pool hits, in ratio points (negative: how much worse gray may be); floor 2 points, a fifth of the threshold",
			},
		},
		Stat: Stat{Confidence: 0.99, MinEffect: 0.71, MinSamples: 8, Window: 10 * time.Minute, Step: time.Minute, SampleFamily: "1m", SequentialAlpha: 0.01,
			Warmup: DefaultWarmup, RuleInterval: DefaultRuleInterval},
		Guard: Guard{
			RequestRule: "job_gray_status:http_requests:rate", MinTrackRule: "job:http_requests:min_track_rate",
			MinRequestRate: 1, MinRequests: 100, RequestWindow: 5 * time.Minute,
		},
	}
}

// Get returns the SLI with the given ID.
func (c Catalog) Get(id ID) (SLI, bool) {
	i := c.index(id)
	if i < 0 {
		return SLI{}, false
	}
	return c.SLIs[i], true
}

func (c Catalog) index(id ID) int {
	return slices.IndexFunc(c.SLIs, func(s SLI) bool { return s.ID == id })
}

// IDs returns the SLIs' IDs in order.
func (c Catalog) IDs() []ID {
	out := make([]ID, len(c.SLIs))
	for i, s := range c.SLIs {
		out[i] = s.ID
	}
	return out
}

// ErrUnknownSLI is returned for an ID the catalog does not hold.
var ErrUnknownSLI = errors.New("unknown SLI")

// Select returns a copy of c holding only the SLIs ids, in the order given.
func (c Catalog) Select(ids ...ID) (Catalog, error) {
	out := c
	out.SLIs = make([]SLI, 0, len(ids))
	for _, id := range ids {
		s, ok := c.Get(id)
		if !ok {
			return Catalog{}, fmt.Errorf("%w %q (want one of %s)", ErrUnknownSLI, id, joinIDs(c.IDs()))
		}
		out.SLIs = append(out.SLIs, s)
	}
	return out, nil
}

// WithThreshold returns a copy of c with SLI id's threshold set to t.
// A threshold that is not finite, or a ratio's that is not above 0, is an
// error: it would make the SLI's margin infinite (every gray within it).
func (c Catalog) WithThreshold(id ID, t float64) (Catalog, error) {
	out, err := c.with(id, func(s *SLI) { s.Threshold = t })
	if err != nil {
		return Catalog{}, err
	}
	s, _ := out.Get(id)
	if err := s.checkThreshold(); err != nil {
		return Catalog{}, fmt.Errorf("SLI %q: %w", id, err)
	}
	return out, nil
}

// checkThreshold says what is wrong with s's threshold (nil: nothing): it
// must be finite, and above 0 where gray/stable is compared (a ratio limit of
// 0 or below has no margin on the log scale the judges work on).
func (s SLI) checkThreshold() error {
	switch {
	case math.IsNaN(s.Threshold) || math.IsInf(s.Threshold, 0):
		return fmt.Errorf("the threshold %g is not finite", s.Threshold)
	case s.Comparison.IsRatio() && s.Threshold <= 0:
		return fmt.Errorf("the threshold %g of a ratio limit (%s) must be above 0", s.Threshold, s.Comparison)
	}
	return nil
}

// WithFloor returns a copy of c with SLI id's floor set to f.
func (c Catalog) WithFloor(id ID, f float64) (Catalog, error) {
	return c.with(id, func(s *SLI) { s.Floor = f })
}

func (c Catalog) with(id ID, f func(*SLI)) (Catalog, error) {
	i := c.index(id)
	if i < 0 {
		return Catalog{}, fmt.Errorf("%w %q (want one of %s)", ErrUnknownSLI, id, joinIDs(c.IDs()))
	}
	out := c
	out.SLIs = slices.Clone(c.SLIs)
	f(&out.SLIs[i])
	return out, nil
}

// AlertValues returns, per chart values key under rules.alerts, the
// threshold and floor the catalog's SLIs give it (the SLIs raised by one
// alert share them), in catalog order. The floor is the SLI's Floor and
// RelFloor where the alert reads one (the SLI has a FloorRule), else
// zeros: the alert then fires only where the SLI's row fails (gray - stable
// above max(Floor, RelFloor*stable)), never on a row within its floor.
func (c Catalog) AlertValues() []AlertValue {
	var out []AlertValue
	for _, s := range c.SLIs {
		if s.Alert == nil {
			continue
		}
		if slices.ContainsFunc(out, func(a AlertValue) bool { return a.Key == s.Alert.ValuesKey }) {
			continue
		}
		// Only an alert with a floor rule reads the floor (minDelta, minDeltaRelative).
		a := AlertValue{Key: s.Alert.ValuesKey, Alert: s.Alert.Name, Threshold: s.Threshold}
		if s.FloorRule != "" {
			a.HasFloor, a.Floor, a.RelFloor = true, s.Floor, s.RelFloor
		}
		out = append(out, a)
	}
	return out
}

// AlertValue is the threshold (and floor) of one alert under the chart's
// rules.alerts.
type AlertValue struct {
	// Key is the alert's key under rules.alerts; Alert its rule's name.
	Key, Alert string
	// Threshold is the alert's `threshold`.
	Threshold float64
	// HasFloor is true when the alert reads a floor: Floor is then its
	// `minDelta` and RelFloor its `minDeltaRelative` (a fraction of
	// stable's level; 0: none).
	HasFloor        bool
	Floor, RelFloor float64
}

var (
	idPattern   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	rulePattern = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
)

// Validate reports every SLI that could not be judged or rendered: an ID
// that is not a DNS label or repeats, an empty name, an unknown comparison
// or Judged, a rule that is not a metric name, a negative floor or a
// relative floor outside [0, 1), and statistical or guard defaults out of
// range.
func (c Catalog) Validate() error {
	var errs []error
	seen := map[ID]bool{}
	names := map[string]bool{}
	for i, s := range c.SLIs {
		where := fmt.Sprintf("SLI %d (%q)", i, s.ID)
		switch {
		case !idPattern.MatchString(string(s.ID)) || len(s.ID) > 63:
			errs = append(errs, fmt.Errorf("%s: the ID must be lower-case words joined by hyphens, at most 63 characters", where))
		case seen[s.ID]:
			errs = append(errs, fmt.Errorf("%s: the ID repeats", where))
		}
		seen[s.ID] = true
		if s.Name == "" || names[s.Name] {
			errs = append(errs, fmt.Errorf("%s: the display name is empty or repeats", where))
		}
		names[s.Name] = true
		for _, err := range s.check() {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
	}
	if st := c.Stat; !st.valid() {
		errs = append(errs, fmt.Errorf("statistical defaults out of range: %+v", st))
	}
	if c.Guard.RequestRule == "" || c.Guard.MinRequestRate < 0 || c.Guard.MinRequests < 0 || c.Guard.RequestWindow <= 0 {
		errs = append(errs, fmt.Errorf("guard defaults out of range: %+v", c.Guard))
	}
	return errors.Join(errs...)
}

// valid reports whether every statistical default is in range.
func (st Stat) valid() bool {
	mwu := st.Confidence > 0 && st.Confidence < 1 && st.MinEffect > 0.5 && st.MinEffect <= 1 && st.MinSamples >= 3
	sampling := st.Window > 0 && st.Step > 0 && st.Step <= st.Window
	return mwu && sampling && st.SequentialAlpha > 0 && st.SequentialAlpha < 1 && st.Warmup >= 0 && st.RuleInterval >= 0
}

// check returns what is wrong with the SLI's own fields: an unknown
// comparison or Judged, a threshold or floor out of range, a rule that is
// not a metric name, a proportion that is not a difference, an alert
// without its name.
func (s SLI) check() []error {
	var errs []error
	switch s.Comparison {
	case RatioAtMost, RatioAtLeast, DeltaAtMost, DeltaAtLeast, GrayAtLeast:
	default:
		errs = append(errs, fmt.Errorf("unknown comparison %q", s.Comparison))
	}
	if err := s.checkThreshold(); err != nil {
		errs = append(errs, err)
	}
	if s.Floor < 0 || s.RelFloor < 0 || s.RelFloor >= 1 || math.IsNaN(s.Floor) || math.IsInf(s.Floor, 0) {
		errs = append(errs, errors.New("the floor is negative or not finite, or the relative floor is outside [0, 1)"))
	}
	if err := s.checkJudged(); err != nil {
		errs = append(errs, err)
	}
	if s.CountRule != "" && s.Comparison != DeltaAtMost && s.Comparison != DeltaAtLeast {
		errs = append(errs, fmt.Errorf("a CountRule (a proportion) needs a difference comparison, got %q", s.Comparison))
	}
	errs = append(errs, s.checkRules()...)
	if s.Alert != nil && (s.Alert.Name == "" || s.Alert.ValuesKey == "") {
		errs = append(errs, errors.New("an alert needs its name and values key"))
	}
	return errs
}

// checkJudged returns what is wrong with the SLI's Judged and Presence.
func (s SLI) checkJudged() error {
	switch {
	case s.Judged != Always && s.Judged != WhenGrayPooled && s.Judged != WhenPresent:
		return fmt.Errorf("unknown Judged %q", s.Judged)
	case s.Judged == WhenPresent && !rulePattern.MatchString(s.Presence):
		return fmt.Errorf("Judged %s needs a Presence metric name, got %q", s.Judged, s.Presence)
	case s.Judged != WhenPresent && s.Presence != "":
		return fmt.Errorf("the Presence %q is only read for Judged %s", s.Presence, WhenPresent)
	}
	return nil
}

// checkRules returns the SLI's rules that are not metric names, and a
// missing per-track rule.
func (s SLI) checkRules() []error {
	var errs []error
	rules := []string{s.Rule, s.WeightRule, s.ParityRule, s.FloorRule, s.CountRule}
	if c := s.Counts; c != nil {
		rules = append(rules, c.Requests, c.Num)
		if c.Requests == "" || c.Num == "" || c.Quantile < 0 || c.Quantile >= 1 || (c.Quantile > 0 && c.Proportion) {
			errs = append(errs, errors.New("count inputs need a requests and a numerator rule, and a quantile in (0, 1) only for a histogram"))
		}
	}
	for _, r := range rules {
		if r != "" && !rulePattern.MatchString(r) {
			errs = append(errs, fmt.Errorf("rule %q is not a metric name", r))
		}
	}
	if s.Rule == "" {
		errs = append(errs, errors.New("no per-track rule"))
	}
	return errs
}

func joinIDs(ids []ID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ", ")
}

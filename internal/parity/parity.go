// Package parity judges a gray (canary) track against its stable baseline
// from the poolparity recording rules, read through the Prometheus HTTP API.
//
// A Checker queries one row per service level indicator (latency, errors,
// CPU and heap bytes per request, GC CPU share, sync.Pool and Redis pool hit
// ratios), each with the stable value, the gray value, their ratio or
// difference, a threshold and a verdict, and lists the poolparity alerts
// that are pending or firing. Judge turns rows and alerts into one verdict.
// A Report renders as a text table, as JSON and as a self-contained HTML
// page with inline SVG charts.
//
// The local demo (app/cmd/poolparity-demo), the chart's `make parity` and
// the canary controller share this package, so the three can never disagree
// on what PASS means.
//
// # Concurrency
//
// A Checker holds no mutable state and is safe for concurrent use if its
// Querier is (the client_golang API client is). A Report is a plain value.
package parity

import (
	"fmt"
	"time"
)

// Verdict is the outcome of one row or of a whole report.
type Verdict string

// The verdicts.
const (
	Pass   Verdict = "PASS"
	Fail   Verdict = "FAIL"
	NoData Verdict = "NO DATA"
	// Error: Prometheus could not be read (an error, a timeout, a missing
	// rule). Never a pass.
	Error Verdict = "ERROR"
)

// Comparison says how a row's compared value is formed and tested.
type Comparison string

// The comparisons.
const (
	// RatioAtMost: gray/stable must be <= Threshold (with a Floor: or
	// gray-stable <= Floor).
	RatioAtMost Comparison = "ratio<="
	// RatioAtLeast: gray/stable must be >= Threshold.
	RatioAtLeast Comparison = "ratio>="
	// DeltaAtMost: gray-stable must be <= Threshold.
	DeltaAtMost Comparison = "delta<="
	// DeltaAtLeast: gray-stable must be >= Threshold.
	DeltaAtLeast Comparison = "delta>="
	// GrayAtLeast: the gray value itself must be >= Threshold.
	GrayAtLeast Comparison = "gray>="
)

// Unit says how a value is printed.
type Unit string

// The units.
const (
	Seconds Unit = "seconds"
	Bytes   Unit = "bytes"
	Ratio   Unit = "ratio" // a fraction of one, printed as a percentage
	PerSec  Unit = "per_second"
)

// Row is one SLI of a report. Stable, Gray and Value are nil when
// Prometheus had no sample for them.
type Row struct {
	// SLI names the indicator, e.g. "latency p99".
	SLI string `json:"sli"`
	// Unit of Stable and Gray.
	Unit Unit `json:"unit"`
	// Stable and Gray are the per-track values.
	Stable *float64 `json:"stable"`
	Gray   *float64 `json:"gray"`
	// Comparison and Threshold define the test; Value is the compared
	// quantity (a ratio, a difference or the gray value).
	Comparison Comparison `json:"comparison"`
	Value      *float64   `json:"value"`
	Threshold  float64    `json:"threshold"`
	// Floor is the effect-size floor of a ratio limit (see Criterion).
	Floor float64 `json:"floor,omitempty"`
	// Delta is gray - stable, when both have a value.
	Delta *float64 `json:"delta,omitempty"`
	// Verdict of this row.
	Verdict Verdict `json:"verdict"`
	// Note explains a NO DATA or adds context.
	Note string `json:"note,omitempty"`
	// Test is the statistical second opinion on this row, when one ran.
	Test *TestResult `json:"test,omitempty"`
}

// Alert is a poolparity alert that is pending or firing.
type Alert struct {
	Name     string            `json:"name"`
	State    string            `json:"state"` // "pending" or "firing"
	Severity string            `json:"severity"`
	Summary  string            `json:"summary"`
	ActiveAt time.Time         `json:"active_at"`
	Value    string            `json:"value"`
	Labels   map[string]string `json:"labels"`
}

// Point is one sample of a time series.
type Point struct {
	T time.Time `json:"t"`
	V float64   `json:"v"`
}

// Series is one line of a chart.
type Series struct {
	Name   string  `json:"name"` // "stable" or "gray"
	Points []Point `json:"points"`
}

// Chart is a time-series chart of one SLI per track.
type Chart struct {
	Title  string   `json:"title"`
	Unit   Unit     `json:"unit"`
	Series []Series `json:"series"`
}

// KV is one line of context printed above the table (scenario, load, ...).
type KV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// PoolRatio is the hit ratio of one sync.Pool on one track.
type PoolRatio struct {
	Track    string  `json:"track"`
	Pool     string  `json:"pool"`
	HitRatio float64 `json:"hit_ratio"`
	GetsRate float64 `json:"gets_per_second"`
}

// Report is the outcome of one check.
type Report struct {
	Title   string      `json:"title"`
	At      time.Time   `json:"at"`
	Window  string      `json:"window"`
	Context []KV        `json:"context,omitempty"`
	Rows    []Row       `json:"rows"`
	Pools   []PoolRatio `json:"pools,omitempty"`
	Alerts  []Alert     `json:"alerts"`
	Notes   []string    `json:"notes,omitempty"`
	Verdict Verdict     `json:"verdict"`
	Reasons []string    `json:"reasons"`
	// Statistical is the verdict of the statistical second opinion, when
	// it ran, with its reasons; Disagreements lists the rows where it and
	// the thresholds differ.
	Statistical Verdict  `json:"statistical,omitempty"`
	StatReasons []string `json:"stat_reasons,omitempty"`
	// Confirmed is the verdict when a threshold FAIL also needs the test's
	// FAIL on the same SLI (see Confirm).
	Confirmed Verdict `json:"confirmed,omitempty"`
	// Gate is the verdict Verdict is (GateConfirmed: Confirmed); empty
	// is GateThresholds.
	Gate          Gate     `json:"gate,omitempty"`
	Disagreements []string `json:"disagreements,omitempty"`
	Charts        []Chart  `json:"charts,omitempty"`
}

// Thresholds are the limits of the rows. The defaults equal the alert
// thresholds in the chart's values.yaml (rules.alerts.*); the rows that
// have no alert get a limit chosen to catch only a clear regression.
type Thresholds struct {
	// LatencyRatio bounds gray/stable p95 and p99 latency.
	LatencyRatio float64
	// ErrorDelta bounds gray-stable 5xx ratio, in ratio points.
	ErrorDelta float64
	// CPURatio bounds gray/stable CPU seconds per request.
	CPURatio float64
	// AllocRatio bounds gray/stable heap bytes allocated per request. Parity
	// asks only that gray be no worse; the alert PoolParityNoAllocationGain
	// (0.9) tells whether pooling pays.
	AllocRatio float64
	// GCCPUDelta bounds gray-stable GC share of CPU, in ratio points.
	GCCPUDelta float64
	// SyncPoolHitRatio is the lowest gets-weighted hit ratio of the gray
	// track's sync.Pools (checked only when the gray track is pooled).
	SyncPoolHitRatio float64
	// RedisHitDelta is the lowest gray-stable go-redis pool hit ratio, in
	// ratio points (negative: how much worse gray may be).
	RedisHitDelta float64
	// LatencyFloor is the effect-size floor of the latency rows, in
	// seconds: a latency ratio over LatencyRatio fails only when gray -
	// stable is also above it (rules.alerts.latencyRegression.minDelta).
	LatencyFloor float64
	// MinRequestRate is the request rate (req/s) each track must exceed
	// for any row to count (rules.minRequestRate).
	MinRequestRate float64
}

// DefaultThresholds returns the limits described on Thresholds. A test
// fails when they drift from the chart's values.yaml.
func DefaultThresholds() Thresholds {
	return Thresholds{
		LatencyRatio:     1.10,
		ErrorDelta:       0.005,
		CPURatio:         1.15,
		AllocRatio:       1.10,
		GCCPUDelta:       0.05,
		SyncPoolHitRatio: 0.5,
		RedisHitDelta:    -0.10,
		LatencyFloor:     0.005,
		MinRequestRate:   1,
	}
}

// failingSeverities are the alert severities that fail a report when
// firing. "info" alerts (e.g. PoolParityNoAllocationGain) are shown but do
// not fail it.
var failingSeverities = []string{"critical", "warning", "page", "error"}

func sevOrNone(s string) string {
	if s == "" {
		return "no severity"
	}
	return s
}

// ratioText prints a ratio with two decimals, or four when two would
// print it equal to a limit it is not equal to (1.1004 against 1.10).
func ratioText(v, limit float64) string {
	s := fmt.Sprintf("%.2f", v)
	if v != limit && s == fmt.Sprintf("%.2f", limit) {
		s = fmt.Sprintf("%.4f", v)
	}
	return s
}

// describe states a failing row's comparison, e.g. "gray/stable 1.43 > 1.10".
func describe(r Row) string {
	if r.Value == nil {
		if r.Note != "" {
			return r.Note
		}
		return "has no data"
	}
	switch r.Comparison {
	case RatioAtMost:
		if r.Floor > 0 && r.Delta != nil {
			return fmt.Sprintf("gray/stable %s > %.2f and gray-stable %s > %s", ratioText(*r.Value, r.Threshold), r.Threshold, FormatDelta(r.Unit, *r.Delta), FormatValue(r.Unit, r.Floor))
		}
		return fmt.Sprintf("gray/stable %s > %.2f", ratioText(*r.Value, r.Threshold), r.Threshold)
	case RatioAtLeast:
		return fmt.Sprintf("gray/stable %s < %.2f", ratioText(*r.Value, r.Threshold), r.Threshold)
	case DeltaAtMost:
		return fmt.Sprintf("gray-stable %s > %s", FormatDelta(r.Unit, *r.Value), FormatDelta(r.Unit, r.Threshold))
	case DeltaAtLeast:
		return fmt.Sprintf("gray-stable %s < %s", FormatDelta(r.Unit, *r.Value), FormatDelta(r.Unit, r.Threshold))
	case GrayAtLeast:
		return fmt.Sprintf("gray %s < %s", FormatValue(r.Unit, *r.Value), FormatValue(r.Unit, r.Threshold))
	}
	return ""
}

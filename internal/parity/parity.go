// Package parity judges a gray (canary) track against its stable baseline
// from the poolparity recording rules, read through the Prometheus HTTP API.
//
// Evaluate is the one evaluator: for every SLI of a catalog
// (internal/catalog) it reads the stable value, the gray value, forms their
// ratio or difference against the SLI's threshold, applies the traffic
// guard and the no-data rules, runs the statistical test when asked, lists
// the poolparity alerts that are pending or firing and decides one verdict
// (Decide). Package render writes a Report as a text table, as JSON and
// as a self-contained HTML page with inline SVG charts.
//
// The packages split the roles: this one judges (judge.go, stat.go,
// evaluate.go); package promread reads Prometheus and decides nothing;
// package render writes reports. The local demo (app/cmd/poolparity-demo),
// poolparity-parity, the PoolCanary controller, the kind harness and
// verdict-eval all call Evaluate, so they can never disagree on what PASS
// means.
//
// # The sequential test
//
// StatSequential (statistical.mode Sequential) judges with an e-process
// per SLI over the paired per-step differences of the two tracks from the
// rollout's start (Options.StatSince), valid however often it is read
// (seq.go).
//
// Per SLI, step i gives the gray and stable values of the sample family
// (1m rules, one sample per StatStep, not overlapping) and
//
//	y_i = log(gray_i/stable_i)   for a ratio SLI (latency, CPU, heap per request)
//	y_i = gray_i - stable_i      for a point SLI (error ratio, GC share, Redis hit ratio)
//	y_i = gray_i - threshold     for a gray-only SLI (sync.Pool hit ratio)
//
// With s = +1 where higher is worse (-1 where lower is) and F the SLI's
// floor on the scale of y (log(1 + FloorAt(level)/level) for a ratio SLI,
// with level the baseline's mean over the samples; FloorAt(level) for the
// others), x_i = s*y_i - F. The null hypothesis is "gray is worse by at most
// the floor": E[x_i] <= 0. The model is x_i ~ N(mu, sigma^2) independent
// with sigma unknown, and the e-value after n samples is the Bayes factor
// of the normal mixture over the standardised effect delta = mu/sigma ~
// N(0, tau^2) against delta = 0, with the scale-invariant (right Haar)
// prior dsigma/sigma on sigma (Gönen et al. 2005; Lai 1976):
//
//	E_n = (1 + n tau^2)^(-1/2) * [ S / (S - (sum x)^2 tau^2 / (1 + n tau^2)) ]^(n/2),   S = sum x_i^2,
//
// equivalently (1+n tau^2)^(-1/2) [(1 + t^2/nu) / (1 + t^2/(nu (1 + n tau^2)))]^((nu+1)/2)
// with t the one-sample t statistic and nu = n-1. An SLI rejects (FAIL) at
// the first look n >= MinSamples with sum x > 0 and E_n >= k/alpha, where k
// is the number of SLIs tested together and alpha the per-rollout alpha
// (Bonferroni); a rejection is kept for the rest of the samples, and since
// the whole path is recomputed from StatSince at every call, the answer is
// the same whenever it is read.
//
// Why it is valid under continuous monitoring.
//
// E_n depends on the data only through the maximal invariant of the scale
// group, (x_1, ..., x_n)/|x_1|, whose distribution under delta = 0 does not
// depend on sigma; with the right Haar prior on sigma the Bayes factor is
// the likelihood ratio of that invariant (Wijsman's representation), so
// under mu = 0 (gray worse by exactly the floor) (E_n) is a nonnegative
// martingale with E_1 = 1 in the invariant's filtration, for every sigma
// (Pérez-Ortiz, Lardy, de Heide, Grünwald 2022). Ville's inequality gives
// P(E_n >= k/alpha for some n) <= alpha/k, however many looks; a union
// bound over the k SLIs gives alpha per rollout. Requiring sum x > 0 only
// removes rejections. For mu < 0 (gray better than the floor) the
// rejection needs a large positive t, which is less likely than under mu =
// 0 at every n (the noncentral t family has a monotone likelihood ratio);
// the tests check the false rejection rate over 240 looks by simulation.
// A ratio SLI's floor is set by the baseline's mean level so far, an
// estimate: exact validity holds for a known level, and the estimate's
// error is small next to the floor (a few percent of 5%).
// What the model assumes and the tests measure: independent steps. A
// lasting per-pod offset or a minute-to-minute correlation is a real
// difference between the tracks as sampled, and the floor is what keeps a
// small one from failing; docs/verdict-eval.md measures both.
//
// The confidence sequence of the same mixture, {mu: E_n(x - mu) <
// k/alpha}, is |t(mu)| < t*_n with t*_n^2 = nu (K-1)/(1-K/r), K =
// (k/alpha sqrt(r))^(2/n), r = 1 + n tau^2 (unbounded while K >= r). Its
// end toward the better side is Bound (a rejection's evidence: the effect is
// at least this bad), its end toward the worse side Worst.
//
// A PASS is evidence too: an SLI passes only once Worst is within its
// margin M, the largest of the SLI's threshold on the scale of y (log
// Threshold for a ratio SLI, 0 for a gray-only one) and its floor F, the
// worst effect its threshold row passes. By Ville's inequality applied to
// the same mixture at mu = M, a gray worse than M is passed at any look
// with probability at most alpha/k. Until one of the two happens the SLI
// is NO DATA: no regression shown and none ruled out, which holds a step
// rather than end it. Four samples of a gray allocating twice stable's
// bytes per request (the kind run's) do not reject at bar 200 and rule out
// nothing; a fifth rejects.
//
// Three more conditions guard a PASS (issue 37). Samples whose paired
// differences never vary have a confidence sequence of width 0: that is
// no PASS by itself. A proportion (catalog.SLI.CountRule, the error ratio)
// also needs each step's event counts (Pair.NStable, Pair.NGray): it passes
// only once the beta-binomial confidence sequences of the two tracks' rates
// (rate.go), at level 1/(2 k/alpha) each, put the worst difference within
// the margin, so that five error-free minutes of 60 requests pass nothing.
// And JudgeAt holds a test whose last usable pair is more than two steps
// older than the analysis (NO DATA naming the gap): a gray that stopped
// serving does not pass on its old samples.
//
// # Concurrency
//
// Evaluate holds no state and is safe for concurrent use if its Querier is
// (the client_golang API client is). A Report is a plain value.
package parity

import (
	"fmt"
	"strings"
	"time"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/diffcheck"
	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/parity/promread"
	"github.com/poolparity/poolparity/internal/profdiff"
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

// Comparison says how a row's compared value is formed and tested
// (catalog.Comparison).
type Comparison = catalog.Comparison

// The comparisons (see catalog).
const (
	RatioAtMost  = catalog.RatioAtMost
	RatioAtLeast = catalog.RatioAtLeast
	DeltaAtMost  = catalog.DeltaAtMost
	DeltaAtLeast = catalog.DeltaAtLeast
	GrayAtLeast  = catalog.GrayAtLeast
)

// Unit says how a value is printed (catalog.Unit).
type Unit = catalog.Unit

// The units (see catalog).
const (
	Seconds = catalog.Seconds
	Bytes   = catalog.Bytes
	Ratio   = catalog.Ratio
	PerSec  = catalog.PerSec
)

// GateRows returns the rows as the report's gate decides them (its mode's):
// confirmed by the statistical test (Confirm), by the anytime-valid test
// (SequentialRows), or the threshold rows themselves.
func (r Report) GateRows() []Row {
	if r.Gate == "" {
		return r.Rows
	}
	t, err := Modes().LookupGate(string(r.Gate))
	if err != nil {
		return r.Rows
	}
	return t.gateRows(r.Rows)
}

// Row is one SLI of a report. Stable, Gray and Value are nil when
// Prometheus had no sample for them.
type Row struct {
	// ID identifies the SLI (catalog.ID).
	ID catalog.ID `json:"id,omitempty"`
	// SLI is the SLI's display name, e.g. "latency p99".
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
type Alert = promread.Alert

// Point is one sample of a time series.
type Point = promread.Point

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
type PoolRatio = promread.PoolRatio

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
	// Tracks are each compared track's pool_mode values and instance
	// count, and BlindSpots what the judge cannot see: a series a row or
	// an alert reads that a track does not export, a latency hidden in a
	// histogram's first bucket (Options.Inputs).
	Tracks     []TrackInfo `json:"tracks,omitempty"`
	BlindSpots []string    `json:"blind_spots,omitempty"`
	Verdict    Verdict     `json:"verdict"`
	Reasons    []string    `json:"reasons"`
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
	// Profiles are the tracks' profiles compared, per request, when the
	// caller captured them (the demo does on a FAIL): where gray spends
	// the CPU and the allocations that the rows measure.
	Profiles []profdiff.Diff `json:"profiles,omitempty"`
	// Differential is the differential check of the tracks' responses
	// (package diffcheck), when the caller ran one (`poolparity-parity
	// local` does): it counts in the verdict through AddDifferential.
	Differential *diffcheck.Report `json:"differential,omitempty"`
	// Races is the race phase, when the caller ran one (`poolparity-parity
	// local -gray-pkg` does): a race found fails the report through
	// AddRaces.
	Races *Races `json:"races,omitempty"`
}

// DiffLine states a differential check in one line: its outcome, the
// mismatches, the rate with its 95% Wilson interval, the maximum and the
// requests skipped.
func DiffLine(d diffcheck.Report) string {
	line, _, _ := strings.Cut(d.String(), "\n")
	return line
}

// AddDifferential puts the differential check d into the report and into
// its verdict: a FAIL fails the report (an ERROR stays ERROR) with a reason
// naming how the responses were taken (d.Method, when set), the mismatch
// rate and the top path, put before the others (which stay: what the rows
// said); INCONCLUSIVE and NO DATA add a note and leave the verdict as it
// is; a PASS adds nothing but the check itself.
func (r *Report) AddDifferential(d diffcheck.Report) {
	r.Differential = &d
	switch d.Outcome {
	case diffcheck.Fail:
		how := ""
		if d.Method != "" {
			how = " (" + d.Method + ")"
		}
		reason := fmt.Sprintf("responses differ%s: mismatch rate %.2f%% [%.2f%%, %.2f%%] of %d requests compared is over %.2f%%",
			how, 100*d.Rate, 100*d.Low, 100*d.High, d.Compared, 100*d.MaxMismatchRate)
		if len(d.Paths) > 0 {
			p := d.Paths[0]
			reason += fmt.Sprintf(", most at %s %s (%s, %d requests)", p.Endpoint, p.Pattern, p.Kind, p.Requests)
		}
		if r.Verdict != Error {
			r.Verdict = Fail
		}
		r.Reasons = append([]string{reason}, r.Reasons...)
	case diffcheck.Inconclusive:
		r.Notes = append(r.Notes, fmt.Sprintf("differential check inconclusive (%s): too few requests to tell; compare more", DiffLine(d)))
	case diffcheck.NoData:
		r.Notes = append(r.Notes, "differential check: no request could be compared (a stable answered none)")
	}
}

// AddLoadErrors puts the tracks' failed requests, as their loads saw them,
// into the report and its verdict: a 5xx or no response at all
// (loadgen.Stats.Errors: a transport error, a timeout, a connection a
// panicking handler closed, which the service's own metrics never count)
// and a malformed answer (Stats.Malformed: a JSON Content-Type whose body
// does not parse). When gray's share exceeds stable's beyond chance
// (diffcheck.CompareErrors: Fisher's exact test, one-sided, at 1%), the
// report FAILs (an ERROR stays ERROR) with a reason naming both tracks'
// counts, put before the others; otherwise a note gives the counts when
// either track had any. No requests on a track adds nothing.
func (r *Report) AddLoadErrors(stable, gray loadgen.Stats) {
	t, err := diffcheck.CompareErrors(stable.Errors+stable.Malformed, stable.Requests, gray.Errors+gray.Malformed, gray.Requests, 0)
	if err != nil || t.Outcome == diffcheck.NoData {
		return // a Stats never counts more failures than requests
	}
	counts := fmt.Sprintf("%s (5xx or no response: gray %d, stable %d; malformed JSON: gray %d, stable %d)",
		t, gray.Errors, stable.Errors, gray.Malformed, stable.Malformed)
	switch {
	case t.Outcome == diffcheck.Fail:
		if r.Verdict != Error {
			r.Verdict = Fail
		}
		r.Reasons = append([]string{"more failed requests on gray than on stable beyond chance: " + counts}, r.Reasons...)
	case t.GrayErrors > 0 || t.StableErrors > 0:
		r.Notes = append(r.Notes, "failed requests, not more on gray than on stable beyond chance: "+counts)
	}
}

// failingSeverities are the alert severities that fail a report when
// firing. "info" alerts (e.g. PoolParityNoAllocationGain) are shown but do
// not fail it.
var failingSeverities = []string{"critical", "warning", "page", "error"}

// AlertFails reports whether a fails a report: it is firing with a failing
// severity, or with none.
func AlertFails(a Alert) bool {
	return a.State == "firing" && (a.Severity == "" || contains(failingSeverities, a.Severity))
}

// SeverityText is an alert severity as the report prints it: "no severity"
// for none.
func SeverityText(s string) string {
	if s == "" {
		return "no severity"
	}
	return s
}

// RatioText prints a ratio with two decimals, or four when two would
// print it equal to a limit it is not equal to (1.1004 against 1.10).
func RatioText(v, limit float64) string {
	s := fmt.Sprintf("%.2f", v)
	if v != limit && s == fmt.Sprintf("%.2f", limit) {
		s = fmt.Sprintf("%.4f", v)
	}
	return s
}

// describeSequential states the sequential test's evidence of a regression.
func describeSequential(t *TestResult) string {
	s := fmt.Sprintf("anytime-valid evidence of a regression: e-value %.3g reached the bar %.3g after %d paired samples", t.EMax, t.Bar, t.NGray)
	if t.Bound != nil {
		s += fmt.Sprintf(", effect at least %.4g (estimate %.4g)", *t.Bound, t.Effect)
	}
	if !t.Rejected.IsZero() {
		s += ", rejected at " + t.Rejected.UTC().Format(time.RFC3339)
	}
	return s
}

// describe states a failing row's comparison, e.g. "gray/stable 1.43 > 1.10".
func describe(r Row) string {
	if t := r.Test; t != nil && t.sequential() && t.Verdict == Fail && r.Verdict == Fail {
		// The sequential judge's FAIL: its evidence, not the threshold row's values.
		return describeSequential(t)
	}
	if r.Value == nil {
		if r.Note != "" {
			return r.Note
		}
		return "has no data"
	}
	switch r.Comparison {
	case RatioAtMost:
		if r.Floor > 0 && r.Delta != nil {
			return fmt.Sprintf("gray/stable %s > %.2f and gray-stable %s > %s", RatioText(*r.Value, r.Threshold), r.Threshold, FormatDelta(r.Unit, *r.Delta), FormatValue(r.Unit, r.Floor))
		}
		return fmt.Sprintf("gray/stable %s > %.2f", RatioText(*r.Value, r.Threshold), r.Threshold)
	case RatioAtLeast:
		return fmt.Sprintf("gray/stable %s < %.2f", RatioText(*r.Value, r.Threshold), r.Threshold)
	case DeltaAtMost:
		return fmt.Sprintf("gray-stable %s > %s", FormatDelta(r.Unit, *r.Value), FormatDelta(r.Unit, r.Threshold))
	case DeltaAtLeast:
		return fmt.Sprintf("gray-stable %s < %s", FormatDelta(r.Unit, *r.Value), FormatDelta(r.Unit, r.Threshold))
	case GrayAtLeast:
		return fmt.Sprintf("gray %s < %s", FormatValue(r.Unit, *r.Value), FormatValue(r.Unit, r.Threshold))
	}
	return ""
}

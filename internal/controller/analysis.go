package controller

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// Analyzer judges the gray track against the stable track.
//
// Analyze must be safe for concurrent use (the manager may run several reconciles at once).
// It never returns an error: an unreachable Prometheus is a result (verdict Error), because
// the reconciler holds the step and reports it rather than retrying with backoff.
type Analyzer interface {
	Analyze(ctx context.Context, a *v1alpha1.Analysis, in Input) v1alpha1.AnalysisStatus
}

// Input is what one analysis reads besides the spec: when it runs, and the rollout's evidence
// (from the status) for the statistical test.
type Input struct {
	// Now is the analysis time.
	Now time.Time
	// Since is when the rollout's evidence starts (status.rolloutStartedAt): the Sequential
	// mode's samples reach back to it. Zero means the statistical window.
	Since time.Time
	// Exclude are the spans whose samples are not judged (status.warmup.excluded).
	Exclude []v1alpha1.TimeRange
	// Namespace is the canary's: every query is pinned to it (TenantLabel). Empty pins
	// nothing (a caller outside a cluster).
	Namespace string
}

// PrometheusAnalyzer judges through the Prometheus HTTP API (client_golang's
// api/prometheus/v1 client) with parity.Evaluate, the one evaluator the demo's report,
// poolparity-parity and the kind harness call too: the same catalog, traffic guard,
// comparisons, floors, statistical test and verdict precedence. This file only maps the
// CRD's types to the evaluator's options and its report back to the status.
type PrometheusAnalyzer struct {
	// Clients are the Prometheus endpoints the cluster admin allows and their one client
	// each (bounded in time and size); an analysis naming another endpoint is refused
	// without a request. nil refuses every analysis.
	Clients *promread.Clients
}

// Analyze runs one analysis against a.PrometheusURL, or the default endpoint when it names
// none, with every query pinned to in.Namespace (see AnalyzeWith). A refused analysis
// (refuseAnalysis) is an Error whose message names the field, and sends no request.
func (p *PrometheusAnalyzer) Analyze(ctx context.Context, a *v1alpha1.Analysis, in Input) v1alpha1.AnalysisStatus {
	q, refused := querier(p.Clients, a, in.Namespace)
	if refused != nil {
		return errorStatus(in.Now, "refused: "+refused.Error())
	}
	return AnalyzeWith(ctx, q, a, in)
}

// AnalyzeWith runs one analysis through q: the analysis' SLIs (every SLI of the catalog when
// it names none) are judged by parity.Evaluate with the analysis' traffic guard, threshold
// overrides, rules and statistical settings. The verdict is the evaluator's: Error if a query
// failed, else NoData if a track is too quiet, else Fail if any SLI breached, else NoData if
// an SLI lacked data, else Pass; in Gate mode a statistical Fail fails a passing analysis and
// a statistical NoData or Error holds it; in Confirm mode an SLI breaches only when the test
// confirms it. The rollout's evidence comes from in: in Sequential mode the samples reach
// back to in.Since, and in every mode the spans of in.Exclude (warm-up) are left out of the
// statistical samples; with analysis.baseline Fresh the gray track is judged against the
// fresh baseline (gray_status="baseline") instead of the stable track.
func AnalyzeWith(ctx context.Context, q parity.Querier, a *v1alpha1.Analysis, in Input) v1alpha1.AnalysisStatus {
	now := in.Now
	ctx, cancel := context.WithTimeout(ctx, analysisTimeout(a))
	defer cancel()
	cat, opts, bad := evaluation(a, in)
	if len(bad) > 0 {
		out := errorStatus(now, "invalid analysis: "+strings.Join(bad, "; "))
		for _, sli := range a.SLIs {
			out.SLIs = append(out.SLIs, v1alpha1.SLIResult{Name: string(sli.Name), Verdict: v1alpha1.VerdictError, Note: out.Message, Time: metav1.NewTime(now)})
		}
		return out
	}
	report, err := parity.Evaluate(ctx, q, cat, opts)
	if err != nil {
		return errorStatus(now, "query failed: "+err.Error())
	}
	out := v1alpha1.AnalysisStatus{Time: metav1.NewTime(now), Verdict: crdVerdict(report.Verdict), Message: truncate(strings.Join(report.Reasons, "; "))}
	for _, row := range report.GateRows() {
		r := v1alpha1.SLIResult{Name: string(row.ID), Threshold: thresholdText(row), Time: metav1.NewTime(now)}
		fillResult(&r, row)
		out.SLIs = append(out.SLIs, r)
	}
	if opts.Stat != parity.StatOff {
		msg := strings.Join(report.StatReasons, "; ")
		if len(report.Disagreements) > 0 {
			msg += "; disagreements: " + strings.Join(report.Disagreements, "; ")
		}
		out.Statistical = &v1alpha1.StatisticalStatus{Mode: v1alpha1.StatisticalMode(opts.Stat), Verdict: crdVerdict(report.Statistical), Message: truncate(msg)}
	}
	notes := report.Notes
	if opts.Stat == parity.StatOff {
		// Report mode's evaluation notes it already.
		notes = append([]string{parity.ThresholdsNote}, notes...)
	}
	if len(notes) > 0 {
		out.Message = truncate(out.Message + "; " + strings.Join(notes, "; "))
	}
	out.MeasuredShare = percentText(readRequestShare(ctx, q, opts.Guard.RateExpr, now))
	return out
}

// readRequestShare reads expr, the traffic guard's request-rate query (one series per
// gray_status), and returns the gray track's share of the requests (see RequestShare). ok is
// false when the query fails: the share is then unknown, and the verdict does not depend on it.
func readRequestShare(ctx context.Context, q parity.Querier, expr string, at time.Time) (share float64, ok bool) {
	vec, err := promread.Vector(ctx, q, expr, at)
	if err != nil {
		return 0, false
	}
	rates := map[string][]float64{}
	for _, s := range vec {
		gs := string(s.Metric["gray_status"])
		rates[gs] = append(rates[gs], float64(s.Value))
	}
	return RequestShare(rates)
}

// Bounds of analysis.timeout when the API server's validation was bypassed.
const (
	defaultAnalysisTimeout = 10 * time.Second
	maxAnalysisTimeout     = 60 * time.Second
)

// analysisTimeout is a's timeout within (0, maxAnalysisTimeout]: the schema refuses others,
// and an analysis is bounded even if it was bypassed.
func analysisTimeout(a *v1alpha1.Analysis) time.Duration {
	d := a.Timeout.Duration
	switch {
	case d <= 0:
		return defaultAnalysisTimeout
	case d > maxAnalysisTimeout:
		return maxAnalysisTimeout
	}
	return d
}

func errorStatus(now time.Time, msg string) v1alpha1.AnalysisStatus {
	return v1alpha1.AnalysisStatus{Time: metav1.NewTime(now), Verdict: v1alpha1.VerdictError, Message: truncate(msg)}
}

// evaluation maps the analysis to a catalog and the evaluator's options, or lists what is
// invalid in it (only possible when the API server's validation is bypassed).
func evaluation(a *v1alpha1.Analysis, in Input) (catalog.Catalog, parity.Options, []string) {
	now := in.Now
	cat := catalog.Default()
	var bad []string
	if len(a.SLIs) > 0 {
		ids := make([]catalog.ID, len(a.SLIs))
		for i, sli := range a.SLIs {
			ids[i] = catalog.ID(sli.Name)
		}
		sel, err := cat.Select(ids...)
		if err != nil {
			return cat, parity.Options{}, []string{err.Error()}
		}
		cat = sel
	}
	selector, err := parity.Matchers(a.MatchLabels)
	if err != nil {
		return cat, parity.Options{}, []string{"matchLabels: " + err.Error()}
	}
	opts := parity.Options{At: now, Selector: selector, Overrides: map[catalog.ID]parity.Override{}}
	for i := range a.SLIs {
		sli := &a.SLIs[i]
		id := catalog.ID(sli.Name)
		if err := applyThreshold(&cat, id, sli); err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", sli.Name, err))
		}
		if sli.Rule != "" || sli.SampleRule != "" || len(sli.MatchLabels) > 0 {
			opts.Overrides[id] = parity.Override{Rule: sli.Rule, SampleRule: sli.SampleRule, MatchLabels: sli.MatchLabels}
		}
	}
	g := guard(a, cat)
	opts.Guard = &g
	bad = append(bad, statOptions(&opts, a.Statistical, in)...)
	if a.Baseline == v1alpha1.BaselineFresh {
		opts.BaselineTrack = grayStatus(v1alpha1.TrackBaseline)
	}
	return cat, opts, bad
}

// statOptions sets the evaluator's statistical options from analysis.statistical and the
// rollout's evidence (in), or lists what is invalid in them.
func statOptions(opts *parity.Options, st v1alpha1.StatisticalTest, in Input) (bad []string) {
	mode := parity.StatMode(st.Mode.OrDefault())
	t, err := parity.Modes().Lookup(string(mode))
	if err != nil {
		bad = append(bad, "statistical.mode: "+err.Error())
	}
	opts.Stat = mode
	if opts.Test, opts.Sequential, err = statTest(st); err != nil {
		bad = append(bad, err.Error())
	}
	opts.StatWindow, opts.StatStep = st.Window.Duration, st.Step.Duration
	if t != nil && t.AnytimeValid() {
		opts.StatSince = in.Since
	}
	for _, r := range in.Exclude {
		opts.Exclude = append(opts.Exclude, parity.Interval{From: r.From.Time, To: r.To.Time})
	}
	return bad
}

// applyThreshold sets the SLI's threshold and floor from the analysis, when it gives them. A
// threshold of another kind than the catalog's limit for the SLI is an error: the SLI is
// never judged against a limit nobody meant.
func applyThreshold(cat *catalog.Catalog, id catalog.ID, sli *v1alpha1.SLI) error {
	s, _ := cat.Get(id)
	fields := []struct {
		name string
		v    *string
		cmp  catalog.Comparison
	}{
		{"maxRatio", sli.MaxRatio, catalog.RatioAtMost},
		{"maxDelta", sli.MaxDelta, catalog.DeltaAtMost},
		{"minDelta", sli.MinDelta, catalog.DeltaAtLeast},
		{"minGray", sli.MinGray, catalog.GrayAtLeast},
	}
	var want string
	for _, f := range fields {
		if f.cmp == s.Comparison {
			want = f.name
		}
	}
	for _, f := range fields {
		if f.v == nil {
			continue
		}
		if f.cmp != s.Comparison {
			return fmt.Errorf("%s does not apply: %s is judged by %s (%s)", f.name, id, want, s.Comparison)
		}
		t, err := parseDecimal(*f.v)
		if err != nil {
			return fmt.Errorf("threshold: %w", err)
		}
		if *cat, err = cat.WithThreshold(id, t); err != nil {
			return err
		}
	}
	if sli.Floor != nil {
		f, err := parseDecimal(*sli.Floor)
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		if *cat, err = cat.WithFloor(id, f); err != nil {
			return err
		}
	}
	return nil
}

// guard is the analysis' traffic guard: each track must serve more than minRequests in
// requestWindow, i.e. a rate above minRequests/requestWindow.
func guard(a *v1alpha1.Analysis, cat catalog.Catalog) parity.Guard {
	rule := a.RequestRateRule
	if rule == "" {
		rule = cat.Guard.RequestRule + cat.Window
	}
	window := a.RequestWindow.Duration
	if window <= 0 {
		window = cat.Guard.RequestWindow
	}
	return parity.Guard{
		RateExpr:       selectorQuery(rule, a.MatchLabels),
		MinRequestRate: float64(a.MinRequests) / window.Seconds(),
		Window:         window,
	}
}

func parseDecimal(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a decimal number", s)
	}
	return f, nil
}

// statTest maps the CRD's statistical settings to the judge's; unset fields take the
// catalog's defaults in the evaluator.
func statTest(st v1alpha1.StatisticalTest) (parity.StatTest, parity.SequentialTest, error) {
	var t parity.StatTest
	var seq parity.SequentialTest
	var err error
	if st.Confidence != "" {
		if t.Confidence, err = parseDecimal(st.Confidence); err != nil || t.Confidence <= 0 || t.Confidence >= 1 {
			return t, seq, fmt.Errorf("statistical.confidence %q: want a number between 0 and 1", st.Confidence)
		}
	}
	if st.MinEffect != "" {
		if t.MinEffect, err = parseDecimal(st.MinEffect); err != nil || t.MinEffect <= 0 || t.MinEffect > 1 {
			return t, seq, fmt.Errorf("statistical.minEffect %q: want a number in (0, 1]", st.MinEffect)
		}
	}
	t.MinSamples = int(st.MinSamples)
	if st.Alpha != "" {
		if seq.Alpha, err = parseDecimal(st.Alpha); err != nil || seq.Alpha <= 0 || seq.Alpha >= 1 {
			return t, seq, fmt.Errorf("statistical.alpha %q: want a number between 0 and 1", st.Alpha)
		}
	}
	return t, seq, nil
}

// fillResult copies a judged row into the SLI's status, values as decimal strings.
func fillResult(r *v1alpha1.SLIResult, row parity.Row) {
	if row.Stable != nil {
		r.Stable = formatFloat(*row.Stable)
	}
	if row.Gray != nil {
		r.Gray = formatFloat(*row.Gray)
	}
	if row.Stable != nil && row.Gray != nil {
		r.Ratio = formatFloat(parity.GrayOverStable(*row.Gray, *row.Stable))
		r.Delta = formatFloat(*row.Gray - *row.Stable)
	}
	r.Verdict = crdVerdict(row.Verdict)
	r.Note = row.Note
	if t := row.Test; t != nil {
		r.Test = &v1alpha1.SLITestResult{Verdict: crdVerdict(t.Verdict), StableSamples: int32(t.NStable), GraySamples: int32(t.NGray), Note: t.Note}
		switch {
		case t.Bar > 0: // the sequential test's figures
			r.Test.EValue, r.Test.Bar, r.Test.Estimate = formatFloat(t.EMax), formatFloat(t.Bar), formatFloat(t.Effect)
			r.Test.Gaps = int32(min(t.Gaps, math.MaxInt32))
			if t.Worst != nil {
				r.Test.Worst, r.Test.Margin = formatFloat(*t.Worst), formatFloat(t.Margin)
			}
			if !t.Rejected.IsZero() {
				r.Test.RejectedAt = ptrTime(t.Rejected)
			}
		case t.Verdict == parity.Pass || t.Verdict == parity.Fail:
			r.Test.P, r.Test.Effect = formatFloat(t.P), formatFloat(t.A)
		}
	}
}

// truncate keeps a status message within a condition's 32 kB.
func truncate(s string) string {
	if len(s) > 8192 {
		return s[:8189] + "..."
	}
	return s
}

// thresholdText is the limit a row was judged against, in the CRD's words, e.g.
// "maxRatio 1.1, floor 0.005".
func thresholdText(row parity.Row) string {
	name := map[catalog.Comparison]string{
		catalog.RatioAtMost: "maxRatio", catalog.RatioAtLeast: "minRatio", catalog.DeltaAtMost: "maxDelta",
		catalog.DeltaAtLeast: "minDelta", catalog.GrayAtLeast: "minGray",
	}[row.Comparison]
	s := name + " " + formatFloat(row.Threshold)
	if row.Floor > 0 {
		s += ", floor " + formatFloat(row.Floor)
	}
	return s
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

// selectorQuery renders rule{k="v",...}.
func selectorQuery(rule string, labels map[string]string) string {
	if len(labels) == 0 {
		return rule
	}
	m, _ := parity.Matchers(labels) // refused by evaluation (and refuseAnalysis) when invalid
	return rule + "{" + m + "}"
}

// anytimeValid reports whether m's evidence accumulates from the rollout's start and holds
// however often it is read (the registry's Test.AnytimeValid; an empty mode is the default's,
// an unknown or retired one is not): the controller then reads it at every analysis interval
// of a step, not only at its end.
func anytimeValid(m v1alpha1.StatisticalMode) bool {
	return parity.Modes().AnytimeValid(parity.StatMode(m.OrDefault()))
}

package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/parity"
)

// Analyzer judges the gray track against the stable track.
//
// Analyze must be safe for concurrent use (the manager may run several reconciles at once).
// It never returns an error: an unreachable Prometheus is a result (verdict Error), because
// the reconciler holds the step and reports it rather than retrying with backoff.
type Analyzer interface {
	Analyze(ctx context.Context, a *v1alpha1.Analysis, now time.Time) v1alpha1.AnalysisStatus
}

// PrometheusAnalyzer queries the poolparity recording rules through the Prometheus HTTP API
// (client_golang's api/prometheus/v1 client). Each SLI's rule must be a per-track rule
// labelled gray_status (docs/contracts.md, "Recording rules": the job_gray_status:* family).
//
// It judges with internal/parity, the one judge the demo's report and `make parity` use
// too: the same traffic guard, comparisons, floor, statistical test and verdict precedence.
// This file only maps the CRD's types to the judge's and back.
type PrometheusAnalyzer struct {
	// RoundTripper is the HTTP transport; nil means http.DefaultTransport.
	RoundTripper http.RoundTripper
}

// Analyze runs one analysis: the traffic guard, then every SLI, each as an instant query at
// now, and (unless statistical.mode is Off) each SLI's samples over the statistical window,
// tested at the confidence level corrected for the number of SLIs. The verdict is
// parity.Decide's: Error if a query failed, else NoData if a track is too quiet, else Fail
// if any SLI breached, else NoData if an SLI lacked data, else Pass. In Gate mode a
// statistical Fail fails a passing analysis, and a statistical NoData or Error holds it; in
// Confirm mode an SLI breaches only when the test confirms it.
func (p *PrometheusAnalyzer) Analyze(ctx context.Context, a *v1alpha1.Analysis, now time.Time) v1alpha1.AnalysisStatus {
	out := v1alpha1.AnalysisStatus{Time: metav1.NewTime(now)}
	if a.Timeout.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.Timeout.Duration)
		defer cancel()
	}
	rt := p.RoundTripper
	if rt == nil {
		rt = http.DefaultTransport
	}
	client, err := promapi.NewClient(promapi.Config{Address: a.PrometheusURL, RoundTripper: rt})
	if err != nil {
		out.Verdict = v1alpha1.VerdictError
		out.Message = fmt.Sprintf("prometheus client for %q: %v", a.PrometheusURL, err)
		return out
	}
	api := promv1.NewAPI(client)

	quiet, err := guard(a).Check(ctx, api, now)
	if err != nil {
		out.Verdict = v1alpha1.VerdictError
		out.Message = "query failed: " + err.Error()
		return out
	}
	st := a.Statistical
	mode := st.Mode
	if mode == "" {
		mode = v1alpha1.StatisticalConfirm
	}
	test, statErr := statTest(st)
	test = test.ForTests(len(a.SLIs))

	var rows []parity.Row
	var errs, statErrs []string
	for i := range a.SLIs {
		sli := &a.SLIs[i]
		r := v1alpha1.SLIResult{Name: sli.Name, Threshold: thresholdString(sli), Time: metav1.NewTime(now)}
		crit, err := criterion(sli)
		if err != nil {
			r.Verdict, r.Note = v1alpha1.VerdictError, err.Error()
			errs = append(errs, fmt.Sprintf("%s: %v", sli.Name, err))
			out.SLIs = append(out.SLIs, r)
			continue
		}
		expr := selectorQuery(sli.Rule, mergeLabels(a.MatchLabels, sli.MatchLabels))
		tv, err := parity.ReadTracks(ctx, api, expr, now)
		if err != nil {
			r.Verdict = v1alpha1.VerdictError
			errs = append(errs, fmt.Sprintf("%s: %v", sli.Name, err))
			out.SLIs = append(out.SLIs, r)
			continue
		}
		row := crit.Evaluate(tv.Stable, tv.Gray)
		if row.Verdict == parity.NoData && len(tv.Why) > 0 {
			row.Note = strings.Join(tv.Why, "; ")
		}
		if quiet != "" {
			// Values may exist, but a track is too quiet for them to mean anything:
			// neither a pass nor a breach counts.
			row.Verdict = parity.NoData
		}
		if mode != v1alpha1.StatisticalOff && quiet == "" {
			switch {
			case statErr != nil:
				row.Test = &parity.TestResult{Verdict: parity.Error, Note: statErr.Error()}
			default:
				sampled := sampleRule(sli)
				sexpr := selectorQuery(sampled, mergeLabels(a.MatchLabels, sli.MatchLabels))
				ts, err := parity.ReadTrackSamples(ctx, api, sexpr, now.Add(-statWindow(st)), now, statStep(st))
				if err != nil {
					row.Test = &parity.TestResult{Verdict: parity.Error, Note: err.Error()}
					statErrs = append(statErrs, fmt.Sprintf("%s: %v", sli.Name, err))
				} else {
					tr := test.Judge(crit, ts.Stable, ts.Gray)
					if tr.Verdict == parity.NoData && len(ts.Why) > 0 {
						tr.Note = strings.Join(ts.Why, "; ")
					}
					if hint := overlapHint(sampled, statStep(st)); hint != "" {
						tr.Note = strings.TrimPrefix(tr.Note+"; "+hint, "; ")
					}
					row.Test = &tr
				}
			}
		}
		rows = append(rows, row)
		fillResult(&r, row)
		out.SLIs = append(out.SLIs, r)
	}
	judged := rows
	if mode == v1alpha1.StatisticalConfirm {
		judged = parity.Confirm(rows)
		for i := range judged {
			fillResult(&out.SLIs[indexOf(out.SLIs, judged[i].SLI)], judged[i])
		}
	}
	verdict, reasons := parity.Decide(parity.Decision{Rows: judged, Quiet: quiet, Errors: errs})
	if len(errs) > 0 {
		// Decide lists the failed queries after "query failed".
		reasons = []string{"query failed: " + strings.Join(errs, "; ")}
	}
	if mode != v1alpha1.StatisticalOff && len(errs) == 0 {
		sv, sr := parity.StatVerdict(rows, quiet)
		if len(statErrs) > 0 {
			sv, sr = parity.Error, append([]string{"query failed"}, statErrs...)
		}
		msg := strings.Join(sr, "; ")
		if d := parity.Disagreements(rows); len(d) > 0 {
			msg += "; disagreements: " + strings.Join(d, "; ")
		}
		out.Statistical = &v1alpha1.StatisticalStatus{Mode: mode, Verdict: crdVerdict(sv), Message: truncate(msg)}
		if mode == v1alpha1.StatisticalGate && verdict == parity.Pass && sv != parity.Pass {
			verdict = sv
			reasons = append([]string{"statistical test: " + msg}, reasons...)
		}
	}
	out.Verdict = crdVerdict(verdict)
	out.Message = truncate(strings.Join(reasons, "; "))
	return out
}

func indexOf(rs []v1alpha1.SLIResult, name string) int {
	for i := range rs {
		if rs[i].Name == name {
			return i
		}
	}
	return -1
}

// guard is the analysis' traffic guard: each track must serve more than minRequests in
// requestWindow, i.e. a rate above minRequests/requestWindow.
func guard(a *v1alpha1.Analysis) parity.Guard {
	rule := a.RequestRateRule
	if rule == "" {
		rule = "job_gray_status:http_requests:rate5m"
	}
	window := a.RequestWindow.Duration
	if window <= 0 {
		window = 5 * time.Minute
	}
	return parity.Guard{
		RateExpr:       selectorQuery(rule, a.MatchLabels),
		MinRequestRate: float64(a.MinRequests) / window.Seconds(),
		Window:         window,
	}
}

// criterion maps an SLI's threshold to the judge's criterion. A threshold that does not
// parse (only possible when validation is bypassed) is an error: the SLI is never judged
// against a limit nobody set.
func criterion(sli *v1alpha1.SLI) (parity.Criterion, error) {
	c := parity.Criterion{SLI: sli.Name}
	var raw string
	switch {
	case sli.MaxRatio != nil:
		c.Comparison, raw = parity.RatioAtMost, *sli.MaxRatio
	case sli.MinRatio != nil:
		c.Comparison, raw = parity.RatioAtLeast, *sli.MinRatio
	case sli.MaxDelta != nil:
		c.Comparison, raw = parity.DeltaAtMost, *sli.MaxDelta
	default:
		return c, errors.New("no threshold: set one of maxRatio, minRatio, maxDelta")
	}
	var err error
	if c.Threshold, err = parseDecimal(raw); err != nil {
		return c, fmt.Errorf("threshold: %w", err)
	}
	if sli.Floor != nil {
		if c.Floor, err = parseDecimal(*sli.Floor); err != nil {
			return c, fmt.Errorf("floor: %w", err)
		}
	}
	return c, nil
}

func parseDecimal(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a decimal number", s)
	}
	return f, nil
}

// statTest maps the CRD's statistical settings to the judge's.
func statTest(st v1alpha1.StatisticalTest) (parity.StatTest, error) {
	t := parity.DefaultStatTest()
	var err error
	if st.Confidence != "" {
		if t.Confidence, err = parseDecimal(st.Confidence); err != nil || t.Confidence <= 0 || t.Confidence >= 1 {
			return t, fmt.Errorf("statistical.confidence %q: want a number between 0 and 1", st.Confidence)
		}
	}
	if st.MinEffect != "" {
		if t.MinEffect, err = parseDecimal(st.MinEffect); err != nil || t.MinEffect <= 0 || t.MinEffect > 1 {
			return t, fmt.Errorf("statistical.minEffect %q: want a number in (0, 1]", st.MinEffect)
		}
	}
	if st.MinSamples > 0 {
		t.MinSamples = int(st.MinSamples)
	}
	return t, nil
}

func statWindow(st v1alpha1.StatisticalTest) time.Duration {
	if st.Window.Duration > 0 {
		return st.Window.Duration
	}
	return 10 * time.Minute
}

func statStep(st v1alpha1.StatisticalTest) time.Duration {
	if st.Step.Duration > 0 {
		return st.Step.Duration
	}
	return time.Minute
}

// sampleRule is the rule the statistical test samples for sli.
func sampleRule(sli *v1alpha1.SLI) string {
	if sli.SampleRule != "" {
		return sli.SampleRule
	}
	return sli.Rule
}

// ruleRange returns the range a recording rule's name ends in, by the
// level:metric:operations convention (rate5m, avg_over_time1m,
// increase30s, ratio_rate1h: the last operation ends in a Prometheus
// duration), and false for a name without one.
func ruleRange(rule string) (time.Duration, bool) {
	ops := rule[strings.LastIndexByte(rule, ':')+1:]
	i := len(ops)
	for i > 0 && strings.IndexByte("smhdwy", ops[i-1]) >= 0 {
		i--
	}
	unit := len(ops) - i
	j := i
	for j > 0 && ops[j-1] >= '0' && ops[j-1] <= '9' {
		j--
	}
	if unit != 1 || j == i {
		return 0, false
	}
	d, err := model.ParseDuration(ops[j:])
	if err != nil || d <= 0 {
		return 0, false
	}
	return time.Duration(d), true
}

// overlapHint explains, for a sampled rule whose range is longer than the
// step, that its samples overlap; "" otherwise.
func overlapHint(rule string, step time.Duration) string {
	r, ok := ruleRange(rule)
	if !ok || r <= step {
		return ""
	}
	return fmt.Sprintf("samples of %s (range %s) taken every %s overlap and make the test overconfident: set sampleRule to a rule whose range is at most %s",
		rule, model.Duration(r), model.Duration(step), model.Duration(step))
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
		if t.Verdict == parity.Pass || t.Verdict == parity.Fail {
			r.Test.P, r.Test.Effect = formatFloat(t.P), formatFloat(t.A)
		}
	}
}

// crdVerdict maps the judge's verdict to the CRD's.
func crdVerdict(v parity.Verdict) v1alpha1.Verdict {
	switch v {
	case parity.Pass:
		return v1alpha1.VerdictPass
	case parity.Fail:
		return v1alpha1.VerdictFail
	case parity.NoData:
		return v1alpha1.VerdictNoData
	}
	return v1alpha1.VerdictError
}

// truncate keeps a status message within a condition's 32 kB.
func truncate(s string) string {
	if len(s) > 8192 {
		return s[:8189] + "..."
	}
	return s
}

func thresholdString(sli *v1alpha1.SLI) string {
	var s string
	switch {
	case sli.MaxRatio != nil:
		s = "maxRatio " + *sli.MaxRatio
	case sli.MinRatio != nil:
		s = "minRatio " + *sli.MinRatio
	case sli.MaxDelta != nil:
		s = "maxDelta " + *sli.MaxDelta
	}
	if sli.Floor != nil {
		s += ", floor " + *sli.Floor
	}
	return s
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

// selectorQuery renders rule{k="v",...} with the labels sorted, values escaped.
func selectorQuery(rule string, labels map[string]string) string {
	if len(labels) == 0 {
		return rule
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(rule)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(labels[k]))
	}
	b.WriteByte('}')
	return b.String()
}

func mergeLabels(base, extra map[string]string) map[string]string {
	if len(extra) == 0 {
		return base
	}
	out := make(map[string]string, len(base)+len(extra))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

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
// labelled gray_status (DESIGN.md section 3: the job_gray_status:* family); the ratio and the
// delta of gray over stable are computed here, so the status shows both tracks' values.
//
// The demo's app/internal/parity evaluates the same rules for people (tables, HTML); this
// analyzer stays small and returns the CRD's status type directly.
type PrometheusAnalyzer struct {
	// RoundTripper is the HTTP transport; nil means http.DefaultTransport.
	RoundTripper http.RoundTripper
}

// Analyze runs one analysis: the traffic guard, then every SLI, each as an instant query at
// now. The verdict is Error if a query failed, else NoData if a track served fewer than
// minRequests (then no SLI counts, pass or breach: a p99 over a handful of requests is
// noise), else Fail if any SLI breached, else NoData if an SLI lacked data, else Pass.
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

	// Traffic guard: each track needs minRequests in the request window.
	guard, err := p.trafficGuard(ctx, api, a, now)
	if err != nil {
		out.Verdict = v1alpha1.VerdictError
		out.Message = err.Error()
		return out
	}

	var fails, errs, nodata []string
	for i := range a.SLIs {
		sli := &a.SLIs[i]
		r := v1alpha1.SLIResult{Name: sli.Name, Threshold: thresholdString(sli), Time: metav1.NewTime(now)}
		vals, err := queryTracks(ctx, api, sli.Rule, mergeLabels(a.MatchLabels, sli.MatchLabels), now)
		switch {
		case err != nil:
			r.Verdict = v1alpha1.VerdictError
			errs = append(errs, fmt.Sprintf("%s: %v", sli.Name, err))
		default:
			r.Verdict, r.Stable, r.Gray, r.Ratio, r.Delta = judge(sli, vals)
			switch {
			case guard != "":
				// Values may exist, but a track is too quiet for them to mean anything:
				// neither a pass nor a breach counts.
				r.Verdict = v1alpha1.VerdictNoData
			case r.Verdict == v1alpha1.VerdictFail:
				fails = append(fails, fmt.Sprintf("%s (%s, %s)", sli.Name, compared(sli, r), r.Threshold))
			case r.Verdict == v1alpha1.VerdictNoData:
				nodata = append(nodata, fmt.Sprintf("%s: %s", sli.Name, vals.missing()))
			}
		}
		out.SLIs = append(out.SLIs, r)
	}
	switch {
	case len(errs) > 0:
		out.Verdict = v1alpha1.VerdictError
		out.Message = "query failed: " + strings.Join(errs, "; ")
	case guard != "":
		out.Verdict = v1alpha1.VerdictNoData
		out.Message = guard
	case len(fails) > 0:
		out.Verdict = v1alpha1.VerdictFail
		out.Message = "breached: " + strings.Join(fails, "; ")
	case len(nodata) > 0:
		out.Verdict = v1alpha1.VerdictNoData
		out.Message = "no data: " + strings.Join(nodata, "; ")
	default:
		out.Verdict = v1alpha1.VerdictPass
		out.Message = fmt.Sprintf("%d SLIs within their thresholds", len(a.SLIs))
	}
	return out
}

// trafficGuard returns "" when both tracks served at least minRequests in the request
// window, else a message saying which track is too quiet.
func (p *PrometheusAnalyzer) trafficGuard(ctx context.Context, api promv1.API, a *v1alpha1.Analysis, now time.Time) (string, error) {
	if a.MinRequests <= 0 {
		return "", nil
	}
	rule := a.RequestRateRule
	if rule == "" {
		rule = "job_gray_status:http_requests:rate5m"
	}
	window := a.RequestWindow.Duration
	if window <= 0 {
		window = 5 * time.Minute
	}
	q := selectorQuery(rule, a.MatchLabels)
	v, _, _, err := api.Query(ctx, q, now)
	if err != nil {
		return "", fmt.Errorf("querying %s: %w", q, describeQueryError(err))
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return "", fmt.Errorf("querying %s: got a %s, want a vector", q, v.Type())
	}
	sums := map[string]float64{}
	for _, s := range vec {
		if f := float64(s.Value); !math.IsNaN(f) {
			sums[string(s.Metric["gray_status"])] += f
		}
	}
	var quiet []string
	for _, tr := range []struct{ name, status string }{{v1alpha1.TrackStable, "false"}, {v1alpha1.TrackGray, "true"}} {
		n := sums[tr.status] * window.Seconds()
		if n < float64(a.MinRequests) {
			quiet = append(quiet, fmt.Sprintf("%s track served %.0f requests in %s (minRequests %d)", tr.name, n, window, a.MinRequests))
		}
	}
	if len(quiet) == 0 {
		return "", nil
	}
	return "too little traffic: " + strings.Join(quiet, "; "), nil
}

// trackValues holds one SLI's value per track and why a track has none.
type trackValues struct {
	stable, gray       float64
	hasStable, hasGray bool
	why                []string
}

func (v trackValues) missing() string {
	if len(v.why) > 0 {
		return strings.Join(v.why, "; ")
	}
	return "no series"
}

// queryTracks reads rule{labels} and returns one value per gray_status. A track with no
// series, a NaN value, or more than one series (ambiguous: narrow it with matchLabels) has
// no value.
func queryTracks(ctx context.Context, api promv1.API, rule string, labels map[string]string, now time.Time) (trackValues, error) {
	q := selectorQuery(rule, labels)
	v, _, _, err := api.Query(ctx, q, now)
	if err != nil {
		return trackValues{}, fmt.Errorf("querying %s: %w", q, describeQueryError(err))
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return trackValues{}, fmt.Errorf("querying %s: got a %s, want a vector", q, v.Type())
	}
	var out trackValues
	count := map[string]int{}
	for _, s := range vec {
		gs := string(s.Metric["gray_status"])
		count[gs]++
		f := float64(s.Value)
		switch gs {
		case "false":
			out.stable, out.hasStable = f, !math.IsNaN(f)
		case "true":
			out.gray, out.hasGray = f, !math.IsNaN(f)
		}
	}
	for _, tr := range []struct {
		name, status string
		has          *bool
	}{{v1alpha1.TrackStable, "false", &out.hasStable}, {v1alpha1.TrackGray, "true", &out.hasGray}} {
		switch n := count[tr.status]; {
		case n == 0:
			out.why = append(out.why, tr.name+" track has no series")
		case n > 1:
			*tr.has = false
			out.why = append(out.why, fmt.Sprintf("%s track has %d series (narrow with matchLabels)", tr.name, n))
		case !*tr.has:
			out.why = append(out.why, tr.name+" track is NaN")
		}
	}
	return out, nil
}

// judge compares the tracks against the SLI's threshold and formats the values.
func judge(sli *v1alpha1.SLI, v trackValues) (verdict v1alpha1.Verdict, stable, gray, ratio, delta string) {
	if v.hasStable {
		stable = formatFloat(v.stable)
	}
	if v.hasGray {
		gray = formatFloat(v.gray)
	}
	if !v.hasStable || !v.hasGray {
		return v1alpha1.VerdictNoData, stable, gray, "", ""
	}
	r := Ratio(v.gray, v.stable)
	d := v.gray - v.stable
	ratio, delta = formatFloat(r), formatFloat(d)
	breached := false
	switch {
	case sli.MaxRatio != nil:
		breached = r > parseThreshold(*sli.MaxRatio)
	case sli.MinRatio != nil:
		breached = r < parseThreshold(*sli.MinRatio)
	case sli.MaxDelta != nil:
		breached = d > parseThreshold(*sli.MaxDelta)
	}
	if breached {
		return v1alpha1.VerdictFail, stable, gray, ratio, delta
	}
	return v1alpha1.VerdictPass, stable, gray, ratio, delta
}

// Ratio is gray/stable, with 0/0 = 1 (both tracks equal) and x/0 = +Inf for x > 0.
func Ratio(gray, stable float64) float64 {
	switch {
	case stable == 0 && gray == 0:
		return 1
	case stable == 0:
		return math.Inf(1)
	}
	return gray / stable
}

// parseThreshold parses a threshold the CRD already validated as a decimal; an unparsable
// one (only possible when validation is bypassed) is NaN, and every comparison with NaN is
// false, so it never breaches and never blocks: the SLI passes, which the status shows.
func parseThreshold(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

func thresholdString(sli *v1alpha1.SLI) string {
	switch {
	case sli.MaxRatio != nil:
		return "maxRatio " + *sli.MaxRatio
	case sli.MinRatio != nil:
		return "minRatio " + *sli.MinRatio
	case sli.MaxDelta != nil:
		return "maxDelta " + *sli.MaxDelta
	}
	return ""
}

func compared(sli *v1alpha1.SLI, r v1alpha1.SLIResult) string {
	if sli.MaxDelta != nil {
		return "delta " + r.Delta
	}
	return "ratio " + r.Ratio
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

// describeQueryError keeps the Prometheus API's error type and detail in the message.
func describeQueryError(err error) error {
	var perr *promv1.Error
	if errors.As(err, &perr) && perr.Detail != "" {
		return fmt.Errorf("%w (%s)", err, perr.Detail)
	}
	return err
}

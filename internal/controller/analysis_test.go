package controller_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/controller"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// testAnalysis is the analysis the tests use: p99 latency by ratio, errors by delta.
func testAnalysis(url string) v1alpha1.Analysis {
	return v1alpha1.Analysis{
		PrometheusURL:   url,
		Interval:        metav1.Duration{Duration: time.Second},
		Timeout:         metav1.Duration{Duration: 5 * time.Second},
		MatchLabels:     map[string]string{"job": "poolparity"},
		RequestRateRule: "job_gray_status:http_requests:rate5m",
		RequestWindow:   metav1.Duration{Duration: 5 * time.Minute},
		MinRequests:     100,
		FailureLimit:    2,
		// The thresholds and the per-window test: the fake Prometheus has no counts rules for
		// the default mode (Counts), which TestPrometheusAnalyzer's default case checks.
		Statistical: v1alpha1.StatisticalTest{Mode: v1alpha1.StatisticalConfirm},
		SLIs: []v1alpha1.SLI{
			{Name: "latency-p99", Rule: "job_gray_status:http_request_duration_seconds:p99_rate5m", MaxRatio: ptr.To("1.10")},
			{Name: "error-ratio", Rule: "job_gray_status:http_request_errors:ratio_rate5m", MaxDelta: ptr.To("0.005")},
		},
	}
}

func TestPrometheusAnalyzer(t *testing.T) {
	tests := []struct {
		name        string
		mode        string
		down        bool
		analysis    func(a *v1alpha1.Analysis)
		wantVerdict v1alpha1.Verdict
		wantMessage string
		wantSLI     map[string]v1alpha1.Verdict
	}{
		{name: "equal tracks pass", mode: "good", wantVerdict: v1alpha1.VerdictPass,
			wantSLI: map[string]v1alpha1.Verdict{"latency-p99": v1alpha1.VerdictPass, "error-ratio": v1alpha1.VerdictPass}},
		{name: "a gray track twice as slow fails the p99 ratio", mode: "regression", wantVerdict: v1alpha1.VerdictFail,
			wantMessage: "latency p99 gray/stable 2.00 > 1.10",
			wantSLI:     map[string]v1alpha1.Verdict{"latency-p99": v1alpha1.VerdictFail, "error-ratio": v1alpha1.VerdictPass}},
		{name: "no series is inconclusive", mode: "nodata", wantVerdict: v1alpha1.VerdictNoData, wantMessage: "too little traffic"},
		{name: "no series is inconclusive without a traffic guard", mode: "nodata", wantVerdict: v1alpha1.VerdictNoData,
			analysis:    func(a *v1alpha1.Analysis) { a.MinRequests = 0 },
			wantMessage: "latency p99 has no data (stable track has no series; gray track has no series)"},
		{name: "a regression on too little traffic does not count", mode: "quiet", wantVerdict: v1alpha1.VerdictNoData,
			wantMessage: "stable track served 3 requests in 5m0s (minimum: more than 100)"},
		{name: "a track serving exactly minRequests is too quiet, as the rules' minRequestRate must be exceeded", mode: "good",
			analysis:    func(a *v1alpha1.Analysis) { a.MinRequests = 6000 }, // 20 req/s for 5m
			wantVerdict: v1alpha1.VerdictNoData, wantMessage: "served 6000 requests in 5m0s (minimum: more than 6000)"},
		{name: "a Prometheus answering an error is an error", mode: "error", wantVerdict: v1alpha1.VerdictError,
			wantMessage: "too many samples"},
		{name: "a Prometheus slower than the timeout is an error", mode: "slow", wantVerdict: v1alpha1.VerdictError,
			analysis:    func(a *v1alpha1.Analysis) { a.Timeout.Duration = 200 * time.Millisecond },
			wantMessage: "no answer in time"},
		{name: "several series on a track are no data, not the worst or a mix", mode: "dup", wantVerdict: v1alpha1.VerdictNoData,
			analysis:    func(a *v1alpha1.Analysis) { a.MinRequests = 0 },
			wantMessage: "gray track has 2 series"},
		{name: "an unparsable threshold is an error, never a pass", mode: "good", wantVerdict: v1alpha1.VerdictError,
			analysis:    func(a *v1alpha1.Analysis) { a.SLIs[0].MaxRatio = ptr.To("1.1.0") },
			wantMessage: `"1.1.0" is not a decimal number`,
			wantSLI:     map[string]v1alpha1.Verdict{"latency-p99": v1alpha1.VerdictError}},
		{name: "a ratio limit of 0 (an infinite margin) is an error, never a pass", mode: "regression", wantVerdict: v1alpha1.VerdictError,
			analysis:    func(a *v1alpha1.Analysis) { a.SLIs[0].MaxRatio = ptr.To("0") },
			wantMessage: "must be above 0",
			wantSLI:     map[string]v1alpha1.Verdict{"latency-p99": v1alpha1.VerdictError}},
		{name: "a ratio breach within the floor passes", mode: "regression", wantVerdict: v1alpha1.VerdictPass,
			analysis: func(a *v1alpha1.Analysis) {
				a.SLIs[0].Floor = ptr.To("0.06") // gray is 50ms slower
				a.Statistical.Mode = v1alpha1.StatisticalOff
			},
			wantMessage: "thresholds alone decide: they have no error control; at parity they failed " + parity.ThresholdsFalseFail,
			wantSLI:     map[string]v1alpha1.Verdict{"latency-p99": v1alpha1.VerdictPass}},
		{name: "a ratio breach beyond the floor fails", mode: "regression", wantVerdict: v1alpha1.VerdictFail,
			analysis: func(a *v1alpha1.Analysis) { a.SLIs[0].Floor = ptr.To("0.005") },
			wantSLI:  map[string]v1alpha1.Verdict{"latency-p99": v1alpha1.VerdictFail}},
		{name: "an unreachable Prometheus is an error", down: true, wantVerdict: v1alpha1.VerdictError, wantMessage: "connection refused"},
		{name: "a rule without series is no data", mode: "good", wantVerdict: v1alpha1.VerdictNoData,
			analysis: func(a *v1alpha1.Analysis) {
				a.SLIs = append(a.SLIs, v1alpha1.SLI{Name: "cpu-per-request", Rule: "job_gray_status:unknown:ratio_rate5m"})
			},
			wantMessage: "CPU per request has no data (stable track has no series; gray track has no series)",
			wantSLI:     map[string]v1alpha1.Verdict{"latency-p99": v1alpha1.VerdictPass, "cpu-per-request": v1alpha1.VerdictNoData}},
		{name: "minDelta fails a gray value below it", mode: "good", wantVerdict: v1alpha1.VerdictFail,
			analysis: func(a *v1alpha1.Analysis) {
				a.SLIs = []v1alpha1.SLI{{Name: "redis-pool-hit-ratio", MinDelta: ptr.To("0.5")}}
				a.Statistical.Mode = v1alpha1.StatisticalReport // the thresholds alone decide
			},
			wantMessage: "thresholds alone decide: they have no error control; at parity they failed " + parity.ThresholdsFalseFail,
			wantSLI:     map[string]v1alpha1.Verdict{"redis-pool-hit-ratio": v1alpha1.VerdictFail}},
		{name: "by default (Counts) a Prometheus without the counts rules is an error, never a pass", mode: "good", wantVerdict: v1alpha1.VerdictError,
			analysis:    func(a *v1alpha1.Analysis) { a.Statistical.Mode = "" },
			wantMessage: "the count-based test (a PoolCanary's statistical mode Counts, the default; -gate counts) reads the poolparity.counts rules"},
		{name: "in Confirm mode a breach that equal samples do not confirm passes", mode: "good", wantVerdict: v1alpha1.VerdictPass,
			analysis: func(a *v1alpha1.Analysis) {
				a.SLIs = []v1alpha1.SLI{{Name: "redis-pool-hit-ratio", Rule: "job_gray_status:redis_pool_hits:ratio_rate5m", MinDelta: ptr.To("0.5")}}
			},
			wantSLI: map[string]v1alpha1.Verdict{"redis-pool-hit-ratio": v1alpha1.VerdictPass}},
		{name: "a threshold of another kind than the catalog's is an error naming the right one", mode: "good", wantVerdict: v1alpha1.VerdictError,
			analysis:    func(a *v1alpha1.Analysis) { a.SLIs[0].MaxRatio, a.SLIs[0].MaxDelta = nil, ptr.To("0.01") },
			wantMessage: "latency-p99: maxDelta does not apply: latency-p99 is judged by maxRatio",
			wantSLI:     map[string]v1alpha1.Verdict{"latency-p99": v1alpha1.VerdictError}},
		{name: "an SLI the catalog does not hold is an error naming the valid ones", mode: "good", wantVerdict: v1alpha1.VerdictError,
			analysis:    func(a *v1alpha1.Analysis) { a.SLIs[0].Name = "p99" },
			wantMessage: `unknown SLI "p99" (want one of latency-p95, latency-p99`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := ""
			if tt.down {
				url = downPromURL(t)
			} else {
				url = newFakeProm(t, tt.mode).srv.URL
			}
			a := testAnalysis(url)
			if tt.analysis != nil {
				tt.analysis(&a)
			}
			got := anyAnalyzer(t).Analyze(context.Background(), &a, controller.Input{Now: time.Now()})
			if got.Verdict != tt.wantVerdict {
				t.Fatalf("verdict %s (%s), want %s", got.Verdict, got.Message, tt.wantVerdict)
			}
			if !strings.Contains(got.Message, tt.wantMessage) {
				t.Errorf("message %q does not contain %q", got.Message, tt.wantMessage)
			}
			for _, r := range got.SLIs {
				if want, ok := tt.wantSLI[r.Name]; ok && r.Verdict != want {
					t.Errorf("SLI %s: verdict %s, want %s (%+v)", r.Name, r.Verdict, want, r)
				}
			}
		})
	}
}

func TestAnalyzerReportsBothTracks(t *testing.T) {
	f := newFakeProm(t, "regression")
	a := testAnalysis(f.srv.URL)
	got := anyAnalyzer(t).Analyze(context.Background(), &a, controller.Input{Now: time.Now()})
	p99 := got.SLIs[0]
	if p99.Name != "latency-p99" || p99.Stable != "0.05" || p99.Gray != "0.1" || p99.Ratio != "2" || p99.Delta != "0.05" || p99.Threshold != "maxRatio 1.1, floor 0.005" {
		t.Fatalf("p99 result %+v, want stable 0.05, gray 0.1, ratio 2, delta 0.05, threshold maxRatio 1.1, floor 0.005", p99)
	}
}

func TestAnalyzerStatisticalSecondOpinion(t *testing.T) {
	tests := []struct {
		name        string
		mode        string
		stat        v1alpha1.StatisticalMode
		maxRatio    string
		wantVerdict v1alpha1.Verdict
		wantStat    v1alpha1.Verdict
		wantP99Test v1alpha1.Verdict
	}{
		{name: "equal tracks pass both", mode: "good", stat: v1alpha1.StatisticalReport,
			wantVerdict: v1alpha1.VerdictPass, wantStat: v1alpha1.VerdictPass, wantP99Test: v1alpha1.VerdictPass},
		{name: "a slower gray fails both", mode: "regression", stat: v1alpha1.StatisticalReport,
			wantVerdict: v1alpha1.VerdictFail, wantStat: v1alpha1.VerdictFail, wantP99Test: v1alpha1.VerdictFail},
		{name: "in Report mode the test does not decide, and the disagreement is shown", mode: "regression", stat: v1alpha1.StatisticalReport, maxRatio: "3",
			wantVerdict: v1alpha1.VerdictPass, wantStat: v1alpha1.VerdictFail, wantP99Test: v1alpha1.VerdictFail},
		{name: "in Confirm mode a breach the test does not confirm passes", mode: "good", stat: v1alpha1.StatisticalConfirm, maxRatio: "0.5",
			wantVerdict: v1alpha1.VerdictPass, wantStat: v1alpha1.VerdictPass, wantP99Test: v1alpha1.VerdictPass},
		{name: "in Confirm mode a confirmed breach fails", mode: "regression", stat: v1alpha1.StatisticalConfirm,
			wantVerdict: v1alpha1.VerdictFail, wantStat: v1alpha1.VerdictFail, wantP99Test: v1alpha1.VerdictFail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := testAnalysis(newFakeProm(t, tt.mode).srv.URL)
			a.Statistical = v1alpha1.StatisticalTest{Mode: tt.stat}
			if tt.maxRatio != "" {
				a.SLIs[0].MaxRatio = ptr.To(tt.maxRatio)
			}
			got := anyAnalyzer(t).Analyze(context.Background(), &a, controller.Input{Now: time.Now()})
			if got.Verdict != tt.wantVerdict {
				t.Errorf("verdict %s (%s), want %s", got.Verdict, got.Message, tt.wantVerdict)
			}
			if got.Statistical == nil || got.Statistical.Verdict != tt.wantStat {
				t.Fatalf("statistical %+v, want verdict %s", got.Statistical, tt.wantStat)
			}
			if tt.wantStat != tt.wantVerdict && tt.stat == v1alpha1.StatisticalReport && !strings.Contains(got.Statistical.Message, "disagreements: latency p99: threshold PASS, statistical FAIL") {
				t.Errorf("statistical message %q does not report the disagreement", got.Statistical.Message)
			}
			if p99 := got.SLIs[0]; p99.Test == nil || p99.Test.Verdict != tt.wantP99Test || p99.Test.StableSamples != 20 {
				t.Errorf("p99 test %+v, want %s on 20 samples per track", p99.Test, tt.wantP99Test)
			}
		})
	}
}

// TestAnalyzerCounts: in Counts mode the count-based anytime-valid test decides, on the raw
// per-pod counters of the poolparity.counts rules step by step since the rollout's start, with
// stable's CountHistory before it. A slower gray (the fake's "regression": twice stable's p99
// on the per-track rules, ten times its latency on the counters) fails on that evidence; equal
// tracks pass; a threshold breach without anytime-valid evidence does not fail.
func TestAnalyzerCounts(t *testing.T) {
	const step = 20 * time.Second // the count rules' evaluation interval, the test's step
	for _, tt := range []struct {
		name, mode, maxRatio string
		want                 v1alpha1.Verdict
	}{
		{"a slower gray fails", "regression", "", v1alpha1.VerdictFail},
		{"equal tracks pass", "good", "", v1alpha1.VerdictPass},
		{"a breached threshold without anytime-valid evidence passes", "good", "0.5", v1alpha1.VerdictPass},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Now().Truncate(time.Second)
			since := now.Add(-10 * time.Minute)
			f := newFakeProm(t, tt.mode, withCounts(step, since, parity.CountHistory))
			a := testAnalysis(f.srv.URL)
			a.Statistical = v1alpha1.StatisticalTest{Mode: v1alpha1.StatisticalCounts}
			if tt.maxRatio != "" {
				a.SLIs[0].MaxRatio = ptr.To(tt.maxRatio)
			}
			got := anyAnalyzer(t).Analyze(context.Background(), &a, controller.Input{Now: now, Since: since})
			if got.Verdict != tt.want {
				t.Errorf("verdict %s (%s), want %s", got.Verdict, got.Message, tt.want)
			}
			if got.Statistical == nil || got.Statistical.Mode != v1alpha1.StatisticalCounts {
				t.Errorf("statistical %+v, want mode Counts", got.Statistical)
			}
			if p99 := got.SLIs[0]; p99.Test == nil || p99.Test.EValue == "" || p99.Test.Bar != "200" || p99.Test.P != "" {
				t.Errorf("p99 test %+v: want its e-value and the bar 2/0.01 (two SLIs), no p-value", p99.Test)
			} else if at := p99.Test.RejectedAt; p99.Test.Verdict != tt.want || at == nil || at.Time.Before(since) || at.Time.After(now) {
				// The count test's verdict stops at the step its e-value reached its bar:
				// the FAIL test's in "regression", the PASS test's at parity.
				t.Errorf("p99 test %s rejected at %v in mode %s: want %s at a step of the rollout", p99.Test.Verdict, at, tt.mode, tt.want)
			}
			// The raw counters are read at the analysis time over the rollout and stable's
			// history before it; nothing is sampled from the per-track rules.
			span := "[" + model.Duration(now.Sub(since.Add(-parity.CountHistory))).String() + "]"
			sent := f.sentQueries()
			for _, rule := range []string{
				"job_gray_status_pod_le:http_request_duration_seconds_bucket:total", // p99
				"job_gray_status_pod:http_request_errors:total",                     // the error ratio
				"job_gray_status_pod:http_requests:total",                           // both
			} {
				if want := rule + `{job="poolparity"}` + span; !slices.Contains(sent, want) {
					t.Errorf("no read %s among %q", want, sent)
				}
			}
			if r := f.rangeQueries(); len(r) != 0 {
				t.Errorf("range queries %q, want none: the count-based test reads the raw counters", r)
			}
		})
	}
}

// TestAnalyzerFreshBaseline: with analysis.baseline Fresh the gray track is judged against the
// fresh baseline (gray_status="baseline"), not the long-warm stable track. The fake
// Prometheus's stable track is twice as fast as gray and the baseline: Concurrent fails, Fresh
// passes.
func TestAnalyzerFreshBaseline(t *testing.T) {
	for _, tt := range []struct {
		baseline v1alpha1.BaselineMode
		want     v1alpha1.Verdict
		stable   string
	}{
		{v1alpha1.BaselineConcurrent, v1alpha1.VerdictFail, "0.025"},
		{v1alpha1.BaselineFresh, v1alpha1.VerdictPass, "0.05"},
	} {
		t.Run(string(tt.baseline), func(t *testing.T) {
			a := testAnalysis(newFakeProm(t, "fresh").srv.URL)
			a.Baseline = tt.baseline
			got := anyAnalyzer(t).Analyze(context.Background(), &a, controller.Input{Now: time.Now()})
			if got.Verdict != tt.want {
				t.Errorf("verdict %s (%s), want %s", got.Verdict, got.Message, tt.want)
			}
			if p99 := got.SLIs[0]; p99.Stable != tt.stable {
				t.Errorf("the p99 row's comparison track reads %s, want %s", p99.Stable, tt.stable)
			}
		})
	}
}

// TestAnalyzerRefusesARetiredMode: a PoolCanary stored before Gate was retired (the API server
// now refuses it) gets an Error analysis naming the replacement, never a verdict.
func TestAnalyzerRefusesARetiredMode(t *testing.T) {
	a := testAnalysis(newFakeProm(t, "good").srv.URL)
	a.Statistical = v1alpha1.StatisticalTest{Mode: v1alpha1.StatisticalGate}
	got := anyAnalyzer(t).Analyze(context.Background(), &a, controller.Input{Now: time.Now()})
	if got.Verdict != v1alpha1.VerdictError || !strings.Contains(got.Message, "statistical mode Gate was retired: use Counts") {
		t.Errorf("verdict %s (%s), want Error naming Counts", got.Verdict, got.Message)
	}
}

// TestAnalyzerSamplesTheSampleRule: the thresholds read each SLI's rule at an instant, the
// statistical test samples its sampleRule (else its rule) every step, 1m by default, with the
// same labels; a sampled rule whose range is longer than the step gets a note.
func TestAnalyzerSamplesTheSampleRule(t *testing.T) {
	const (
		p99_5m = "job_gray_status:http_request_duration_seconds:p99_rate5m"
		p99_1m = "job_gray_status:http_request_duration_seconds:p99_rate1m"
	)
	tests := []struct {
		name       string
		sampleRule string
		step       time.Duration
		wantRange  string // the p99 range query
		wantNote   bool   // the overlap note on the p99 test
	}{
		{"the 1m rule sampled every minute (the default step)", p99_1m, 0, p99_1m + `{job="poolparity"} step 60`, false},
		{"no sampleRule samples the rule, and says its samples overlap", "", 0, p99_5m + `{job="poolparity"} step 60`, true},
		{"a 5m rule sampled every 5m does not overlap", "", 5 * time.Minute, p99_5m + `{job="poolparity"} step 300`, false},
		{"a 1m rule sampled every 30s overlaps", p99_1m, 30 * time.Second, p99_1m + `{job="poolparity"} step 30`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeProm(t, "regression")
			a := testAnalysis(f.srv.URL)
			a.SLIs[0].SampleRule = tt.sampleRule
			a.Statistical = v1alpha1.StatisticalTest{Mode: v1alpha1.StatisticalReport, Step: metav1.Duration{Duration: tt.step}}
			got := anyAnalyzer(t).Analyze(context.Background(), &a, controller.Input{Now: time.Now()})
			if got.Verdict != v1alpha1.VerdictFail || f.count(p99_5m) == 0 {
				t.Fatalf("verdict %s (%s), %d instant reads of %s: want the threshold FAIL read from the rule", got.Verdict, got.Message, f.count(p99_5m), p99_5m)
			}
			var p99 []string
			for _, q := range f.rangeQueries() {
				if strings.Contains(q, "p99") {
					p99 = append(p99, q)
				}
			}
			if len(p99) != 1 || p99[0] != tt.wantRange {
				t.Errorf("p99 range queries %q, want [%q]", p99, tt.wantRange)
			}
			test := got.SLIs[0].Test
			if test == nil || test.Verdict != v1alpha1.VerdictFail {
				t.Fatalf("p99 test %+v, want FAIL on the sampled rule", test)
			}
			if has := strings.Contains(test.Note, "overlap"); has != tt.wantNote {
				t.Errorf("p99 test note %q: overlap note %v, want %v", test.Note, has, tt.wantNote)
			}
		})
	}
}

// anyAnalyzer is a PrometheusAnalyzer that may call any endpoint: the tests' fake
// Prometheus servers listen on ports chosen at random.
func anyAnalyzer(t *testing.T) *controller.PrometheusAnalyzer {
	t.Helper()
	c, err := promread.NewClients(nil, true, promread.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return &controller.PrometheusAnalyzer{Clients: c}
}

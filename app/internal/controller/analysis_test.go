package controller_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/app/internal/controller"
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
		SLIs: []v1alpha1.SLI{
			{Name: "p99", Rule: "job_gray_status:http_request_duration_seconds:p99_rate5m", MaxRatio: ptr.To("1.10")},
			{Name: "errors", Rule: "job_gray_status:http_request_errors:ratio_rate5m", MaxDelta: ptr.To("0.005")},
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
			wantSLI: map[string]v1alpha1.Verdict{"p99": v1alpha1.VerdictPass, "errors": v1alpha1.VerdictPass}},
		{name: "a gray track twice as slow fails the p99 ratio", mode: "regression", wantVerdict: v1alpha1.VerdictFail,
			wantMessage: "p99 (ratio 2, maxRatio 1.10)",
			wantSLI:     map[string]v1alpha1.Verdict{"p99": v1alpha1.VerdictFail, "errors": v1alpha1.VerdictPass}},
		{name: "no series is inconclusive", mode: "nodata", wantVerdict: v1alpha1.VerdictNoData, wantMessage: "too little traffic"},
		{name: "no series is inconclusive without a traffic guard", mode: "nodata", wantVerdict: v1alpha1.VerdictNoData,
			analysis:    func(a *v1alpha1.Analysis) { a.MinRequests = 0 },
			wantMessage: "stable track has no series"},
		{name: "a regression on too little traffic does not count", mode: "quiet", wantVerdict: v1alpha1.VerdictNoData,
			wantMessage: "stable track served 3 requests in 5m0s (minRequests 100)"},
		{name: "an unreachable Prometheus is an error", down: true, wantVerdict: v1alpha1.VerdictError, wantMessage: "connection refused"},
		{name: "a rule without series is no data", mode: "good", wantVerdict: v1alpha1.VerdictNoData,
			analysis: func(a *v1alpha1.Analysis) {
				a.SLIs = append(a.SLIs, v1alpha1.SLI{Name: "cpu", Rule: "job_gray_status:unknown:ratio_rate5m", MaxRatio: ptr.To("1.15")})
			},
			wantMessage: "cpu: stable track has no series; gray track has no series",
			wantSLI:     map[string]v1alpha1.Verdict{"p99": v1alpha1.VerdictPass, "cpu": v1alpha1.VerdictNoData}},
		{name: "minRatio fails a gray value below it", mode: "good", wantVerdict: v1alpha1.VerdictFail,
			analysis: func(a *v1alpha1.Analysis) {
				a.SLIs = []v1alpha1.SLI{{Name: "allocs", Rule: "job_gray_status:go_gc_heap_allocs_bytes_per_request:ratio_rate5m", MinRatio: ptr.To("1.5")}}
			},
			wantSLI: map[string]v1alpha1.Verdict{"allocs": v1alpha1.VerdictFail}},
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
			got := (&controller.PrometheusAnalyzer{}).Analyze(context.Background(), &a, time.Now())
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
	got := (&controller.PrometheusAnalyzer{}).Analyze(context.Background(), &a, time.Now())
	p99 := got.SLIs[0]
	if p99.Name != "p99" || p99.Stable != "0.05" || p99.Gray != "0.1" || p99.Ratio != "2" || p99.Delta != "0.05" || p99.Threshold != "maxRatio 1.10" {
		t.Fatalf("p99 result %+v, want stable 0.05, gray 0.1, ratio 2, delta 0.05, threshold maxRatio 1.10", p99)
	}
}

func TestRatio(t *testing.T) {
	tests := []struct {
		name         string
		gray, stable float64
		want         float64
	}{
		{"equal values are 1", 2, 2, 1},
		{"both zero are equal", 0, 0, 1},
		{"gray over a zero stable is infinite", 1, 0, math.Inf(1)},
		{"half is 0.5", 1, 2, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := controller.Ratio(tt.gray, tt.stable); got != tt.want {
				t.Fatalf("Ratio(%v, %v) = %v, want %v", tt.gray, tt.stable, got, tt.want)
			}
		})
	}
}

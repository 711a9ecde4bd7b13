package parity_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/promread"
	"github.com/poolparity/poolparity/internal/parity/render"
)

// TestBadPrometheusIsNeverAPass runs the Checker against real HTTP servers that answer
// badly: the verdict is ERROR with a reason, never PASS.
func TestBadPrometheusIsNeverAPass(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		timeout time.Duration
		reason  string
	}{
		{"a Prometheus answering an error", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":"error","errorType":"unavailable","error":"TSDB not ready"}`))
		}, 2 * time.Second, "TSDB not ready"},
		{"a Prometheus slower than the timeout", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, 200 * time.Millisecond, "no answer in time"},
		{"a Prometheus without the poolparity rules", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"status":"success","data":{"groups":[{"name":"poolparity.rate1m","file":"x","interval":15,"rules":[{"type":"recording","name":"job:http_requests:min_track_rate1m","query":"1","health":"ok"}]}]}}`))
		}, 2 * time.Second, "missing: job_gray_status:http_requests:rate1m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			client, err := api.NewClient(api.Config{Address: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			r, err := parity.Evaluate(ctx, v1.NewAPI(client), catalog.Default(), parity.Options{At: at, Window: "1m", Alerts: true})
			if err == nil {
				t.Fatal("Evaluate returned no error")
			}
			if r.Verdict != parity.Error {
				t.Errorf("verdict %s, want ERROR", r.Verdict)
			}
			if !strings.Contains(strings.Join(r.Reasons, "; "), tt.reason) {
				t.Errorf("reasons %q do not mention %q", r.Reasons, tt.reason)
			}
		})
	}
}

func TestCheckOnQuietTracksIsNoData(t *testing.T) {
	p := regression()
	p.values["job_gray_status:http_requests:rate1m"] = map[string]float64{"false": 150, "true": 1}
	r := check(t, p)
	if r.Verdict != parity.NoData || !strings.Contains(r.Reasons[0], "gray track serves 1 req/s (minimum: more than 1)") {
		t.Errorf("verdict %s (%q), want NO DATA for a gray track at the minimum rate", r.Verdict, r.Reasons)
	}
}

func TestCheckWithAStatTest(t *testing.T) {
	tests := []struct {
		name       string
		minSamples int
		want       parity.Verdict
	}{
		{"seven samples per track are judged", 7, parity.Fail},
		{"a window with too few samples is no data", 8, parity.NoData},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Gray spends 6.8% more CPU per request: under the 1.15 threshold, but every
			// sample is above every stable one (the fake varies samples by 0-4%).
			p := goodPool()
			p.values["job_gray_status:process_cpu_seconds_per_request:ratio_rate1m"]["true"] = 0.000440
			// 28 µs more is within the catalog's 100 µs floor: this case measures the sample
			// count, so the floor is taken away.
			cat, err := catalog.Default().WithFloor(catalog.CPUPerRequest, 0)
			if err != nil {
				t.Fatal(err)
			}
			r, err := parity.Evaluate(context.Background(), p, cat, parity.Options{
				At: at, Window: "1m", Selector: `job="poolparity"`, Alerts: true,
				Stat: parity.StatReport, Test: parity.StatTest{MinSamples: tt.minSamples}, StatWindow: time.Minute, StatStep: 10 * time.Second, SampleFamily: "-",
			})
			if err != nil {
				t.Fatal(err)
			}
			if r.Statistical != tt.want {
				t.Errorf("statistical verdict %s (%q), want %s", r.Statistical, r.StatReasons, tt.want)
			}
			if r.Verdict != parity.Pass {
				t.Errorf("threshold verdict %s, want PASS: the test must not change it", r.Verdict)
			}
			if tt.want == parity.Fail && len(r.Disagreements) == 0 {
				t.Error("a statistical FAIL beside a threshold PASS is not reported as a disagreement")
			}
		})
	}
}

// TestGateConfirmed: with the confirmed gate a threshold FAIL decides the
// verdict only where the statistical test confirms it.
func TestGateConfirmed(t *testing.T) {
	const cpu = "job_gray_status:process_cpu_seconds_per_request:ratio_rate1m"
	tests := []struct {
		name         string
		gate         parity.Gate
		sampledEqual bool // the test's samples show equal tracks
		want         parity.Verdict
	}{
		{"thresholds: a breach fails", parity.GateThresholds, true, parity.Fail},
		{"confirmed: a breach the samples do not confirm passes", parity.GateConfirmed, true, parity.Pass},
		{"confirmed: a breach the samples confirm fails", parity.GateConfirmed, false, parity.Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Gray spends 30% more CPU per request at the instant read: over the 1.15 threshold.
			p := goodPool()
			p.values[cpu]["true"] = 0.000536
			if tt.sampledEqual {
				p.rangeValues = map[string]map[string]float64{cpu: {"false": 0.000412, "true": 0.000412}}
			}
			r, err := parity.Evaluate(context.Background(), p, catalog.Default(), parity.Options{
				At: at, Window: "1m", Selector: `job="poolparity"`, Alerts: true,
				Stat: tt.gate.Mode(), Test: parity.StatTest{MinSamples: 7}, StatWindow: time.Minute, StatStep: 10 * time.Second, SampleFamily: "-",
			})
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != tt.want || r.Gate != tt.gate {
				t.Errorf("verdict %s (%q) gate %q, want %s under gate %s", r.Verdict, r.Reasons, r.Gate, tt.want, tt.gate)
			}
			var b strings.Builder
			if err := render.Text(&b, r); err != nil {
				t.Fatal(err)
			}
			if shown := strings.Contains(b.String(), "verdict gate: thresholds confirmed"); shown != (tt.gate == parity.GateConfirmed) {
				t.Errorf("the text report shows the gate: %v, want %v", shown, tt.gate == parity.GateConfirmed)
			}
		})
	}
	t.Run("ParseGate", func(t *testing.T) {
		for _, s := range []string{"thresholds", "confirmed", "counts"} {
			if g, err := parity.ParseGate(s); err != nil || string(g) != s {
				t.Errorf("ParseGate(%q) = %q, %v", s, g, err)
			}
		}
		if _, err := parity.ParseGate("strict"); err == nil || !strings.Contains(err.Error(), "want counts, confirmed or thresholds") {
			t.Errorf("ParseGate(strict) error %v", err)
		}
	})
}

func TestGrayOverStable(t *testing.T) {
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
			if got := parity.GrayOverStable(tt.gray, tt.stable); got != tt.want {
				t.Fatalf("GrayOverStable(%v, %v) = %v, want %v", tt.gray, tt.stable, got, tt.want)
			}
		})
	}
}

func TestConfirm(t *testing.T) {
	fail := func(test parity.Verdict) parity.Row {
		r := parity.Row{SLI: "latency p99", Comparison: parity.RatioAtMost, Value: f(1.3), Threshold: 1.1, Verdict: parity.Fail}
		if test != "" {
			r.Test = &parity.TestResult{Verdict: test, P: 0.2, A: 0.6}
		}
		return r
	}
	tests := []struct {
		name string
		row  parity.Row
		want parity.Verdict
	}{
		{"a breach the test confirms stays a FAIL", fail(parity.Fail), parity.Fail},
		{"a breach the test finds not significant is a PASS", fail(parity.Pass), parity.Pass},
		{"a breach without enough samples for the test waits as NO DATA (the cold first step)", fail(parity.NoData), parity.NoData},
		{"a breach whose test failed to run stays a FAIL", fail(parity.Error), parity.Fail},
		{"a breach without a test stays a FAIL", fail(""), parity.Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parity.Confirm([]parity.Row{tt.row})[0]
			if got.Verdict != tt.want {
				t.Errorf("verdict %s (%s), want %s", got.Verdict, got.Note, tt.want)
			}
		})
	}
}

func TestForTestsCorrectsTheConfidence(t *testing.T) {
	got := parity.StatTest{Confidence: 0.99}.ForTests(8)
	if math.Abs(got.Confidence-(1-0.01/8)) > 1e-12 {
		t.Errorf("confidence %v for 8 tests at 0.99, want %v", got.Confidence, 1-0.01/8)
	}
	if one := (parity.StatTest{Confidence: 0.99}).ForTests(1); one.Confidence != 0.99 {
		t.Errorf("confidence %v for one test, want 0.99", one.Confidence)
	}
}

// unavailableRanges is a fakeProm whose range queries (the statistical test's samples) fail as
// a guarded endpoint fails once it is stalled or backed off, and which counts every query
// sent after the first such failure.
type unavailableRanges struct {
	*fakeProm
	failed, after int
}

func (u *unavailableRanges) Query(ctx context.Context, q string, ts time.Time, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	if u.failed > 0 {
		u.after++
	}
	return u.fakeProm.Query(ctx, q, ts, opts...)
}

func (u *unavailableRanges) QueryRange(context.Context, string, v1.Range, ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	if u.failed > 0 {
		u.after++
	}
	u.failed++
	return nil, nil, nil, fmt.Errorf("%w: http://prom: backed off", promread.ErrEndpointUnavailable)
}

// TestUnavailableEndpointEndsTheEvaluation: the statistical test's failed queries do not fail
// an evaluation, except when the endpoint is unavailable: the first such failure ends it, and
// nothing more is sent to the endpoint.
func TestUnavailableEndpointEndsTheEvaluation(t *testing.T) {
	u := &unavailableRanges{fakeProm: goodPool()}
	r, err := parity.Evaluate(context.Background(), u, catalog.Default(), parity.Options{
		At: at, Window: "1m", Selector: `job="poolparity"`,
		Stat: parity.StatReport, Test: parity.StatTest{MinSamples: 7}, StatWindow: time.Minute, StatStep: 10 * time.Second, SampleFamily: "-",
	})
	if err == nil || !strings.Contains(err.Error(), promread.ErrEndpointUnavailable.Error()) || r.Verdict != parity.Error {
		t.Fatalf("verdict %s, error %v; want ERROR naming the unavailable endpoint", r.Verdict, err)
	}
	if u.failed != 1 || u.after != 0 {
		t.Errorf("%d range queries failed and %d queries were sent after the first: want 1 and 0", u.failed, u.after)
	}
}

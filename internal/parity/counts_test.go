package parity_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
)

// countBounds are the service's latency buckets (promexport.DurationBuckets).
var countBounds = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10}

// countTrack is how one simulated track serves: its pods, requests per pod
// and step, and per request its 5xx chance, latency scale, CPU, heap and
// response bytes.
type countTrack struct {
	status          string
	pods            int
	perPodStep      float64
	errRate         float64
	latency         float64 // median, seconds (log-normal, sigma 0.47: p99 about 3x the median)
	cpu, heap, resp float64 // per request
	nanAt, resetAt  int     // a NaN sample, a counter reset (pod 0) at that step; 0 for none
	lateStart       int     // no requests before this step (a pod still starting, a load not yet arrived)
	latencyTailMult float64 // latencies multiplied by this (1: none)
}

// rawCounters simulates the poolparity.counts rules' series of one track for
// steps 20 s steps ending at end: cumulative per pod, as Prometheus stores
// the rule's evaluations.
func rawCounters(rng *rand.Rand, tr countTrack, end time.Time, steps int) map[string]model.Matrix {
	out := map[string]model.Matrix{}
	norm := func(mean, sd float64) float64 { return math.Max(0, mean+sd*rng.NormFloat64()) }
	for p := range tr.pods {
		pod := model.LabelValue(tr.status + "-" + string(rune('a'+p)))
		metric := func(name string) model.Metric {
			return model.Metric{model.MetricNameLabel: model.LabelValue(name), "gray_status": model.LabelValue(tr.status), "pod": pod, "job": "poolparity"}
		}
		var reqs, errs, cpu, heap, resp float64
		buckets := make([]float64, len(countBounds)+1)
		series := map[string]*model.SampleStream{}
		add := func(key string, m model.Metric, t time.Time, v float64) {
			s, ok := series[key]
			if !ok {
				s = &model.SampleStream{Metric: m}
				series[key] = s
			}
			s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: model.SampleValue(v)})
		}
		for i := 0; i <= steps; i++ {
			t := end.Add(-time.Duration(steps-i) * 20 * time.Second)
			if i > 0 {
				if p == 0 && tr.resetAt == i {
					reqs, errs, cpu, heap, resp = 0, 0, 0, 0, 0
					clear(buckets)
				}
				n := math.Round(norm(tr.perPodStep, math.Sqrt(tr.perPodStep)))
				if i < tr.lateStart {
					n = 0
				}
				reqs += n
				errs += math.Round(norm(n*tr.errRate, math.Sqrt(n*tr.errRate)))
				cpu += n * tr.cpu * (1 + 0.02*rng.NormFloat64())
				heap += n * tr.heap * (1 + 0.02*rng.NormFloat64())
				resp += n * tr.resp * (1 + 0.02*rng.NormFloat64())
				for range int(n) {
					l := tr.latency * tr.latencyTailMult * math.Exp(0.47*rng.NormFloat64())
					for j, b := range countBounds {
						if l <= b {
							buckets[j]++
						}
					}
					buckets[len(countBounds)]++
				}
			}
			v := func(x float64) float64 {
				if tr.nanAt > 0 && tr.nanAt == i && p == 0 {
					return math.NaN()
				}
				return x
			}
			add("r", metric("job_gray_status_pod:http_requests:total"), t, v(reqs))
			add("e", metric("job_gray_status_pod:http_request_errors:total"), t, errs)
			add("c", metric("job_gray_status_pod:process_cpu_seconds:total"), t, cpu)
			add("h", metric("job_gray_status_pod:go_heap_allocs_bytes:total"), t, heap)
			// The response-size histogram observes every request: its _count is the requests.
			add("sc", metric("job_gray_status_pod:http_response_size_bytes_count:total"), t, reqs)
			add("ss", metric("job_gray_status_pod:http_response_size_bytes_sum:total"), t, resp)
			for j := range buckets {
				le := "+Inf"
				if j < len(countBounds) {
					le = strconv.FormatFloat(countBounds[j], 'g', -1, 64)
				}
				m := metric("job_gray_status_pod_le:http_request_duration_seconds_bucket:total")
				m["le"] = model.LabelValue(le)
				add("b"+le, m, t, buckets[j])
			}
		}
		for _, s := range series {
			name := string(s.Metric[model.MetricNameLabel])
			out[name] = append(out[name], s)
		}
	}
	return out
}

// countsProm is goodPool with the count rules loaded (every 20 s) and the
// raw counters of both tracks.
func countsProm(t *testing.T, stable, gray countTrack, minutes int) *fakeProm {
	t.Helper()
	p := goodPool()
	rng := rand.New(rand.NewPCG(7, 11))
	p.raw = map[string]model.Matrix{}
	for _, tr := range []countTrack{stable, gray} {
		for name, m := range rawCounters(rng, tr, at, minutes*3) {
			p.raw[name] = append(p.raw[name], m...)
		}
	}
	var rules v1.Rules
	for _, n := range []string{catalog.CountRequestsRule, "job_gray_status_pod:http_request_errors:total", "job_gray_status_pod_le:http_request_duration_seconds_bucket:total",
		"job_gray_status_pod:process_cpu_seconds:total", "job_gray_status_pod:go_heap_allocs_bytes:total",
		"job_gray_status_pod:http_response_size_bytes_count:total", "job_gray_status_pod:http_response_size_bytes_sum:total"} {
		rules = append(rules, v1.RecordingRule{Name: n})
	}
	p.rules.Groups = append(p.rules.Groups, v1.RuleGroup{Name: "poolparity.counts", Interval: 20, Rules: rules})
	// The response SLI's per-track rule, for its row's thresholds.
	const respRule = "job_gray_status:http_response_size_bytes_per_request:ratio_rate1m"
	p.rules.Groups[0].Rules = append(p.rules.Groups[0].Rules, v1.RecordingRule{Name: respRule})
	p.values[respRule] = map[string]float64{stable.status: stable.resp, gray.status: gray.resp}
	return p
}

func countsReport(t *testing.T, p *fakeProm, since time.Duration) parity.Report {
	t.Helper()
	cat, err := catalog.Default().Select(catalog.LatencyP95, catalog.LatencyP99, catalog.ErrorRatio, catalog.CPUPerRequest, catalog.HeapAllocPerRequest, catalog.ResponseBytesPerRequest)
	if err != nil {
		t.Fatal(err)
	}
	r, err := parity.Evaluate(context.Background(), p, cat, parity.Options{
		At: at, Window: "1m", Selector: `job="poolparity"`, Stat: parity.StatCounts, StatSince: at.Add(-since),
	})
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	return r
}

func TestCountsGate(t *testing.T) {
	stable := countTrack{status: "false", pods: 3, perPodStep: 600, errRate: 0.001, latency: 0.02, cpu: 0.0014, heap: 50000, resp: 22700, latencyTailMult: 1}
	tests := []struct {
		name     string
		gray     func(countTrack) countTrack
		stable   func(countTrack) countTrack
		want     parity.Verdict
		failRow  string // a row that must FAIL
		noPass   string // a row that must not PASS
		noteHas  string
		stepsMin int
	}{
		{name: "a gray at parity passes every SLI", gray: func(c countTrack) countTrack { return c }, want: parity.Pass},
		{name: "60% more CPU per request fails the CPU row", gray: func(c countTrack) countTrack { c.cpu *= 1.6; return c }, want: parity.Fail, failRow: "CPU per request"},
		{name: "a buffer never reset (6.7x the bytes) fails the response row", gray: func(c countTrack) countTrack { c.resp *= 6.74; return c }, want: parity.Fail, failRow: "response bytes per request"},
		{name: "+1 point of 5xx fails the error row", gray: func(c countTrack) countTrack { c.errRate += 0.01; return c }, want: parity.Fail, failRow: "error ratio (5xx)"},
		{name: "40% slower fails the latency rows", gray: func(c countTrack) countTrack { c.latencyTailMult = 1.4; return c }, want: parity.Fail, failRow: "latency p99"},
		{name: "a NaN sample never passes and is named", gray: func(c countTrack) countTrack { c.nanAt = 10; return c }, noPass: "error ratio (5xx)", noteHas: "NaN"},
		{name: "steps before the gray serves are not held against the data", gray: func(c countTrack) countTrack { c.lateStart = 9; return c }, want: parity.Pass},
		{name: "a stable pod's counter reset is not an effect", stable: func(c countTrack) countTrack { c.resetAt = 20; return c }, gray: func(c countTrack) countTrack { return c }, want: parity.Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := stable
			if tt.stable != nil {
				st = tt.stable(st)
			}
			gr := tt.gray(stable)
			gr.status, gr.pods = "true", 1
			p := countsProm(t, st, gr, 12)
			r := countsReport(t, p, 12*time.Minute)
			if tt.want != "" && r.Verdict != tt.want {
				t.Errorf("verdict %s, want %s; reasons %q", r.Verdict, tt.want, r.Reasons)
			}
			if r.Gate != parity.GateCounts {
				t.Errorf("gate %q, want counts", r.Gate)
			}
			for _, row := range r.Rows {
				if row.Test == nil || !row.Test.Counts {
					t.Errorf("%s: test %+v, want the count-based test's", row.SLI, row.Test)
					continue
				}
				t.Logf("%s: %s %s (%s)", row.SLI, row.Test.Verdict, row.Test.Summary(), row.Test.Note)
				if row.SLI == tt.failRow && row.Test.Verdict != parity.Fail {
					t.Errorf("%s: %s, want FAIL", row.SLI, row.Test.Verdict)
				}
				if row.SLI == tt.noPass {
					if row.Test.Verdict == parity.Pass {
						t.Errorf("%s passed with a NaN in its counters", row.SLI)
					}
					if !strings.Contains(row.Test.Note, tt.noteHas) {
						t.Errorf("%s: note %q does not name %q", row.SLI, row.Test.Note, tt.noteHas)
					}
				}
			}
			var asked bool
			for _, q := range p.asked {
				// the rollout's 12 minutes and stable's history before it
				asked = asked || strings.HasPrefix(q, catalog.CountRequestsRule+fmt.Sprintf(`{job="poolparity"}[%dm]`, 12+int(parity.CountHistory/time.Minute)))
			}
			if !asked {
				t.Errorf("queries %q: the requests' raw samples over the rollout and stable's history were not read", p.asked)
			}
		})
	}
}

func TestCountsGateNeedsTheCountRules(t *testing.T) {
	p := goodPool() // no poolparity.counts group
	cat, _ := catalog.Default().Select(catalog.ErrorRatio)
	_, err := parity.Evaluate(context.Background(), p, cat, parity.Options{At: at, Window: "1m", Stat: parity.StatCounts, StatSince: at.Add(-10 * time.Minute)})
	if !errors.Is(err, parity.ErrNoRules) || !strings.Contains(err.Error(), catalog.CountRequestsRule) {
		t.Errorf("err = %v, want ErrNoRules naming %s", err, catalog.CountRequestsRule)
	}
}

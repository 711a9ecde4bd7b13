package parity_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/catalog/catalogtest"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/paritytest"
)

// countsProm is goodPool with the count rules loaded (every 20 s) and the
// raw counters of both tracks.
func countsProm(t *testing.T, stable, gray paritytest.Track, minutes int) *fakeProm {
	t.Helper()
	p := goodPool()
	rng := rand.New(rand.NewPCG(7, 11))
	p.raw = map[string]model.Matrix{}
	for _, tr := range []paritytest.Track{stable, gray} {
		for name, m := range paritytest.Counters(rng, tr, at, minutes*3, 20*time.Second) {
			p.raw[name] = append(p.raw[name], m...)
		}
	}
	var rules v1.Rules
	for _, n := range catalogtest.CountRuleNames(catalog.Default()) {
		rules = append(rules, v1.RecordingRule{Name: n})
	}
	p.rules.Groups = append(p.rules.Groups, v1.RuleGroup{Name: "poolparity.counts", Interval: 20, Rules: rules})
	// The response SLI's per-track rule, for its row's thresholds.
	const respRule = "job_gray_status:http_response_size_bytes_per_request:ratio_rate1m"
	p.rules.Groups[0].Rules = append(p.rules.Groups[0].Rules, v1.RecordingRule{Name: respRule})
	p.values[respRule] = map[string]float64{stable.Status: stable.Resp, gray.Status: gray.Resp}
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
	stable := paritytest.Track{Status: "false", Pods: 3, PerPodStep: 600, ErrRate: 0.001, Latency: 0.02, CPU: 0.0014, Heap: 50000, Resp: 22700}
	tests := []struct {
		name     string
		gray     func(paritytest.Track) paritytest.Track
		stable   func(paritytest.Track) paritytest.Track
		want     parity.Verdict
		failRow  string // a row that must FAIL
		noPass   string // a row that must not PASS
		noteHas  string
		stepsMin int
	}{
		{name: "a gray at parity passes every SLI", gray: func(c paritytest.Track) paritytest.Track { return c }, want: parity.Pass},
		{name: "60% more CPU per request fails the CPU row", gray: func(c paritytest.Track) paritytest.Track { c.CPU *= 1.6; return c }, want: parity.Fail, failRow: "CPU per request"},
		{name: "a buffer never reset (6.7x the bytes) fails the response row", gray: func(c paritytest.Track) paritytest.Track { c.Resp *= 6.74; return c }, want: parity.Fail, failRow: "response bytes per request"},
		{name: "+1 point of 5xx fails the error row", gray: func(c paritytest.Track) paritytest.Track { c.ErrRate += 0.01; return c }, want: parity.Fail, failRow: "error ratio (5xx)"},
		{name: "40% slower fails the latency rows", gray: func(c paritytest.Track) paritytest.Track { c.LatencyMult = 1.4; return c }, want: parity.Fail, failRow: "latency p99"},
		{name: "a NaN sample never passes and is named", gray: func(c paritytest.Track) paritytest.Track { c.NaNAt = 10; return c }, noPass: "error ratio (5xx)", noteHas: "NaN"},
		{name: "steps before the gray serves are not held against the data", gray: func(c paritytest.Track) paritytest.Track { c.LateStart = 9; return c }, want: parity.Pass},
		{name: "a stable pod's counter reset is not an effect", stable: func(c paritytest.Track) paritytest.Track { c.ResetAt = 20; return c }, gray: func(c paritytest.Track) paritytest.Track { return c }, want: parity.Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := stable
			if tt.stable != nil {
				st = tt.stable(st)
			}
			gr := tt.gray(stable)
			gr.Status, gr.Pods = "true", 1
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

// mapSeries applies f to every series of rule whose labels match (gray_status
// status, and le when le is not ""), in place.
func mapSeries(p *fakeProm, rule, status, le string, f func(s *model.SampleStream)) {
	for _, s := range p.raw[rule] {
		if string(s.Metric["gray_status"]) == status && (le == "" || string(s.Metric["le"]) == le) {
			f(s)
		}
	}
}

// countRules is every count rule the simulation answers.
var countRules = []string{paritytest.RequestsRule, paritytest.ErrorsRule, paritytest.BucketsRule, paritytest.CPURule, paritytest.HeapRule, paritytest.SizeCountRule, paritytest.SizeSumRule}

func TestCountsGateGarbageIsNoData(t *testing.T) {
	stable := paritytest.Track{Status: "false", Pods: 3, PerPodStep: 600, ErrRate: 0.001, Latency: 0.02, CPU: 0.0014, Heap: 50000, Resp: 22700}
	latencyRows := []string{"latency p95", "latency p99"}
	everyRow := []string{"latency p95", "latency p99", "error ratio (5xx)", "CPU per request", "heap bytes allocated per request", "response bytes per request"}
	tests := []struct {
		name    string
		gray    func(paritytest.Track) paritytest.Track // the gray track, before garbage
		garbage func(p *fakeProm)
		rows    []string // rows that must be NO DATA naming want
		want    string
	}{
		{
			name: "gray counters dipping 3% are not read as resets",
			garbage: func(p *fakeProm) {
				for _, r := range countRules {
					mapSeries(p, r, "true", "", func(s *model.SampleStream) {
						for i := 10; i < len(s.Values); i += 6 {
							s.Values[i].Value *= 0.97
						}
					})
				}
			},
			rows: everyRow, want: "dip read as a reset",
		},
		{
			name: "the requests counter resetting alone while the pod's other counters go on",
			garbage: func(p *fakeProm) {
				mapSeries(p, paritytest.RequestsRule, "true", "", func(s *model.SampleStream) {
					base := s.Values[20].Value
					for i := 21; i < len(s.Values); i++ {
						s.Values[i].Value -= base
					}
				})
			},
			rows: []string{"error ratio (5xx)", "CPU per request", "heap bytes allocated per request", "latency p99"}, want: "resetting alone",
		},
		{
			name: "a series duplicated under two pod labels",
			garbage: func(p *fakeProm) {
				for _, r := range countRules {
					var dup model.Matrix
					mapSeries(p, r, "true", "", func(s *model.SampleStream) {
						m := s.Metric.Clone()
						m["pod"] = "true-copy"
						dup = append(dup, &model.SampleStream{Metric: m, Values: slices.Clone(s.Values)})
					})
					p.raw[r] = append(p.raw[r], dup...)
				}
			},
			rows: everyRow, want: "identical under two pods",
		},
		{
			name: "histogram buckets falling as le rises",
			garbage: func(p *fakeProm) {
				var inf []model.SamplePair
				mapSeries(p, paritytest.BucketsRule, "true", "+Inf", func(s *model.SampleStream) { inf = s.Values })
				mapSeries(p, paritytest.BucketsRule, "true", "0.01", func(s *model.SampleStream) { s.Values = slices.Clone(inf) })
			},
			rows: latencyRows, want: "falling as le rises",
		},
		{
			name: "a +Inf bucket below the request count",
			garbage: func(p *fakeProm) {
				mapSeries(p, paritytest.BucketsRule, "true", "+Inf", func(s *model.SampleStream) {
					for i := range s.Values {
						s.Values[i].Value = model.SampleValue(math.Round(float64(s.Values[i].Value) * 0.9))
					}
				})
			},
			rows: latencyRows, want: "+Inf buckets not counting the requests",
		},
		{
			name: "range points repeated at one timestamp",
			garbage: func(p *fakeProm) {
				mapSeries(p, paritytest.RequestsRule, "true", "", func(s *model.SampleStream) {
					var twice []model.SamplePair
					for _, v := range s.Values {
						twice = append(twice, v, v)
					}
					s.Values = twice
				})
			},
			rows: everyRow[:5], want: "repeated at one timestamp", // the response row counts its requests in its own histogram
		},
		{
			name: "5xx counters above the requests",
			garbage: func(p *fakeProm) {
				var reqs []model.SamplePair
				mapSeries(p, paritytest.RequestsRule, "true", "", func(s *model.SampleStream) { reqs = s.Values })
				mapSeries(p, paritytest.ErrorsRule, "true", "", func(s *model.SampleStream) {
					s.Values = slices.Clone(reqs)
					for i := range s.Values {
						s.Values[i].Value = s.Values[i].Value*2 + 10
					}
				})
			},
			rows: []string{"error ratio (5xx)"}, want: "5xx counters above the requests",
		},
		{
			name: "a NaN bucket in a slower gray is NO DATA, not a FAIL",
			gray: func(c paritytest.Track) paritytest.Track { c.LatencyMult = 1.4; return c },
			garbage: func(p *fakeProm) {
				mapSeries(p, paritytest.BucketsRule, "true", "0.05", func(s *model.SampleStream) { s.Values[15].Value = model.SampleValue(math.NaN()) })
			},
			rows: latencyRows, want: "NaN",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gr := stable
			if tt.gray != nil {
				gr = tt.gray(gr)
			}
			gr.Status, gr.Pods = "true", 1
			p := countsProm(t, stable, gr, 12)
			tt.garbage(p)
			r := countsReport(t, p, 12*time.Minute)
			if r.Verdict != parity.NoData {
				t.Errorf("verdict %s, want NO DATA; reasons %q", r.Verdict, r.Reasons)
			}
			for _, row := range r.Rows {
				if row.Test == nil {
					continue
				}
				if row.Test.Verdict == parity.Fail {
					t.Errorf("%s: FAIL on garbage (%s)", row.SLI, row.Test.Note)
				}
				if !slices.Contains(tt.rows, row.SLI) {
					continue
				}
				if row.Test.Verdict != parity.NoData || !strings.Contains(row.Test.Note, tt.want) {
					t.Errorf("%s: %s (%s), want NO DATA naming %q", row.SLI, row.Test.Verdict, row.Test.Note, tt.want)
				}
			}
		})
	}
}

// TestCountsGateReadsPrometheus3Buckets: Prometheus 3 stores le="1.0" and
// le="10.0"; the buckets from one second up are read all the same.
func TestCountsGateReadsPrometheus3Buckets(t *testing.T) {
	stable := paritytest.Track{Status: "false", Pods: 3, PerPodStep: 600, ErrRate: 0.001, Latency: 0.4, CPU: 0.0014, Heap: 50000, Resp: 22700}
	for _, tt := range []struct {
		name string
		mult float64
		want parity.Verdict
	}{
		{name: "a gray at parity passes", mult: 1, want: parity.Pass},
		{name: "a gray 40% slower fails", mult: 1.4, want: parity.Fail},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gr := stable
			gr.Status, gr.Pods, gr.LatencyMult = "true", 1, tt.mult
			p := countsProm(t, stable, gr, 12)
			for _, s := range p.raw[paritytest.BucketsRule] {
				if le := string(s.Metric["le"]); !strings.ContainsAny(le, ".I") {
					s.Metric["le"] = model.LabelValue(le + ".0") // "1" -> "1.0", "10" -> "10.0"
				}
			}
			r := countsReport(t, p, 12*time.Minute)
			for _, row := range r.Rows {
				if row.SLI != "latency p99" {
					continue
				}
				t.Logf("%s: %s (%s)", row.SLI, row.Test.Verdict, row.Test.Note)
				if row.Test.Verdict != tt.want {
					t.Errorf("%s: %s, want %s", row.SLI, row.Test.Verdict, tt.want)
				}
			}
		})
	}
}

// TestCountsGateReadsLimitsBeforeTheRollout: with 30 minutes of stable's counters before the
// rollout the limits are read at stable's level there, the same at every look; without them,
// at its level over the rollout so far.
func TestCountsGateReadsLimitsBeforeTheRollout(t *testing.T) {
	stable := paritytest.Track{Status: "false", Pods: 3, PerPodStep: 600, ErrRate: 0.001, Latency: 0.02, CPU: 0.0014, Heap: 50000, Resp: 22700}
	gray := stable
	gray.Status, gray.Pods = "true", 1
	for _, tt := range []struct {
		name    string
		minutes int
		want    string
	}{
		{"history before the rollout", 42, "limits at stable's level before the rollout"},
		{"no history", 12, "limits at stable's level over the rollout so far"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := countsReport(t, countsProm(t, stable, gray, tt.minutes), 12*time.Minute)
			for _, row := range r.Rows {
				if row.Test == nil {
					continue
				}
				if !strings.Contains(row.Test.Note, tt.want) {
					t.Errorf("%s: note %q does not say %q", row.SLI, row.Test.Note, tt.want)
				}
			}
		})
	}
}

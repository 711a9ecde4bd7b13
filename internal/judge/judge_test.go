package judge_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/judge"
	"github.com/poolparity/poolparity/internal/judge/judgetest"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// newJudge returns a Judge allowed to read only prom.
func newJudge(t *testing.T, prom *judgetest.Prom) *judge.Judge {
	t.Helper()
	clients, err := promread.NewClients([]string{prom.URL}, false, promread.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return &judge.Judge{Clients: clients, Timeout: 5 * time.Second}
}

func TestEvaluate(t *testing.T) {
	start := time.Now().Add(-40 * time.Minute)
	for _, tc := range []struct {
		name string
		mode judgetest.Mode
		want parity.Verdict
		err  bool
	}{
		{"equal tracks pass on the count-based evidence", judgetest.Pass, parity.Pass, false},
		{"a gray twice as slow fails", judgetest.Fail, parity.Fail, false},
		{"no series is no data", judgetest.NoData, parity.NoData, false},
		{"an API error is an error verdict and an error", judgetest.Error, parity.Error, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prom := judgetest.NewProm(t, tc.mode)
			j := newJudge(t, prom)
			req := judge.Request{Namespace: "shop", MatchLabels: map[string]string{"job": "poolparity"}, SLIs: []catalogID{"latency-p99"}, Since: start, Window: "5m"}
			res, err := j.Evaluate(context.Background(), req)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if err != nil && errors.Is(err, judge.ErrInvalid) {
				t.Fatalf("a failed read is not an invalid request: %v", err)
			}
			if res.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s; reasons %v", res.Verdict, tc.want, res.Reasons)
			}
			if tc.mode != judgetest.Error && len(res.Report.Rows) == 0 {
				t.Fatal("the report has no parity table")
			}
			// A request naming no mode is judged by DefaultMode, the count-based test, on the raw counters.
			if tc.mode == judgetest.Pass || tc.mode == judgetest.Fail {
				if res.Report.Gate != parity.GateCounts {
					t.Errorf("gate %q, want %q (judge.DefaultMode)", res.Report.Gate, parity.GateCounts)
				}
				for _, row := range res.Report.Rows {
					if row.Test == nil || !row.Test.Counts {
						t.Errorf("%s: test %+v, want the count-based test's", row.SLI, row.Test)
					}
				}
			}
			if !tc.err && !res.Since.Equal(start) {
				t.Errorf("the evidence starts at %v, want the rollout's start %v", res.Since, start)
			}
			for _, q := range prom.Sent() {
				if !strings.Contains(q, `namespace="shop"`) {
					t.Errorf("query %q is not pinned to the namespace", q)
				}
			}
			if _, err := res.ReportJSON(); err != nil {
				t.Errorf("ReportJSON: %v", err)
			}
		})
	}
}

type catalogID = catalog.ID

// TestEvaluateSampling: a step and a sample family reach the evaluator,
// whose windowed test (which samples rules, where the default count-based
// test reads raw counters) samples the 20s rules.
func TestEvaluateSampling(t *testing.T) {
	prom := judgetest.NewProm(t, judgetest.Pass)
	req := judge.Request{Namespace: "shop", MatchLabels: map[string]string{"job": "poolparity"}, SLIs: []catalogID{"heap-alloc-per-request"},
		Mode: parity.StatConfirm, Since: time.Now().Add(-10 * time.Minute), Step: 20 * time.Second, Sample: "20s"}
	res, err := newJudge(t, prom).Evaluate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict == parity.Error {
		t.Fatalf("verdict ERROR: %v", res.Reasons)
	}
	var sampled bool
	for _, q := range prom.Sent() {
		sampled = sampled || strings.HasPrefix(q, "job_gray_status:go_gc_heap_allocs_bytes_per_request:ratio_rate20s{")
	}
	if !sampled {
		t.Errorf("no query read the 20s family: %q", prom.Sent())
	}
}

func TestEvaluateRefuses(t *testing.T) {
	prom := judgetest.NewProm(t, judgetest.Pass)
	for _, tc := range []struct {
		name string
		req  judge.Request
		want string
	}{
		{"a request without a namespace", judge.Request{}, "namespace: required"},
		{"a namespace that is not a name", judge.Request{Namespace: "Shop_1"}, "namespace"},
		{"a selector naming another namespace", judge.Request{Namespace: "shop", MatchLabels: map[string]string{"namespace": "bank"}}, "not the request's namespace"},
		{"a selector key that is not a label name", judge.Request{Namespace: "shop", MatchLabels: map[string]string{"a-b": "x"}}, "selector"},
		{"an unknown SLI", judge.Request{Namespace: "shop", SLIs: []catalogID{"nope"}}, "slis"},
		{"an unknown mode", judge.Request{Namespace: "shop", Mode: "Maybe"}, "mode"},
		{"a start in the future", judge.Request{Namespace: "shop", Since: time.Now().Add(time.Hour)}, "future"},
		{"a step shorter than the sampled rules' range", judge.Request{Namespace: "shop", Step: 20 * time.Second}, "samples of a 1m rate taken every 20s overlap"},
		{"a sample family longer than the step", judge.Request{Namespace: "shop", Step: 30 * time.Second, Sample: "1m"}, "overlap"},
		{"an endpoint the admin did not allow", judge.Request{Namespace: "shop", Prometheus: "http://elsewhere:9090"}, "not an allowed Prometheus endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(prom.Sent())
			_, err := newJudge(t, prom).Evaluate(context.Background(), tc.req)
			if !errors.Is(err, judge.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid mentioning %q", err, tc.want)
			}
			if n := len(prom.Sent()); n != before {
				t.Errorf("a refused request sent %d queries", n-before)
			}
		})
	}
	t.Run("a judge without endpoints refuses", func(t *testing.T) {
		_, err := (&judge.Judge{}).Evaluate(context.Background(), judge.Request{Namespace: "shop"})
		if !errors.Is(err, judge.ErrInvalid) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestStarts(t *testing.T) {
	s := judge.NewStarts(2)
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	if got := s.Since("a", t0); !got.Equal(t0) {
		t.Fatalf("first call: %v", got)
	}
	if got := s.Since("a", t0.Add(time.Minute)); !got.Equal(t0) {
		t.Fatalf("a later call moved the start to %v", got)
	}
	s.Since("b", t0.Add(2*time.Minute))
	s.Since("c", t0.Add(3*time.Minute))
	if s.Len() != 2 {
		t.Fatalf("remembers %d, want at most 2", s.Len())
	}
	if got := s.Since("a", t0.Add(4*time.Minute)); !got.Equal(t0.Add(4 * time.Minute)) {
		t.Fatalf("the oldest start was not forgotten: %v", got)
	}
}

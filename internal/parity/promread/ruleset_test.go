package promread_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/poolparity/poolparity/internal/parity/promread"
)

// sharedRuleList is the rules API's answer of a shared Prometheus that has loaded the chart's
// rules (deploy/prometheus/poolparity.rules.yml) for installs installs, each group named
// apart, every alerting rule with alerts pending alert instances (as a quiet shared cluster has);
// with exclude_alerts=true it leaves the instances out, as Prometheus 2.54 and later do.
func sharedRuleList(t testing.TB, installs, alerts int) func(excludeAlerts bool) []byte {
	t.Helper()
	rf, errs := rulefmt.ParseFile("../../../deploy/prometheus/poolparity.rules.yml", false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return func(exclude bool) []byte {
		var groups []map[string]any
		for i := range installs {
			for _, g := range rf.Groups {
				var rules []map[string]any
				for _, r := range g.Rules {
					rule := map[string]any{"name": r.Record, "query": r.Expr, "health": "ok", "type": "recording", "labels": r.Labels}
					if r.Alert != "" {
						rule = map[string]any{"name": r.Alert, "query": r.Expr, "health": "ok", "type": "alerting", "state": "pending",
							"labels": r.Labels, "annotations": r.Annotations, "duration": 60}
						if !exclude {
							var inst []map[string]any
							for a := range alerts {
								inst = append(inst, map[string]any{"labels": map[string]string{"alertname": r.Alert, "namespace": fmt.Sprintf("ns-%d", i), "pod": fmt.Sprintf("pod-%d", a)},
									"annotations": r.Annotations, "state": "pending", "activeAt": "2026-12-07T19:00:00Z", "value": "1e+00"})
							}
							rule["alerts"] = inst
						}
					}
					rules = append(rules, rule)
				}
				groups = append(groups, map[string]any{"name": fmt.Sprintf("%s-%d", g.Name, i), "file": fmt.Sprintf("/etc/rules/install-%d.yml", i),
					"interval": time.Duration(g.Interval).Seconds(), "rules": rules})
			}
		}
		b, err := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"groups": groups}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// ruleServer serves a rule list and counts the requests to /api/v1/rules, and those that asked
// to exclude the alerts.
type ruleServer struct {
	srv            *httptest.Server
	reads, exclude atomic.Int32
}

func newRuleServer(t testing.TB, body func(excludeAlerts bool) []byte) *ruleServer {
	t.Helper()
	full, lean := body(false), body(true)
	s := &ruleServer{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/rules" {
			http.NotFound(w, r)
			return
		}
		s.reads.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("exclude_alerts") == "true" {
			s.exclude.Add(1)
			_, _ = w.Write(lean)
			return
		}
		_, _ = w.Write(full)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// TestRuleSetFromASharedPrometheus: Clients read an endpoint's rule list once per RulesTTL
// for every canary, without the alert instances, streamed group by group past the answer cap
// of the queries (300 installs' rules: 11 MB), and find what the client_golang path finds in
// the whole list.
func TestRuleSetFromASharedPrometheus(t *testing.T) {
	t.Run("300 installs, 100 canaries at once", func(t *testing.T) {
		body := sharedRuleList(t, 300, 2)
		if n := len(body(true)); n <= promread.DefaultMaxResponseBytes {
			t.Fatalf("the list of 300 installs is %d bytes, want more than the 8 MiB answer cap", n)
		}
		s := newRuleServer(t, body)
		c, err := promread.NewClients([]string{s.srv.URL}, false, promread.ClientConfig{})
		if err != nil {
			t.Fatal(err)
		}
		q, _, err := c.For(s.srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 100)
		for i := range 100 {
			pinned, err := promread.Pin(q, "namespace", fmt.Sprintf("ns-%d", i))
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				var loaded map[string]time.Duration
				if loaded, errs[i] = promread.LoadedRules(context.Background(), pinned); errs[i] == nil && len(loaded) < 50 {
					errs[i] = fmt.Errorf("%d recording rules", len(loaded))
				}
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("canary %d: %v", i, err)
			}
		}
		if n, ex := s.reads.Load(), s.exclude.Load(); n != 1 || ex != 1 {
			t.Errorf("%d rule list reads for 100 canaries (%d excluding alerts), want 1 (1)", n, ex)
		}
	})

	t.Run("the same rule set as the whole list, read anew after the TTL", func(t *testing.T) {
		s := newRuleServer(t, sharedRuleList(t, 3, 2))
		const ttl = time.Second
		c, err := promread.NewClients([]string{s.srv.URL}, false, promread.ClientConfig{RulesTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		q, _, err := c.For(s.srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		whole, err := promread.New(s.srv.URL, promread.ClientConfig{})
		if err != nil {
			t.Fatal(err)
		}
		got, gotReads := readRules(t, q)
		want, wantReads := readRules(t, whole)
		if len(want) < 50 || !reflect.DeepEqual(got, want) {
			t.Errorf("the cached rule set has %d recording rules, the whole list %d; equal %t", len(got), len(want), reflect.DeepEqual(got, want))
		}
		if len(gotReads.Alerts) == 0 || !reflect.DeepEqual(gotReads, wantReads) {
			t.Errorf("rule reads differ: %d records, %d alerts cached; %d, %d whole", len(gotReads.Records), len(gotReads.Alerts), len(wantReads.Records), len(wantReads.Alerts))
		}
		if n := s.exclude.Load(); n != 1 {
			t.Errorf("%d rule list reads within the TTL, want 1", n)
		}
		time.Sleep(ttl)
		if _, err := promread.LoadedRules(context.Background(), q); err != nil {
			t.Fatal(err)
		}
		if n := s.exclude.Load(); n != 2 {
			t.Errorf("%d rule list reads after the TTL, want 2", n)
		}
	})
}

// TestRuleListRefused: a rule list that is no rule list is an error naming what is wrong, and
// the error is kept for the TTL: every canary of the endpoint gets it without another read.
func TestRuleListRefused(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"not JSON", `<html>`, "decoding the rule list"},
		{"cut short", `{"status":"success","data":{"groups":[{"name":"a","rules":[`, "decoding the rule list"},
		{"no groups", `{"status":"success","data":{}}`, "no data.groups"},
		{"an error status", `{"status":"error","errorType":"bad_data","error":"no\u0000way","data":{"groups":[]}}`, "no way"},
		{"a group that is no object", `{"status":"success","data":{"groups":[1]}}`, "decoding the rule list"},
		{"a query's answer", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`, "not a rule list: data.resultType"},
		{"a huge unknown field", `{"status":"success","x":[` + strings.Repeat(`1,`, 200_000) + `1],"data":{"groups":[]}}`, "more than 100000 tokens"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var reads atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reads.Add(1)
				fmt.Fprint(w, tc.body)
			}))
			t.Cleanup(srv.Close)
			c, err := promread.NewClients([]string{srv.URL}, false, promread.ClientConfig{})
			if err != nil {
				t.Fatal(err)
			}
			q, _, err := c.For(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				_, err := promread.LoadedRules(context.Background(), q)
				if err == nil || !strings.Contains(err.Error(), tc.want) || (i == 1) != strings.Contains(err.Error(), "kept from") {
					t.Errorf("call %d: got %v, want an error containing %q (kept on the second call)", i, err, tc.want)
				}
			}
			if reads.Load() != 1 {
				t.Errorf("%d reads for two calls, want 1: the refusal is kept for the TTL", reads.Load())
			}
		})
	}
}

// BenchmarkRuleSet300Installs reads the rule list of a Prometheus shared by 300 installs of
// the chart's rules (2 pending alert instances per alerting rule) as the judge did before
// (client_golang's Rules, the whole list with its alerts, then LoadedRules' and
// ReadRuleReads' walks) and as Clients read it now (exclude_alerts, streamed, one RuleSet),
// side by side in one run: compare B/op and ns/op with benchstat.
func BenchmarkRuleSet300Installs(b *testing.B) {
	s := newRuleServer(b, sharedRuleList(b, 300, 2))
	b.Run("path=client_golang", func(b *testing.B) {
		q, err := promread.New(s.srv.URL, promread.ClientConfig{MaxResponseBytes: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := promread.LoadedRules(context.Background(), q); err != nil {
				b.Fatal(err)
			}
			if _, err := promread.ReadRuleReads(context.Background(), q); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("path=clients", func(b *testing.B) {
		c, err := promread.NewClients([]string{s.srv.URL}, false, promread.ClientConfig{RulesTTL: time.Nanosecond})
		if err != nil {
			b.Fatal(err)
		}
		q, _, err := c.For(s.srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := promread.LoadedRules(context.Background(), q); err != nil {
				b.Fatal(err)
			}
			time.Sleep(time.Microsecond) // past the TTL: the second walk reads the list again
			if _, err := promread.ReadRuleReads(context.Background(), q); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// readRules reads the loaded rules and what they read through q.
func readRules(t *testing.T, q promread.Querier) (map[string]time.Duration, promread.RuleReads) {
	t.Helper()
	loaded, err := promread.LoadedRules(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	reads, err := promread.ReadRuleReads(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return loaded, reads
}

// TestRuleSetServedWhileARefreshRuns: once the TTL has passed, the caller that reads the list
// anew waits for it, and every other caller meanwhile gets the last list at once (a shared
// Prometheus' list can take seconds).
func TestRuleSetServedWhileARefreshRuns(t *testing.T) {
	body := sharedRuleList(t, 2, 0)(true)
	var reads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reads.Add(1) > 1 {
			time.Sleep(800 * time.Millisecond)
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	c, err := promread.NewClients([]string{srv.URL}, false, promread.ClientConfig{RulesTTL: 200 * time.Millisecond, StallAfter: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	q, _, err := c.For(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := promread.LoadedRules(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond)
	var wg sync.WaitGroup
	var refreshErr error
	wg.Go(func() { _, refreshErr = promread.LoadedRules(context.Background(), q) })
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	loaded, err := promread.LoadedRules(context.Background(), q)
	if took := time.Since(start); err != nil || len(loaded) < 50 || took > 300*time.Millisecond {
		t.Errorf("a caller during the refresh: %d rules, %v, after %s; want the last list at once", len(loaded), err, took)
	}
	wg.Wait()
	if refreshErr != nil || reads.Load() != 2 {
		t.Errorf("the refresh: %v, %d reads in all; want it read, 2 reads", refreshErr, reads.Load())
	}
}

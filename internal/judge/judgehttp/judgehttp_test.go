package judgehttp_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/poolparity/poolparity/internal/judge"
	"github.com/poolparity/poolparity/internal/judge/judgehttp"
	"github.com/poolparity/poolparity/internal/judge/judgetest"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// newServer returns the judge's handler reading only prom, answering for
// the namespace shop only, and its registry.
func newServer(t *testing.T, prom *judgetest.Prom) (*judgehttp.Server, *prometheus.Registry) {
	t.Helper()
	return newServerFor(t, prom, "shop")
}

// newServerFor is newServer answering for the namespaces of list.
func newServerFor(t *testing.T, prom *judgetest.Prom, list string) (*judgehttp.Server, *prometheus.Registry) {
	t.Helper()
	allow, err := judge.ParseNamespaces(list)
	if err != nil {
		t.Fatal(err)
	}
	var clients *promread.Clients
	if prom != nil {
		var err error
		if clients, err = promread.NewClients([]string{prom.URL}, false, promread.ClientConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	s, err := judgehttp.New(&judge.Judge{Clients: clients, Timeout: 5 * time.Second}, allow, nil, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	return s, reg
}

// flaggerBody is Flagger's payload for the canary podinfo in shop, started 40 minutes ago.
func flaggerBody(meta map[string]string) string { return flaggerBodyIn("shop", meta) }

// flaggerBodyIn is flaggerBody for the canary podinfo in namespace ns.
func flaggerBodyIn(ns string, meta map[string]string) string {
	if meta == nil {
		meta = map[string]string{"selector": "job=poolparity", "slis": "latency-p99", "since": time.Now().Add(-40 * time.Minute).UTC().Format(time.RFC3339)}
	}
	b, _ := json.Marshal(map[string]any{"name": "podinfo", "namespace": ns, "phase": "Progressing", "checksum": "6c7b9d", "metadata": meta})
	return string(b)
}

func do(t *testing.T, h http.Handler, method, target, body string) (*http.Response, judgehttp.Answer, map[string]string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, strings.NewReader(body)))
	resp := rec.Result()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var ans judgehttp.Answer
	var errBody map[string]string
	if resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusRequestEntityTooLarge {
		if err := json.Unmarshal(rec.Body.Bytes(), &errBody); err != nil || errBody["error"] == "" {
			t.Fatalf("a refusal without a JSON error: %s", rec.Body)
		}
		return resp, ans, errBody
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil {
		t.Fatalf("answer %s: %v", rec.Body, err)
	}
	return resp, ans, nil
}

func TestFlaggerHooks(t *testing.T) {
	for _, tc := range []struct {
		name          string
		mode          judgetest.Mode
		hook          string
		status        int
		verdict       string
		proceed, rows bool
	}{
		{"a PASS lets the rollout step go on", judgetest.Pass, "rollout", 200, "PASS", true, true},
		{"a PASS confirms the promotion", judgetest.Pass, "confirm-promotion", 200, "PASS", true, true},
		{"a FAIL counts a failed check", judgetest.Fail, "rollout", 412, "FAIL", false, true},
		{"a FAIL holds the promotion", judgetest.Fail, "confirm-promotion", 412, "FAIL", false, true},
		{"NO DATA lets the rollout step go on, counting nothing", judgetest.NoData, "rollout", 200, "NO DATA", true, true},
		{"NO DATA holds the promotion", judgetest.NoData, "confirm-promotion", 425, "NO DATA", false, true},
		{"an unreadable Prometheus is 503 on a rollout hook", judgetest.Error, "rollout", 503, "ERROR", false, false},
		{"an unreadable Prometheus is 503 on a promotion hook", judgetest.Error, "confirm-promotion", 503, "ERROR", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prom := judgetest.NewProm(t, tc.mode)
			s, reg := newServer(t, prom)
			resp, ans, _ := do(t, s, http.MethodPost, "/flagger/"+tc.hook, flaggerBody(nil))
			if resp.StatusCode != tc.status || string(ans.Verdict) != tc.verdict || ans.Proceed != tc.proceed {
				t.Fatalf("status %d verdict %s proceed %v, want %d %s %v (reasons %v)", resp.StatusCode, ans.Verdict, ans.Proceed, tc.status, tc.verdict, tc.proceed, ans.Reasons)
			}
			if tc.rows && !strings.Contains(string(ans.Report), `"rows":[{`) {
				t.Errorf("the answer has no parity table: %s", ans.Report)
			}
			if ans.Namespace != "shop" || ans.Name != "podinfo" {
				t.Errorf("answer names %s/%s", ans.Namespace, ans.Name)
			}
			for _, q := range prom.Sent() {
				if !strings.Contains(q, `namespace="shop"`) {
					t.Errorf("query %q is not pinned to the canary's namespace", q)
				}
			}
			hook := "flagger-" + tc.hook
			if got := requests(t, reg, hook, tc.verdict); got != 1 {
				t.Errorf("requests_total{hook=%q,verdict=%q} = %v", hook, tc.verdict, got)
			}
		})
	}
}

// requests returns the judge's request count of hook and verdict, gathered from reg.
func requests(t *testing.T, reg *prometheus.Registry, hook, verdict string) float64 {
	t.Helper()
	return counter(t, reg, "poolparity_judge_requests_total", "verdict", hook, verdict)
}

// refusals returns the judge's refusal count of hook and reason, gathered from reg.
func refusals(t *testing.T, reg *prometheus.Registry, hook, reason string) float64 {
	t.Helper()
	return counter(t, reg, "poolparity_judge_refusals_total", "reason", hook, reason)
}

// counter returns the value of the counter metric{hook, key=value} gathered from reg, 0 if
// absent.
func counter(t *testing.T, reg *prometheus.Registry, metric, key, hook, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["hook"] == hook && l[key] == value {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestFlaggerStartsAtTheFirstCall(t *testing.T) {
	prom := judgetest.NewProm(t, judgetest.NoData)
	s, _ := newServer(t, prom)
	meta := map[string]string{"slis": "latency-p99"}
	_, first, _ := do(t, s, http.MethodPost, "/flagger/rollout", flaggerBody(meta))
	time.Sleep(10 * time.Millisecond)
	_, second, _ := do(t, s, http.MethodPost, "/flagger/rollout", flaggerBody(meta))
	if first.Since.IsZero() || !second.Since.Equal(first.Since) {
		t.Fatalf("the evidence of one revision starts at %v, then at %v", first.Since, second.Since)
	}
}

func TestRefusals(t *testing.T) {
	prom := judgetest.NewProm(t, judgetest.Pass)
	s, reg := newServer(t, prom)
	for _, tc := range []struct {
		name, method, target, body string
		status                     int
		want                       string
	}{
		{"a GET on a Flagger hook", http.MethodGet, "/flagger/rollout", "", 405, "POST"},
		{"a body that is not JSON", http.MethodPost, "/flagger/rollout", "name=x", 400, "not Flagger's webhook payload"},
		{"two JSON values", http.MethodPost, "/flagger/rollout", flaggerBody(nil) + "{}", 400, "more than one"},
		{"a payload without a namespace", http.MethodPost, "/flagger/rollout", `{"name":"a"}`, 400, "namespace"},
		{"a payload without a name", http.MethodPost, "/flagger/rollout", `{"namespace":"shop"}`, 400, "name"},
		{"metadata with an unknown key", http.MethodPost, "/flagger/rollout", flaggerBody(map[string]string{"threshold": "5"}), 400, "unknown parameter"},
		{"a selector naming another namespace", http.MethodPost, "/flagger/confirm-promotion", flaggerBody(map[string]string{"selector": "namespace=bank"}), 400, "not the request's namespace"},
		{"a Prometheus the admin did not allow", http.MethodPost, "/flagger/rollout", flaggerBody(map[string]string{"prometheus": "http://evil:9090"}), 400, "not an allowed"},
		{"a body over the cap", http.MethodPost, "/flagger/rollout", `{"name":"` + strings.Repeat("a", judgehttp.MaxBodyBytes) + `"}`, 413, "at most"},
		{"an Argo query without a namespace", http.MethodGet, "/argo?run=r1", "", 400, "namespace"},
		{"an Argo sequential query without since or run", http.MethodGet, "/argo?namespace=shop", "", 400, "needs since"},
		{"an Argo parameter given twice", http.MethodGet, "/argo?namespace=shop&run=a&run=b", "", 400, "given 2 times"},
		{"an Argo POST that is not a JSON object of strings", http.MethodPost, "/argo", `{"namespace":1}`, 400, "JSON object of strings"},
		{"an Argo DELETE", http.MethodDelete, "/argo", "", 405, "GET or POST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(prom.Sent())
			resp, _, errBody := do(t, s, tc.method, tc.target, tc.body)
			if resp.StatusCode != tc.status || !strings.Contains(errBody["error"], tc.want) {
				t.Fatalf("status %d %q, want %d mentioning %q", resp.StatusCode, errBody["error"], tc.status, tc.want)
			}
			if len(prom.Sent()) != before {
				t.Error("a refused request read Prometheus")
			}
		})
	}
	if got := requests(t, reg, "flagger-rollout", "invalid"); got < 1 {
		t.Errorf("refusals are not counted: %v", got)
	}
	for reason, want := range map[string]float64{judgehttp.RefusedInvalid: 6, judgehttp.RefusedMethod: 1, judgehttp.RefusedTooLarge: 1, judgehttp.RefusedNamespace: 0} {
		if got := refusals(t, reg, "flagger-rollout", reason); got != want {
			t.Errorf("refusals_total{hook=flagger-rollout,reason=%q} = %v, want %v", reason, got, want)
		}
	}
}

// TestNamespaceAllowList: the judge cannot tell who calls it, so it answers only for the
// namespaces it is given. A request for another is a 403 naming the namespace, counted by
// reason, and reads nothing.
func TestNamespaceAllowList(t *testing.T) {
	since := url.QueryEscape(time.Now().Add(-40 * time.Minute).UTC().Format(time.RFC3339))
	for _, tc := range []struct {
		name, allow    string
		method, target string
		body           string
		hook           string
		refused        bool
	}{
		{"a Flagger rollout hook for an unlisted namespace", "shop", http.MethodPost, "/flagger/rollout", flaggerBodyIn("bank", nil), judgehttp.HookRollout, true},
		{"a Flagger promotion hook for an unlisted namespace", "shop", http.MethodPost, "/flagger/confirm-promotion", flaggerBodyIn("bank", nil), judgehttp.HookConfirmPromotion, true},
		{"an Argo GET for an unlisted namespace", "shop", http.MethodGet, "/argo?namespace=bank&slis=latency-p99&since=" + since, "", judgehttp.HookArgo, true},
		{"an Argo POST for an unlisted namespace", "shop", http.MethodPost, "/argo", `{"namespace":"bank","run":"r1","slis":"latency-p99"}`, judgehttp.HookArgo, true},
		{"an Argo POST with the namespace in its query", "shop", http.MethodPost, "/argo?namespace=bank", `{"run":"r1","slis":"latency-p99"}`, judgehttp.HookArgo, true},
		{"a namespace that only prefixes a listed one", "shop", http.MethodPost, "/flagger/rollout", flaggerBodyIn("sho", nil), judgehttp.HookRollout, true},
		{"a second listed namespace is answered", "shop, bank", http.MethodPost, "/flagger/rollout", flaggerBodyIn("bank", nil), judgehttp.HookRollout, false},
		{"every namespace is answered when the list is *", "*", http.MethodGet, "/argo?namespace=bank&slis=latency-p99&since=" + since, "", judgehttp.HookArgo, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prom := judgetest.NewProm(t, judgetest.Pass)
			s, reg := newServerFor(t, prom, tc.allow)
			resp, ans, errBody := do(t, s, tc.method, tc.target, tc.body)
			if !tc.refused {
				if resp.StatusCode != http.StatusOK || ans.Verdict != "PASS" || ans.Namespace != "bank" {
					t.Fatalf("status %d verdict %q namespace %q, want 200 PASS for bank (%v)", resp.StatusCode, ans.Verdict, ans.Namespace, ans.Reasons)
				}
				for _, q := range prom.Sent() {
					if !strings.Contains(q, `namespace="bank"`) {
						t.Errorf("query %q is not pinned to bank", q)
					}
				}
				return
			}
			ns := errBody["namespace"]
			if resp.StatusCode != http.StatusForbidden || ns == "" || ns == "shop" || !strings.Contains(errBody["error"], `namespace "`+ns+`"`) {
				t.Fatalf("status %d body %v, want 403 naming the refused namespace", resp.StatusCode, errBody)
			}
			if strings.Contains(errBody["error"], "shop") {
				t.Errorf("the refusal tells an unknown caller the allowed namespaces: %q", errBody["error"])
			}
			if n := len(prom.Sent()); n != 0 {
				t.Errorf("a refused namespace sent %d queries", n)
			}
			if got := refusals(t, reg, tc.hook, judgehttp.RefusedNamespace); got != 1 {
				t.Errorf("refusals_total{hook=%q,reason=namespace} = %v, want 1", tc.hook, got)
			}
			if got := requests(t, reg, tc.hook, "invalid"); got != 1 {
				t.Errorf("requests_total{hook=%q,verdict=invalid} = %v, want 1", tc.hook, got)
			}
		})
	}
	t.Run("the zero allow-list refuses every namespace", func(t *testing.T) {
		s, err := judgehttp.New(&judge.Judge{}, judge.Namespaces{}, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, _, errBody := do(t, s, http.MethodPost, "/flagger/rollout", flaggerBody(nil))
		if resp.StatusCode != http.StatusForbidden || errBody["namespace"] != "shop" {
			t.Fatalf("status %d body %v, want 403 for shop", resp.StatusCode, errBody)
		}
	})
}

func TestArgo(t *testing.T) {
	since := url.QueryEscape(time.Now().Add(-40 * time.Minute).UTC().Format(time.RFC3339))
	for _, tc := range []struct {
		name           string
		mode           judgetest.Mode
		method, target string
		body           string
		status         int
		phase          string
	}{
		{"GET: a PASS is Successful", judgetest.Pass, http.MethodGet, "/argo?namespace=shop&slis=latency-p99&since=" + since, "", 200, "Successful"},
		{"GET: a FAIL is Failed, still 200", judgetest.Fail, http.MethodGet, "/argo?namespace=shop&slis=latency-p99&since=" + since, "", 200, "Failed"},
		// A run seen for the first time starts now: younger than one step of the count rules, it has no evidence yet.
		{"GET: a run first seen is Inconclusive, even over the thresholds", judgetest.Fail, http.MethodGet, "/argo?namespace=shop&slis=latency-p99&run=r1", "", 200, "Inconclusive"},
		{"POST: NO DATA is Inconclusive", judgetest.NoData, http.MethodPost, "/argo", `{"namespace":"shop","run":"podinfo-6c7b9d","selector":"job=poolparity"}`, 200, "Inconclusive"},
		{"an unreadable Prometheus is 503, an Error", judgetest.Error, http.MethodGet, "/argo?namespace=shop&run=r1", "", 503, "Error"},
		{"the Confirm mode needs no start", judgetest.Pass, http.MethodGet, "/argo?namespace=shop&slis=latency-p99&mode=Confirm", "", 200, "Successful"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newServer(t, judgetest.NewProm(t, tc.mode))
			resp, ans, _ := do(t, s, tc.method, tc.target, tc.body)
			if resp.StatusCode != tc.status || ans.Phase != tc.phase {
				t.Fatalf("status %d phase %s, want %d %s (reasons %v)", resp.StatusCode, ans.Phase, tc.status, tc.phase, ans.Reasons)
			}
		})
	}
}

// FuzzFlagger: no body makes the handler panic or answer anything but JSON
// with a 4xx (a judge without endpoints refuses every parsed request).
func FuzzFlagger(f *testing.F) {
	f.Add(flaggerBody(nil))
	f.Add(`{"name":"a","namespace":"b","metadata":{"selector":"a=\"b"}}`)
	f.Add(`{"name":"a","namespace":"b","metadata":null}`)
	f.Add(`[]`)
	s := refusingServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/flagger/rollout", strings.NewReader(body)))
		if rec.Code/100 != 4 || !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("status %d body %q", rec.Code, rec.Body)
		}
	})
}

// FuzzArgo: likewise for the web provider's query.
func FuzzArgo(f *testing.F) {
	f.Add("namespace=shop&run=a&selector=app%3Dx")
	f.Add("namespace=shop&since=2026-01-01T00:00:00Z&mode=Counts")
	f.Add("%zz")
	s := refusingServer(f)
	f.Fuzz(func(t *testing.T, query string) {
		req := httptest.NewRequest(http.MethodGet, "/argo", nil)
		req.URL.RawQuery = query
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code/100 != 4 || !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("status %d body %q", rec.Code, rec.Body)
		}
	})
}

// refusingServer is the handler of a judge without endpoints, answering
// for every namespace: every request it parses is refused without a read.
func refusingServer(f *testing.F) *judgehttp.Server {
	f.Helper()
	all, err := judge.ParseNamespaces(judge.AllNamespaces)
	if err != nil {
		f.Fatal(err)
	}
	s, err := judgehttp.New(&judge.Judge{}, all, nil, nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	return s
}

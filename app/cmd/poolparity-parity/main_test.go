package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/parity"
)

// fakeProm answers the parts of the Prometheus HTTP API that the parity
// Checker reads: /api/v1/rules (the recording rules loaded, the alerts and
// their state), /api/v1/query (the recording-rule series, one value per
// query) and /api/v1/query_range (the charts). Like the controller's fake,
// it serves canned values keyed by the rule name before the selector; the
// track is told by gray_status in the query. Safe for concurrent use.
type fakeProm struct {
	srv    *httptest.Server
	window string
	// values maps a rule (or query function) name to its stable and gray
	// values; a job-level parity series uses the gray one.
	values map[string][2]float64
	firing bool // PoolParityLatencyRegression fires (critical)
	// instances are the request rates per gray_status and instance
	// label, for the per-instance rate query of the profiles.
	instances map[string]map[string]float64

	// Garbage a Prometheus (or something posing as one) may answer with:
	// stamp, when set, stamps every sample (instant and range) at that
	// Unix time; warn adds warnings (a partial answer) to every answer.
	stamp float64
	warn  string

	mu    sync.Mutex
	asked []string // every /api/v1/query
}

// at is the time to stamp a sample of now with.
func (f *fakeProm) at(now float64) float64 {
	if f.stamp != 0 {
		return f.stamp + (now - float64(time.Now().Unix()))
	}
	return now
}

func newFakeProm(t *testing.T) *fakeProm {
	t.Helper()
	w := "5m"
	f := &fakeProm{window: w, values: map[string][2]float64{
		"count(syncpool_gets_total":                                               {0, 5}, // stable unpooled, gray pooled
		"job_gray_status:http_requests:rate" + w:                                  {150, 150},
		"job_gray_status:http_request_duration_seconds:p95_rate" + w:              {0.0041, 0.0039},
		"job_gray_status:http_request_duration_seconds:p99_rate" + w:              {0.0092, 0.0088},
		"job_gray_status:http_request_errors:ratio_rate" + w:                      {0, 0},
		"job_gray_status:process_cpu_seconds_per_request:ratio_rate" + w:          {0.000412, 0.000351},
		"job_gray_status:go_gc_heap_allocs_bytes_per_request:ratio_rate" + w:      {61234, 14876},
		"job_gray_status:go_gc_cpu:ratio_rate" + w:                                {0.061, 0.022},
		"sum by (gray_status) (job_gray_status_pool:syncpool_hits:ratio_rate" + w: {0, 0.987},
		"job_gray_status:redis_pool_hits:ratio_rate" + w:                          {0.999, 1},
	}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeProm) queries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

func (f *fakeProm) serve(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var data any
	switch r.URL.Path {
	case "/api/v1/rules":
		data = f.rulesData()
	case "/api/v1/query":
		q := r.Form.Get("query")
		f.mu.Lock()
		f.asked = append(f.asked, q)
		f.mu.Unlock()
		data = map[string]any{"resultType": "vector", "result": f.vector(q)}
	case "/api/v1/query_range":
		data = map[string]any{"resultType": "matrix", "result": f.matrix(r.Form.Get("query"))}
	default:
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "error", "errorType": "not_found", "error": "not found"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	env := map[string]any{"status": "success", "data": data}
	if f.warn != "" {
		env["warnings"] = []string{f.warn}
	}
	_ = json.NewEncoder(w).Encode(env)
}

// matrix answers a range query: a series per track over the last ten minutes, every 20 s,
// at the track's value, for a rule with values; else one series for the charts.
func (f *fakeProm) matrix(q string) []any {
	now := float64(time.Now().Unix())
	name, _, _ := strings.Cut(q, "{")
	v, ok := f.values[name]
	if !ok || strings.Contains(q, "gray_status=") {
		return []any{map[string]any{
			"metric": map[string]string{},
			"values": [][2]any{{f.at(now - 60), "0.004"}, {f.at(now - 30), "0.005"}, {f.at(now), "0.004"}},
		}}
	}
	var out []any
	for i, gs := range []string{"false", "true"} {
		var pts [][2]any
		for t := now - 600; t <= now; t += 20 {
			pts = append(pts, [2]any{f.at(t), fmt.Sprint(v[i])})
		}
		out = append(out, map[string]any{"metric": map[string]string{"job": "poolparity", "gray_status": gs}, "values": pts})
	}
	return out
}

// vector answers an instant query: one sample per track (gray_status) for a query of both
// tracks, one sample for a query naming a track, or none.
func (f *fakeProm) vector(q string) []any {
	name, _, _ := strings.Cut(q, "{")
	if name == "sum by (gray_status, instance) (rate(http_requests_total" {
		var out []any
		for gs, byInst := range f.instances {
			for inst, v := range byInst {
				out = append(out, map[string]any{"metric": map[string]string{"gray_status": gs, "instance": inst}, "value": [2]any{f.at(float64(time.Now().Unix())), fmt.Sprint(v)}})
			}
		}
		return out
	}
	v, ok := f.values[name]
	if !ok {
		return []any{}
	}
	now := f.at(float64(time.Now().Unix()))
	if !strings.Contains(q, "gray_status=") {
		var out []any
		for i, gs := range []string{"false", "true"} {
			if strings.HasPrefix(name, "sum by") && v[i] == 0 {
				continue // an unpooled track has no pool series
			}
			out = append(out, map[string]any{"metric": map[string]string{"job": "poolparity", "gray_status": gs}, "value": [2]any{now, fmt.Sprint(v[i])}})
		}
		return out
	}
	val := v[1]
	if strings.Contains(q, `gray_status="false"`) {
		val = v[0]
	}
	if strings.HasPrefix(name, "count(") && val == 0 {
		return []any{} // count() of no series is no series
	}
	return []any{map[string]any{"metric": map[string]string{"job": "poolparity"}, "value": [2]any{now, fmt.Sprint(val)}}}
}

func (f *fakeProm) rulesData() any {
	var recording []any
	for _, n := range []string{
		"job:http_requests:min_track_rate", "job_gray_status:http_requests:rate",
		"job_gray_status:http_request_duration_seconds:p95_rate", "job_gray_status:http_request_duration_seconds:p99_rate",
		"job_gray_status:http_request_errors:ratio_rate", "job_gray_status:process_cpu_seconds_per_request:ratio_rate",
		"job_gray_status:go_gc_heap_allocs_bytes_per_request:ratio_rate", "job_gray_status:go_gc_cpu:ratio_rate",
		"job_gray_status_pool:syncpool_hits:ratio_rate", "job_gray_status_pool:syncpool_gets:rate",
		"job_gray_status:redis_pool_hits:ratio_rate",
	} {
		recording = append(recording, map[string]any{"type": "recording", "name": n + f.window, "query": "vector(1)", "health": "ok"})
	}
	groups := []any{map[string]any{
		"name": "poolparity.rate" + f.window, "file": "poolparity.yaml", "interval": 30, "rules": recording,
	}}
	alerts := []any{}
	if f.firing {
		alerts = append(alerts, map[string]any{
			"labels":      map[string]string{"alertname": "PoolParityLatencyRegression", "severity": "critical", "job": "poolparity"},
			"annotations": map[string]string{"summary": "Gray p99 latency is 556.5% of stable in poolparity."},
			"state":       "firing", "activeAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), "value": "5.565e+00",
		})
	}
	groups = append(groups, map[string]any{
		"name": "poolparity.alerts", "file": "poolparity.yaml", "interval": 30,
		"rules": []any{map[string]any{
			"type": "alerting", "name": "PoolParityLatencyRegression", "query": "vector(1)", "duration": 300,
			"labels": map[string]string{"severity": "critical"}, "annotations": map[string]string{}, "alerts": alerts, "health": "ok",
		}},
	})
	return map[string]any{"groups": groups}
}

func TestRun(t *testing.T) {
	const sel = `namespace="poolparity",job="poolparity"`
	tests := []struct {
		name     string
		setup    func(*fakeProm)
		wantExit int
		wantOut  []string
		args     []string // added to the command line
		wantNot  []string // not in stdout
	}{
		{"a pooled gray track on par with stable passes", func(*fakeProm) {}, parity.ExitPass,
			[]string{"heap alloc per request", "sync.Pool hit ratio", "PASS"}, nil, nil},
		{"a firing latency alert fails", func(f *fakeProm) { f.firing = true }, parity.ExitFail,
			[]string{"PoolParityLatencyRegression", "FAIL"}, nil, nil},
		{"no series is no data", func(f *fakeProm) { f.values = map[string][2]float64{} }, parity.ExitNoData,
			[]string{"latency p99", "NO DATA"}, nil, nil},
		{"-slis judges the listed SLIs only", func(*fakeProm) {}, parity.ExitPass,
			[]string{"error ratio", "PASS"}, []string{"-slis", "latency-p95,error-ratio"}, []string{"heap alloc per request", "sync.Pool hit ratio"}},
		{"-gate thresholds prints the thresholds' measured false-FAIL rate beside the verdict", func(*fakeProm) {}, parity.ExitPass,
			[]string{"verdict gate: the thresholds alone (no error control: at parity they failed " + parity.ThresholdsFalseFail, "PASS"}, []string{"-gate", "thresholds"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeProm(t)
			tt.setup(f)
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			// The thresholds and the per-window test, which the fake Prometheus serves; the
			// default gate's counts rules are TestRunDefaultGate's.
			args := append([]string{"-selector", sel, "-out", out, "-gate", "confirmed"}, tt.args...)
			code := cli.Exit(&stderr, "poolparity-parity", run(context.Background(), args,
				env(map[string]string{"PROMETHEUS_URL": f.srv.URL}), &stdout, &stderr))
			if code != tt.wantExit {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantExit, stdout.String(), stderr.String())
			}
			for _, s := range append([]string{"latency p95", "window 5m"}, tt.wantOut...) {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout does not show %q:\n%s", s, stdout.String())
				}
			}
			for _, s := range tt.wantNot {
				if strings.Contains(stdout.String(), s) {
					t.Errorf("stdout shows %q, which -slis left out:\n%s", s, stdout.String())
				}
			}
			for _, name := range []string{"report.txt", "report.json", "report.html"} {
				if st, err := os.Stat(filepath.Join(out, name)); err != nil || st.Size() == 0 {
					t.Errorf("%s not written: %v", name, err)
				}
			}
			asked := f.queries()
			if len(asked) == 0 {
				t.Fatal("no instant query reached the fake Prometheus")
			}
			for _, q := range asked {
				if !strings.Contains(q, sel) {
					t.Errorf("query %q does not carry the selector", q)
				}
			}
		})
	}
}

// TestRunDefaultGate: the default gate is the count-based test, which reads the
// poolparity.counts rules; a Prometheus without them is exit 4 with one line naming the
// missing rules and the two ways out, never a verdict from the thresholds instead.
func TestRunDefaultGate(t *testing.T) {
	f := newFakeProm(t) // the rate rules and alerts only
	var stdout, stderr bytes.Buffer
	code := cli.Exit(&stderr, "poolparity-parity", run(context.Background(), []string{"-out", t.TempDir()},
		env(map[string]string{"PROMETHEUS_URL": f.srv.URL}), &stdout, &stderr))
	if code != parity.ExitError {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, parity.ExitError, stdout.String(), stderr.String())
	}
	line := strings.TrimSpace(stderr.String())
	for _, want := range []string{"job_gray_status_pod:http_requests:total", "-gate counts", "rules.counts.enabled", "or choose another mode"} {
		if !strings.Contains(line, want) {
			t.Errorf("stderr %q does not say %q", line, want)
		}
	}
	if strings.Count(line, "\n") > 0 || strings.Contains(stdout.String(), "VERDICT") {
		t.Errorf("want one line on stderr and no verdict; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
}

func TestRunErrors(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	tests := []struct {
		name     string
		url      string
		args     []string
		wantExit int
		want     string
	}{
		{"an unreachable Prometheus is one clear line", downURL, nil, parity.ExitError, "poolparity-parity: cannot reach Prometheus at " + downURL + ": "},
		{"a Prometheus without the window's rules says so", "", []string{"-window", "1m"}, parity.ExitError, "lacks poolparity recording rules of this window"},
		{"a URL that is not http is a bad setting", "tcp://127.0.0.1:9090", nil, parity.ExitUsage, "PROMETHEUS_URL must be an http or https URL"},
		{"no URL is a bad setting", "", nil, parity.ExitUsage, "PROMETHEUS_URL is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := tt.url
			if u == "" && tt.args != nil {
				u = newFakeProm(t).srv.URL
			}
			var stdout, stderr bytes.Buffer
			args := append([]string{"-out", t.TempDir()}, tt.args...)
			code := cli.Exit(&stderr, "poolparity-parity", run(context.Background(), args, env(map[string]string{"PROMETHEUS_URL": u}), &stdout, &stderr))
			if code != tt.wantExit {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", code, tt.wantExit, stderr.String())
			}
			msg := strings.TrimSuffix(stderr.String(), "\n")
			if !strings.Contains(msg, tt.want) {
				t.Errorf("stderr %q does not say %q", msg, tt.want)
			}
			if tt.wantExit == parity.ExitError && strings.Contains(msg, "\n") {
				t.Errorf("stderr has more than one line:\n%s", msg)
			}
		})
	}
}

// TestGarbageIsNeverAPass answers the judge with what a broken, stale or hostile Prometheus
// may send. Each case ends NO DATA or ERROR, never PASS; report.json is written whole and
// says the verdict that stdout prints (an ERROR's, that stderr's line gives), and the exit
// status goes with it.
func TestGarbageIsNeverAPass(t *testing.T) {
	const sel = `namespace="poolparity",job="poolparity"`
	w := "5m"
	y2001 := float64(time.Date(2001, 9, 9, 1, 46, 40, 0, time.UTC).Unix())
	set := func(rule string, stable, gray float64) func(*fakeProm) {
		return func(f *fakeProm) { f.values[rule] = [2]float64{stable, gray} }
	}
	inf, nan := math.Inf(1), math.NaN()
	tests := []struct {
		name  string
		setup func(*fakeProm)
		gate  string
		want  string // in the report's reasons or notes
	}{
		{"every sample stamped in 2001 (thresholds)", func(f *fakeProm) { f.stamp = y2001 }, "thresholds", "not this query's answer"},
		{"every sample stamped in 2001 (confirmed)", func(f *fakeProm) { f.stamp = y2001 }, "confirmed", "not this query's answer"},
		{"negative latency with gray twice as bad", set("job_gray_status:http_request_duration_seconds:p99_rate"+w, -0.01, -0.02), "confirmed", "is negative"},
		{"negative CPU with gray twice as bad", set("job_gray_status:process_cpu_seconds_per_request:ratio_rate"+w, -0.0004, -0.0008), "thresholds", "is negative"},
		{"negative heap with gray twice as bad", set("job_gray_status:go_gc_heap_allocs_bytes_per_request:ratio_rate"+w, -60000, -120000), "confirmed", "is negative"},
		{"a partial answer (warnings)", func(f *fakeProm) { f.warn = "query hit the series limit: partial result\x00" }, "confirmed", "may be partial"},
		{"all-zero ratio SLIs", func(f *fakeProm) {
			for _, r := range []string{"http_request_duration_seconds:p95_rate", "http_request_duration_seconds:p99_rate", "process_cpu_seconds_per_request:ratio_rate", "go_gc_heap_allocs_bytes_per_request:ratio_rate"} {
				f.values["job_gray_status:"+r+w] = [2]float64{0, 0}
			}
		}, "confirmed", "ratio of zeros"},
		{"a NaN pool hit ratio", set("sum by (gray_status) (job_gray_status_pool:syncpool_hits:ratio_rate"+w, 0, nan), "thresholds", "is NaN"},
		{"an infinite pool hit ratio", set("sum by (gray_status) (job_gray_status_pool:syncpool_hits:ratio_rate"+w, 0, inf), "confirmed", "is +Inf"},
		{"an infinite CPU per request", set("job_gray_status:process_cpu_seconds_per_request:ratio_rate"+w, 0.0004, inf), "confirmed", "is +Inf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeProm(t)
			tt.setup(f)
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := cli.Exit(&stderr, "poolparity-parity", run(context.Background(), []string{"-selector", sel, "-out", out, "-gate", tt.gate},
				env(map[string]string{"PROMETHEUS_URL": f.srv.URL}), &stdout, &stderr))
			if code == parity.ExitPass || (code != parity.ExitNoData && code != parity.ExitError) {
				t.Fatalf("exit %d, want NO DATA (%d) or ERROR (%d)\nstdout:\n%s\nstderr:\n%s", code, parity.ExitNoData, parity.ExitError, stdout.String(), stderr.String())
			}
			if code == parity.ExitError { // the error on stderr, no verdict printed, the report ERROR
				checkErrorReport(t, out, stderr.String(), stdout.String())
				return
			}
			raw, err := os.ReadFile(filepath.Join(out, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			var rep parity.Report
			if err := json.Unmarshal(raw, &rep); err != nil {
				t.Fatalf("report.json is not whole: %v\n%s", err, raw)
			}
			if rep.Verdict != parity.NoData || parity.ExitStatus(rep.Verdict) != code {
				t.Errorf("report.json says %s, exit %d", rep.Verdict, code)
			}
			if !strings.Contains(stdout.String(), "NO DATA") || strings.Contains(stdout.String(), "verdict: PASS") {
				t.Errorf("stdout does not print NO DATA:\n%s", stdout.String())
			}
			if st, err := os.Stat(filepath.Join(out, "report.html")); err != nil || st.Size() == 0 {
				t.Errorf("report.html not written: %v", err)
			}
			if !strings.Contains(string(raw), tt.want) {
				t.Errorf("report.json does not say %q:\n%s", tt.want, raw)
			}
		})
	}
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestErrorWritesTheReport: every ERROR past the configuration still writes report.txt,
// report.json and report.html (docs/security.md, section 4). Each says verdict ERROR with
// the error's text, the very line on stderr, and keeps the rows judged before the error;
// stdout prints no verdict, and the exit status is ERROR's.
func TestErrorWritesTheReport(t *testing.T) {
	const sel = `namespace="poolparity",job="poolparity"`
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	// fail500 answers the requests that match with Prometheus' error envelope and a 500.
	fail500 := func(match func(path, query string) bool) func(http.ResponseWriter, *http.Request) bool {
		return func(w http.ResponseWriter, r *http.Request) bool {
			if err := r.ParseForm(); err != nil || !match(r.URL.Path, r.Form.Get("query")) {
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"status":"error","errorType":"internal","error":"the TSDB is on fire"}`)
			return true
		}
	}
	tests := []struct {
		name string
		// answer answers a request instead of the fake Prometheus when it returns true.
		answer   func(http.ResponseWriter, *http.Request) bool
		url      string   // instead of the fake Prometheus'
		args     []string // added to the command line, after -gate confirmed
		want     []string // in the line on stderr, the report's reason
		wantRows int      // rows judged before the error, at least
	}{
		{name: "a Prometheus answering 500 to every query", answer: fail500(func(string, string) bool { return true }),
			want: []string{"the TSDB is on fire"}},
		{name: "an unreachable Prometheus (a closed port)", url: downURL,
			want: []string{"cannot reach Prometheus at " + downURL + ": "}},
		{name: "a Prometheus without the window's recording rules", args: []string{"-window", "1m"},
			want: []string{"lacks poolparity recording rules of this window", "-window 1m"}},
		{name: "a Prometheus without the default gate's count rules", args: []string{"-gate", "counts"},
			want: []string{"job_gray_status_pod:http_requests:total", "-gate counts"}},
		{name: "a malformed answer to the queries", answer: func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path != "/api/v1/query" {
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":`)
			return true
		}, want: []string{"reading the parity report from ", "bad_response"}},
		{name: "a query failing midway keeps the rows judged before it", answer: fail500(func(path, q string) bool {
			return path == "/api/v1/query" && strings.HasPrefix(q, "job_gray_status:http_request_duration_seconds:p99_rate")
		}), want: []string{"the TSDB is on fire", "latency p99"}, wantRows: 1},
		{name: "a charts query failing keeps every row", answer: fail500(func(path, _ string) bool {
			return path == "/api/v1/query_range"
		}), want: []string{"the TSDB is on fire"}, wantRows: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeProm(t)
			u := tt.url
			if u == "" {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if tt.answer != nil && tt.answer(w, r) {
						return
					}
					f.serve(w, r)
				}))
				t.Cleanup(srv.Close)
				u = srv.URL
			}
			out := filepath.Join(t.TempDir(), "out") // created by the command
			args := append([]string{"-selector", sel, "-out", out, "-gate", "confirmed"}, tt.args...)
			code, stdout, stderr := runReport(t, u, args)
			if code != parity.ExitError || strings.Count(stderr, "\n") != 1 {
				t.Fatalf("exit %d, want %d with one line on stderr\nstdout:\n%s\nstderr:\n%s", code, parity.ExitError, stdout, stderr)
			}
			msg := errorLine(stderr)
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr %q does not say %q", msg, w)
				}
			}
			rep := checkErrorReport(t, out, stderr, stdout)
			t.Logf("ERROR with %d rows: %s", len(rep.Rows), msg)
			if len(rep.Rows) < tt.wantRows {
				t.Errorf("report.json has %d rows, want at least %d judged before the error", len(rep.Rows), tt.wantRows)
			}
			if tt.wantRows > 0 && !strings.Contains(readOut(t, out, "report.txt"), "latency p95") {
				t.Errorf("report.txt lacks the rows judged before the error:\n%s", readOut(t, out, "report.txt"))
			}
		})
	}
	t.Run("a report file that cannot be written turns a PASS into an ERROR in the others", func(t *testing.T) {
		f := newFakeProm(t)
		out := t.TempDir()
		if err := os.Mkdir(filepath.Join(out, "report.html"), 0o755); err != nil { // not a file: cannot be created
			t.Fatal(err)
		}
		code, stdout, stderr := runReport(t, f.srv.URL, []string{"-selector", sel, "-out", out, "-gate", "confirmed"})
		msg := errorLine(stderr)
		if code != parity.ExitError || !strings.Contains(msg, "report.html") || strings.Contains(stdout, "VERDICT") {
			t.Fatalf("exit %d, stderr %q, want %d naming report.html and no verdict on stdout:\n%s", code, msg, parity.ExitError, stdout)
		}
		for _, name := range []string{"report.txt", "report.json"} {
			if s := readOut(t, out, name); !strings.Contains(s, "ERROR") || !strings.Contains(s, "before the error, the report said PASS") {
				t.Errorf("%s does not say ERROR, with the PASS it had as a note:\n%s", name, s)
			}
		}
		var rep parity.Report
		if err := json.Unmarshal([]byte(readOut(t, out, "report.json")), &rep); err != nil || rep.Verdict != parity.Error ||
			strings.Join(rep.Reasons, "; ") != msg {
			t.Errorf("report.json: verdict %q, reasons %q (%v), want ERROR and %q", rep.Verdict, rep.Reasons, err, msg)
		}
	})
	t.Run("an out dir that cannot be created names both errors on one line", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(out, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runReport(t, downURL, []string{"-out", filepath.Join(out, "out"), "-gate", "confirmed"})
		if code != parity.ExitError || strings.Count(stderr, "\n") != 1 || strings.Contains(stdout, "VERDICT") {
			t.Fatalf("exit %d, want %d, one line on stderr and no verdict\nstdout:\n%s\nstderr:\n%s", code, parity.ExitError, stdout, stderr)
		}
		msg := errorLine(stderr)
		for _, w := range []string{"cannot reach Prometheus at " + downURL, "could not be written", "creating " + filepath.Join(out, "out")} {
			if !strings.Contains(msg, w) {
				t.Errorf("stderr %q does not say %q", msg, w)
			}
		}
	})
	t.Run("a local track refused before any load writes the report too", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out")
		requests := writeFile(t, t.TempDir(), "r.txt", "GET /a\n")
		code, stdout, stderr := runLocalArgs(t, nil, "-stable-cmd", "echo no such build >&2; exit 3", "-gray-url", downURL,
			"-requests", requests, "-out", out, "-prometheus", "/bin/true")
		// The error ends with the command's last log lines, a line each on stderr.
		if code != parity.ExitError || !strings.Contains(stderr, "stable track refused before any load") {
			t.Fatalf("exit %d, stderr %q, want %d naming the refused track", code, stderr, parity.ExitError)
		}
		rep := checkErrorReport(t, out, stderr, stdout)
		if !strings.HasPrefix(rep.Title, "poolparity local: ") {
			t.Errorf("report.json's title %q, want local's", rep.Title)
		}
	})
}

// runReport runs the report command against the Prometheus at promURL and returns its exit
// status, stdout and stderr.
func runReport(t *testing.T, promURL string, args []string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.Exit(&stderr, "poolparity-parity", run(context.Background(), args,
		env(map[string]string{"PROMETHEUS_URL": promURL}), &stdout, &stderr))
	return code, stdout.String(), stderr.String()
}

// errorLine is the error that cli.Exit printed to stderr, on one line: its lines (a joined
// error's, one each) without the command's prefix, separated by "; ".
func errorLine(stderr string) string {
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "poolparity-parity: ")
	}
	return strings.Join(lines, "; ")
}

// checkErrorReport checks an ERROR's report in out against stderr, where the command
// printed its error, and stdout, which prints no verdict: the three files written,
// report.json whole with verdict ERROR and the error as its reason, on one line
// (errorLine), the text and HTML saying the same. It returns report.json's report.
func checkErrorReport(t *testing.T, out, stderr, stdout string) parity.Report {
	t.Helper()
	msg := errorLine(stderr)
	if strings.Contains(stdout, "VERDICT") {
		t.Errorf("stdout prints a verdict on an ERROR:\n%s", stdout)
	}
	var rep parity.Report
	if err := json.Unmarshal([]byte(readOut(t, out, "report.json")), &rep); err != nil {
		t.Fatalf("report.json is not whole: %v", err)
	}
	if rep.Verdict != parity.Error || parity.ExitStatus(rep.Verdict) != parity.ExitError {
		t.Errorf("report.json says %q, want ERROR", rep.Verdict)
	}
	if got := strings.Join(rep.Reasons, "; "); got != msg {
		t.Errorf("report.json's reason %q, want the error on stderr %q", got, msg)
	}
	if s := readOut(t, out, "report.txt"); !strings.Contains(s, "VERDICT: ERROR ("+msg+")") {
		t.Errorf("report.txt does not say VERDICT: ERROR (%s):\n%s", msg, s)
	}
	if s := readOut(t, out, "report.html"); !strings.Contains(s, "VERDICT: ERROR") {
		t.Errorf("report.html does not say VERDICT: ERROR:\n%s", s)
	}
	return rep
}

// readOut returns the file name in out, failing the test when it is missing or empty.
func readOut(t *testing.T, out, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, name))
	if err != nil || len(b) == 0 {
		t.Fatalf("%s not written: %v", name, err)
	}
	return string(b)
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/poolparity/poolparity/internal/cli"
)

// TestRunSendsBoundedLoadAndReportsCounts: the counts, the dropped arrivals and the client-side
// latency, as JSON on stdout and as a line on stderr. As many requests may be in flight as
// the run sends, so that none is dropped on a busy machine.
func TestRunSendsBoundedLoadAndReportsCounts(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	var out, errb bytes.Buffer
	code := cli.Exit(&errb, "poolparity-load", run(context.Background(), []string{"-target", srv.URL, "-duration", "5s", "-max-requests", "20", "-rps", "200", "-concurrency", "20"},
		func(string) string { return "" }, &out, &errb))
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	var st struct {
		Requests, Errors, Arrivals uint64
		Dropped                    *uint64
		Latency                    struct {
			Count uint64
			P50   int64 `json:"p50_ns"`
			P99   int64 `json:"p99_ns"`
			Max   int64 `json:"max_ns"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if st.Requests != 20 || hits.Load() != 20 || st.Errors != 0 || st.Arrivals != 20 {
		t.Errorf("requests %d of %d arrivals (server saw %d), errors %d; want 20, 20, 20, 0", st.Requests, st.Arrivals, hits.Load(), st.Errors)
	}
	if st.Dropped == nil || *st.Dropped != 0 {
		t.Errorf("dropped %v, want 0 in the JSON", st.Dropped)
	}
	if l := st.Latency; l.Count != 20 || l.P50 <= 0 || l.P50 > l.P99 || l.P99 > l.Max {
		t.Errorf("latency %+v, want 20 answers with 0 < p50 <= p99 <= max", l)
	}
	for _, want := range []string{"20 requests", "0 dropped", "client latency p50 "} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q, want the summary line with %q", errb.String(), want)
		}
	}
}

func TestRunGetsThePathTemplate(t *testing.T) {
	var mu sync.Mutex
	paths := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths[r.Method+" "+r.URL.RequestURI()]++
		mu.Unlock()
	}))
	defer srv.Close()
	var out, errb bytes.Buffer
	code := cli.Exit(&errb, "poolparity-load", run(context.Background(), []string{"-target", srv.URL, "-duration", "5s", "-max-requests", "30", "-rps", "300", "-keys", "1", "-concurrency", "30"},
		func(k string) string { return map[string]string{"LOAD_GET": "/thumbnail/img-{key}?w={64|128}"}[k] }, &out, &errb))
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 2 || paths["GET /thumbnail/img-0?w=64"]+paths["GET /thumbnail/img-0?w=128"] != 30 {
		t.Errorf("requests %v, want 30 GETs of the template's two paths", paths)
	}
}

func TestRunRefusesTargets(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"a Service name outside a pod is refused", []string{"-target", "http://poolparity:80"}, nil, "only when running in a Kubernetes pod"},
		{"an IP outside loopback is refused even in a pod", []string{"-target", "http://10.96.0.10:80"}, map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, "not a loopback address"},
		{"a bad error ratio is refused", []string{"-target", "http://127.0.0.1:1", "-max-error-ratio", "2"}, nil, "max error ratio"},
		{"a bad variable is refused", []string{"-target", "http://127.0.0.1:1"}, map[string]string{"LOAD_RPS": "fast"}, "LOAD_RPS"},
		{"a bad path template is refused", []string{"-target", "http://127.0.0.1:1", "-get", "thumbnail/{key"}, nil, "LOAD_GET: path template"},
		{"a Host header with a path is refused", []string{"-target", "http://127.0.0.1:1", "-host", "a.test/x"}, nil, "host must be a host name"},
		{"a missing requests file is refused", []string{"-target", "http://127.0.0.1:1", "-requests", "testdata/absent.txt"}, nil, "LOAD_REQUESTS: open testdata/absent.txt"},
		{"a malformed requests file names its line", []string{"-target", "http://127.0.0.1:1", "-requests", "testdata/bad-requests.txt"}, nil, "bad-requests.txt:3"},
		{"a request to a host outside loopback is refused", []string{"-target", "http://127.0.0.1:1", "-requests", "testdata/remote-requests.txt"}, nil, "not a loopback address"},
		{"a template and a requests file together are refused", []string{"-target", "http://127.0.0.1:1", "-get", "/x", "-requests", "testdata/requests.txt"}, nil, "LOAD_GET and LOAD_REQUESTS both set"},
		{"random order without a requests file is refused", []string{"-target", "http://127.0.0.1:1", "-random"}, nil, "LOAD_RANDOM needs LOAD_REQUESTS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := cli.Exit(&errb, "poolparity-load", run(context.Background(), tt.args, func(k string) string { return tt.env[k] }, &out, &errb))
			if code != 2 || !strings.Contains(errb.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errb.String(), tt.want)
			}
		})
	}
}

func TestAServiceNameIsAllowedInAPod(t *testing.T) {
	c, err := parse([]string{"-target", "http://poolparity.shop.svc:80"}, func(k string) string {
		return map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"}[k]
	}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.loadConfig(); err != nil {
		t.Errorf("loadConfig() = %v, want nil in a pod", err)
	}
}

// TestRunReplaysARequestsFile: each of the file's requests as often as the others, POST bodies inline and from a file,
// with their headers; counted per request template.
func TestRunReplaysARequestsFile(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		got = append(got, fmt.Sprintf("%s %s %s %q", r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type"), b))
		mu.Unlock()
	}))
	defer srv.Close()
	var out, errb bytes.Buffer
	// As many in flight as the run sends, so that none is dropped on a busy machine; the
	// order of arrival is then the scheduler's (loadgen's tests hold the file's order).
	code := cli.Exit(&errb, "poolparity-load", run(context.Background(), []string{"-target", srv.URL, "-requests", "testdata/requests.txt", "-duration", "10s", "-max-requests", "6", "-rps", "50", "-concurrency", "6"},
		func(string) string { return "" }, &out, &errb))
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	one := []string{
		`POST /convert text/csv "name,size\na,1\nb,2\n"`,
		`POST /api/v1/items application/json "{\"name\":\"x\"}"`,
		`GET /healthz  ""`,
	}
	mu.Lock()
	defer mu.Unlock()
	want := append(one, one...)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the server saw\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var st struct {
		ByTarget map[string]struct{ Requests int } `json:"by_target"`
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if n := st.ByTarget["POST /convert"].Requests; n != 2 || len(st.ByTarget) != 3 {
		t.Errorf("by_target %+v, want 3 templates, POST /convert sent twice", st.ByTarget)
	}
}

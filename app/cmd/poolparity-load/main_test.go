package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/poolparity/poolparity/internal/cli"
)

func TestRunSendsBoundedLoadAndReportsCounts(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	var out, errb bytes.Buffer
	code := cli.Exit(&errb, "poolparity-load", run(context.Background(), []string{"-target", srv.URL, "-duration", "5s", "-max-requests", "20", "-rps", "200", "-concurrency", "1"},
		func(string) string { return "" }, &out, &errb))
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	var st struct{ Requests, Errors uint64 }
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if st.Requests != 20 || hits != 20 || st.Errors != 0 {
		t.Errorf("requests %d (server saw %d), errors %d; want 20, 20, 0", st.Requests, hits, st.Errors)
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
	code := cli.Exit(&errb, "poolparity-load", run(context.Background(), []string{"-target", srv.URL, "-duration", "5s", "-max-requests", "30", "-rps", "300", "-keys", "1"},
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

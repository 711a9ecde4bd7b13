package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/pools"
	"github.com/poolparity/poolparity/internal/server"
)

// allMethods is every standard method, and two the server has never heard of.
var allMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "FOO", "BREW"}

// allTargets is every route, with and without a valid id, an unknown path,
// and the request targets that are not paths.
var allTargets = []string{
	"/api/v1/items/x", "/api/v1/items/bad.id", "/api/v1/items", "/api/v1/items/", "/api/v1/report",
	"/healthz", "/readyz", "/metrics", "/", "/api/v2/nothing", "/api/v1/items/x/y",
	"127.0.0.1:6379", "*",
}

// rawRequest sends one HTTP/1.1 request over a new connection and returns
// the response, with its body read.
func rawRequest(t *testing.T, addr, method, target string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: pod\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", method, target); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(method, "http://pod/", nil) // tells ReadResponse whether a body follows (HEAD)
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		t.Fatalf("%s %s: reading the response: %v", method, target, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, target, err)
	}
	return resp, body
}

// TestEveryErrorIsJSON sends every method to every target over a real
// connection and checks that each error answer, including the router's own
// 404 for a CONNECT to an authority and its 400 for "OPTIONS *", is a JSON
// {"error": ...} body.
func TestEveryErrorIsJSON(t *testing.T) {
	e := newEnv(t, pools.ModePooled, func(o *server.Options) {
		o.MetricsHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "metrics\n") })
	})
	ts := httptest.NewServer(e.h)
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	for _, method := range allMethods {
		for _, target := range allTargets {
			t.Run(method+" "+target, func(t *testing.T) {
				resp, body := rawRequest(t, addr, method, target)
				if method != "CONNECT" && !strings.HasPrefix(target, "/") && target != "*" {
					// net/http refuses an authority target on any other
					// method before a handler runs: a protocol rejection,
					// plain text, listed in docs/service.md.
					if resp.StatusCode != http.StatusBadRequest {
						t.Errorf("status %d, want net/http's 400", resp.StatusCode)
					}
					return
				}
				if resp.StatusCode < 400 {
					return
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("status %d with Content-Type %q, want application/json (body %q)", resp.StatusCode, ct, body)
				}
				if method == "HEAD" {
					return // no body
				}
				var v struct {
					Error string `json:"error"`
				}
				if err := json.Unmarshal(body, &v); err != nil || v.Error == "" {
					t.Errorf("status %d body %q is not a JSON error: %v", resp.StatusCode, body, err)
				}
			})
		}
	}
	// Every code answered is one the route table lists for its route and
	// method: none fell back to a class.
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if hasLabels(m, map[string]string{"code": "other"}) || hasLabels(m, map[string]string{"code": "5xx"}) {
				t.Errorf("%s%v: the route table does not list this code", mf.GetName(), m.GetLabel())
			}
		}
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/judge/judgetest"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string // "namespaces <list>" for valid, else the error's text
	}{
		{"the defaults are valid in a pod", nil, map[string]string{"POD_NAMESPACE": "poolparity"}, "namespaces poolparity"},
		{"the environment sets the endpoints", nil, map[string]string{"POD_NAMESPACE": "p", "PROMETHEUS_ENDPOINTS": "http://a:9090, http://b:9090"}, "namespaces p"},
		{"NAMESPACES wins over the pod's namespace", []string{"-namespaces", "shop,img"}, map[string]string{"POD_NAMESPACE": "poolparity"}, "namespaces img,shop"},
		{"every namespace, asked for", nil, map[string]string{"NAMESPACES": "*"}, "namespaces *"},
		{"no namespace at all refuses to start", nil, nil, "NAMESPACES is empty and POD_NAMESPACE is unset"},
		{"a listed name that is no namespace", []string{"-namespaces", "shop,Img"}, nil, `NAMESPACES: namespace "Img"`},
		{"every namespace beside a name", []string{"-namespaces", "*,shop"}, nil, "must be alone"},
		{"a pod namespace of *", nil, map[string]string{"POD_NAMESPACE": "*"}, "not a namespace name"},
		{"-h asks for help", []string{"-h"}, nil, flag.ErrHelp.Error()},
		{"no endpoint", []string{"-prometheus-endpoints", " , "}, nil, "at least one"},
		{"an endpoint that is no base URL", []string{"-prometheus-endpoints", "http://a:9090/?q=1"}, nil, "no query"},
		{"one address for both servers", []string{"-addr", ":9000", "-health-addr", ":9000"}, nil, "must differ"},
		{"a judgement without a bound", []string{"-judge-timeout", "0s"}, nil, "JUDGE_TIMEOUT"},
		{"a tiny answer cap", []string{"-prometheus-max-response-bytes", "10"}, nil, "at least 1024"},
		{"an unknown log level", []string{"-log-level", "loud"}, nil, "LOG_LEVEL"},
		{"a bad duration in the environment", nil, map[string]string{"PROMETHEUS_TIMEOUT": "soon"}, "PROMETHEUS_TIMEOUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if ns, ok := strings.CutPrefix(tc.want, "namespaces "); ok {
				if err != nil {
					t.Fatal(err)
				}
				if len(cfg.Endpoints()) == 0 {
					t.Fatal("no endpoints")
				}
				if allow, err := cfg.Allowed(); err != nil || allow.String() != ns {
					t.Fatalf("Allowed() = %v, %v, want %s", allow, err, ns)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestRunRefusesABadConfiguration(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"-prometheus-endpoints", "ftp://x"}, func(string) string { return "" }, io.Discard, &stderr)
	if err == nil || !errors.Is(err, errInvalid) {
		t.Fatalf("err = %v", err)
	}
}

// TestServe starts the binary's servers on free ports against a fake
// Prometheus, asks a Flagger hook, reads the health and metrics endpoints
// and stops it.
func TestServe(t *testing.T) {
	prom := judgetest.NewProm(t, judgetest.Fail)
	cfg := DefaultConfig()
	cfg.Addr, cfg.HealthAddr, cfg.PrometheusEndpoints, cfg.PodNamespace = "127.0.0.1:0", "127.0.0.1:0", prom.URL, "shop"
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, slog.New(slog.DiscardHandler), ready) }()
	var addrs [2]string
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("not serving after 10s")
	}
	body := `{"name":"podinfo","namespace":"shop","phase":"Progressing","checksum":"1","metadata":{"slis":"latency-p99","since":"` + time.Now().Add(-time.Hour).UTC().Format(time.RFC3339) + `"}}`
	resp, err := http.Post("http://"+addrs[0]+"/flagger/rollout", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var ans struct{ Verdict string }
	_ = json.NewDecoder(resp.Body).Decode(&ans)
	resp.Body.Close()
	if resp.StatusCode != http.StatusPreconditionFailed || ans.Verdict != "FAIL" {
		t.Fatalf("a gray twice as slow: status %d verdict %q", resp.StatusCode, ans.Verdict)
	}
	// Another namespace than the judge's own (POD_NAMESPACE, NAMESPACES unset) is refused.
	resp, err = http.Post("http://"+addrs[0]+"/flagger/rollout", "application/json", strings.NewReader(strings.Replace(body, `"shop"`, `"bank"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	var refusal struct{ Error, Namespace string }
	_ = json.NewDecoder(resp.Body).Decode(&refusal)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || refusal.Namespace != "bank" {
		t.Fatalf("a request for bank from a judge of shop: status %d %+v", resp.StatusCode, refusal)
	}
	for _, pw := range [][2]string{
		{"/healthz", "ok"}, {"/readyz", "ok"},
		{"/metrics", `poolparity_judge_requests_total{hook="flagger-rollout",verdict="FAIL"} 1` + "\n"},
		{"/metrics", `poolparity_judge_refusals_total{hook="flagger-rollout",reason="namespace"} 1` + "\n"},
	} {
		path, want := pw[0], pw[1]
		resp, err := http.Get("http://" + addrs[1] + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d, want %q in\n%s", path, resp.StatusCode, want, b)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stopping: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("not stopped 15s after the cancel")
	}
}

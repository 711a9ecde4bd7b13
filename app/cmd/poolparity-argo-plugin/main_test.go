package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-rollouts/metricproviders/plugin/rpc"
	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/judge/argoplugin"
	"github.com/poolparity/poolparity/internal/judge/judgetest"
)

// asPlugin makes the test binary the plugin, for TestServesArgosController.
const asPlugin = "POOLPARITY_ARGO_PLUGIN_TEST_AS_PLUGIN"

func TestMain(m *testing.M) {
	if os.Getenv(asPlugin) == "1" {
		os.Exit(cli.Exit(os.Stderr, "poolparity-argo-plugin", run(context.Background(), nil, os.Getenv, os.Stderr)))
	}
	os.Exit(m.Run())
}

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"the defaults are valid", nil, nil, ""},
		{"the environment names the endpoints", nil, map[string]string{"POOLPARITY_PROMETHEUS_ENDPOINTS": "http://p:9090"}, ""},
		{"no endpoint", []string{"-prometheus-endpoints", ","}, nil, "at least one"},
		{"an endpoint that is no URL", []string{"-prometheus-endpoints", "p:9090"}, nil, "http or https"},
		{"a judgement without a bound", []string{"-judge-timeout", "0s"}, nil, "JUDGE_TIMEOUT"},
		{"an unknown log level", nil, map[string]string{"POOLPARITY_LOG_LEVEL": "loud"}, "LOG_LEVEL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRunRefusesWithoutArgo(t *testing.T) {
	err := run(context.Background(), nil, func(string) string { return "" }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "Argo's controller starts it") {
		t.Fatalf("err = %v", err)
	}
	if err := run(context.Background(), []string{"-prometheus-endpoints", "x"}, func(string) string { return "" }, io.Discard); !errors.Is(err, errInvalid) {
		t.Fatalf("a bad endpoint: %v", err)
	}
}

// TestServesArgosController starts this binary as a separate process the
// way Argo's controller starts a metric plugin (go-plugin's client with
// Argo's handshake), and takes a measurement through it.
func TestServesArgosController(t *testing.T) {
	prom := judgetest.NewProm(t, judgetest.Fail)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), asPlugin+"=1", "POOLPARITY_PROMETHEUS_ENDPOINTS="+prom.URL)
	plugins := map[string]goplugin.Plugin{argoplugin.PluginKey: &rpc.RpcMetricProviderPlugin{}}
	c := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig: argoplugin.Handshake, Plugins: plugins, Cmd: cmd,
		Logger: hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off}), StartTimeout: 20 * time.Second,
	})
	t.Cleanup(c.Kill)
	client, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := client.Dispense(argoplugin.PluginKey)
	if err != nil {
		t.Fatal(err)
	}
	p := raw.(rpc.MetricProviderPlugin)
	if err := p.InitPlugin(); err.HasError() {
		t.Fatal(err)
	}
	started := metav1.NewTime(time.Now().Add(-time.Hour))
	run := &v1alpha1.AnalysisRun{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "shop"}, Status: v1alpha1.AnalysisRunStatus{StartedAt: &started}}
	metric := v1alpha1.Metric{Name: "poolparity", Provider: v1alpha1.MetricProvider{Plugin: map[string]json.RawMessage{argoplugin.Name: json.RawMessage(`{"slis":"latency-p99"}`)}}}
	m := p.Run(run, metric)
	if m.Phase != v1alpha1.AnalysisPhaseFailed {
		t.Fatalf("a gray twice as slow: phase %s (%s)", m.Phase, m.Message)
	}
}

func TestInstall(t *testing.T) {
	dir := t.TempDir()
	if err := run(context.Background(), []string{"install", dir}, func(string) string { return "" }, io.Discard); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "poolparity-argo-plugin"))
	if err != nil || fi.Mode().Perm()&0o100 == 0 || fi.Size() == 0 {
		t.Fatalf("installed file: %v %v", fi, err)
	}
	if err := run(context.Background(), []string{"install"}, func(string) string { return "" }, io.Discard); !errors.Is(err, errInvalid) {
		t.Fatalf("install without a directory: %v", err)
	}
	if err := run(context.Background(), []string{"install", filepath.Join(dir, "missing")}, func(string) string { return "" }, io.Discard); err == nil {
		t.Fatal("install into a missing directory succeeded")
	}
}

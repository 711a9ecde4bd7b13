package argoplugin_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-rollouts/metricproviders/plugin/rpc"
	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/poolparity/poolparity/internal/judge"
	"github.com/poolparity/poolparity/internal/judge/argoplugin"
	"github.com/poolparity/poolparity/internal/judge/judgetest"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// quiet keeps go-plugin's debug lines out of the test output.
var quiet = hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off})

// rpcClient serves p through go-plugin in process, as Argo's own tests of
// the plugin RPC do, and returns the client side Argo's controller uses.
func rpcClient(t *testing.T, p *argoplugin.Plugin) rpc.MetricProviderPlugin {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	plugins := map[string]goplugin.Plugin{argoplugin.PluginKey: &rpc.RpcMetricProviderPlugin{Impl: p}}
	reattach := make(chan *goplugin.ReattachConfig, 1)
	closed := make(chan struct{})
	go goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: argoplugin.Handshake,
		Plugins:         plugins,
		Logger:          quiet,
		Test:            &goplugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: closed},
	})
	var cfg *goplugin.ReattachConfig
	select {
	case cfg = <-reattach:
	case <-time.After(5 * time.Second):
		t.Fatal("the plugin did not start serving")
	}
	c := goplugin.NewClient(&goplugin.ClientConfig{HandshakeConfig: argoplugin.Handshake, Plugins: plugins, Reattach: cfg, Logger: quiet})
	client, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Kill()
		cancel()
		<-closed
	})
	raw, err := client.Dispense(argoplugin.PluginKey)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(rpc.MetricProviderPlugin)
}

func newPlugin(t *testing.T, prom *judgetest.Prom) *argoplugin.Plugin {
	t.Helper()
	clients, err := promread.NewClients([]string{prom.URL}, false, promread.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return &argoplugin.Plugin{Judge: &judge.Judge{Clients: clients, Timeout: 5 * time.Second}}
}

// analysisRun is an AnalysisRun in shop started 40 minutes ago.
func analysisRun(started time.Time) *v1alpha1.AnalysisRun {
	st := metav1.NewTime(started)
	return &v1alpha1.AnalysisRun{
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo-6c7b9d-2", Namespace: "shop"},
		Status:     v1alpha1.AnalysisRunStatus{StartedAt: &st},
	}
}

func metric(config string) v1alpha1.Metric {
	return v1alpha1.Metric{Name: "poolparity", Provider: v1alpha1.MetricProvider{Plugin: map[string]json.RawMessage{argoplugin.Name: json.RawMessage(config)}}}
}

func TestRunThroughArgosRPC(t *testing.T) {
	started := time.Now().Add(-40 * time.Minute).Truncate(time.Second)
	for _, tc := range []struct {
		name   string
		mode   judgetest.Mode
		config string
		phase  v1alpha1.AnalysisPhase
		value  string
	}{
		{"equal tracks are Successful", judgetest.Pass, `{"selector":"job=poolparity","slis":"latency-p99"}`, v1alpha1.AnalysisPhaseSuccessful, "PASS"},
		{"a gray twice as slow is Failed", judgetest.Fail, `{"slis":"latency-p99"}`, v1alpha1.AnalysisPhaseFailed, "FAIL"},
		{"no series is Inconclusive", judgetest.NoData, `{"slis":"latency-p99"}`, v1alpha1.AnalysisPhaseInconclusive, "NO DATA"},
		{"an unreadable Prometheus is an Error", judgetest.Error, `{}`, v1alpha1.AnalysisPhaseError, "ERROR"},
		{"a selector naming another namespace is an Error", judgetest.Pass, `{"selector":"namespace=bank"}`, v1alpha1.AnalysisPhaseError, ""},
		{"a config that is not an object of strings is an Error", judgetest.Pass, `{"slis":["latency-p99"]}`, v1alpha1.AnalysisPhaseError, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prom := judgetest.NewProm(t, tc.mode)
			c := rpcClient(t, newPlugin(t, prom))
			if err := c.InitPlugin(); err.HasError() {
				t.Fatal(err)
			}
			m := c.Run(analysisRun(started), metric(tc.config))
			if m.Phase != tc.phase || m.Value != tc.value {
				t.Fatalf("phase %s value %q, want %s %q (message %q)", m.Phase, m.Value, tc.phase, tc.value, m.Message)
			}
			if m.StartedAt == nil || m.FinishedAt == nil {
				t.Error("the measurement is not finished")
			}
			if tc.phase == v1alpha1.AnalysisPhaseError {
				if m.Message == "" {
					t.Error("an Error without a message")
				}
				return
			}
			if m.Metadata[argoplugin.MetaSince] != started.UTC().Format(time.RFC3339) {
				t.Errorf("the evidence starts at %q, want the run's start %s", m.Metadata[argoplugin.MetaSince], started.UTC().Format(time.RFC3339))
			}
			var table struct {
				Verdict string            `json:"verdict"`
				Rows    []json.RawMessage `json:"rows"`
			}
			if err := json.Unmarshal([]byte(m.Metadata[argoplugin.MetaTable]), &table); err != nil || table.Verdict != tc.value || len(table.Rows) == 0 {
				t.Errorf("the table %q (%v) does not hold the verdict's rows", m.Metadata[argoplugin.MetaTable], err)
			}
			for _, q := range prom.Sent() {
				if !strings.Contains(q, `namespace="shop"`) {
					t.Errorf("query %q is not pinned to the run's namespace", q)
				}
			}
			if r := c.Resume(analysisRun(started), metric(tc.config), m); r.Phase != m.Phase {
				t.Errorf("Resume changed the phase to %s", r.Phase)
			}
			if r := c.Terminate(analysisRun(started), metric(tc.config), m); r.Phase != m.Phase {
				t.Errorf("Terminate changed the phase to %s", r.Phase)
			}
		})
	}
}

func TestTheOtherMethods(t *testing.T) {
	c := rpcClient(t, newPlugin(t, judgetest.NewProm(t, judgetest.Pass)))
	if got := c.Type(); got != argoplugin.ProviderType {
		t.Errorf("Type %q", got)
	}
	if err := c.GarbageCollect(analysisRun(time.Now()), metric(`{}`), 5); err.HasError() {
		t.Errorf("GarbageCollect: %v", err)
	}
	if md := c.GetMetadata(metric(`{"slis":"latency-p99"}`)); md["config"] != `{"slis":"latency-p99"}` {
		t.Errorf("GetMetadata %v", md)
	}
	if err := rpcClient(t, &argoplugin.Plugin{}).InitPlugin(); !err.HasError() {
		t.Error("a plugin without endpoints initialised")
	}
}

func TestRequest(t *testing.T) {
	created := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	run := &v1alpha1.AnalysisRun{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", CreationTimestamp: metav1.NewTime(created)}}
	req, err := argoplugin.Request(run, metric(`{"mode":"Counts","warmup":"1m"}`))
	if err != nil || !req.Since.Equal(created) || req.Namespace != "shop" || req.Warmup != time.Minute {
		t.Fatalf("%+v, %v: want the run's creation as the start", req, err)
	}
	req, err = argoplugin.Request(run, metric(`{"since":"2026-11-27T08:00:00Z"}`))
	if err != nil || !req.Since.Equal(created.Add(-time.Hour)) {
		t.Fatalf("%+v, %v: want the config's since", req, err)
	}
	if _, err := argoplugin.Request(nil, metric(`{}`)); err == nil {
		t.Fatal("no run, no error")
	}
}

// TestTheRunsNamespaceIsAuthoritative: the plugin runs inside Argo's controller, for every
// namespace's AnalysisRuns, so the run's namespace is the only one a measurement may read. A
// metric's config (its author is the tenant) that names another is an Error, and nothing is
// read from Prometheus.
func TestTheRunsNamespaceIsAuthoritative(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		refused      bool
	}{
		{"a namespace key", `{"namespace":"bank"}`, true},
		{"a namespace key of another case", `{"Namespace":"bank"}`, true},
		{"a selector's namespace pair", `{"selector":"namespace=bank","slis":"latency-p99"}`, true},
		{"a quoted namespace pair after another pair", `{"selector":"job=poolparity, namespace=\"bank\"","slis":"latency-p99"}`, true},
		{"an empty namespace pair", `{"selector":"namespace=","slis":"latency-p99"}`, true},
		{"a namespace pair naming the run's own namespace is read there", `{"selector":"namespace=shop","slis":"latency-p99"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prom := judgetest.NewProm(t, judgetest.Pass)
			c := rpcClient(t, newPlugin(t, prom))
			m := c.Run(analysisRun(time.Now().Add(-40*time.Minute)), metric(tc.config))
			sent := prom.Sent()
			if !tc.refused {
				if m.Phase != v1alpha1.AnalysisPhaseSuccessful || len(sent) == 0 {
					t.Fatalf("phase %s after %d queries (%q)", m.Phase, len(sent), m.Message)
				}
				for _, q := range sent {
					if !strings.Contains(q, `namespace="shop"`) || strings.Contains(q, "bank") {
						t.Errorf("query %q is not pinned to the run's namespace", q)
					}
				}
				return
			}
			if m.Phase != v1alpha1.AnalysisPhaseError || !strings.Contains(strings.ToLower(m.Message), "namespace") {
				t.Fatalf("phase %s message %q, want an Error about the namespace", m.Phase, m.Message)
			}
			if len(sent) != 0 {
				t.Errorf("a config naming another namespace sent %d queries: %q", len(sent), sent)
			}
		})
	}
}

// FuzzRequest: no plugin config panics the parser, and whatever a config says, an accepted
// request is for the run's namespace.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{`{}`, `{"selector":"a=b"}`, `null`, `[]`, `{"since":"x"}`, `{"namespace":"bank"}`} {
		f.Add(s)
	}
	run := &v1alpha1.AnalysisRun{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"}}
	f.Fuzz(func(t *testing.T, config string) {
		req, err := argoplugin.Request(run, metric(config))
		if err == nil && req.Namespace != "shop" {
			t.Fatalf("config %q asks for namespace %q", config, req.Namespace)
		}
	})
}

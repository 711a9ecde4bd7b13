package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/controller/controllertest"
	"github.com/poolparity/poolparity/internal/testenv"
)

// result is one command line's outcome, as main would end it.
type result struct {
	status         int
	stdout, stderr string
}

// runCmd runs a command line as main does, with getenv's environment.
func runCmd(t *testing.T, getenv func(string) string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, getenv, &stdout, &stderr)
	status := cli.Exit(&stderr, "kubectl-poolcanary", err)
	return result{status, stdout.String(), stderr.String()}
}

// oneErrorLine fails the test unless stderr is one line holding want.
func oneErrorLine(t *testing.T, r result, want string) {
	t.Helper()
	if lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n"); len(lines) != 1 || !strings.Contains(lines[0], want) {
		t.Errorf("stderr %q: want one line containing %q", r.stderr, want)
	}
}

func TestBadUsage(t *testing.T) {
	noEnv := func(string) string { return "" }
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "missing command"},
		{"an unknown command", []string{"delete", "shop"}, `unknown command "delete"`},
		{"a command without a name", []string{"promote"}, "promote: missing the PoolCanary's NAME"},
		{"a command without a name but with flags", []string{"get", "-n", "shop"}, "get: missing the PoolCanary's NAME"},
		{"two names", []string{"abort", "shop", "cart"}, "want one NAME"},
		{"an unknown flag", []string{"get", "shop", "--watch"}, "flag provided but not defined: -watch"},
		{"an output flag on a command without output", []string{"pause", "shop", "-o", "json"}, "flag provided but not defined: -o"},
		{"an unknown output format", []string{"get", "shop", "-o", "yaml"}, `-o "yaml": want text or json`},
		{"a flag without its value", []string{"get", "shop", "-n"}, "flag needs an argument: -n"},
		{"a zero timeout", []string{"get", "shop", "--timeout", "0s"}, "want a positive duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, noEnv, tt.args...)
			if r.status != cli.ExitUsage {
				t.Errorf("exit status %d, want %d", r.status, cli.ExitUsage)
			}
			oneErrorLine(t, r, tt.want)
		})
	}
	t.Run("-h prints the usage and succeeds", func(t *testing.T) {
		for _, args := range [][]string{{"-h"}, {"get", "-h"}, {"help"}} {
			r := runCmd(t, noEnv, args...)
			if r.status != cli.ExitOK || !strings.Contains(r.stdout, "usage: kubectl poolcanary COMMAND NAME") || r.stderr != "" {
				t.Errorf("%v: status %d, stdout %q, stderr %q", args, r.status, r.stdout, r.stderr)
			}
		}
	})
}

func TestWithoutACluster(t *testing.T) {
	dir := t.TempDir()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	unreachable := filepath.Join(dir, "unreachable")
	writeFile(t, unreachable, kubeconfig(down.URL, "ctx", ""))
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"a kubeconfig that does not exist", nil, []string{"get", "shop", "--kubeconfig", filepath.Join(dir, "missing")}, "reading the kubeconfig"},
		{"no kubeconfig at all", map[string]string{"HOME": dir}, []string{"get", "shop"}, "reading the kubeconfig"},
		{"a context the kubeconfig lacks", map[string]string{"KUBECONFIG": unreachable}, []string{"get", "shop", "--context", "other"}, `context "other" does not exist`},
		{"an API server that refuses connections", map[string]string{"KUBECONFIG": unreachable}, []string{"abort", "shop", "--timeout", "5s"}, "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, func(k string) string { return tt.env[k] }, tt.args...)
			if r.status != cli.ExitFailure {
				t.Errorf("exit status %d, want %d", r.status, cli.ExitFailure)
			}
			oneErrorLine(t, r, tt.want)
		})
	}
}

// kubeconfig is a kubeconfig with one context, named name, for server, in namespace ns.
func kubeconfig(server, name, ns string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: %s, context: {cluster: c, user: u, namespace: %q}}]
current-context: %s
`, server, name, ns, name)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestOnAPIServer runs the plugin against a real kube-apiserver and etcd (envtest) with the
// PoolCanary controller running, as an operator would use it on a cluster.
func TestOnAPIServer(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	crds, err := filepath.Abs(filepath.Join("..", "..", "..", "deploy", "helm", "poolparity", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.Start(t, testenv.WithScheme(scheme), testenv.WithCRDPaths(crds))
	controllertest.Start(t, env.Config, scheme, prometheus.NewRegistry())
	c := env.Client
	ctx := context.Background()
	cfgPath := filepath.Join(t.TempDir(), "kubeconfig")
	writeFile(t, cfgPath, string(env.KubeConfig))
	getenv := func(k string) string {
		if k == "KUBECONFIG" {
			return cfgPath
		}
		return ""
	}
	kubectl := func(t *testing.T, args ...string) result {
		t.Helper()
		return runCmd(t, getenv, args...)
	}
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()

	t.Run("get shows the steps, the weight against the shares, the conditions and the last analysis", func(t *testing.T) {
		ns := controllertest.NewNamespace(t, c, "plugin")
		pc := newCanary(ns, "shop", down.URL)
		pc.Spec.Paused = true // no analysis of the controller's overwrites the one written below
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		pc = waitPhase(ctx, t, c, ns, "shop", v1alpha1.PhasePaused)
		at := metav1.NewTime(time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC))
		patch := client.MergeFrom(pc.DeepCopy())
		pc.Status.MeasuredShare = "48.7"
		pc.Status.LastAnalysis = &v1alpha1.AnalysisStatus{
			Time: at, Weight: 10, Verdict: v1alpha1.VerdictFail, Message: "latency-p99: gray/stable 2.00 > 1.10", MeasuredShare: "48.7",
			SLIs: []v1alpha1.SLIResult{
				{Name: "latency-p99", Stable: "0.05", Gray: "0.1", Ratio: "2", Delta: "0.05", Threshold: "maxRatio 1.1, floor 0.005", Verdict: v1alpha1.VerdictFail, Time: at},
				{Name: "error-ratio", Threshold: "maxDelta 0.005", Verdict: v1alpha1.VerdictNoData, Note: "no series for the gray track", Time: at},
			},
		}
		if err := c.Status().Patch(ctx, pc, patch); err != nil {
			t.Fatal(err)
		}
		r := kubectl(t, "get", "shop", "-n", ns)
		if r.status != 0 || r.stderr != "" {
			t.Fatalf("status %d, stderr %q", r.status, r.stderr)
		}
		for _, want := range []string{
			"Name:             " + ns + "/shop",
			"Phase:            Paused (spec.paused)",
			"Pool modes:       stable unpooled, gray pooled; stable runs unpooled",
			"Weight:           10% asked",
			"Share:            50% of the pods (the replica split), 48.7% of the requests (measured)",
			"Replicas:         stable 1, gray 1 (spec.replicas 2)",
			">  1     10%     current",
			"   2     25%     pending",
			"  Progressing  False   Paused",
			"Last analysis: Fail at weight 10%, 2026-05-04T10:00:00Z, gray served 48.7% of the requests",
			"  SLI          STABLE  GRAY  RATIO  DELTA  THRESHOLD                  VERDICT  NOTE",
			"  latency-p99  0.05    0.1   2      0.05   maxRatio 1.1, floor 0.005  Fail",
			"  error-ratio  -       -     -      -      maxDelta 0.005             NoData   no series for the gray track",
		} {
			if !strings.Contains(r.stdout, want+"\n") && !strings.Contains(r.stdout, want+" ") {
				t.Errorf("get output lacks %q:\n%s", want, r.stdout)
			}
		}

		r = kubectl(t, "get", "shop", "--namespace="+ns, "-o", "json")
		var v view
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Fatalf("-o json: %v\n%s", err, r.stdout)
		}
		if v.Phase != v1alpha1.PhasePaused || v.Weight != 10 || v.ReplicaShare != "50" || v.MeasuredShare != "48.7" || len(v.Steps) != 3 || !v.Steps[0].Current ||
			v.LastAnalysis == nil || len(v.LastAnalysis.SLIs) != 2 || v.LastAnalysis.SLIs[0].Ratio != "2" {
			t.Errorf("-o json: %+v", v)
		}
	})

	t.Run("a missing canary is one line and status 1", func(t *testing.T) {
		ns := controllertest.NewNamespace(t, c, "plugin")
		for _, cmd := range commands {
			r := kubectl(t, cmd, "nope", "-n", ns)
			if r.status != cli.ExitFailure {
				t.Errorf("%s: exit status %d, want 1", cmd, r.status)
			}
			oneErrorLine(t, r, fmt.Sprintf(`kubectl-poolcanary: poolcanary "nope" not found in namespace %q`, ns))
		}
	})

	t.Run("the namespace defaults to the kubeconfig context's", func(t *testing.T) {
		ns := controllertest.NewNamespace(t, c, "plugin")
		if err := c.Create(ctx, newCanary(ns, "shop", down.URL)); err != nil {
			t.Fatal(err)
		}
		// The envtest kubeconfig with the current context's namespace set to ns.
		cfg, err := clientcmd.Load(env.KubeConfig)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Contexts[cfg.CurrentContext].Namespace = ns
		withNS, err := clientcmd.Write(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "config")
		writeFile(t, path, string(withNS))
		if r := kubectl(t, "get", "shop", "--kubeconfig", path); r.status != 0 || !strings.Contains(r.stdout, ns+"/shop") {
			t.Errorf("get with the context's namespace: status %d, stdout %q, stderr %q", r.status, r.stdout, r.stderr)
		}
	})

	t.Run("pause and resume toggle spec.paused", func(t *testing.T) {
		ns := controllertest.NewNamespace(t, c, "plugin")
		if err := c.Create(ctx, newCanary(ns, "shop", down.URL)); err != nil {
			t.Fatal(err)
		}
		for _, step := range []struct {
			cmd, out string
			paused   bool
			phase    v1alpha1.Phase
		}{
			{"pause", "spec.paused set to true", true, v1alpha1.PhasePaused},
			{"pause", "spec.paused is already true; nothing to do", true, v1alpha1.PhasePaused},
			{"resume", "spec.paused set to false", false, v1alpha1.PhaseProgressing},
			{"resume", "spec.paused is already false; nothing to do", false, v1alpha1.PhaseProgressing},
		} {
			r := kubectl(t, step.cmd, "shop", "-n", ns)
			if want := fmt.Sprintf("poolcanary %s/shop: %s\n", ns, step.out); r.status != 0 || r.stdout != want {
				t.Errorf("%s: status %d, stdout %q, stderr %q; want %q", step.cmd, r.status, r.stdout, r.stderr, want)
			}
			if got := waitPhase(ctx, t, c, ns, "shop", step.phase); got.Spec.Paused != step.paused {
				t.Errorf("after %s: spec.paused %t", step.cmd, got.Spec.Paused)
			}
		}
	})

	t.Run("promote leads to Promoted, and a second promote is refused", func(t *testing.T) {
		ns := controllertest.NewNamespace(t, c, "plugin")
		pc := newCanary(ns, "shop", down.URL)
		pc.Spec.StepInterval = metav1.Duration{Duration: time.Hour} // no analysis would end the step
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitPhase(ctx, t, c, ns, "shop", v1alpha1.PhaseProgressing)
		if r := kubectl(t, "promote", "shop", "-n", ns, "--full"); r.status != 0 || !strings.Contains(r.stdout, "promote requested (poolparity.dev/promote=") {
			t.Fatalf("promote: status %d, stdout %q, stderr %q", r.status, r.stdout, r.stderr)
		}
		got := waitPhase(ctx, t, c, ns, "shop", v1alpha1.PhasePromoted)
		if got.Status.StablePoolMode != v1alpha1.PoolModePooled {
			t.Errorf("stable pool mode %q after promote, want pooled", got.Status.StablePoolMode)
		}
		waitReplicas(ctx, t, c, ns, "shop", 2, 0)
		r := kubectl(t, "promote", "shop", "-n", ns)
		if r.status != cli.ExitFailure {
			t.Errorf("a second promote: status %d, want 1", r.status)
		}
		oneErrorLine(t, r, "cannot promote: the rollout has ended (Promoted")
		r = kubectl(t, "retry", "shop", "-n", ns)
		if r.status != cli.ExitFailure {
			t.Errorf("retry of a promoted canary: status %d, want 1", r.status)
		}
		oneErrorLine(t, r, "cannot retry: it is Promoted")
	})

	t.Run("abort rolls back with gray at 0 while the analysis errors, and retry starts again", func(t *testing.T) {
		ns := controllertest.NewNamespace(t, c, "plugin")
		pc := newCanary(ns, "shop", down.URL) // Prometheus refuses connections: every analysis is an Error
		pc.Spec.Replicas = ptr.To[int32](4)
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "an analysis that errored", func() (bool, string) {
			cur := controllertest.GetCanary(ctx, t, c, ns, "shop")
			la := cur.Status.LastAnalysis
			return la != nil && la.Verdict == v1alpha1.VerdictError, fmt.Sprintf("last analysis %+v", la)
		})
		waitReplicas(ctx, t, c, ns, "shop", 3, 1)
		if r := kubectl(t, "abort", "shop", "-n", ns); r.status != 0 || !strings.Contains(r.stdout, "abort requested (poolparity.dev/abort=") {
			t.Fatalf("abort: status %d, stdout %q, stderr %q", r.status, r.stdout, r.stderr)
		}
		got := waitPhase(ctx, t, c, ns, "shop", v1alpha1.PhaseRolledBack)
		if got.Status.CurrentWeight != 0 || got.Status.GrayReplicas != 0 || got.Status.StableReplicas != 4 {
			t.Errorf("after abort: weight %d, stable %d, gray %d; want 0, 4, 0", got.Status.CurrentWeight, got.Status.StableReplicas, got.Status.GrayReplicas)
		}
		waitReplicas(ctx, t, c, ns, "shop", 4, 0)
		if r := kubectl(t, "get", "shop", "-n", ns); !strings.Contains(r.stdout, ">  1     10%     ended here") || !strings.Contains(r.stdout, "skipped") {
			t.Errorf("get after abort: the steps should show where the rollout ended:\n%s", r.stdout)
		}

		before := got.Spec.Trigger
		r := kubectl(t, "retry", "shop", "-n", ns)
		if r.status != 0 || !strings.Contains(r.stdout, "a new rollout starts from the first step") {
			t.Fatalf("retry: status %d, stdout %q, stderr %q", r.status, r.stdout, r.stderr)
		}
		got = waitPhase(ctx, t, c, ns, "shop", v1alpha1.PhaseProgressing)
		if got.Spec.Trigger == before || !strings.HasPrefix(got.Spec.Trigger, "kubectl-poolcanary retry ") || got.Status.CurrentWeight != 10 {
			t.Errorf("after retry: trigger %q (was %q), weight %d; want a new trigger and weight 10", got.Spec.Trigger, before, got.Status.CurrentWeight)
		}
		waitReplicas(ctx, t, c, ns, "shop", 3, 1)
	})
}

// newCanary returns a canary with 2 replicas and steps 10/25/50 of 1s each, analysed every
// second at promURL.
func newCanary(ns, name, promURL string) *v1alpha1.PoolCanary {
	return &v1alpha1.PoolCanary{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.PoolCanarySpec{
			Replicas:     ptr.To[int32](2),
			Template:     corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "poolparity", Image: "ghcr.io/poolparity/poolparity:test"}}}},
			PoolModes:    v1alpha1.TrackPoolModes{Stable: v1alpha1.PoolModeUnpooled, Gray: v1alpha1.PoolModePooled},
			Steps:        []int32{10, 25, 50},
			StepInterval: metav1.Duration{Duration: time.Second},
			Analysis: v1alpha1.Analysis{
				PrometheusURL: promURL,
				Interval:      metav1.Duration{Duration: time.Second},
				Timeout:       metav1.Duration{Duration: 2 * time.Second},
				FailureLimit:  2,
				SLIs:          []v1alpha1.SLI{{Name: "latency-p99"}, {Name: "error-ratio"}},
			},
		},
	}
}

// waitFor polls cond every 50ms for up to 20s, then fails with its last note.
func waitFor[T any](t *testing.T, what string, cond func() (bool, T)) T {
	t.Helper()
	return controllertest.WaitFor(t, 20*time.Second, what, cond)
}

func waitPhase(ctx context.Context, t *testing.T, c client.Client, ns, name string, phase v1alpha1.Phase) *v1alpha1.PoolCanary {
	t.Helper()
	return waitFor(t, "phase "+string(phase), func() (bool, *v1alpha1.PoolCanary) {
		cur := controllertest.GetCanary(ctx, t, c, ns, name)
		return cur.Status.Phase == phase && cur.Status.ObservedGeneration == cur.Generation, cur
	})
}

// waitReplicas waits until the track Deployments ask for stable and gray pods.
func waitReplicas(ctx context.Context, t *testing.T, c client.Client, ns, name string, stable, gray int32) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d stable + %d gray", stable, gray), func() (bool, string) {
		var s, g appsv1.Deployment
		errS := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-stable"}, &s)
		errG := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-gray"}, &g)
		if errS != nil || errG != nil {
			return false, fmt.Sprint(errS, errG)
		}
		gs, gg := ptr.Deref(s.Spec.Replicas, -1), ptr.Deref(g.Spec.Replicas, -1)
		return gs == stable && gg == gray, fmt.Sprintf("stable %d, gray %d", gs, gg)
	})
}

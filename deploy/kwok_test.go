package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/poolparity/poolparity/deploy/deploytest"
	"github.com/poolparity/poolparity/deploy/render"
)

// TestHelmInstallOnKwok runs `helm install --wait` into a kwok cluster (a real control plane with
// simulated nodes) and checks that both tracks and the persistent Redis roll out, that the split Service gets endpoints from
// both tracks, and that each HPA binds to its Deployment. Opt in with POOLPARITY_KWOK=1 (the kwok
// tools are not in the default `make tools` set); then missing tools fail the test.
func TestHelmInstallOnKwok(t *testing.T) {
	if os.Getenv("POOLPARITY_KWOK") != "1" {
		t.Skip("set POOLPARITY_KWOK=1 to run helm install --wait against a kwok cluster (needs `make tools` kwok set)")
	}
	t.Setenv("CI", "true") // opted in: a missing tool fails
	helm, kwokctl, kwok := deploytest.Tool(t, "helm"), deploytest.Tool(t, "kwokctl"), deploytest.Tool(t, "kwok")
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		root, _ := deploytest.RepoRoot()
		assets = filepath.Join(root, "bin", "k8s")
	}
	bin := func(name string) string {
		p := filepath.Join(assets, name)
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s missing in %s: %v", name, assets, err)
		}
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	work := t.TempDir()
	name := "pp" + strconv.Itoa(os.Getpid())
	run := func(timeout time.Duration, cmd string, args ...string) []byte {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		x := exec.CommandContext(c, cmd, args...)
		x.Env = append(os.Environ(), "KWOK_WORKDIR="+work)
		var stderr bytes.Buffer
		x.Stderr = &stderr
		out, err := x.Output()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s%s", filepath.Base(cmd), args, err, out, stderr.Bytes())
		}
		return out
	}
	port := freePort(t)
	begin := time.Now()
	run(5*time.Minute, kwokctl, "create", "cluster", "--name", name, "--runtime", "binary",
		"--kube-apiserver-port", strconv.Itoa(port),
		"--kube-apiserver-binary", bin("kube-apiserver"), "--etcd-binary", bin("etcd"),
		"--kube-controller-manager-binary", bin("kube-controller-manager"),
		"--kube-scheduler-binary", bin("kube-scheduler"), "--kwok-controller-binary", kwok,
		"--wait", "3m")
	t.Cleanup(func() {
		x := exec.Command(kwokctl, "delete", "cluster", "--name", name)
		x.Env = append(os.Environ(), "KWOK_WORKDIR="+work)
		if out, err := x.CombinedOutput(); err != nil {
			t.Logf("kwokctl delete cluster: %v\n%s", err, out)
		}
	})
	t.Logf("kwok cluster up in %s", time.Since(begin).Round(time.Millisecond))
	run(2*time.Minute, kwokctl, "scale", "node", "--name", name, "--replicas", "2")
	kubeconfig := filepath.Join(work, "kubeconfig")
	if err := os.WriteFile(kubeconfig, run(time.Minute, kwokctl, "get", "kubeconfig", "--name", name), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) []byte {
		t.Helper()
		return run(time.Minute, bin("kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	}
	ns := render.Namespace
	kubectl("create", "namespace", ns)
	kubectl("label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")
	// kwok has no storage provisioner and no default StorageClass: a static volume without a class
	// binds the Redis StatefulSet's claim (which names no class either), so that the persistent
	// Redis schedules as it would on a cluster with a default class.
	pv := filepath.Join(work, "redis-pv.yaml")
	if err := os.WriteFile(pv, []byte(redisPV), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl("apply", "-f", pv)

	begin = time.Now()
	run(6*time.Minute, helm, "install", render.Release, deploytest.ChartDir(t), "--kubeconfig", kubeconfig,
		"--namespace", ns, "--set", "redis.enabled=true",
		// The OpenTelemetry Collector sidecar too: the pods must roll out with it.
		"--set", "otelCollector.enabled=true", "--set", "otelCollector.tracesEndpoint=http://tempo.observability:4318",
		"--wait", "--timeout", "5m")
	t.Logf("helm install --wait finished in %s", time.Since(begin).Round(time.Millisecond))

	var deps appsv1.DeploymentList
	mustJSON(t, kubectl("-n", ns, "get", "deployments", "-o", "json"), &deps)
	for _, d := range deps.Items {
		t.Logf("Deployment %s: %d/%d ready", d.Name, d.Status.ReadyReplicas, d.Status.Replicas)
	}
	for _, track := range []string{"stable", "gray"} {
		var found bool
		for _, d := range deps.Items {
			if d.Labels[deploytest.LabelTrack] == track {
				found = true
				if d.Status.ReadyReplicas < 2 {
					t.Errorf("Deployment %s: %d ready replicas, want >= 2 (HPA minReplicas)", d.Name, d.Status.ReadyReplicas)
				}
			}
		}
		if !found {
			t.Errorf("no Deployment for track %s", track)
		}
	}

	// The Redis StatefulSet's claim is bound and its pod ready: helm --wait waited for it.
	var claims corev1.PersistentVolumeClaimList
	mustJSON(t, kubectl("-n", ns, "get", "pvc", "-o", "json"), &claims)
	if len(claims.Items) != 1 || claims.Items[0].Status.Phase != corev1.ClaimBound {
		t.Errorf("Redis claims %v, want one Bound", claims.Items)
	}
	var sets appsv1.StatefulSetList
	mustJSON(t, kubectl("-n", ns, "get", "statefulsets", "-o", "json"), &sets)
	if len(sets.Items) != 1 || sets.Items[0].Status.ReadyReplicas != 1 {
		t.Errorf("Redis StatefulSets %d, want one with 1 ready replica", len(sets.Items))
	}

	// Endpoints of the split Service come from pods of both tracks.
	var pods corev1.PodList
	mustJSON(t, kubectl("-n", ns, "get", "pods", "-o", "json"), &pods)
	trackOf := map[string]string{}
	for _, p := range pods.Items {
		trackOf[p.Name] = p.Labels[deploytest.LabelTrack]
		if p.Labels[deploytest.LabelTrack] == "" {
			continue
		}
		sidecar := false
		for _, c := range p.Spec.InitContainers {
			sidecar = sidecar || c.Name == "otel-collector" && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
		if !sidecar {
			t.Errorf("pod %s has no otel-collector native sidecar", p.Name)
		}
	}
	var slices discoveryv1.EndpointSliceList
	mustJSON(t, kubectl("-n", ns, "get", "endpointslices", "-l", "kubernetes.io/service-name="+render.Release, "-o", "json"), &slices)
	tracks := map[string]int{}
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.TargetRef != nil && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
				tracks[trackOf[e.TargetRef.Name]]++
			}
		}
	}
	t.Logf("split Service ready endpoints by track: %v", tracks)
	if tracks["stable"] == 0 || tracks["gray"] == 0 {
		t.Errorf("split Service endpoints by track = %v, want both stable and gray", tracks)
	}

	// Each HPA resolves its own track's Deployment (AbleToScale); CPU metrics need metrics-server, absent here.
	deadline := time.Now().Add(time.Minute)
	for {
		var hpas autoscalingv2.HorizontalPodAutoscalerList
		mustJSON(t, kubectl("-n", ns, "get", "hpa", "-o", "json"), &hpas)
		bound := 0
		for _, h := range hpas.Items {
			for _, c := range h.Status.Conditions {
				if c.Type == autoscalingv2.AbleToScale && c.Status == corev1.ConditionTrue {
					bound++
				}
			}
		}
		if len(hpas.Items) == 2 && bound == 2 {
			for _, h := range hpas.Items {
				t.Logf("HPA %s -> %s/%s: AbleToScale, %d current replicas", h.Name, h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name, h.Status.CurrentReplicas)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("HPAs not bound after 1m: %d HPAs, %d AbleToScale", len(hpas.Items), bound)
		}
		time.Sleep(2 * time.Second)
	}
}

// redisPV is a static volume for the Redis claim (1Gi, ReadWriteOnce, no class) on a kwok cluster.
const redisPV = `apiVersion: v1
kind: PersistentVolume
metadata:
  name: poolparity-redis-data
spec:
  capacity:
    storage: 1Gi
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  hostPath:
    path: /tmp/poolparity-redis-data
    type: DirectoryOrCreate
`

func mustJSON(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decoding kubectl output: %v\n%s", err, data)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

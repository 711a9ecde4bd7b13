package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/hack/kindrun/kube/kubetest"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestDecodeObjects(t *testing.T) {
	tests := []struct {
		name      string
		manifest  string
		wantKinds []string
		wantErr   string
	}{
		{"documents in order, empty ones skipped", "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n# only a comment\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: b, namespace: a}\n", []string{"Namespace", "Deployment"}, ""},
		{"JSON is YAML too", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}`, []string{"ConfigMap"}, ""},
		{"a document without a name is refused", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", nil, "document 1 has no kind, apiVersion or name"},
		{"bad YAML names its document", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: [\n", nil, "decoding document 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := DecodeObjects([]byte(tt.manifest))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("decodeObjects error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.GetKind())
			}
			if strings.Join(kinds, ",") != strings.Join(tt.wantKinds, ",") {
				t.Errorf("kinds %v, want %v", kinds, tt.wantKinds)
			}
		})
	}
}

func TestRolledOut(t *testing.T) {
	deploy := func(gen, observed int64, want, replicas, updated, available int32) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Spec: appsv1.DeploymentSpec{Replicas: &want},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: updated, AvailableReplicas: available}}
	}
	ds := func(gen, observed int64, desired, updated, available int32) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: gen},
			Status: appsv1.DaemonSetStatus{ObservedGeneration: observed, DesiredNumberScheduled: desired, UpdatedNumberScheduled: updated, NumberAvailable: available}}
	}
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"a deployment with every replica updated and available", DeploymentRolledOut(deploy(2, 2, 2, 2, 2, 2)), true},
		{"a deployment whose controller has not seen the new generation", DeploymentRolledOut(deploy(3, 2, 2, 2, 2, 2)), false},
		{"a deployment with an old replica left", DeploymentRolledOut(deploy(2, 2, 2, 3, 2, 2)), false},
		{"a deployment with a replica not yet available", DeploymentRolledOut(deploy(2, 2, 2, 2, 2, 1)), false},
		{"a daemonset available on every node", DaemonSetRolledOut(ds(1, 1, 1, 1, 1)), true},
		{"a daemonset scheduled nowhere yet", DaemonSetRolledOut(ds(1, 1, 0, 0, 0)), false},
		{"a daemonset still updating", DaemonSetRolledOut(ds(2, 2, 3, 2, 3)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("rolled out = %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func job(name string, conds ...batchv1.JobCondition) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "pp"}, Status: batchv1.JobStatus{Conditions: conds}}
}

func TestJobDone(t *testing.T) {
	tests := []struct {
		name    string
		job     *batchv1.Job
		done    bool
		wantErr error
	}{
		{"running", job("j"), false, nil},
		{"complete", job("j", batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}), true, nil},
		{"failed", job("j", batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded"}), false, errJobFailed},
		{"a condition that is not true does not count", job("j", batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionFalse}), false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, err := jobDone(tt.job)
			if done != tt.done || !errors.Is(err, tt.wantErr) {
				t.Errorf("jobDone = %v, %v; want %v, %v", done, err, tt.done, tt.wantErr)
			}
		})
	}
}

func TestWaitJobEndsAtOnceOnAFailedJob(t *testing.T) {
	k := &Kube{CS: fake.NewClientset(job("load", batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}))}
	start := time.Now()
	err := k.WaitJob(context.Background(), "pp", "load", time.Minute)
	if !errors.Is(err, errJobFailed) || !strings.Contains(err.Error(), "BackoffLimitExceeded") || time.Since(start) > 10*time.Second {
		t.Errorf("WaitJob = %v after %s, want the failure at once", err, time.Since(start))
	}
	err = k.WaitJob(context.Background(), "pp", "missing", 3*time.Second)
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("WaitJob of a missing job = %v, want a timeout naming the last error", err)
	}
}

func TestServicePodResolvesTheTargetPort(t *testing.T) {
	labels := map[string]string{"app": "prometheus"}
	web := corev1.ContainerPort{Name: "web", ContainerPort: 9090}
	svc := func(target intstr.IntOrString) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "prom", Namespace: "monitoring"},
			Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: target}}}}
	}
	tests := []struct {
		name     string
		objs     []*corev1.Pod
		target   intstr.IntOrString
		port     int32
		wantPod  string
		wantPort int32
		wantErr  string
	}{
		{"a named port through the ready pod's container ports", []*corev1.Pod{kubetest.Pod("p0", false, labels, web), kubetest.Pod("p1", true, labels, web)}, intstr.FromString("web"), 80, "p1", 9090, ""},
		{"a numbered port as it is", []*corev1.Pod{kubetest.Pod("p1", true, labels)}, intstr.FromInt32(9091), 80, "p1", 9091, ""},
		{"no target port is the service port", []*corev1.Pod{kubetest.Pod("p1", true, labels)}, intstr.IntOrString{}, 80, "p1", 80, ""},
		{"no ready pod", []*corev1.Pod{kubetest.Pod("p0", false, labels, web)}, intstr.FromString("web"), 80, "", 0, "no ready pod"},
		{"a port the service lacks", []*corev1.Pod{kubetest.Pod("p1", true, labels, web)}, intstr.FromString("web"), 81, "", 0, "has no port 81"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(svc(tt.target))
			for _, p := range tt.objs {
				if _, err := cs.CoreV1().Pods("monitoring").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			k := &Kube{CS: cs}
			name, port, err := k.servicePod(context.Background(), "monitoring", "prom", tt.port)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("servicePod error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || name != tt.wantPod || port != tt.wantPort {
				t.Errorf("servicePod = %s, %d, %v; want %s, %d", name, port, err, tt.wantPod, tt.wantPort)
			}
		})
	}
}

func TestWaitPodsReady(t *testing.T) {
	labels := map[string]string{"app": "x"}
	tests := []struct {
		name string
		pods []*corev1.Pod
		ok   bool
	}{
		{"every matching pod ready", []*corev1.Pod{kubetest.Pod("a", true, labels), kubetest.Pod("b", true, labels), kubetest.Pod("c", false, nil)}, true},
		{"one matching pod not ready", []*corev1.Pod{kubetest.Pod("a", true, labels), kubetest.Pod("b", false, labels)}, false},
		{"no matching pod yet", []*corev1.Pod{kubetest.Pod("c", true, nil)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset()
			for _, p := range tt.pods {
				if _, err := cs.CoreV1().Pods("monitoring").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			err := (&Kube{CS: cs}).WaitPodsReady(context.Background(), "monitoring", "app=x", 2*time.Second)
			if (err == nil) != tt.ok {
				t.Errorf("WaitPodsReady = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestDeleteJobWaitsUntilItIsGone(t *testing.T) {
	k := &Kube{CS: fake.NewClientset(job("load"))}
	if err := k.DeleteJob(context.Background(), "pp", "load"); err != nil {
		t.Fatalf("DeleteJob = %v", err)
	}
	if err := k.DeleteJob(context.Background(), "pp", "load"); err != nil {
		t.Errorf("deleting a job that is gone = %v, want nil", err)
	}
}

// staleMapper maps kinds like the API server's discovery, except that a kind in late is only
// known after a Reset (a CRD applied after the cache was filled).
type staleMapper struct {
	*meta.DefaultRESTMapper
	late   schema.GroupVersionKind
	resets int
}

func (m *staleMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if gk == m.late.GroupKind() && m.resets == 0 {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return m.DefaultRESTMapper.RESTMapping(gk, versions...)
}

func (m *staleMapper) Reset() { m.resets++ }

func TestApplyServerSideAppliesEachObjectWhereItBelongs(t *testing.T) {
	ns := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	prom := schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "Prometheus"}
	dm := meta.NewDefaultRESTMapper(nil)
	dm.Add(ns, meta.RESTScopeRoot)
	dm.Add(cm, meta.RESTScopeNamespace)
	dm.Add(prom, meta.RESTScopeNamespace)
	mapper := &staleMapper{DefaultRESTMapper: dm, late: prom}
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	var applied []string
	dyn.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if p.GetPatchType() != types.ApplyPatchType {
			t.Errorf("%s %s: patch type %s, want server-side apply", p.GetResource().Resource, p.GetName(), p.GetPatchType())
		}
		applied = append(applied, p.GetResource().Resource+" "+p.GetNamespace()+"/"+p.GetName())
		return true, &unstructured.Unstructured{}, nil
	})
	k := &Kube{Dyn: dyn, mapper: mapper}
	manifest := `apiVersion: v1
kind: Namespace
metadata: {name: monitoring}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b, namespace: other}
---
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: p}
`
	if err := k.Apply(context.Background(), []byte(manifest), "monitoring"); err != nil {
		t.Fatalf("Apply = %v", err)
	}
	want := []string{"namespaces /monitoring", "configmaps monitoring/a", "configmaps other/b", "prometheuses monitoring/p"}
	if strings.Join(applied, ", ") != strings.Join(want, ", ") {
		t.Errorf("applied %v, want %v", applied, want)
	}
	if mapper.resets != 1 {
		t.Errorf("the mapper was reset %d times, want once for the kind it did not know", mapper.resets)
	}
	err := k.Apply(context.Background(), []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"), "x")
	if err == nil || !strings.Contains(err.Error(), "mapping /v1, Kind=Secret") {
		t.Errorf("Apply of an unknown kind = %v, want a mapping error", err)
	}
}

func TestHPARange(t *testing.T) {
	two := int32(2)
	tests := []struct {
		name    string
		min     *int32
		set     HPARange
		read    HPARange
		wantErr string
	}{
		{"raises the minimum", &two, HPARange{Min: 4, Max: 6}, HPARange{Min: 2, Max: 6}, ""},
		{"lowers the maximum", &two, HPARange{Min: 1, Max: 2}, HPARange{Min: 2, Max: 6}, ""},
		{"an unset minimum reads as 1", nil, HPARange{Min: 3, Max: 6}, HPARange{Min: 1, Max: 6}, ""},
		{"a minimum above the maximum is refused", &two, HPARange{Min: 5, Max: 4}, HPARange{Min: 2, Max: 6}, "want 1 <= min <= max"},
		{"a minimum of 0 is refused", &two, HPARange{Min: 0, Max: 4}, HPARange{Min: 2, Max: 6}, "want 1 <= min <= max"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "pp-gray", Namespace: "pp"},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: tt.min, MaxReplicas: 6}}
			k := &Kube{CS: fake.NewClientset(h)}
			ctx := context.Background()
			if got, err := k.HPARange(ctx, "pp", "pp-gray"); err != nil || got != tt.read {
				t.Fatalf("HPARange = %+v, %v; want %+v", got, err, tt.read)
			}
			err := k.SetHPARange(ctx, "pp", "pp-gray", tt.set)
			want := tt.set
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("SetHPARange(%+v) = %v, want an error saying %q", tt.set, err, tt.wantErr)
				}
				want = tt.read // unchanged
			} else if err != nil {
				t.Fatal(err)
			}
			if got, err := k.HPARange(ctx, "pp", "pp-gray"); err != nil || got != want {
				t.Errorf("the HPA's bounds after SetHPARange: %+v, %v; want %+v", got, err, want)
			}
		})
	}
}

// Package kube is the cluster as the harness sees it through client-go: server-side apply of
// rendered YAML, waits with deadlines (rollouts, CRDs, pods, Jobs, Gateways, APIServices), status,
// logs and port-forwards. It knows nothing of kind or of the steps.
package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// FieldManager owns the fields kindrun applies (server-side apply).
const FieldManager = "kindrun"

// Kube is the cluster through client-go: server-side apply of rendered YAML, waits in Go with
// deadlines, status, logs and port-forwards. It is safe for concurrent use.
type Kube struct {
	cfg    *rest.Config
	CS     kubernetes.Interface      // typed clients
	Dyn    dynamic.Interface         // the dynamic client, for custom resources
	mapper meta.ResettableRESTMapper // kinds to resources, from the API server's discovery
}

// New returns a Kube for the cluster of the kubeconfig file at path.
func New(path string) (*Kube, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	return &Kube{cfg: cfg, CS: cs, Dyn: dyn, mapper: mapper}, nil
}

// DecodeObjects splits multi-document YAML (or JSON) into objects, skipping empty documents.
func DecodeObjects(manifest []byte) ([]*unstructured.Unstructured, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for i := 0; ; i++ {
		var m map[string]any
		if err := d.Decode(&m); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding document %d: %w", i+1, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("document %d has no kind, apiVersion or name", i+1)
		}
		objs = append(objs, u)
	}
}

// resource maps an object's kind to its resource, and gives its namespace (ns for a namespaced
// object that names none, "" for a cluster-scoped one). A kind the cached discovery lacks (a CRD
// just applied) resets the cache once.
func (k *Kube) resource(u *unstructured.Unstructured, ns string) (dynamic.ResourceInterface, error) {
	gvk := u.GroupVersionKind()
	m, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		k.mapper.Reset()
		m, err = k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", gvk, err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return k.Dyn.Resource(m.Resource), nil
	}
	if u.GetNamespace() != "" {
		ns = u.GetNamespace()
	}
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	u.SetNamespace(ns)
	return k.Dyn.Resource(m.Resource).Namespace(ns), nil
}

// Apply server-side applies every object of manifest, in order; ns is the namespace of the
// namespaced objects that name none. A CRD the objects need must be applied and established
// first (see WaitEstablished).
func (k *Kube) Apply(ctx context.Context, manifest []byte, ns string) error {
	objs, err := DecodeObjects(manifest)
	if err != nil {
		return err
	}
	for _, u := range objs {
		ri, err := k.resource(u, ns)
		if err != nil {
			return err
		}
		if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// Until calls f every interval until it reports done or fails, or timeout passes; the error
// then names what was awaited and the last error f gave.
func Until(ctx context.Context, interval, timeout time.Duration, what string, f func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		done, err := f(ctx)
		if done && err == nil {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting %s for %s: %w (last error: %v)", timeout, what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting %s for %s: %w", timeout, what, ctx.Err())
		case <-time.After(interval):
		}
	}
}

// DeploymentRolledOut reports whether d's current generation runs on all its replicas.
func DeploymentRolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want
}

// DaemonSetRolledOut reports whether ds's current generation is available on every node it
// runs on.
func DaemonSetRolledOut(ds *appsv1.DaemonSet) bool {
	s := ds.Status
	return s.ObservedGeneration >= ds.Generation && s.DesiredNumberScheduled > 0 &&
		s.UpdatedNumberScheduled == s.DesiredNumberScheduled && s.NumberAvailable == s.DesiredNumberScheduled
}

// WaitDeployment waits until the Deployment ns/name has rolled out.
func (k *Kube) WaitDeployment(ctx context.Context, ns, name string, timeout time.Duration) error {
	return Until(ctx, 2*time.Second, timeout, "deployment "+ns+"/"+name+" to roll out", func(ctx context.Context) (bool, error) {
		d, err := k.CS.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return DeploymentRolledOut(d), nil
	})
}

// WaitDaemonSet waits until the DaemonSet ns/name has rolled out.
func (k *Kube) WaitDaemonSet(ctx context.Context, ns, name string, timeout time.Duration) error {
	return Until(ctx, 2*time.Second, timeout, "daemonset "+ns+"/"+name+" to roll out", func(ctx context.Context) (bool, error) {
		ds, err := k.CS.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return DaemonSetRolledOut(ds), nil
	})
}

// WaitEstablished waits until every named CRD is Established.
func (k *Kube) WaitEstablished(ctx context.Context, timeout time.Duration, names ...string) error {
	crdResource := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	return Until(ctx, time.Second, timeout, "CRDs "+strings.Join(names, ", ")+" to be established", func(ctx context.Context) (bool, error) {
		for _, n := range names {
			u, err := k.Dyn.Resource(crdResource).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			if !conditionTrue(conds, "Established") {
				return false, nil
			}
		}
		return true, nil
	})
}

// conditionTrue reports whether the unstructured conditions hold typ with status True.
func conditionTrue(conds []any, typ string) bool {
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

// PodReady reports whether p is Ready.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WaitPodsReady waits until at least one pod in ns matches selector and every one is Ready.
func (k *Kube) WaitPodsReady(ctx context.Context, ns, selector string, timeout time.Duration) error {
	return Until(ctx, 2*time.Second, timeout, "pods "+selector+" in "+ns+" to be ready", func(ctx context.Context) (bool, error) {
		pods, err := k.CS.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		for i := range pods.Items {
			if !PodReady(&pods.Items[i]) {
				return false, nil
			}
		}
		return len(pods.Items) > 0, nil
	})
}

// errJobFailed is returned by WaitJob for a Job that failed.
var errJobFailed = errors.New("job failed")

// jobDone reports whether j completed, or errJobFailed with its reason.
func jobDone(j *batchv1.Job) (bool, error) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, nil
		case batchv1.JobFailed:
			return false, fmt.Errorf("%w: %s: %s", errJobFailed, c.Reason, c.Message)
		}
	}
	return false, nil
}

// WaitJob waits until the Job ns/name completes; a failed Job ends the wait at once.
func (k *Kube) WaitJob(ctx context.Context, ns, name string, timeout time.Duration) error {
	var failed error
	err := Until(ctx, 2*time.Second, timeout, "job "+ns+"/"+name+" to complete", func(ctx context.Context) (bool, error) {
		j, err := k.CS.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		done, err := jobDone(j)
		if errors.Is(err, errJobFailed) {
			failed = err
			return true, nil
		}
		return done, err
	})
	if failed != nil {
		return fmt.Errorf("job %s/%s: %w", ns, name, failed)
	}
	return err
}

// DeleteJob deletes the Job ns/name and its pods, if it exists, and waits until it is gone.
func (k *Kube) DeleteJob(ctx context.Context, ns, name string) error {
	bg := metav1.DeletePropagationBackground
	err := k.CS.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting job %s/%s: %w", ns, name, err)
	}
	return Until(ctx, time.Second, time.Minute, "job "+ns+"/"+name+" to be deleted", func(ctx context.Context) (bool, error) {
		_, err := k.CS.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// DeleteNamespaces deletes the namespaces names (those that exist) with everything in them, and
// waits up to timeout until all are gone: a step that ran beside others leaves nothing that holds
// CPU or memory requests for the steps after it.
func (k *Kube) DeleteNamespaces(ctx context.Context, timeout time.Duration, names ...string) error {
	fg := metav1.DeletePropagationForeground
	for _, ns := range names {
		err := k.CS.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{PropagationPolicy: &fg})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting namespace %s: %w", ns, err)
		}
	}
	return Until(ctx, 2*time.Second, timeout, "namespaces "+strings.Join(names, ", ")+" to be deleted", func(ctx context.Context) (bool, error) {
		for _, ns := range names {
			_, err := k.CS.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err == nil {
				return false, nil
			}
			if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return true, nil
	})
}

// PodLogs returns the last tail lines (all when tail is 0) of every container of the pods in
// ns matching selector, each headed by its pod and container.
func (k *Kube) PodLogs(ctx context.Context, ns, selector string, tail int64) (string, error) {
	pods, err := k.CS.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return "", fmt.Errorf("listing pods %s in %s: %w", selector, ns, err)
	}
	var b strings.Builder
	for _, p := range pods.Items {
		if err := k.WriteLogs(ctx, &b, &p, tail); err != nil {
			return b.String(), err
		}
	}
	return b.String(), nil
}

// PodLogsOf returns the last tail lines (all when tail is 0) of every container of the pod
// ns/name.
func (k *Kube) PodLogsOf(ctx context.Context, ns, name string, tail int64) (string, error) {
	p, err := k.CS.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading pod %s/%s: %w", ns, name, err)
	}
	var b strings.Builder
	err = k.WriteLogs(ctx, &b, p, tail)
	return b.String(), err
}

// WriteLogs writes the logs of every container of p.
func (k *Kube) WriteLogs(ctx context.Context, w io.Writer, p *corev1.Pod, tail int64) error {
	for _, c := range p.Spec.Containers {
		o := &corev1.PodLogOptions{Container: c.Name}
		if tail > 0 {
			o.TailLines = &tail
		}
		raw, err := k.CS.CoreV1().Pods(p.Namespace).GetLogs(p.Name, o).DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("reading the logs of %s/%s (%s): %w", p.Namespace, p.Name, c.Name, err)
		}
		if len(p.Spec.Containers) > 1 {
			fmt.Fprintf(w, "[%s]\n", c.Name)
		}
		fmt.Fprintf(w, "%s\n", bytes.TrimSpace(raw))
	}
	return nil
}

// servicePod returns a ready pod behind the Service ns/name and the pod port its port port
// targets.
func (k *Kube) servicePod(ctx context.Context, ns, name string, port int32) (string, int32, error) {
	svc, err := k.CS.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", 0, fmt.Errorf("reading service %s/%s: %w", ns, name, err)
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port })
	if i < 0 {
		return "", 0, fmt.Errorf("service %s/%s has no port %d", ns, name, port)
	}
	target := svc.Spec.Ports[i].TargetPort
	sel := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector})
	pods, err := k.CS.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return "", 0, fmt.Errorf("listing the pods of service %s/%s: %w", ns, name, err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !PodReady(p) {
			continue
		}
		if pp, ok := targetPort(p, target, port); ok {
			return p.Name, pp, nil
		}
	}
	return "", 0, fmt.Errorf("service %s/%s has no ready pod", ns, name)
}

// targetPort resolves a Service's targetPort on pod p: a number as it is, a name through the
// pod's container ports, none as the Service port.
func targetPort(p *corev1.Pod, target intstr.IntOrString, port int32) (int32, bool) {
	switch {
	case target.Type == intstr.String && target.StrVal != "":
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == target.StrVal {
					return cp.ContainerPort, true
				}
			}
		}
		return 0, false
	case target.IntVal != 0:
		return target.IntVal, true
	}
	return port, true
}

// PortForward forwards a free loopback port to the pod behind the Service ns/name that serves
// its port port, through client-go's port-forward over SPDY. It returns the local base URL
// and a stop function; diagnostics go to logw.
func (k *Kube) PortForward(ctx context.Context, ns, name string, port int32, logw io.Writer) (string, func(), error) {
	pod, podPort, err := k.servicePod(ctx, ns, name, port)
	if err != nil {
		return "", nil, err
	}
	return k.PortForwardPod(ctx, ns, pod, podPort, logw)
}

// PortForwardPod forwards a free loopback port to port podPort of the pod ns/pod, as
// PortForward does.
func (k *Kube) PortForwardPod(ctx context.Context, ns, pod string, podPort int32, logw io.Writer) (string, func(), error) {
	transport, upgrader, err := spdy.RoundTripperFor(k.cfg)
	if err != nil {
		return "", nil, fmt.Errorf("port-forward transport: %w", err)
	}
	url := k.CS.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	stopCh, readyCh := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", podPort)}, stopCh, readyCh, logw, logw)
	if err != nil {
		return "", nil, fmt.Errorf("port-forward to %s/%s: %w", ns, pod, err)
	}
	errCh := make(chan error, 1)
	go func() { errCh <- fw.ForwardPorts() }()
	stop := func() { close(stopCh); <-errCh }
	select {
	case <-readyCh:
	case err := <-errCh:
		return "", nil, fmt.Errorf("port-forward to %s/%s:%d: %w", ns, pod, podPort, err)
	case <-ctx.Done():
		stop()
		return "", nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		stop()
		return "", nil, fmt.Errorf("port-forward to %s/%s: no local port: %v", ns, pod, err)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", ports[0].Local), stop, nil
}

// Poll calls f every interval until it reports done, returns an error, or timeout passes.
func Poll(ctx context.Context, interval, timeout time.Duration, what string, f func() (bool, error)) error {
	return Until(ctx, interval, timeout, what, func(context.Context) (bool, error) { return f() })
}

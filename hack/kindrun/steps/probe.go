package steps

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/images"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
	"github.com/poolparity/poolparity/hack/kindrun/probeapi"
)

// This file runs the chaos step's client in the cluster (hack/kindrun/chaosprobe) and talks to
// it over a port-forward to its pod. The client reaches the release through its Service, as
// any other client in the cluster, so a Service that loses its endpoints shows as what it is:
// connections refused.

// probeName is the chaos probe's pod, and probePort its control API.
const (
	probeName = "poolparity-chaosprobe"
	probePort = 8080
)

// probePod renders the chaos probe's pod: restricted, as the load Job, against target.
func probePod(image, target string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
  labels: {app.kubernetes.io/name: poolparity-chaosprobe}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  enableServiceLinks: false
  activeDeadlineSeconds: 1800
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    seccompProfile: {type: RuntimeDefault}
  containers:
    - name: probe
      image: %[2]s
      imagePullPolicy: IfNotPresent
      args: ["-target", "%[3]s", "-listen", ":%[4]d"]
      ports: [{name: control, containerPort: %[4]d}]
      readinessProbe:
        httpGet: {path: /healthz, port: control}
        periodSeconds: 2
      resources:
        requests: {cpu: 50m, memory: 32Mi}
        limits: {memory: 128Mi}
      securityContext:
        allowPrivilegeEscalation: false
        readOnlyRootFilesystem: true
        capabilities: {drop: ["ALL"]}
`, probeName, image, target, probePort))
}

// startProbe (re)creates the chaos probe's pod against the release's Service and forwards a
// loopback port to it; stop deletes the pod.
func startProbe(ctx context.Context, env *harness.Env, k *kube.Kube) (probeapi.Client, func(), error) {
	ns := env.Cfg.Namespace
	pods := k.CS.CoreV1().Pods(ns)
	zero := int64(0)
	if err := pods.Delete(ctx, probeName, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
		return probeapi.Client{}, nil, fmt.Errorf("deleting the old chaos probe: %w", err)
	}
	err := kube.Until(ctx, time.Second, time.Minute, "the old chaos probe to go", func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, probeName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return probeapi.Client{}, nil, err
	}
	if err := k.Apply(ctx, probePod(images.ProbeImage, fmt.Sprintf("http://%s:80", fullname(env))), ns); err != nil {
		return probeapi.Client{}, nil, fmt.Errorf("starting the chaos probe: %w", err)
	}
	remove := func() {
		_ = pods.Delete(context.WithoutCancel(ctx), probeName, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	if err := k.WaitPodsReady(ctx, ns, "app.kubernetes.io/name=poolparity-chaosprobe", 2*time.Minute); err != nil {
		remove()
		return probeapi.Client{}, nil, err
	}
	logw, err := env.LogFile("port-forward")
	if err != nil {
		remove()
		return probeapi.Client{}, nil, err
	}
	base, stopFw, err := k.PortForwardPod(ctx, ns, probeName, probePort, logw)
	if err != nil {
		logw.Close()
		remove()
		return probeapi.Client{}, nil, err
	}
	return probeapi.NewClient(base), func() { stopFw(); logw.Close(); remove() }, nil
}

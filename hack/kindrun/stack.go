package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"
)

const (
	monitoringNS    = "monitoring"
	promService     = "prometheus-operated" // the operator's governing Service of the Prometheus pods
	kpsRelease      = "kube-prometheus-stack"
	kpsChartVersion = "79.5.0"
	msChartVersion  = "3.12.2"
)

// stepDeps installs what the chart's monitoring objects and HPAs need: prometheus-operator with
// a Prometheus that selects them, and metrics-server. Offline from the modules' own bundle.yaml
// and Helm chart with the images built here; online from the upstream Helm charts.
func (h *Harness) stepDeps(ctx context.Context) (string, error) {
	if h.cfg.Mode == "online" {
		return "kube-prometheus-stack, metrics-server", h.depsOnline(ctx)
	}
	opDir, err := h.moduleDir(ctx, "github.com/prometheus-operator/prometheus-operator@"+operatorVersion)
	if err != nil {
		return "", err
	}
	bundle, err := os.ReadFile(filepath.Join(opDir, "bundle.yaml"))
	if err != nil {
		return "", fmt.Errorf("reading prometheus-operator's bundle.yaml: %w", err)
	}
	bundle, err = overrideImages(bundle, map[string]string{
		"quay.io/prometheus-operator/prometheus-operator:" + operatorVersion:        operatorImage,
		"quay.io/prometheus-operator/prometheus-config-reloader:" + operatorVersion: reloaderImage,
	})
	if err != nil {
		return "", err
	}
	if err := h.kubectlApply(ctx, "deps", bundle, "--server-side", "--force-conflicts"); err != nil {
		return "", fmt.Errorf("applying prometheus-operator's bundle.yaml: %w", err)
	}
	if _, err := h.kubectl(ctx, "deps", "-n", "default", "rollout", "status", "deploy/prometheus-operator", "--timeout=180s"); err != nil {
		return "", err
	}
	if _, err := h.kubectl(ctx, "deps", "wait", "--for=condition=Established", "crd/prometheuses.monitoring.coreos.com", "crd/servicemonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com", "--timeout=60s"); err != nil {
		return "", err
	}
	tmpl, err := template.ParseFS(imageFiles, "images/prometheus.yaml")
	if err != nil {
		return "", err
	}
	var prom bytes.Buffer
	if err := tmpl.Execute(&prom, map[string]string{"Image": promImage, "Version": prometheusVersion}); err != nil {
		return "", err
	}
	if err := h.kubectlApply(ctx, "deps", prom.Bytes()); err != nil {
		return "", fmt.Errorf("applying the Prometheus: %w", err)
	}
	// metrics-server from its own chart, for the HPAs' CPU metric; kind's kubelets serve
	// self-signed certificates.
	msDir, err := h.moduleDir(ctx, "sigs.k8s.io/metrics-server@"+metricsServerVersion)
	if err != nil {
		return "", err
	}
	repo, tag, _ := strings.Cut(metricsSrvImg, ":v")
	helm, err := h.tool("helm")
	if err != nil {
		return "", err
	}
	err = h.run(ctx, "deps", cmd{name: helm, args: []string{"upgrade", "--install", "metrics-server", filepath.Join(msDir, "charts", "metrics-server"),
		"-n", "kube-system", "--kubeconfig", h.kube,
		"--set", "image.repository=" + repo, "--set", "image.tag=v" + tag,
		"--set", "args={--kubelet-insecure-tls,--kubelet-preferred-address-types=InternalIP,--metric-resolution=15s}",
		"--wait", "--timeout", "4m"}})
	if err != nil {
		return "", fmt.Errorf("installing metrics-server: %w", err)
	}
	if err := poll(ctx, 2*time.Second, 3*time.Minute, "the Prometheus pod", func() (bool, error) {
		out, err := h.kubectl(ctx, "deps", "-n", monitoringNS, "get", "pods", "-l", "app.kubernetes.io/name=prometheus", "-o", "name")
		return err == nil && strings.TrimSpace(out) != "", err
	}); err != nil {
		return "", err
	}
	if err := h.waitPods(ctx, monitoringNS, "app.kubernetes.io/name=prometheus", 3*time.Minute); err != nil {
		return "", err
	}
	return "prometheus-operator " + operatorVersion + " (bundle.yaml), Prometheus " + prometheusVersion + ", metrics-server " + metricsServerVersion + " (chart)", nil
}

// overrideImages replaces each upstream image reference with the one built here, and fails if
// one is not in the manifest (a bundle that changed its images must not install half-local).
func overrideImages(manifest []byte, images map[string]string) ([]byte, error) {
	for from, to := range images {
		if !bytes.Contains(manifest, []byte(from)) {
			return nil, fmt.Errorf("image %s is not in the manifest", from)
		}
		manifest = bytes.ReplaceAll(manifest, []byte(from), []byte(to))
	}
	return manifest, nil
}

// depsOnline installs kube-prometheus-stack and metrics-server from their chart repositories.
func (h *Harness) depsOnline(ctx context.Context) error {
	helm, err := h.tool("helm")
	if err != nil {
		return err
	}
	steps := [][]string{
		{"repo", "add", "prometheus-community", "https://prometheus-community.github.io/helm-charts", "--force-update"},
		{"repo", "add", "metrics-server", "https://kubernetes-sigs.github.io/metrics-server/", "--force-update"},
		{"upgrade", "--install", "metrics-server", "metrics-server/metrics-server", "--version", msChartVersion,
			"-n", "kube-system", "--set", "args={--kubelet-insecure-tls}", "--wait", "--timeout", "5m"},
		{"upgrade", "--install", kpsRelease, "prometheus-community/kube-prometheus-stack", "--version", kpsChartVersion,
			"-n", monitoringNS, "--create-namespace",
			"--set", "prometheus.service.type=NodePort", "--set", "prometheus.service.nodePort=30090",
			"--set", "grafana.service.type=NodePort", "--set", "grafana.service.nodePort=30030",
			"--set", "prometheus.prometheusSpec.evaluationInterval=15s", "--wait", "--timeout", "10m"},
	}
	for _, s := range steps {
		if err := h.run(ctx, "deps", cmd{name: helm, args: append(s, "--kubeconfig", h.kube)}); err != nil {
			return err
		}
	}
	return nil
}

// chartValues are the offline cluster's values over values-kind.yaml: the images built here.
func (h *Harness) chartValues() []string {
	if h.cfg.Mode == "online" {
		return nil
	}
	repo, tag, _ := strings.Cut(serviceImage, ":")
	redisRepo, redisTag, _ := strings.Cut(redisImage, ":")
	testRepo, testTag, _ := strings.Cut(testImage, ":")
	return []string{
		"--set", "image.repository=" + repo, "--set", "image.tag=" + tag,
		"--set", "controller.image.repository=" + repo, "--set", "controller.image.tag=" + tag,
		"--set", "controller.image.pullPolicy=Never",
		"--set", "redis.image.repository=" + redisRepo, "--set", "redis.image.tag=" + redisTag,
		"--set", "redis.image.pullPolicy=Never",
		"--set", "tests.image.repository=" + testRepo, "--set", "tests.image.tag=" + testTag,
	}
}

// helmInstall installs (or upgrades) the chart with the kind values, the harness's test values
// and extra, and waits for both tracks.
func (h *Harness) helmInstall(ctx context.Context, extra ...string) error {
	helm, err := h.tool("helm")
	if err != nil {
		return err
	}
	ns := h.cfg.Namespace
	nsYAML := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels:\n    pod-security.kubernetes.io/enforce: restricted\n", ns)
	if err := h.kubectlApply(ctx, "helm", []byte(nsYAML)); err != nil {
		return err
	}
	chart := filepath.Join(h.cfg.Root, "deploy", "helm", "poolparity")
	args := []string{"upgrade", "--install", h.cfg.Release, chart, "-n", ns, "--kubeconfig", h.kube,
		"-f", filepath.Join(chart, "values-kind.yaml"),
		"-f", filepath.Join(h.cfg.Root, "hack", "kindrun", "values-test.yaml"),
		"--set", "service.type=NodePort", "--set", "service.nodePort=30080",
		"--wait", "--timeout", "5m"}
	args = append(args, h.chartValues()...)
	args = append(args, extra...)
	return h.run(ctx, "helm", cmd{name: helm, args: args})
}

// stepInstall installs the chart and runs its helm test.
func (h *Harness) stepInstall(ctx context.Context) (string, error) {
	if err := h.helmInstall(ctx); err != nil {
		return "", err
	}
	helm, _ := h.tool("helm")
	// Without --logs: the chart deletes a test pod that succeeded (hook-succeeded), so helm could
	// not read its logs; a failed one stays, and its logs go into the error.
	var out bytes.Buffer
	if err := h.run(ctx, "helm", cmd{name: helm, args: []string{"test", h.cfg.Release, "-n", h.cfg.Namespace, "--kubeconfig", h.kube, "--timeout", "3m"}, stdout: &out}); err != nil {
		logs, _ := h.kubectl(ctx, "helm", "-n", h.cfg.Namespace, "logs", h.fullname()+"-test")
		return "", fmt.Errorf("helm test: %w\n%s", err, indent(logs))
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "Phase:") {
			h.logf("helm test: %s", strings.TrimSpace(l))
		}
	}
	return "helm test passed", nil
}

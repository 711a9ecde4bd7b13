package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	monitoringNS    = "monitoring"
	promService     = "prometheus-operated" // the operator's governing Service of the Prometheus pods
	kpsRelease      = "kube-prometheus-stack"
	kpsChartVersion = "79.5.0"
	msChartVersion  = "3.12.2"
)

// depsStep installs what the chart's monitoring objects and HPAs need: prometheus-operator with
// a Prometheus that selects them, and metrics-server. Offline from the modules' own bundle.yaml
// and Helm chart with the images built here; online from the upstream Helm charts.
type depsStep struct{}

// Name implements Step.
func (depsStep) Name() string { return "kind-deps" }

// Run implements Step.
func (depsStep) Run(ctx context.Context, env *Env) (Outcome, error) {
	if env.cfg.Mode == "online" {
		return Outcome{Note: "kube-prometheus-stack, metrics-server"}, env.depsOnline(ctx)
	}
	note, err := env.depsOffline(ctx)
	return Outcome{Note: note}, err
}

// depsOffline installs prometheus-operator from its bundle.yaml, a Prometheus, and
// metrics-server from its chart, with the images built here.
func (env *Env) depsOffline(ctx context.Context) (string, error) {
	k, err := env.kube()
	if err != nil {
		return "", err
	}
	if err := env.installLocalPath(ctx, k); err != nil {
		return "", err
	}
	opDir, err := env.moduleDir(ctx, "github.com/prometheus-operator/prometheus-operator@"+operatorVersion)
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
	if err := k.Apply(ctx, bundle, "default"); err != nil {
		return "", fmt.Errorf("applying prometheus-operator's bundle.yaml: %w", err)
	}
	if err := k.WaitDeployment(ctx, "default", "prometheus-operator", 3*time.Minute); err != nil {
		return "", err
	}
	if err := k.WaitEstablished(ctx, time.Minute, "prometheuses.monitoring.coreos.com", "servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"); err != nil {
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
	if err := k.Apply(ctx, prom.Bytes(), monitoringNS); err != nil {
		return "", fmt.Errorf("applying the Prometheus: %w", err)
	}
	// metrics-server from its own chart, for the HPAs' CPU metric; kind's kubelets serve
	// self-signed certificates.
	msDir, err := env.moduleDir(ctx, "sigs.k8s.io/metrics-server@"+metricsServerVersion)
	if err != nil {
		return "", err
	}
	repo, tag, _ := strings.Cut(metricsSrvImg, ":v")
	helm, err := env.tool("helm")
	if err != nil {
		return "", err
	}
	err = env.run(ctx, "deps", cmd{name: helm, args: []string{"upgrade", "--install", "metrics-server", filepath.Join(msDir, "charts", "metrics-server"),
		"-n", "kube-system", "--kubeconfig", env.kubeconfig,
		"--set", "image.repository=" + repo, "--set", "image.tag=v" + tag,
		"--set", "args={--kubelet-insecure-tls,--kubelet-preferred-address-types=InternalIP,--metric-resolution=15s}",
		"--wait", "--timeout", "4m"}})
	if err != nil {
		return "", fmt.Errorf("installing metrics-server: %w", err)
	}
	gw, err := env.installGateway(ctx, k)
	if err != nil {
		return "", err
	}
	// The operator creates the Prometheus pod; WaitPodsReady waits for it to exist, then be ready.
	if err := k.WaitPodsReady(ctx, monitoringNS, "app.kubernetes.io/name=prometheus", 5*time.Minute); err != nil {
		return "", err
	}
	keda, err := env.installKEDA(ctx, k)
	if err != nil {
		return "", err
	}
	return "local-path-provisioner " + localPathVersion + " (default StorageClass), prometheus-operator " + operatorVersion + " (bundle.yaml), Prometheus " + prometheusVersion + ", metrics-server " + metricsServerVersion + " (chart), " + gw + ", " + keda, nil
}

// localPathClass is the StorageClass local-path-storage.yaml defines.
const localPathClass = "local-path"

// installLocalPath installs local-path-provisioner from its module's own
// deploy/local-path-storage.yaml, with its image and its helper pods' image (busybox upstream)
// built here, and makes its StorageClass the cluster's default, as kind's own node image does.
func (env *Env) installLocalPath(ctx context.Context, k *Kube) error {
	dir, err := env.moduleDir(ctx, "github.com/rancher/local-path-provisioner@"+localPathVersion)
	if err != nil {
		return err
	}
	m, err := os.ReadFile(filepath.Join(dir, "deploy", "local-path-storage.yaml"))
	if err != nil {
		return fmt.Errorf("reading local-path-provisioner's manifest: %w", err)
	}
	m, err = overrideImages(m, map[string]string{
		"rancher/local-path-provisioner:" + localPathVersion: localPathImage,
		"image: busybox": "image: " + helperImage,
	})
	if err != nil {
		return fmt.Errorf("local-path-storage.yaml: %w", err)
	}
	if err := k.Apply(ctx, m, ""); err != nil {
		return fmt.Errorf("applying local-path-storage.yaml: %w", err)
	}
	// kind, finding no storage manifest in the node image, made a "standard" class of the
	// in-tree host-path provisioner (which nothing runs) the default: one default only.
	classes, err := k.cs.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the StorageClasses: %w", err)
	}
	for _, sc := range classes.Items {
		isDefault := sc.Name == localPathClass
		if sc.Annotations[defaultClassAnnotation] == strconv.FormatBool(isDefault) || (!isDefault && sc.Annotations[defaultClassAnnotation] == "") {
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, defaultClassAnnotation, strconv.FormatBool(isDefault))
		if _, err := k.cs.StorageV1().StorageClasses().Patch(ctx, sc.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
			return fmt.Errorf("setting %s of StorageClass %s to %v: %w", defaultClassAnnotation, sc.Name, isDefault, err)
		}
	}
	return k.WaitDeployment(ctx, "local-path-storage", "local-path-provisioner", 2*time.Minute)
}

// defaultClassAnnotation marks the default StorageClass.
const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

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
func (env *Env) depsOnline(ctx context.Context) error {
	helm, err := env.tool("helm")
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
		if err := env.run(ctx, "deps", cmd{name: helm, args: append(s, "--kubeconfig", env.kubeconfig)}); err != nil {
			return err
		}
	}
	k, err := env.kube()
	if err != nil {
		return err
	}
	_, err = env.installGateway(ctx, k)
	return err
}

// chartValues are the offline cluster's values over values-kind.yaml: the images built here.
func (env *Env) chartValues() []string {
	if env.cfg.Mode == "online" {
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
func (env *Env) helmInstall(ctx context.Context, extra ...string) error {
	// Its rules read its own namespace only: the example service's releases record their own
	// (docs/adopt.md, "scope every install's rules").
	args := append([]string{"--set", "service.type=NodePort", "--set", "service.nodePort=30080"}, rulesInNamespace(env.cfg.Namespace)...)
	args = append(args, env.chartValues()...)
	return env.helmInstallIn(ctx, env.cfg.Namespace, env.cfg.Release, nil, append(args, extra...)...)
}

// rulesInNamespace is the helm --set that scopes a release's rules to the series of namespace ns
// (the chart's default selector plus the namespace; the comma escaped for --set).
func rulesInNamespace(ns string) []string {
	return []string{"--set", `rules.selector=gray_status=~"true|false|baseline"\,namespace="` + ns + `"`}
}

// helmInstallIn installs (or upgrades) the chart as release in namespace ns (created restricted)
// with the kind values, the harness's test values, the values files and extra, and waits for
// both tracks.
func (env *Env) helmInstallIn(ctx context.Context, ns, release string, files []string, extra ...string) error {
	helm, err := env.tool("helm")
	if err != nil {
		return err
	}
	if err := env.restrictedNamespace(ctx, ns); err != nil {
		return err
	}
	chart := filepath.Join(env.cfg.Root, "deploy", "helm", "poolparity")
	args := []string{"upgrade", "--install", release, chart, "-n", ns, "--kubeconfig", env.kubeconfig,
		"-f", filepath.Join(chart, "values-kind.yaml"),
		"-f", filepath.Join(env.cfg.Root, "hack", "kindrun", "values-test.yaml"),
		"--wait", "--timeout", "5m"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	args = append(args, extra...)
	return env.run(ctx, "helm", cmd{name: helm, args: args})
}

// restrictedNamespace creates namespace ns (or leaves it) enforcing the restricted Pod Security
// Standard, which the chart's pods meet.
func (env *Env) restrictedNamespace(ctx context.Context, ns string) error {
	k, err := env.kube()
	if err != nil {
		return err
	}
	nsYAML := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels:\n    pod-security.kubernetes.io/enforce: restricted\n", ns)
	if err := k.Apply(ctx, []byte(nsYAML), ""); err != nil {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	return nil
}

// installStep installs the chart and runs its helm test.
type installStep struct{}

// Name implements Step.
func (installStep) Name() string { return "helm-install" }

// Run implements Step.
func (installStep) Run(ctx context.Context, env *Env) (Outcome, error) {
	note, err := env.installAndTest(ctx)
	return Outcome{Note: note}, err
}

// installAndTest installs the chart and runs its helm test; then it installs the example
// service's release beside it, as a team installs its own service (docs/adopt.md), whose
// commands run its helm test too. The example is installed here, minutes before the example step loads and
// judges it, and the canary step's Services and ServiceMonitors are created, because this
// cluster's Prometheus scrapes a new ServiceMonitor's targets about 2.5 minutes after it appears
// (docs/kind.md).
func (env *Env) installAndTest(ctx context.Context) (string, error) {
	if err := env.helmInstall(ctx); err != nil {
		return "", err
	}
	if err := env.helmTest(ctx, env.cfg.Namespace, env.cfg.Release, env.fullname()); err != nil {
		return "", err
	}
	// The guide's install block runs the example's helm test too.
	if err := env.installExample(ctx); err != nil {
		return "", err
	}
	// The canary step's scrape objects, for the same reason.
	k, err := env.kube()
	if err != nil {
		return "", err
	}
	if err := env.applyCanaryScrape(ctx, k, defaultCanaries()); err != nil {
		return "", err
	}
	return "helm test passed (" + env.cfg.Release + " and the example's " + exampleRelease + "); " + exampleMisuseRelease + " installed; the canaries' ServiceMonitors created", nil
}

// helmTest runs the release's helm test; fullname is the chart's name prefix of its objects.
func (env *Env) helmTest(ctx context.Context, ns, release, fullname string) error {
	helm, err := env.tool("helm")
	if err != nil {
		return err
	}
	// Without --logs: the chart deletes a test pod that succeeded (hook-succeeded), so helm could
	// not read its logs; a failed one stays, and its logs go into the error.
	var out bytes.Buffer
	if err := env.run(ctx, "helm", cmd{name: helm, args: []string{"test", release, "-n", ns, "--kubeconfig", env.kubeconfig, "--timeout", "3m"}, stdout: &out}); err != nil {
		var logs string
		if k, kerr := env.kube(); kerr == nil {
			logs, _ = k.PodLogsOf(ctx, ns, fullname+"-test", 0)
		}
		return fmt.Errorf("helm test %s: %w\n%s", release, err, indent(logs))
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "Phase:") {
			env.logf("helm test %s: %s", release, strings.TrimSpace(l))
		}
	}
	return nil
}

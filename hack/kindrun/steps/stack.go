package steps

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

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/images"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
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

// depsDef declares the "kind-deps" step.
func depsDef() harness.Def {
	return harness.Def{Step: depsStep{}, Needs: []string{"env", "kind-load"}, Target: "kind-deps", Doc: "Install prometheus-operator (with a Prometheus), metrics-server, the Gateway API CRDs and Traefik (a Gateway).", Default: true}
}

// Name implements Step.
func (depsStep) Name() string { return "kind-deps" }

// Run implements Step.
func (depsStep) Run(ctx context.Context, env *harness.Env) (harness.Outcome, error) {
	if env.Cfg.Mode == "online" {
		return harness.Outcome{Note: "kube-prometheus-stack, metrics-server"}, depsOnline(ctx, env)
	}
	note, err := depsOffline(ctx, env)
	return harness.Outcome{Note: note}, err
}

// depsOffline installs prometheus-operator from its bundle.yaml, a Prometheus, and
// metrics-server from its chart, with the images built here.
func depsOffline(ctx context.Context, env *harness.Env) (string, error) {
	k, err := env.Kube()
	if err != nil {
		return "", err
	}
	if err := installLocalPath(ctx, env, k); err != nil {
		return "", err
	}
	opDir, err := images.ModuleDir(ctx, env, "github.com/prometheus-operator/prometheus-operator@"+images.OperatorVersion)
	if err != nil {
		return "", err
	}
	bundle, err := os.ReadFile(filepath.Join(opDir, "bundle.yaml"))
	if err != nil {
		return "", fmt.Errorf("reading prometheus-operator's bundle.yaml: %w", err)
	}
	bundle, err = overrideImages(bundle, map[string]string{
		"quay.io/prometheus-operator/prometheus-operator:" + images.OperatorVersion:        images.OperatorImage,
		"quay.io/prometheus-operator/prometheus-config-reloader:" + images.OperatorVersion: images.ReloaderImage,
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
	tmpl, err := template.ParseFS(images.Files, "prometheus.yaml")
	if err != nil {
		return "", err
	}
	var prom bytes.Buffer
	if err := tmpl.Execute(&prom, map[string]string{"Image": images.PromImage, "Version": images.PrometheusVersion}); err != nil {
		return "", err
	}
	if err := k.Apply(ctx, prom.Bytes(), monitoringNS); err != nil {
		return "", fmt.Errorf("applying the Prometheus: %w", err)
	}
	// metrics-server from its own chart, for the HPAs' CPU metric; kind's kubelets serve
	// self-signed certificates.
	msDir, err := images.ModuleDir(ctx, env, "sigs.k8s.io/metrics-server@"+images.MetricsServerVersion)
	if err != nil {
		return "", err
	}
	repo, tag, _ := strings.Cut(images.MetricsServerImage, ":v")
	helm, err := env.Tool("helm")
	if err != nil {
		return "", err
	}
	err = env.Run(ctx, "deps", harness.Cmd{Name: helm, Args: []string{"upgrade", "--install", "metrics-server", filepath.Join(msDir, "charts", "metrics-server"),
		"-n", "kube-system", "--kubeconfig", env.Kubeconfig,
		"--set", "image.repository=" + repo, "--set", "image.tag=v" + tag,
		"--set", "args={--kubelet-insecure-tls,--kubelet-preferred-address-types=InternalIP,--metric-resolution=15s}",
		// One node's metrics: the chart's 100m request would hold a twentieth of the node.
		"--set", "resources.requests.cpu=20m",
		"--wait", "--timeout", "4m"}})
	if err != nil {
		return "", fmt.Errorf("installing metrics-server: %w", err)
	}
	// kind runs two CoreDNS replicas of 100m each for one node: one serves it, and the 100m
	// is the node's for the steps side by side.
	one := []byte(`{"spec":{"replicas":1}}`)
	if _, err := k.CS.AppsV1().Deployments("kube-system").Patch(ctx, "coredns", types.MergePatchType, one, metav1.PatchOptions{FieldManager: kube.FieldManager}); err != nil {
		return "", fmt.Errorf("scaling CoreDNS to one replica: %w", err)
	}
	gw, err := installGateway(ctx, env, k)
	if err != nil {
		return "", err
	}
	// The operator creates the Prometheus pod; WaitPodsReady waits for it to exist, then be ready.
	if err := k.WaitPodsReady(ctx, monitoringNS, "app.kubernetes.io/name=prometheus", 5*time.Minute); err != nil {
		return "", err
	}
	keda, err := installKEDA(ctx, env, k)
	if err != nil {
		return "", err
	}
	return "local-path-provisioner " + images.LocalPathVersion + " (default StorageClass), prometheus-operator " + images.OperatorVersion + " (bundle.yaml), Prometheus " + images.PrometheusVersion + ", metrics-server " + images.MetricsServerVersion + " (chart), " + gw + ", " + keda, nil
}

// localPathClass is the StorageClass local-path-storage.yaml defines.
const localPathClass = "local-path"

// installLocalPath installs local-path-provisioner from its module's own
// deploy/local-path-storage.yaml, with its image and its helper pods' image (busybox upstream)
// built here, and makes its StorageClass the cluster's default, as kind's own node image does.
func installLocalPath(ctx context.Context, env *harness.Env, k *kube.Kube) error {
	dir, err := images.ModuleDir(ctx, env, "github.com/rancher/local-path-provisioner@"+images.LocalPathVersion)
	if err != nil {
		return err
	}
	m, err := os.ReadFile(filepath.Join(dir, "deploy", "local-path-storage.yaml"))
	if err != nil {
		return fmt.Errorf("reading local-path-provisioner's manifest: %w", err)
	}
	m, err = overrideImages(m, map[string]string{
		"rancher/local-path-provisioner:" + images.LocalPathVersion: images.LocalPathImage,
		"image: busybox": "image: " + images.HelperImage,
	})
	if err != nil {
		return fmt.Errorf("local-path-storage.yaml: %w", err)
	}
	if err := k.Apply(ctx, m, ""); err != nil {
		return fmt.Errorf("applying local-path-storage.yaml: %w", err)
	}
	// kind, finding no storage manifest in the node image, made a "standard" class of the
	// in-tree host-path provisioner (which nothing runs) the default: one default only.
	classes, err := k.CS.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the StorageClasses: %w", err)
	}
	for _, sc := range classes.Items {
		isDefault := sc.Name == localPathClass
		if sc.Annotations[defaultClassAnnotation] == strconv.FormatBool(isDefault) || (!isDefault && sc.Annotations[defaultClassAnnotation] == "") {
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, defaultClassAnnotation, strconv.FormatBool(isDefault))
		if _, err := k.CS.StorageV1().StorageClasses().Patch(ctx, sc.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: kube.FieldManager}); err != nil {
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
func depsOnline(ctx context.Context, env *harness.Env) error {
	helm, err := env.Tool("helm")
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
		if err := env.Run(ctx, "deps", harness.Cmd{Name: helm, Args: append(s, "--kubeconfig", env.Kubeconfig)}); err != nil {
			return err
		}
	}
	k, err := env.Kube()
	if err != nil {
		return err
	}
	_, err = installGateway(ctx, env, k)
	return err
}

// chartValues are the offline cluster's values over values-kind.yaml: the images built here.
func chartValues(env *harness.Env) []string {
	if env.Cfg.Mode == "online" {
		return nil
	}
	repo, tag, _ := strings.Cut(images.ServiceTag, ":")
	redisRepo, redisTag, _ := strings.Cut(images.RedisImage, ":")
	testRepo, testTag, _ := strings.Cut(images.TestImage, ":")
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
func helmInstall(ctx context.Context, env *harness.Env, extra ...string) error {
	// Its rules read its own namespace only: the example service's releases record their own
	// (docs/adopt.md, "scope every install's rules").
	args := append([]string{"--set", "service.type=NodePort", "--set", "service.nodePort=30080"}, rulesInNamespace(env.Cfg.Namespace)...)
	args = append(args, chartValues(env)...)
	if env.Cfg.HPACPUTarget > 0 {
		args = append(args, "--set", fmt.Sprintf("autoscaling.targetCPUUtilizationPercentage=%d", env.Cfg.HPACPUTarget))
	}
	if env.Cfg.CPURequest != "" {
		args = append(args, "--set", "resources.requests.cpu="+env.Cfg.CPURequest)
	}
	return helmInstallIn(ctx, env, env.Cfg.Namespace, env.Cfg.Release, nil, append(args, extra...)...)
}

// rulesInNamespace is the helm --set that scopes a release's rules to the series of namespace ns
// (the chart's default selector plus the namespace; the comma escaped for --set).
func rulesInNamespace(ns string) []string {
	return []string{"--set", `rules.selector=gray_status=~"true|false|baseline"\,namespace="` + ns + `"`}
}

// helmInstallIn installs (or upgrades) the chart as release in namespace ns (created restricted)
// with the kind values, the harness's test values, the values files and extra, and waits for
// both tracks.
func helmInstallIn(ctx context.Context, env *harness.Env, ns, release string, files []string, extra ...string) error {
	helm, err := env.Tool("helm")
	if err != nil {
		return err
	}
	if err := restrictedNamespace(ctx, env, ns); err != nil {
		return err
	}
	chart := filepath.Join(env.Cfg.Root, "deploy", "helm", "poolparity")
	args := []string{"upgrade", "--install", release, chart, "-n", ns, "--kubeconfig", env.Kubeconfig,
		"-f", filepath.Join(chart, "values-kind.yaml"),
		"-f", filepath.Join(env.Cfg.Root, "hack", "kindrun", "values-test.yaml"),
		"--wait", "--timeout", "5m"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	args = append(args, extra...)
	return env.Run(ctx, "helm", harness.Cmd{Name: helm, Args: args})
}

// restrictedNamespace creates namespace ns (or leaves it) enforcing the restricted Pod Security
// Standard, which the chart's pods meet.
func restrictedNamespace(ctx context.Context, env *harness.Env, ns string) error {
	k, err := env.Kube()
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

// installDef declares the "helm-install" step.
func installDef() harness.Def {
	return harness.Def{Step: installStep{}, Needs: []string{"env", "kind-deps"}, Target: "helm-install", Doc: "Install the chart with the kind values and run helm test; install the example service (docs/adopt.md) beside it.", Default: true}
}

// Name implements Step.
func (installStep) Name() string { return "helm-install" }

// Run implements Step.
func (installStep) Run(ctx context.Context, env *harness.Env) (harness.Outcome, error) {
	note, err := installAndTest(ctx, env)
	return harness.Outcome{Note: note}, err
}

// installAndTest installs the chart and runs its helm test; then it installs the example
// service's release beside it, as a team installs its own service (docs/adopt.md), whose
// commands run its helm test too. The example is installed here, minutes before the example step loads and
// judges it, and the canary step's Services and ServiceMonitors are created, because this
// cluster's Prometheus scrapes a new ServiceMonitor's targets about 2.5 minutes after it appears
// (docs/kind.md).
func installAndTest(ctx context.Context, env *harness.Env) (string, error) {
	if err := helmInstall(ctx, env); err != nil {
		return "", err
	}
	if err := helmTest(ctx, env, env.Cfg.Namespace, env.Cfg.Release, fullname(env)); err != nil {
		return "", err
	}
	// The guide's install block runs the example's helm test too.
	if err := installExample(ctx, env); err != nil {
		return "", err
	}
	// The canary step's scrape objects, for the same reason.
	k, err := env.Kube()
	if err != nil {
		return "", err
	}
	if err := applyCanaryScrape(ctx, env, k, defaultCanaries()); err != nil {
		return "", err
	}
	return "helm test passed (" + env.Cfg.Release + " and the example's " + exampleRelease + "); " + exampleMisuseRelease + " installed; the canaries' ServiceMonitors created", nil
}

// helmTest runs the release's helm test; fullname is the chart's name prefix of its objects.
func helmTest(ctx context.Context, env *harness.Env, ns, release, fullname string) error {
	helm, err := env.Tool("helm")
	if err != nil {
		return err
	}
	// Without --logs: the chart deletes a test pod that succeeded (hook-succeeded), so helm could
	// not read its logs; a failed one stays, and its logs go into the error.
	var out bytes.Buffer
	if err := env.Run(ctx, "helm", harness.Cmd{Name: helm, Args: []string{"test", release, "-n", ns, "--kubeconfig", env.Kubeconfig, "--timeout", "3m"}, Stdout: &out}); err != nil {
		var logs string
		if k, kerr := env.Kube(); kerr == nil {
			logs, _ = k.PodLogsOf(ctx, ns, fullname+"-test", 0)
		}
		return fmt.Errorf("helm test %s: %w\n%s", release, err, harness.Indent(logs))
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "Phase:") {
			env.Logf("helm test %s: %s", release, strings.TrimSpace(l))
		}
	}
	return nil
}

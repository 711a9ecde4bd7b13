// Package testenv runs a real kube-apiserver and etcd for tests (controller-runtime's envtest),
// installs third-party CRDs from the YAML that their Go modules ship, and creates objects by
// server-side apply. The chart's manifest tests and the canary controller's tests share it.
//
// The control-plane binaries come from KUBEBUILDER_ASSETS, or from the repository's ./bin/k8s
// (built by `make tools`). When they are missing, Start skips the test, or fails it under CI=true.
// CRD YAML is read from the Go module cache after `go mod download module@version`, so the
// pinned modules need not be in go.mod.
package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/poolparity/poolparity/internal/testtool"
)

// Pinned modules whose CRD YAML the harness installs. Every version is served by the module proxy
// and build with this repository's Go version.
const (
	PrometheusOperatorModule  = "github.com/prometheus-operator/prometheus-operator"
	PrometheusOperatorVersion = "v0.85.0"
	GatewayAPIModule          = "sigs.k8s.io/gateway-api"
	GatewayAPIVersion         = "v1.6.3"
	// KEDAModule at KEDAVersion is the KEDA that hack/tools/keda builds for the kind cluster.
	KEDAModule  = "github.com/kedacore/keda/v2"
	KEDAVersion = "v2.21.0"
	// ArgoRolloutsModule and FlaggerModule hold the CRDs of the rollout tools the chart renders
	// objects for (RolloutToolCRDs). Argo Rollouts is also in go.mod (the metric plugin), at this version.
	ArgoRolloutsModule  = "github.com/argoproj/argo-rollouts"
	ArgoRolloutsVersion = "v1.10.1"
	FlaggerModule       = "github.com/fluxcd/flagger"
	FlaggerVersion      = "v1.36.1"
)

// FieldOwner is the server-side apply field manager the harness uses.
const FieldOwner = "poolparity-testenv"

// Env is a running control plane.
type Env struct {
	// Config reaches the apiserver as an administrator.
	Config *rest.Config
	// Client is a controller-runtime client with the client-go scheme; it handles unstructured objects too.
	Client client.Client
	// StartDuration is how long the control plane (and CRD installation) took to start.
	StartDuration time.Duration
	// KubeConfig is a kubeconfig file's content that reaches the apiserver as an administrator,
	// for commands that find the cluster as kubectl does.
	KubeConfig []byte

	env *envtest.Environment
}

type options struct {
	crdPaths []string
	scheme   *runtime.Scheme
}

// Option configures Start.
type Option func(*options) error

// WithCRDPaths installs the CRDs in these files or directories before Start returns.
func WithCRDPaths(paths ...string) Option {
	return func(o *options) error { o.crdPaths = append(o.crdPaths, paths...); return nil }
}

// WithScheme sets the scheme of Env.Client (default: client-go's scheme).
func WithScheme(s *runtime.Scheme) Option {
	return func(o *options) error { o.scheme = s; return nil }
}

// WithPrometheusOperatorCRDs installs the ServiceMonitor, PodMonitor and PrometheusRule CRDs of
// the pinned prometheus-operator module.
func WithPrometheusOperatorCRDs() Option {
	return func(o *options) error {
		dir, err := ModuleDir(PrometheusOperatorModule, PrometheusOperatorVersion)
		if err != nil {
			return err
		}
		crds := filepath.Join(dir, "example", "prometheus-operator-crd")
		for _, n := range []string{"servicemonitors", "podmonitors", "prometheusrules"} {
			o.crdPaths = append(o.crdPaths, filepath.Join(crds, "monitoring.coreos.com_"+n+".yaml"))
		}
		return nil
	}
}

// WithGatewayAPICRDs installs the standard-channel GatewayClass, Gateway, HTTPRoute and
// ReferenceGrant CRDs of the pinned Gateway API module.
func WithGatewayAPICRDs() Option {
	return func(o *options) error {
		dir, err := ModuleDir(GatewayAPIModule, GatewayAPIVersion)
		if err != nil {
			return err
		}
		crds := filepath.Join(dir, "config", "crd", "standard")
		for _, n := range []string{"gatewayclasses", "gateways", "httproutes", "referencegrants"} {
			o.crdPaths = append(o.crdPaths, filepath.Join(crds, "gateway.networking.k8s.io_"+n+".yaml"))
		}
		return nil
	}
}

// WithKEDACRDs installs the ScaledObject CRD (keda.sh/v1alpha1) of the pinned KEDA module, which
// the chart renders with autoscaling.mode keda.
func WithKEDACRDs() Option {
	return func(o *options) error {
		dir, err := ModuleDir(KEDAModule, KEDAVersion)
		if err != nil {
			return err
		}
		o.crdPaths = append(o.crdPaths, filepath.Join(dir, "config", "crd", "bases", "keda.sh_scaledobjects.yaml"))
		return nil
	}
}

// AssetsDir returns the directory holding kube-apiserver, etcd and kubectl: KUBEBUILDER_ASSETS,
// or <repo>/bin/k8s.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			return "", fmt.Errorf("locating the repository: %w", err)
		}
		dir = filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "bin", "k8s")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("%s not found in %s (set KUBEBUILDER_ASSETS or run `make tools`): %w", bin, dir, err)
		}
	}
	return dir, nil
}

// ModuleDir downloads module@version into the module cache (a no-op when it is there) and returns
// its directory. It does not touch go.mod.
func ModuleDir(module, version string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil && err == nil {
		err = jerr
	}
	if err != nil || info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %v %s %s", module, version, err, info.Error, stderr.String())
	}
	return info.Dir, nil
}

// Start starts kube-apiserver and etcd, installs the requested CRDs, and stops everything when
// the test ends. It skips (or fails under CI=true) when the binaries are missing.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	assets, err := AssetsDir()
	if err != nil {
		testtool.SkipOrFail(t, "envtest control plane unavailable: %v", err)
	}
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			t.Fatalf("configuring envtest: %v", err)
		}
	}
	if o.scheme == nil {
		o.scheme = scheme.Scheme
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths:              o.crdPaths,
			ErrorIfPathMissing: true,
		},
		Scheme: o.scheme,
	}
	begin := time.Now()
	cfg, err := te.Start()
	if err != nil {
		t.Fatalf("starting envtest (kube-apiserver and etcd from %s): %v", assets, err)
	}
	t.Cleanup(func() {
		if err := te.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: o.scheme})
	if err != nil {
		t.Fatalf("creating client: %v", err)
	}
	return &Env{Config: cfg, Client: c, StartDuration: time.Since(begin), KubeConfig: te.KubeConfig, env: te}
}

// CreateNamespace creates a namespace with labels (e.g. pod-security.kubernetes.io/enforce) and
// its "default" ServiceAccount, which a real cluster's controller-manager would create (envtest
// runs none, and the ServiceAccount admission plugin refuses Pods whose account is missing).
func (e *Env) CreateNamespace(ctx context.Context, name string, labels map[string]string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := e.Client.Create(ctx, ns); err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}
	if err := e.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the default ServiceAccount of %s: %w", name, err)
	}
	return nil
}

// RestrictedLabels are the namespace labels that enforce, audit and warn on the restricted Pod
// Security Standard.
func RestrictedLabels() map[string]string {
	return map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/audit":   "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	}
}

// Apply creates or updates each object by server-side apply (forcing ownership), in namespace ns
// for namespaced objects without one, and returns the objects as the apiserver stored them.
// dryRun asks the apiserver to run admission and validation without persisting.
func (e *Env) Apply(ctx context.Context, ns string, objs []*unstructured.Unstructured, dryRun bool) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, in := range objs {
		obj := in.DeepCopy()
		namespaced, err := e.Client.IsObjectNamespaced(obj)
		if err != nil {
			return out, fmt.Errorf("%s %s: resolving its resource: %w", obj.GetKind(), obj.GetName(), err)
		}
		if namespaced && obj.GetNamespace() == "" {
			obj.SetNamespace(ns)
		}
		opts := []client.ApplyOption{client.FieldOwner(FieldOwner), client.ForceOwnership}
		if dryRun {
			opts = append(opts, client.DryRunAll)
		}
		if err := e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), opts...); err != nil {
			return out, fmt.Errorf("applying %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
		out = append(out, obj)
	}
	return out, nil
}

// PodFromTemplate builds a Pod from a pod template, so that PodSecurity admission (which enforces
// on Pods, and only warns on workload templates) can judge it.
func PodFromTemplate(name, ns string, tmpl corev1.PodTemplateSpec) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: tmpl.Labels, Annotations: tmpl.Annotations},
		Spec:       tmpl.Spec,
	}
}

// DryRunCreate creates obj with dryRun=All: admission (including PodSecurity) runs, nothing is stored.
func (e *Env) DryRunCreate(ctx context.Context, obj client.Object) error {
	if err := e.Client.Create(ctx, obj, client.DryRunAll); err != nil {
		return fmt.Errorf("dry-run creating %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// IsForbidden reports whether err is an apiserver Forbidden error (what PodSecurity returns).
func IsForbidden(err error) bool { return apierrors.IsForbidden(err) }

// RolloutToolCRDs returns the files of Argo Rollouts' AnalysisTemplate CRD and Flagger's CRDs, from
// their pinned modules (ModuleDir), for WithCRDPaths.
func RolloutToolCRDs() ([]string, error) {
	argoDir, err := ModuleDir(ArgoRolloutsModule, ArgoRolloutsVersion)
	if err != nil {
		return nil, fmt.Errorf("the CRDs of Argo Rollouts: %w", err)
	}
	flaggerDir, err := ModuleDir(FlaggerModule, FlaggerVersion)
	if err != nil {
		return nil, fmt.Errorf("the CRDs of Flagger: %w", err)
	}
	return []string{
		filepath.Join(argoDir, "manifests", "crds", "analysis-template-crd.yaml"),
		filepath.Join(flaggerDir, "artifacts", "flagger", "crd.yaml"),
	}, nil
}

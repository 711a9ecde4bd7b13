package steps

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/images"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
)

// KEDA in the offline cluster: the operator and the external metrics API server of
// github.com/kedacore/keda/v2 (hack/tools/keda), from the module's own config/minimal
// kustomization: CRDs, RBAC, both Deployments and the APIService, no admission webhooks.
const (
	kedaNS         = "keda"
	kedaOperator   = "keda-operator"
	kedaMetricsAPI = "keda-metrics-apiserver"
	// kedaAPIService serves external.metrics.k8s.io, which the HPAs KEDA makes read.
	kedaAPIService = "v1beta1.external.metrics.k8s.io"
	kedaModule     = "github.com/kedacore/keda/v2"
)

// kedaEdits are what the offline cluster changes in config/minimal's rendering; kedaManifest
// fails when one is not there (a KEDA whose manifests changed must not install half-local).
func kedaEdits() map[string]string {
	return map[string]string{
		"ghcr.io/kedacore/keda:main":                   images.KEDAImage,
		"ghcr.io/kedacore/keda-metrics-apiserver:main": images.KEDAAdapterImage,
		// The images are on the node (kind-load); there is no registry to pull from.
		"imagePullPolicy: Always": "imagePullPolicy: IfNotPresent",
		// No admission webhooks are installed: the operator must not wait to patch them (KEDA's
		// Helm chart passes the same flag when its webhooks are off).
		"        - --enable-cert-rotation=true\n": "        - --enable-cert-rotation=true\n        - --enable-webhook-patching=false\n",
		// 100m each upstream; 2 cores hold the control plane, Prometheus and the scaled tracks.
		"requests:\n            cpu: 100m": "requests:\n            cpu: 20m",
	}
}

// kedaManifest applies kedaEdits to config/minimal as kustomize renders it.
func kedaManifest(rendered []byte) ([]byte, error) {
	m, err := overrideImages(rendered, kedaEdits())
	if err != nil {
		return nil, fmt.Errorf("KEDA's config/minimal: %w", err)
	}
	return m, nil
}

// installKEDA renders KEDA's config/minimal with the pinned kustomize, applies it with the images
// built here, and waits for both Deployments, the ScaledObject CRD and the external metrics
// APIService.
func installKEDA(ctx context.Context, env *harness.Env, k *kube.Kube) (string, error) {
	dir, err := images.ModuleDir(ctx, env, kedaModule+"@"+images.KEDAVersion)
	if err != nil {
		return "", err
	}
	kustomize, err := env.Tool("kustomize")
	if err != nil {
		return "", err
	}
	out, err := env.Output(ctx, "deps", harness.Cmd{Name: kustomize, Args: []string{"build", filepath.Join(dir, "config", "minimal")}})
	if err != nil {
		return "", fmt.Errorf("rendering KEDA's config/minimal: %w", err)
	}
	m, err := kedaManifest([]byte(out))
	if err != nil {
		return "", err
	}
	if err := k.Apply(ctx, m, kedaNS); err != nil {
		return "", fmt.Errorf("applying KEDA's config/minimal: %w", err)
	}
	if err := k.WaitEstablished(ctx, time.Minute, "scaledobjects.keda.sh"); err != nil {
		return "", err
	}
	for _, d := range []string{kedaOperator, kedaMetricsAPI} {
		if err := k.WaitDeployment(ctx, kedaNS, d, 4*time.Minute); err != nil {
			return "", err
		}
	}
	if err := k.WaitAPIServiceAvailable(ctx, kedaAPIService, 2*time.Minute); err != nil {
		return "", err
	}
	return "KEDA " + images.KEDAVersion + " (config/minimal)", nil
}

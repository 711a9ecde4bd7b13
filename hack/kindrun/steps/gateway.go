package steps

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/images"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
)

// The Gateway API data plane of the kind run: Traefik, built here from its module
// (hack/tools/traefik), installed from the manifests its module carries in its documentation, with
// the standard-channel CRDs of the gateway-api version Traefik is built against.
const (
	traefikModule    = "github.com/traefik/traefik/v3@" + images.TraefikVersion
	gatewayAPIModule = "sigs.k8s.io/gateway-api@" + images.GatewayAPIVersion
	// traefikUpstreamImage is the image Traefik's manifest names; the online run keeps it.
	traefikUpstreamImage = "traefik:v3.6"
	gatewayNS            = "default" // Traefik's manifests bind its ServiceAccount in default
	gatewayClass         = "traefik"
	gatewayName          = "poolparity"
	gatewayPort          = 8000 // Traefik's web entry point (unprivileged); the traefik Service's port 80
	traefikMetricsPort   = 9100
	// traefikService is the Service in Traefik's manifest: port 80 to the web entry point.
	traefikService = "traefik"
)

// traefikManifests are the files of Traefik's module (under docs/content/reference/
// dynamic-configuration) that install it as a Gateway API controller.
var traefikManifests = []string{"kubernetes-gateway-rbac.yml", "kubernetes-gateway-traefik-lb-svc.yml"}

// traefikEdits turn Traefik's documented Deployment into the kind run's: unprivileged ports (the
// image runs as a non-root user; containerd 1.6 does not open ports below 1024 to it), no
// deprecated experimental flag (the provider is GA since v3.1), Prometheus metrics on their own
// entry point, and a ClusterIP Service (kind has no load balancer). Each must match once.
func traefikEdits(image string) map[string]string {
	return map[string]string{
		"image: " + traefikUpstreamImage:    "image: " + image,
		"- --entryPoints.web.address=:80\n": fmt.Sprintf("- --entryPoints.web.address=:%d\n", gatewayPort),
		"- --entryPoints.websecure.address=:443\n": "- --entryPoints.websecure.address=:8443\n" +
			fmt.Sprintf("            - --entryPoints.metrics.address=:%d\n", traefikMetricsPort) +
			"            - --metrics.prometheus.entryPoint=metrics\n" +
			"            - --metrics.prometheus.addServicesLabels=true\n",
		"            - --experimental.kubernetesgateway\n": "",
		"containerPort: 80\n":                              fmt.Sprintf("containerPort: %d\n", gatewayPort),
		"containerPort: 443\n":                             "containerPort: 8443\n",
		"type: LoadBalancer":                               "type: ClusterIP",
	}
}

// editManifest applies edits (old -> new), failing when an old string is not in m exactly once:
// a manifest that changed upstream must not install half-edited.
func editManifest(name string, m []byte, edits map[string]string) ([]byte, error) {
	olds := make([]string, 0, len(edits))
	for o := range edits {
		olds = append(olds, o)
	}
	sort.Strings(olds)
	for _, o := range olds {
		if n := bytes.Count(m, []byte(o)); n != 1 {
			return nil, fmt.Errorf("%s: want %q once, found it %d times", name, strings.TrimSpace(o), n)
		}
		m = bytes.Replace(m, []byte(o), []byte(edits[o]), 1)
	}
	return m, nil
}

// installGateway installs the Gateway API CRDs, Traefik and the run's GatewayClass and Gateway,
// and waits until the Gateway is programmed. A failure names the module and version it came from.
func installGateway(ctx context.Context, env *harness.Env, k *kube.Kube) (string, error) {
	crds, err := gatewayCRDs(ctx, env)
	if err != nil {
		return "", fmt.Errorf("installing the Gateway API CRDs (%s): %w", gatewayAPIModule, err)
	}
	if err := k.Apply(ctx, crds, ""); err != nil {
		return "", fmt.Errorf("applying the Gateway API CRDs (%s): %w", gatewayAPIModule, err)
	}
	if err := k.WaitEstablished(ctx, time.Minute, "gatewayclasses.gateway.networking.k8s.io", "gateways.gateway.networking.k8s.io",
		"httproutes.gateway.networking.k8s.io", "referencegrants.gateway.networking.k8s.io"); err != nil {
		return "", fmt.Errorf("installing the Gateway API CRDs (%s): %w", gatewayAPIModule, err)
	}
	image := images.TraefikImage
	if env.Cfg.Mode == "online" {
		image = traefikUpstreamImage
	}
	m, err := traefikManifest(ctx, env, image)
	if err != nil {
		return "", fmt.Errorf("installing Traefik (%s): %w", traefikModule, err)
	}
	if err := k.Apply(ctx, m, gatewayNS); err != nil {
		return "", fmt.Errorf("applying Traefik (%s): %w", traefikModule, err)
	}
	tmpl, err := template.ParseFS(images.Files, "gateway.yaml")
	if err != nil {
		return "", err
	}
	var gw bytes.Buffer
	if err := tmpl.Execute(&gw, map[string]any{"Class": gatewayClass, "Name": gatewayName, "Namespace": gatewayNS,
		"Port": gatewayPort, "MetricsPort": traefikMetricsPort}); err != nil {
		return "", err
	}
	if err := k.Apply(ctx, gw.Bytes(), gatewayNS); err != nil {
		return "", fmt.Errorf("applying the GatewayClass and Gateway: %w", err)
	}
	if err := k.WaitDeployment(ctx, gatewayNS, "traefik", 3*time.Minute); err != nil {
		return "", fmt.Errorf("installing Traefik (%s): %w", traefikModule, err)
	}
	if err := k.WaitGateway(ctx, gatewayNS, gatewayName, 2*time.Minute); err != nil {
		return "", fmt.Errorf("waiting for Traefik (%s) to program Gateway %s/%s: %w", traefikModule, gatewayNS, gatewayName, err)
	}
	return "Gateway API " + images.GatewayAPIVersion + " CRDs (standard), Traefik " + images.TraefikVersion + " (Gateway " + gatewayNS + "/" + gatewayName + ")", nil
}

// gatewayCRDs reads the standard channel's CRDs from the gateway-api module.
func gatewayCRDs(ctx context.Context, env *harness.Env) ([]byte, error) {
	dir, err := images.ModuleDir(ctx, env, gatewayAPIModule)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "config", "crd", "standard", "gateway.networking.k8s.io_*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no CRDs under config/crd/standard of %s", dir)
	}
	var all bytes.Buffer
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		all.WriteString("---\n")
		all.Write(b)
		all.WriteString("\n")
	}
	return all.Bytes(), nil
}

// traefikManifest reads Traefik's own RBAC and Deployment manifests from its module and edits
// them for the kind run (traefikEdits).
func traefikManifest(ctx context.Context, env *harness.Env, image string) ([]byte, error) {
	dir, err := images.ModuleDir(ctx, env, traefikModule)
	if err != nil {
		return nil, err
	}
	var all bytes.Buffer
	for _, f := range traefikManifests {
		b, err := os.ReadFile(filepath.Join(dir, "docs", "content", "reference", "dynamic-configuration", f))
		if err != nil {
			return nil, err
		}
		if f == "kubernetes-gateway-traefik-lb-svc.yml" {
			if b, err = editManifest(f, b, traefikEdits(image)); err != nil {
				return nil, err
			}
		}
		all.WriteString("---\n")
		all.Write(b)
		all.WriteString("\n")
	}
	return all.Bytes(), nil
}

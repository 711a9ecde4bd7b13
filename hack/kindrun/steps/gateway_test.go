package steps

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/images"
)

// TestTraefikManifestEdits reads Traefik's own manifests from its module (the module proxy) and
// checks that every edit of traefikEdits applied: the image built here, unprivileged ports,
// metrics, a ClusterIP Service, and no deprecated flag.
func TestTraefikManifestEdits(t *testing.T) {
	if testing.Short() {
		t.Skip("reads Traefik's module from the module proxy")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := harness.NewEnv(harness.Config{Mode: "offline", OutDir: t.TempDir()}, io.Discard)
	if err := os.MkdirAll(env.LogDir, 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := traefikManifest(ctx, env, images.TraefikImage)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"image: " + images.TraefikImage, "--entryPoints.web.address=:8000", "containerPort: 8000", "--entryPoints.metrics.address=:9100",
		"--metrics.prometheus.addServicesLabels=true", "type: ClusterIP", "--providers.kubernetesgateway", "kind: ClusterRole",
	} {
		if !bytes.Contains(m, []byte(want)) {
			t.Errorf("the Traefik manifest lacks %q", want)
		}
	}
	for _, gone := range []string{"traefik:v3.6\n", ":80\n", "LoadBalancer", "experimental.kubernetesgateway"} {
		if bytes.Contains(m, []byte(gone)) {
			t.Errorf("the Traefik manifest still has %q", strings.TrimSpace(gone))
		}
	}
	crds, err := gatewayCRDs(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"kind: GatewayClass", "kind: Gateway\n", "kind: HTTPRoute", "kind: ReferenceGrant"} {
		if !bytes.Contains(crds, []byte(kind)) {
			t.Errorf("the standard CRDs of %s lack %q", gatewayAPIModule, strings.TrimSpace(kind))
		}
	}
}

func TestEditManifestWantsEachEditOnce(t *testing.T) {
	tests := []struct {
		name, in string
		edits    map[string]string
		want     string // output, or the error's text
		ok       bool
	}{
		{"each once", "a: 1\nb: 2\n", map[string]string{"a: 1": "a: 3", "b: 2": "b: 4"}, "a: 3\nb: 4\n", true},
		{"missing", "a: 1\n", map[string]string{"c: 1": "c: 2"}, `want "c: 1" once, found it 0 times`, false},
		{"twice", "a: 1\na: 1\n", map[string]string{"a: 1": "a: 2"}, `want "a: 1" once, found it 2 times`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := editManifest("m.yml", []byte(tt.in), tt.edits)
			switch {
			case tt.ok && (err != nil || string(got) != tt.want):
				t.Errorf("editManifest = %q, %v; want %q", got, err, tt.want)
			case !tt.ok && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("editManifest error = %v, want %q", err, tt.want)
			}
		})
	}
}

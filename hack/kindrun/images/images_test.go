package images

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/testenv"
)

func TestOnlyZombies(t *testing.T) {
	tests := []struct {
		states string
		want   bool
	}{
		{"", true},
		{"Z\n", true},
		{"Zs\nZ\n", true},
		{"Ssl\n", false},
		{"Z\nSl\n", false},
	}
	for _, tt := range tests {
		if got := onlyZombies(tt.states); got != tt.want {
			t.Errorf("onlyZombies(%q) = %v, want %v", tt.states, got, tt.want)
		}
	}
}

// TestPinnedVersionsMatchInstallTools fails when a version the cluster runs differs from the one
// hack/install-tools.sh builds (which reads the tool modules' go.mod files).
func TestPinnedVersionsMatchInstallTools(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", filepath.Join(root, "hack", "install-tools.sh"), "versions").CombinedOutput()
	if err != nil {
		t.Fatalf("hack/install-tools.sh versions: %v\n%s", err, out)
	}
	pinned := map[string]string{}
	for line := range strings.Lines(string(out)) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			t.Fatalf("hack/install-tools.sh versions printed %q, want NAME=version", line)
		}
		pinned[k] = v
	}
	tests := []struct{ variable, kindrun string }{
		{"K8S_VERSION", K8sVersion},
		{"KIND_VERSION", KindVersion},
		{"ETCD_VERSION", EtcdTag},
		{"PROMETHEUS_VERSION", strings.TrimPrefix(PrometheusVersion, "v")},
		{"PROMETHEUS_OPERATOR_VERSION", OperatorVersion},
		{"METRICS_SERVER_VERSION", MetricsServerVersion},
		{"COREDNS_VERSION", CorednsVersion},
		{"LOCAL_PATH_PROVISIONER_VERSION", LocalPathVersion},
		{"TRAEFIK_VERSION", TraefikVersion},
		{"GATEWAY_API_VERSION", GatewayAPIVersion},
		{"KEDA_VERSION", KEDAVersion},
		{"FLAGGER_VERSION", FlaggerVersion},
		{"ARGO_ROLLOUTS_VERSION", ArgoRolloutsVersion},
	}
	for _, tt := range tests {
		t.Run(tt.variable, func(t *testing.T) {
			if got, ok := pinned[tt.variable]; !ok || got != tt.kindrun {
				t.Errorf("hack/install-tools.sh pins %s=%q, hack/kindrun runs %q", tt.variable, got, tt.kindrun)
			}
		})
	}
}

// TestRolloutToolPinsMatchTestenv holds the rollout controllers the kind cluster runs to the
// versions whose CRDs the chart's tests install (internal/testenv): one pin, read in two places.
func TestRolloutToolPinsMatchTestenv(t *testing.T) {
	for _, c := range []struct{ name, kind, testenv string }{
		{"Flagger", FlaggerVersion, testenv.FlaggerVersion},
		{"Argo Rollouts", ArgoRolloutsVersion, testenv.ArgoRolloutsVersion},
	} {
		if c.kind != c.testenv {
			t.Errorf("%s: the kind cluster runs %s, the chart's tests install the CRDs of %s (internal/testenv)", c.name, c.kind, c.testenv)
		}
	}
}

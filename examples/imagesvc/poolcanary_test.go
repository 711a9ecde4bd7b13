package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestAPoolCanaryAcceptsEveryMode keeps the service canariable by a PoolCanary: the CRD's
// PoolMode enum (deploy/helm/poolparity/crds) accepts each of Modes as the gray track's mode, but
// never-reset and never-put, which `poolparity-parity local` judges (the e2e test
// TestE2EExampleLocalMisuses) and no demo scenario runs: the enum is held to the scenarios' modes
// (app/api/v1alpha1's TestThePoolModeEnumIsTheServicesModes).
func TestAPoolCanaryAcceptsEveryMode(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "helm", "poolparity", "crds", "poolparity.dev_poolcanaries.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type props map[string]struct {
		Properties props    `json:"properties"`
		Enum       []string `json:"enum"`
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties props `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) == 0 {
		t.Fatal("the CRD has no version")
	}
	enum := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["poolModes"].Properties["gray"].Enum
	for _, m := range Modes {
		if m == ModeNeverReset || m == ModeNeverPut {
			continue
		}
		t.Run(m, func(t *testing.T) {
			if !slices.Contains(enum, m) {
				t.Errorf("spec.poolModes.gray accepts %v, not %s", enum, m)
			}
		})
	}
}

package v1alpha1_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/internal/pools"
	"github.com/poolparity/poolparity/internal/scenario"
)

// crdPath is the generated PoolCanary CRD, relative to this package.
var crdPath = filepath.Join("..", "..", "..", "deploy", "helm", "poolparity", "crds", "poolparity.dev_poolcanaries.yaml")

// TestThePoolModeEnumIsTheServicesModes holds the CRD's PoolMode enum (generated from the
// kubebuilder marker on v1alpha1.PoolMode) to the pool modes the services know, both ways: every
// mode of the reference service (internal/pools.Modes) and every mode a scenario runs the
// example service in (misuse-cap, examples/imagesvc) is accepted, and nothing else is. Each
// field of type PoolMode carries the enum.
func TestThePoolModeEnumIsTheServicesModes(t *testing.T) {
	b, err := os.ReadFile(crdPath)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range pools.Modes {
		want = append(want, string(m))
	}
	for _, s := range scenario.All() {
		if s.RunsOn(scenario.ServiceExample) {
			for _, m := range []string{s.StableMode, s.GrayMode} {
				if !slices.Contains(want, m) {
					want = append(want, m)
				}
			}
		}
	}
	if !slices.Contains(want, scenario.MisuseCap) {
		t.Fatalf("the modes the services know, %v, lack the example's %s: the test would prove nothing about it", want, scenario.MisuseCap)
	}
	slices.Sort(want)

	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	fields := []struct {
		path   string
		schema apiextensionsv1.JSONSchemaProps
	}{
		{"spec.poolModes.stable", root.Properties["spec"].Properties["poolModes"].Properties["stable"]},
		{"spec.poolModes.gray", root.Properties["spec"].Properties["poolModes"].Properties["gray"]},
		{"status.stablePoolMode", root.Properties["status"].Properties["stablePoolMode"]},
	}
	for _, f := range fields {
		t.Run(f.path, func(t *testing.T) {
			var enum []string
			for _, e := range f.schema.Enum {
				var s string
				if err := yaml.Unmarshal(e.Raw, &s); err != nil {
					t.Fatal(err)
				}
				enum = append(enum, s)
			}
			slices.Sort(enum)
			if !slices.Equal(enum, want) {
				t.Errorf("%s accepts %v; the services' pool modes are %v: update the Enum marker on v1alpha1.PoolMode and run make generate", f.path, enum, want)
			}
		})
	}
}

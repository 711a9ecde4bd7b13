package controller_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/internal/catalog"
)

// TestTheCRDIsTheCatalogs holds the PoolCanary CRD (generated from the kubebuilder markers in
// app/api/v1alpha1) to the catalog: the enum of SLI names is the catalog's IDs, and the
// statistical and traffic-guard defaults are the catalog's.
func TestTheCRDIsTheCatalogs(t *testing.T) {
	crd := readCRD(t)
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	analysis := spec.Properties["analysis"]
	sli := analysis.Properties["slis"].Items.Schema
	enum := enumStrings(t, sli.Properties["name"])
	cat := catalog.Default()
	var ids []string
	for _, id := range cat.IDs() {
		ids = append(ids, string(id))
	}
	if !slices.Equal(enum, ids) {
		t.Errorf("the CRD's SLI names %v, the catalog's IDs %v: update the Enum marker on v1alpha1.SLIName", enum, ids)
	}
	if slices.Contains(analysis.Required, "slis") {
		t.Error("analysis.slis is required; it is optional (empty: the whole catalog)")
	}

	def := func(s apiextensionsv1.JSONSchemaProps) string {
		if s.Default == nil {
			return ""
		}
		var v any
		if err := yaml.Unmarshal(s.Default.Raw, &v); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(v)
	}
	st := analysis.Properties["statistical"].Properties
	dur := func(d time.Duration) string { return fmt.Sprint(d.Round(time.Second)) }
	crdDur := func(s string) string {
		d, err := time.ParseDuration(s)
		if err != nil {
			return s
		}
		return dur(d)
	}
	for _, c := range []struct{ field, crd, want string }{
		{"statistical.confidence", def(st["confidence"]), fmt.Sprint(cat.Stat.Confidence)},
		{"statistical.minEffect", def(st["minEffect"]), fmt.Sprint(cat.Stat.MinEffect)},
		{"statistical.minSamples", def(st["minSamples"]), fmt.Sprint(cat.Stat.MinSamples)},
		{"statistical.window", crdDur(def(st["window"])), dur(cat.Stat.Window)},
		{"statistical.step", crdDur(def(st["step"])), dur(cat.Stat.Step)},
		{"requestRateRule", def(analysis.Properties["requestRateRule"]), cat.Guard.RequestRule + cat.Window},
		{"requestWindow", crdDur(def(analysis.Properties["requestWindow"])), dur(cat.Guard.RequestWindow)},
		{"minRequests", def(analysis.Properties["minRequests"]), fmt.Sprint(cat.Guard.MinRequests)},
	} {
		if c.crd != c.want {
			t.Errorf("the CRD's default of analysis.%s is %q, the catalog's %q", c.field, c.crd, c.want)
		}
	}
}

// readCRD reads the PoolCanary CRD that hack/gen-controller.sh writes into the chart.
func readCRD(t *testing.T) apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "helm", "poolparity", "crds", "poolparity.dev_poolcanaries.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// enumStrings returns the enum of a string field's schema, in its order.
func enumStrings(t *testing.T, s apiextensionsv1.JSONSchemaProps) []string {
	t.Helper()
	var enum []string
	for _, e := range s.Enum {
		var v string
		if err := yaml.Unmarshal(e.Raw, &v); err != nil {
			t.Fatal(err)
		}
		enum = append(enum, v)
	}
	return enum
}

package deploy_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/deploy/deploytest"
)

// chartMeta is the part of Chart.yaml the Artifact Hub checks read.
type chartMeta struct {
	AppVersion  string            `json:"appVersion"`
	Annotations map[string]string `json:"annotations"`
}

func readChartMeta(t *testing.T) chartMeta {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deploytest.ChartDir(t), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c chartMeta
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// annotation decodes the YAML list of an artifacthub.io annotation strictly into v.
func annotation(t *testing.T, c chartMeta, name string, v any) {
	t.Helper()
	s, ok := c.Annotations["artifacthub.io/"+name]
	if !ok {
		t.Fatalf("Chart.yaml has no artifacthub.io/%s annotation", name)
	}
	if err := yaml.UnmarshalStrict([]byte(s), v); err != nil {
		t.Fatalf("artifacthub.io/%s: %v", name, err)
	}
}

// TestArtifactHubAnnotations checks the Artifact Hub annotations of Chart.yaml against what they
// describe: the images are the values' defaults, the CRD is the one in crds/, its example decodes
// strictly into a PoolCanary (internal/controller's chart test creates it on a real API server),
// and the links and category are valid.
func TestArtifactHubAnnotations(t *testing.T) {
	c := readChartMeta(t)

	t.Run("images are the values' defaults", func(t *testing.T) {
		var images []struct{ Name, Image string }
		annotation(t, c, "images", &images)
		b, err := os.ReadFile(filepath.Join(deploytest.ChartDir(t), "values.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		type image struct{ Repository, Tag string }
		var v struct {
			Image         image
			Redis         struct{ Image image }
			OtelCollector struct{ Image image } `json:"otelCollector"`
			Tests         struct{ Image image }
			Controller    struct{ Image image }
		}
		if err := yaml.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		ref := func(i image) string {
			if i.Tag == "" {
				i.Tag = c.AppVersion
			}
			return i.Repository + ":" + i.Tag
		}
		want := []string{ref(v.Image), ref(v.Redis.Image), ref(v.OtelCollector.Image), ref(v.Tests.Image)}
		var got []string
		for _, i := range images {
			got = append(got, i.Image)
		}
		if !slices.Equal(got, want) {
			t.Errorf("artifacthub.io/images %v, want the values' defaults %v", got, want)
		}
		if ref(v.Controller.Image) != ref(v.Image) {
			t.Errorf("the controller's image %s is not the service's %s: list it too", ref(v.Controller.Image), ref(v.Image))
		}
	})

	t.Run("crds name the CRD in crds/", func(t *testing.T) {
		var crds []struct{ Kind, Version, Name, DisplayName, Description string }
		annotation(t, c, "crds", &crds)
		b, err := os.ReadFile(filepath.Join(deploytest.ChartDir(t), "crds", "poolparity.dev_poolcanaries.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatal(err)
		}
		var versions []string
		for _, v := range crd.Spec.Versions {
			versions = append(versions, v.Name)
		}
		if len(crds) != 1 || crds[0].Name != crd.Name || crds[0].Kind != crd.Spec.Names.Kind ||
			!slices.Contains(versions, crds[0].Version) || crds[0].Description == "" {
			t.Errorf("artifacthub.io/crds %+v, want %s (kind %s, a version of %v) with a description", crds, crd.Name, crd.Spec.Names.Kind, versions)
		}
	})

	t.Run("the CRD example is a PoolCanary", func(t *testing.T) {
		var examples []v1alpha1.PoolCanary
		annotation(t, c, "crdsExamples", &examples)
		if len(examples) != 1 || examples[0].Kind != "PoolCanary" || examples[0].APIVersion != v1alpha1.GroupVersion.String() ||
			len(examples[0].Spec.Steps) == 0 || examples[0].Spec.Analysis.PrometheusURL == "" {
			t.Errorf("artifacthub.io/crdsExamples %+v, want one PoolCanary with steps and an analysis", examples)
		}
	})

	t.Run("links and category", func(t *testing.T) {
		var links []struct{ Name, URL string }
		annotation(t, c, "links", &links)
		for _, l := range links {
			if l.Name == "" || !strings.HasPrefix(l.URL, "https://") {
				t.Errorf("link %+v: want a name and an https URL", l)
			}
		}
		// Artifact Hub's categories (https://artifacthub.io/docs/topics/annotations/helm/).
		categories := []string{"ai-machine-learning", "database", "integration-delivery", "monitoring-logging",
			"networking", "security", "storage", "streaming-messaging"}
		if cat := c.Annotations["artifacthub.io/category"]; !slices.Contains(categories, cat) {
			t.Errorf("artifacthub.io/category %q, want one of %v", cat, categories)
		}
	})
}

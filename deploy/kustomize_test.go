package deploy_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/deploy/deploytest"
)

const generatedHeader = "# Code generated from deploy/helm/poolparity by `go test ./deploy/ -run TestKustomizeGeneratedFromChart -update`. DO NOT EDIT.\n"

// generatedKustomize renders the chart into the generated kustomize files: the core objects with
// default values but no Redis (base), and the monitoring and Redis objects (components).
func generatedKustomize(t *testing.T) map[string][]byte {
	t.Helper()
	// The base carries no REDIS_ADDR: each overlay chooses its Redis (the redis component or
	// an env patch). redis.embedded is the chart's value for "no REDIS_ADDR".
	base := deploytest.HelmTemplate(t, deploytest.ValueSet{Name: "kustomize-base"}, "--skip-tests",
		"--set", "redis.enabled=false,redis.embedded=true")
	full := deploytest.HelmTemplate(t, deploytest.ValueSet{Name: "kustomize-components"}, "--skip-tests",
		"--set", "serviceMonitor.enabled=true,prometheusRule.enabled=true,dashboards.enabled=true,redis.enabled=true")
	objs, err := deploytest.Decode(full)
	if err != nil {
		t.Fatal(err)
	}
	var monitoring, redis []*unstructured.Unstructured
	for _, o := range objs {
		switch {
		case o.GetKind() == "ServiceMonitor", o.GetKind() == "PrometheusRule",
			o.GetKind() == "ConfigMap" && o.GetLabels()["grafana_dashboard"] != "":
			monitoring = append(monitoring, o)
		case o.GetLabels()["app.kubernetes.io/component"] == "redis":
			redis = append(redis, o)
		}
	}
	return map[string][]byte{
		"base/poolparity.yaml":                  append([]byte(generatedHeader), base...),
		"components/monitoring/monitoring.yaml": marshalAll(t, monitoring),
		"components/redis/redis.yaml":           marshalAll(t, redis),
	}
}

func marshalAll(t *testing.T, objs []*unstructured.Unstructured) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(generatedHeader)
	for _, o := range objs {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes()
}

// TestKustomizeGeneratedFromChart is the drift test: the kustomize base and components are the
// chart's own rendering, so the two ways to install can never disagree.
func TestKustomizeGeneratedFromChart(t *testing.T) {
	root, err := deploytest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range generatedKustomize(t) {
		compareGolden(t, filepath.Join(root, "deploy", "kustomize", rel), want)
	}
}

func TestKustomizeOverlaysBuild(t *testing.T) {
	for _, overlay := range deploytest.Overlays {
		t.Run(overlay, func(t *testing.T) {
			out := deploytest.KustomizeBuild(t, filepath.Join("overlays", overlay))
			compareGolden(t, filepath.Join("testdata", "kustomize", overlay+".yaml"), out)
			objs, err := deploytest.Decode(out)
			if err != nil {
				t.Fatal(err)
			}
			if err := deploytest.CheckTracks(objs); err != nil {
				t.Errorf("track contract broken:\n%v", err)
			}
			if err := deploytest.CheckNoReplicasUnderHPA(objs); err != nil {
				t.Error(err)
			}
			for _, o := range objs {
				if ns := o.GetNamespace(); ns == "" {
					t.Errorf("%s/%s has no namespace", o.GetKind(), o.GetName())
				}
			}
		})
	}
}

package deploy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/poolparity/poolparity/deploy/deploytest"
	"github.com/poolparity/poolparity/deploy/render"
)

// TestArgoDocsInstallScrapesThePods renders the chart with the --set values of
// docs/argo-rollouts.md's install command for Argo Rollouts ("The track through promotion"):
// a PodMonitor over the release's service pods, taking the track from the pod label, the
// plugin's AnalysisTemplate, and no Deployment or ServiceMonitor of the service's own.
func TestArgoDocsInstallScrapesThePods(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(deploytest.Root(t), "docs", "argo-rollouts.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## The track through promotion")
	if !ok {
		t.Fatal(`docs/argo-rollouts.md has no section "The track through promotion"`)
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatal("the section has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	fields := strings.Fields(strings.ReplaceAll(block, "\\\n", " "))
	var sets []string
	for i, f := range fields {
		if f == "--set" && i+1 < len(fields) {
			sets = append(sets, "--set", fields[i+1])
		}
	}
	if len(sets) == 0 {
		t.Fatalf("no --set in the documented command %q", block)
	}
	objs, err := deploytest.Decode(deploytest.HelmTemplate(t, render.ValueSet{Name: "default"}, sets...))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		component := o.GetLabels()["app.kubernetes.io/component"]
		switch o.GetKind() {
		case "PodMonitor":
			kinds["PodMonitor"]++
			sel, _, _ := unstructured.NestedString(o.Object, "spec", "selector", "matchLabels", "app.kubernetes.io/component")
			if sel != "app" {
				t.Errorf("the PodMonitor selects component %q, want app (the service's pods)", sel)
			}
		case "AnalysisTemplate":
			kinds["AnalysisTemplate"]++
		case "Deployment", "ServiceMonitor":
			if component == "" || component == "app" {
				t.Errorf("the documented install renders %s %s for the service: the Rollout is the service and the PodMonitor its scrape", o.GetKind(), o.GetName())
			}
		}
	}
	if kinds["PodMonitor"] != 1 || kinds["AnalysisTemplate"] != 1 {
		t.Errorf("rendered %v, want one PodMonitor and the plugin's AnalysisTemplate", kinds)
	}
}

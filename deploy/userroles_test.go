package deploy_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestPoolCanaryUserRoles: with the controller, PoolCanary rules aggregate into the default view,
// edit and admin roles (what kubectl poolcanary needs: read for get, patch for the actions), and
// a cluster that grants them itself can turn that off.
func TestPoolCanaryUserRoles(t *testing.T) {
	tests := []struct {
		name string
		set  string
		want map[string][]string // ClusterRole name suffix -> the default roles it aggregates to
	}{
		{"no controller, no roles", "", map[string][]string{}},
		{"with the controller", "controller.enabled=true", map[string][]string{
			"-poolcanary-view": {"admin", "edit", "view"},
			"-poolcanary-edit": {"admin", "edit"},
		}},
		{"turned off", "controller.enabled=true,controller.aggregateToDefaultRoles=false", map[string][]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, _ := renderObjects(t, tt.set, "")
			got := map[string][]string{}
			verbs := map[string][]string{}
			for _, o := range objs {
				if o.GetKind() != "ClusterRole" || !strings.Contains(o.GetName(), "-poolcanary-") {
					continue
				}
				suffix := o.GetName()[strings.Index(o.GetName(), "-poolcanary-"):]
				var to []string
				for k, v := range o.GetLabels() {
					if r, ok := strings.CutPrefix(k, "rbac.authorization.k8s.io/aggregate-to-"); ok && v == "true" {
						to = append(to, r)
					}
				}
				slices.Sort(to)
				got[suffix] = to
				rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
				for _, r := range rules {
					vs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "verbs")
					verbs[suffix] = append(verbs[suffix], vs...)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("PoolCanary user roles %v, want %v", got, tt.want)
			}
			for k, w := range tt.want {
				if !slices.Equal(got[k], w) {
					t.Errorf("%s aggregates to %v, want %v", k, got[k], w)
				}
			}
			if len(tt.want) > 0 && (!slices.Contains(verbs["-poolcanary-view"], "watch") || !slices.Contains(verbs["-poolcanary-edit"], "patch") ||
				slices.Contains(verbs["-poolcanary-view"], "patch")) {
				t.Errorf("verbs %v: want view to read only and edit to patch", verbs)
			}
		})
	}
}

package gatewayapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// testRoute builds an HTTPRoute in namespace shop from its rules' backendRefs.
func testRoute(t *testing.T, rules ...[]map[string]any) *unstructured.Unstructured {
	t.Helper()
	var rs []any
	for _, refs := range rules {
		var bs []any
		for _, b := range refs {
			bs = append(bs, b)
		}
		rs = append(rs, map[string]any{"backendRefs": bs})
	}
	// Through JSON, as the API server's answer arrives: numbers become int64.
	b, err := json.Marshal(map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec":     map[string]any{"rules": rs},
	})
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return u
}

func ref(name string, weight ...int) map[string]any {
	m := map[string]any{"name": name, "port": 8080}
	if len(weight) > 0 {
		m["weight"] = weight[0]
	}
	return m
}

func TestRouteWeights(t *testing.T) {
	rt := Routing{Route: "web", StableService: "shop-stable", GrayService: "shop-gray"}
	tests := []struct {
		name    string
		route   *unstructured.Unstructured
		weight  int32
		wantOps []string // "path=value" of the add operations
		problem string   // a part of the Degraded message; "" for none
		share   int32    // routeShare after the ops, when there is no problem
	}{
		{"a fresh route gets both weights", testRoute(t, []map[string]any{ref("shop-stable"), ref("shop-gray")}), 10,
			[]string{"/spec/rules/0/backendRefs/0/weight=90", "/spec/rules/0/backendRefs/1/weight=10"}, "", 10},
		{"weights already in force need no patch", testRoute(t, []map[string]any{ref("shop-stable", 75), ref("shop-gray", 25)}), 25,
			nil, "", 25},
		{"only the weight that differs is set", testRoute(t, []map[string]any{ref("shop-stable", 100), ref("shop-gray", 0)}), 0,
			nil, "", 0},
		{"a promotion puts every request on stable", testRoute(t, []map[string]any{ref("shop-gray", 50), ref("shop-stable", 50)}), 0,
			[]string{"/spec/rules/0/backendRefs/0/weight=0", "/spec/rules/0/backendRefs/1/weight=100"}, "", 0},
		{"other backends and rules that name one track are left alone",
			testRoute(t, []map[string]any{ref("docs")}, []map[string]any{ref("other", 5), ref("shop-stable"), ref("shop-gray")}, []map[string]any{ref("shop-stable", 1)}), 50,
			[]string{"/spec/rules/1/backendRefs/1/weight=50", "/spec/rules/1/backendRefs/2/weight=50"}, "", 50},
		{"a backend of another kind is not the Service", testRoute(t, []map[string]any{ref("shop-stable"), {"name": "shop-gray", "group": "example.com", "kind": "Thing"}}), 10,
			nil, "no backendRef names Service shop-gray", 0},
		{"a backend in another namespace is not the Service", testRoute(t, []map[string]any{ref("shop-stable"), {"name": "shop-gray", "namespace": "elsewhere"}}), 10,
			nil, "no backendRef names Service shop-gray", 0},
		{"a route without the gray backend is degraded", testRoute(t, []map[string]any{ref("shop-stable")}), 10,
			nil, "HTTPRoute web: no backendRef names Service shop-gray; no weight set", 0},
		{"a route without either backend names both", testRoute(t, []map[string]any{ref("other")}), 10,
			nil, "no backendRef names Service shop-stable, no backendRef names Service shop-gray", 0},
		{"the backends in separate rules are no split", testRoute(t, []map[string]any{ref("shop-stable")}, []map[string]any{ref("shop-gray")}), 10,
			nil, "no rule names both Services shop-stable and shop-gray", 0},
		{"a route without rules is degraded", testRoute(t), 10, nil, "no backendRef names Service shop-stable", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops, problem := routeWeights(tt.route, rt, tt.weight)
			if tt.problem != "" {
				if problem == nil || problem.Reason != ReasonBackendsMissing || !strings.Contains(problem.Message, tt.problem) || len(ops) != 0 {
					t.Fatalf("problem %+v, ops %v; want %s naming %q and no op", problem, ops, ReasonBackendsMissing, tt.problem)
				}
				return
			}
			if problem != nil {
				t.Fatalf("problem %+v, want none", problem)
			}
			var adds []string
			for i, op := range ops {
				switch {
				case op.Op == "add":
					adds = append(adds, op.Path+"="+jsonText(t, op.Value))
					// Each add is guarded by a test of the backendRef's name just before it.
					if i == 0 || ops[i-1].Op != "test" || ops[i-1].Path != strings.TrimSuffix(op.Path, "/weight")+"/name" {
						t.Errorf("op %d %+v is not guarded by a test of its backendRef's name", i, op)
					}
				case op.Op != "test":
					t.Errorf("op %+v: only test and add are expected", op)
				}
			}
			if strings.Join(adds, " ") != strings.Join(tt.wantOps, " ") {
				t.Errorf("adds %v, want %v", adds, tt.wantOps)
			}
			// Applied, the route gives gray the weight.
			applyOps(t, tt.route, ops)
			if share, ok := routeShare(tt.route, rt); !ok || share != tt.share {
				t.Errorf("share after the patch %d (%v), want %d", share, ok, tt.share)
			}
			if more, _ := routeWeights(tt.route, rt, tt.weight); len(more) != 0 {
				t.Errorf("a second plan after the patch has ops %v, want none", more)
			}
		})
	}
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// applyOps applies the add operations of a plan to route, as the API server would.
func applyOps(t *testing.T, route *unstructured.Unstructured, ops []jsonPatchOp) {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
	for _, op := range ops {
		if op.Op != "add" {
			continue
		}
		var i, j int
		var field string
		if _, err := fmt.Sscanf(op.Path, "/spec/rules/%d/backendRefs/%d/%s", &i, &j, &field); err != nil {
			t.Fatalf("path %q: %v", op.Path, err)
		}
		refs := rules[i].(map[string]any)["backendRefs"].([]any)
		refs[j].(map[string]any)[field] = op.Value
	}
	if err := unstructured.SetNestedSlice(route.Object, rules, "spec", "rules"); err != nil {
		t.Fatal(err)
	}
}

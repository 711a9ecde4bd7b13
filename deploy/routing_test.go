package deploy_test

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/poolparity/poolparity/deploy/deploytest"
)

// TestRoutingModes renders each routing.mode and checks that there is one split only: the split
// Service in replicas mode; in gatewayAPI mode an HTTPRoute with a weighted backendRef per
// enabled track, attached to the user's Gateway or to the one the chart creates, and no split
// Service. The render-time failures name what is missing.
func TestRoutingModes(t *testing.T) {
	const gw = "routing.mode=gatewayAPI,"
	cases := []struct {
		name, set string
		split     bool             // the split Service poolparity is rendered
		weights   map[string]int64 // the HTTPRoute's backendRefs; nil: no HTTPRoute
		parents   []any            // the HTTPRoute's parentRefs
		gateway   string           // the created Gateway's class; empty: no Gateway
		fail      string           // a substring of the render's error
	}{
		{name: "replicas, the default: the split Service and no route", split: true},
		{name: "a Gateway value in replicas mode creates nothing", set: "routing.gatewayAPI.gateway.create=true,routing.gatewayAPI.gateway.gatewayClassName=eg", split: true},
		{name: "gatewayAPI on the user's Gateway: a weighted route and no split Service",
			set:     gw + "routing.gatewayAPI.parentRefs[0].name=public,routing.gatewayAPI.parentRefs[0].namespace=gateways",
			weights: map[string]int64{"poolparity-stable": 90, "poolparity-gray": 10},
			parents: []any{map[string]any{"name": "public", "namespace": "gateways"}}},
		{name: "gatewayAPI with the chart's Gateway: the route's parentRef is its listener",
			set:     gw + "routing.gatewayAPI.gateway.create=true,routing.gatewayAPI.gateway.gatewayClassName=eg,routing.gatewayAPI.weights.gray=0,routing.gatewayAPI.weights.stable=100",
			weights: map[string]int64{"poolparity-stable": 100, "poolparity-gray": 0},
			parents: []any{map[string]any{"name": "poolparity", "sectionName": "http"}}, gateway: "eg"},
		{name: "the chart's Gateway and the user's: the route attaches to both",
			set:     gw + "routing.gatewayAPI.gateway.create=true,routing.gatewayAPI.gateway.gatewayClassName=eg,routing.gatewayAPI.gateway.listenerName=web,routing.gatewayAPI.parentRefs[0].name=shared",
			weights: map[string]int64{"poolparity-stable": 90, "poolparity-gray": 10},
			parents: []any{map[string]any{"name": "poolparity", "sectionName": "web"}, map[string]any{"name": "shared"}}, gateway: "eg"},
		{name: "a disabled track gets no backendRef",
			set:     gw + "routing.gatewayAPI.parentRefs[0].name=public,tracks.gray.enabled=false",
			weights: map[string]int64{"poolparity-stable": 90},
			parents: []any{map[string]any{"name": "public"}}},
		{name: "gatewayAPI without a parent fails", set: "routing.mode=gatewayAPI",
			fail: "routing.mode=gatewayAPI needs a Gateway for the HTTPRoute: set routing.gatewayAPI.parentRefs to your Gateway"},
		{name: "a Gateway to create without a class fails", set: gw + "routing.gatewayAPI.gateway.create=true",
			fail: "routing.gatewayAPI.gateway.create=true needs routing.gatewayAPI.gateway.gatewayClassName"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, ok := renderObjects(t, tc.set, tc.fail)
			if !ok {
				return
			}
			idx := deploytest.NewIndex(objs)
			split := false
			for _, s := range idx["Service"] {
				split = split || s.GetName() == "poolparity"
			}
			if split != tc.split {
				t.Errorf("split Service rendered: %v, want %v", split, tc.split)
			}
			if err := deploytest.CheckTracks(objs); err != nil {
				t.Errorf("track contract broken:\n%v", err)
			}

			routes := idx["HTTPRoute"]
			if (len(routes) == 1) != (tc.weights != nil) || len(routes) > 1 {
				t.Fatalf("%d HTTPRoutes, want a route: %v", len(routes), tc.weights != nil)
			}
			if tc.weights != nil {
				if got := deploytest.RouteBackends(routes[0]); !reflect.DeepEqual(got, tc.weights) {
					t.Errorf("backendRef weights %v, want %v", got, tc.weights)
				}
				if got, _, _ := unstructured.NestedSlice(routes[0].Object, "spec", "parentRefs"); !reflect.DeepEqual(got, tc.parents) {
					t.Errorf("parentRefs %v, want %v", got, tc.parents)
				}
			}

			gateways := idx["Gateway"]
			if (len(gateways) == 1) != (tc.gateway != "") || len(gateways) > 1 {
				t.Fatalf("%d Gateways, want one: %v", len(gateways), tc.gateway != "")
			}
			if tc.gateway != "" {
				if class, _, _ := unstructured.NestedString(gateways[0].Object, "spec", "gatewayClassName"); class != tc.gateway || gateways[0].GetName() != "poolparity" {
					t.Errorf("Gateway %s of class %q, want poolparity of class %q", gateways[0].GetName(), class, tc.gateway)
				}
			}

			// helm test calls the split Service only where there is one.
			if len(idx["Pod"]) != 1 {
				t.Errorf("%d helm test Pods, want 1", len(idx["Pod"]))
			}
			for _, p := range idx["Pod"] {
				script := strings.Join(testPodArgs(p), "\n")
				if calls := strings.Contains(script, "http://poolparity:80/"); calls != tc.split {
					t.Errorf("test Pod %s calls the split Service: %v, want %v", p.GetName(), calls, tc.split)
				}
				for name := range tc.weights {
					if !strings.Contains(script, "http://"+name+":80/readyz") {
						t.Errorf("test Pod %s does not check track Service %s", p.GetName(), name)
					}
				}
			}
		})
	}
}

// testPodArgs is the args of a helm test Pod's first container.
func testPodArgs(p *unstructured.Unstructured) []string {
	containers, _, _ := unstructured.NestedSlice(p.Object, "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	return args
}

package main

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
)

// TestGetShowsTheRoute holds what get shows of spec.trafficRouting: the route, its Services
// and the weights the controller read back from it, or that none are set.
func TestGetShowsTheRoute(t *testing.T) {
	tests := []struct {
		name    string
		routing *v1alpha1.TrafficRouting
		weight  *int32
		want    []string
		wantNot string
	}{
		{"without trafficRouting the replica split decides", nil, nil,
			[]string{"Share:            50% of the pods (the replica split), 48.7% of the requests (measured)"}, "Route:"},
		{"the route's weights in force, with the default Service names", &v1alpha1.TrafficRouting{GatewayAPI: v1alpha1.GatewayAPIRouting{HTTPRoute: "web"}}, ptr.To[int32](10),
			[]string{
				"Route:            HTTPRoute web: gray shop-gray 10%, stable shop-stable 90% in force",
				"Share:            50% of the pods (the route splits the requests), 48.7% of the requests (measured)",
			}, ""},
		{"a route the controller cannot set shows no weights", &v1alpha1.TrafficRouting{GatewayAPI: v1alpha1.GatewayAPIRouting{HTTPRoute: "web", StableService: "a", GrayService: "b"}}, nil,
			[]string{"Route:            HTTPRoute web: no weights set (see the Degraded condition)"}, "in force"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc := &v1alpha1.PoolCanary{}
			pc.Name, pc.Namespace = "shop", "shop"
			pc.Spec.Steps = []int32{10}
			pc.Spec.TrafficRouting = tt.routing
			pc.Status = v1alpha1.PoolCanaryStatus{CurrentWeight: 10, ReplicaShare: "50", MeasuredShare: "48.7", RouteWeight: tt.weight}
			var out bytes.Buffer
			if err := printCanary(&out, pc, "text"); err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.want {
				if !strings.Contains(out.String(), want+"\n") {
					t.Errorf("get output lacks %q:\n%s", want, out.String())
				}
			}
			if tt.wantNot != "" && strings.Contains(out.String(), tt.wantNot) {
				t.Errorf("get output has %q:\n%s", tt.wantNot, out.String())
			}
			if tt.routing == nil {
				return
			}
			out.Reset()
			if err := printCanary(&out, pc, "json"); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), `"httpRoute": "web"`) {
				t.Errorf("-o json lacks the route:\n%s", out.String())
			}
		})
	}
}

// TestGetShowsTheRollbackProfile holds what get shows of status.rollbackProfile.
func TestGetShowsTheRollbackProfile(t *testing.T) {
	pc := &v1alpha1.PoolCanary{}
	pc.Name, pc.Namespace = "shop", "shop"
	pc.Spec.Steps = []int32{10}
	pc.Status.LastAnalysis = &v1alpha1.AnalysisStatus{Verdict: v1alpha1.VerdictFail, Weight: 10}
	tests := []struct {
		name    string
		profile *v1alpha1.ProfileStatus
		want    []string
	}{
		{"no profile, no section", nil, nil},
		{"the functions per request, and what could not be compared", &v1alpha1.ProfileStatus{
			GrayPod: "shop-gray-x", StablePod: "shop-stable-y", Message: "fetching the alloc_space profiles: gray track: timeout",
			Functions: []v1alpha1.ProfileFunction{{Kind: "cpu", Function: "pools.ScrubBytes", GrayPerRequest: "1.58ms", StablePerRequest: "0s"}},
		}, []string{
			"Rollback profile: gray pod shop-gray-x against stable pod shop-stable-y, 0001-01-01T00:00:00Z, per request",
			"  fetching the alloc_space profiles: gray track: timeout",
			"  KIND  FUNCTION          GRAY    STABLE",
			"  cpu   pools.ScrubBytes  1.58ms  0s",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc.Status.RollbackProfile = tt.profile
			var out bytes.Buffer
			if err := printCanary(&out, pc, "text"); err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.want {
				if !strings.Contains(out.String(), "\n"+want+"\n") {
					t.Errorf("get output lacks %q:\n%s", want, out.String())
				}
			}
			if tt.profile == nil && strings.Contains(out.String(), "Rollback profile") {
				t.Errorf("get output shows a profile it does not have:\n%s", out.String())
			}
		})
	}
}

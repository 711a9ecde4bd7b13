package trafficrouting_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/controller/trafficrouting"
)

// named is a Router that only says which factory made it.
type named struct {
	trafficrouting.Router
	name string
}

func factory(name string) trafficrouting.Factory {
	return func(*v1alpha1.PoolCanary, trafficrouting.Deps) trafficrouting.Router { return named{name: name} }
}

func TestRegistry(t *testing.T) {
	reg := trafficrouting.NewRegistry(factory("split"))
	if err := reg.Register("gatewayAPI", factory("gateway")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		routing *v1alpha1.TrafficRouting
		want    string // the factory's name, or a part of the error
	}{
		{"no trafficRouting gets the fallback", nil, "split"},
		{"a trafficRouting without a member gets the fallback", &v1alpha1.TrafficRouting{}, "split"},
		{"the gatewayAPI member gets its router", &v1alpha1.TrafficRouting{GatewayAPI: v1alpha1.GatewayAPIRouting{HTTPRoute: "web"}}, "gateway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc := &v1alpha1.PoolCanary{}
			pc.Spec.TrafficRouting = tt.routing
			r, err := reg.For(pc, trafficrouting.Deps{})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.(named).name; got != tt.want {
				t.Errorf("router %q, want %q", got, tt.want)
			}
		})
	}

	t.Run("a member without a registered router is ErrNoRouter", func(t *testing.T) {
		pc := &v1alpha1.PoolCanary{}
		pc.Spec.TrafficRouting = &v1alpha1.TrafficRouting{GatewayAPI: v1alpha1.GatewayAPIRouting{HTTPRoute: "web"}}
		_, err := trafficrouting.NewRegistry(factory("split")).For(pc, trafficrouting.Deps{})
		if !errors.Is(err, trafficrouting.ErrNoRouter) || !strings.Contains(err.Error(), "trafficRouting.gatewayAPI") {
			t.Errorf("got %v, want ErrNoRouter naming trafficRouting.gatewayAPI", err)
		}
	})

	for _, tt := range []struct{ name, member, want string }{
		{"a name that is no member is refused", "istio", `no member "istio" (it has gatewayAPI)`},
		{"a member registered twice is refused", "gatewayAPI", "registered already"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := reg.Register(tt.member, factory("x")); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Register(%q): got %v, want an error containing %q", tt.member, err, tt.want)
			}
		})
	}
}

// TestMembersNamesEveryField holds Members to the type: each member, set alone, is named by
// its JSON name and nothing else is.
func TestMembersNamesEveryField(t *testing.T) {
	set := v1alpha1.TrafficRouting{GatewayAPI: v1alpha1.GatewayAPIRouting{HTTPRoute: "web"}}
	if got := strings.Join(trafficrouting.Members(&set), ","); got != "gatewayAPI" {
		t.Errorf("Members = %q, want gatewayAPI", got)
	}
	if got := trafficrouting.Members(&v1alpha1.TrafficRouting{}); len(got) != 0 {
		t.Errorf("Members of an empty trafficRouting = %v, want none", got)
	}
}

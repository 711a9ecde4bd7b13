package kube

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// gatewayGVR and httpRouteGVR are the Gateway API resources the run reads.
var (
	gatewayGVR   = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	httpRouteGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
)

// WaitGateway waits until the Gateway ns/name is Programmed.
func (k *Kube) WaitGateway(ctx context.Context, ns, name string, timeout time.Duration) error {
	return Until(ctx, time.Second, timeout, "Gateway "+ns+"/"+name+" to be programmed", func(ctx context.Context) (bool, error) {
		u, err := k.Dyn.Resource(gatewayGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		return conditionTrue(conds, "Programmed"), nil
	})
}

// RouteWeights returns the weight of each backendRef (by Service name) of the first rule of the
// HTTPRoute ns/name.
func (k *Kube) RouteWeights(ctx context.Context, ns, name string) (map[string]int64, error) {
	u, err := k.Dyn.Resource(httpRouteGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading HTTPRoute %s/%s: %w", ns, name, err)
	}
	rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
	if len(rules) == 0 {
		return nil, fmt.Errorf("HTTPRoute %s/%s has no rule", ns, name)
	}
	rule, _ := rules[0].(map[string]any)
	refs, _, _ := unstructured.NestedSlice(rule, "backendRefs")
	w := map[string]int64{}
	for _, r := range refs {
		m, _ := r.(map[string]any)
		n, _, _ := unstructured.NestedString(m, "name")
		v, found, _ := unstructured.NestedInt64(m, "weight")
		if !found {
			v = 1 // the Gateway API default
		}
		w[n] = v
	}
	return w, nil
}

// RouteProgrammed reports whether the HTTPRoute ns/name is Accepted with its references resolved
// by every parent that reports on it.
func (k *Kube) RouteProgrammed(ctx context.Context, ns, name string) (bool, error) {
	u, err := k.Dyn.Resource(httpRouteGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading HTTPRoute %s/%s: %w", ns, name, err)
	}
	parents, _, _ := unstructured.NestedSlice(u.Object, "status", "parents")
	if len(parents) == 0 {
		return false, nil
	}
	for _, p := range parents {
		m, _ := p.(map[string]any)
		conds, _, _ := unstructured.NestedSlice(m, "conditions")
		if !conditionTrue(conds, "Accepted") || !conditionTrue(conds, "ResolvedRefs") {
			return false, nil
		}
	}
	return true, nil
}

// WaitAPIServiceAvailable waits until the aggregated APIService name reports Available: the
// apiserver reaches the server behind it.
func (k *Kube) WaitAPIServiceAvailable(ctx context.Context, name string, timeout time.Duration) error {
	res := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	return Until(ctx, 2*time.Second, timeout, "APIService "+name+" to be Available", func(ctx context.Context) (bool, error) {
		u, err := k.Dyn.Resource(res).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		return conditionTrue(conds, "Available"), nil
	})
}

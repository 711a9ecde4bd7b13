// Package v1alpha1 holds the poolparity.dev/v1alpha1 API: the PoolCanary, which runs a
// stable and a gray track of the poolparity service side by side, shifts replicas to the
// gray track in steps while the parity SLIs hold, and promotes or rolls back.
//
// The package depends only on k8s.io/api and k8s.io/apimachinery, so clients can import it
// without controller-runtime.
//
// +kubebuilder:object:generate=true
// +groupName=poolparity.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "poolparity.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &PoolCanary{}, &PoolCanaryList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

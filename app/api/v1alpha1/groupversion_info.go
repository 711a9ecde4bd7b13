// Package v1alpha1 holds the poolparity.dev/v1alpha1 API: the PoolCanary, which runs a
// stable and a gray track of the poolparity service side by side, shifts replicas to the
// gray track in steps while the parity SLIs hold, and promotes or rolls back.
//
// +kubebuilder:object:generate=true
// +groupName=poolparity.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "poolparity.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

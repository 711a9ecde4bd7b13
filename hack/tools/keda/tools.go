//go:build tools

// Package tools pins KEDA, built by hack/install-tools.sh for the offline kind cluster
// (hack/kindrun): the operator (keda) and the external metrics API server (keda-adapter). The
// admission webhooks are not built. hack/kindrun applies the module's own config/minimal
// kustomization with these images.
package tools

import (
	_ "github.com/kedacore/keda/v2/cmd/adapter"
	_ "github.com/kedacore/keda/v2/cmd/operator"
)

//go:build tools

// Package tools pins Flagger, built by hack/install-tools.sh for the offline kind cluster
// (hack/kindrun): the controller (flagger), not the load tester. hack/kindrun applies the
// module's own kustomize/base/flagger manifests (CRDs, RBAC, Deployment) with this image.
package tools

import (
	_ "github.com/fluxcd/flagger/cmd/flagger"
)

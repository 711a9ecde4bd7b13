//go:build tools

// Package tools pins Argo Rollouts, built by hack/install-tools.sh for the offline kind cluster
// (hack/kindrun): the controller (rollouts-controller) only, not the kubectl plugin or the
// dashboard. hack/kindrun's argo step applies the module's own manifests with this image, and
// the poolparity/judge metric plugin (app/cmd/poolparity-argo-plugin) beside it.
package tools

import (
	_ "github.com/argoproj/argo-rollouts/cmd/rollouts-controller"
)

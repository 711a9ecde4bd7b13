//go:build tools

// Package tools pins Traefik, the Gateway API data plane of the offline kind cluster, built by
// hack/install-tools.sh from its module (hack/kindrun puts it into an image built here). The
// Gateway API CRDs come from sigs.k8s.io/gateway-api at the version this module requires.
package tools

import (
	_ "github.com/traefik/traefik/v3/cmd/traefik"
	_ "sigs.k8s.io/gateway-api/apis/v1"
)

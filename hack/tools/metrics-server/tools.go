//go:build tools

// Package tools pins metrics-server, built by hack/install-tools.sh for the offline kind cluster
// (hack/kindrun); the module's own Helm chart (charts/metrics-server) installs it.
package tools

import _ "sigs.k8s.io/metrics-server/cmd/metrics-server"

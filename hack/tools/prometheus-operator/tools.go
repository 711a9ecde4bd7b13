//go:build tools

// Package tools pins prometheus-operator and its config reloader, built by hack/install-tools.sh
// for the offline kind cluster (hack/kindrun); the module's own bundle.yaml installs them.
package tools

import (
	_ "github.com/prometheus-operator/prometheus-operator/cmd/operator"
	_ "github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader"
)

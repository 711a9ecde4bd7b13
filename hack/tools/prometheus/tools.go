//go:build tools

// Package tools pins the Prometheus server and promtool built by hack/install-tools.sh
// (go install refuses github.com/prometheus/prometheus v0.31x because of its replace directive).
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)

//go:build tools

// Package tools pins the etcd server built by hack/install-tools.sh
// (go install refuses go.etcd.io/etcd/server/v3 because of its replace directives).
package tools

import _ "go.etcd.io/etcd/server/v3"

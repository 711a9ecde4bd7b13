// Package deploy holds the tests of the deployment manifests: the Helm chart in helm/poolparity
// (lint, golden `helm template` output, values.schema.json) and the kustomize tree in kustomize/
// (overlay builds and the drift test against the chart). The tests only compare: the golden and
// generated files are written by `make generate` (hack/gen), through the same deploy/render
// functions. The apiserver-backed tests live in internal/testenv.
package deploy

// Command gen regenerates every file this repository generates, in one sequential run, with the
// pinned tools in ./bin (`make tools` installs them):
//
//   - from the parity catalog (internal/catalog, catalog.Default): the chart's alert thresholds,
//     latency floor and minRequestRate in values.yaml (those scalars only), its Argo Rollouts and
//     Flagger checks (files/parity-checks.yaml), the dashboards' threshold steps and the numbers
//     in their descriptions, and the SLI table of docs/contracts.md,
//   - the chart's README.md, from its README.md.gotmpl, Chart.yaml and the `# --` comments of
//     values.yaml (a values table: key, type, default, description; a value without one fails),
//   - the plain Prometheus rules files (go run ./hack/genrules),
//   - the PoolCanary deepcopy code, CRD and RBAC template (hack/gen-controller.sh, controller-gen),
//   - the chart's dashboard copies, the kustomize base and components, and the golden renderings
//     under deploy/testdata (package deploy/render, helm and kustomize).
//
// A missing tool stops it before anything is written, with one line: "bin/helm not found: run
// make tools". With -check it writes nothing and fails when a file written from the catalog, or
// the chart's README, is stale, or when git reports a change or an untracked file under the generated paths, so that `make generate-check` (generate, then gen -check) also
// catches outputs nobody committed.
//
//	go run ./hack/gen          # make generate
//	go run ./hack/gen -check   # make generate-check, after make generate
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/poolparity/poolparity/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Exit(os.Stderr, "gen", err))
}

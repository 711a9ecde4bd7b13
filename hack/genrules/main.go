// Command genrules renders the poolparity recording rules and alerts from their single source,
// deploy/helm/poolparity/files/rules.yaml.tmpl, with the `rules:` section of the chart's values.yaml,
// into plain Prometheus rules files (deploy/prometheus/*.rules.yml) for any Prometheus and the demo.
//
// Without -o it regenerates every committed file (or, with -check, verifies them):
//
//	go run ./hack/genrules          # rewrite deploy/prometheus/poolparity.rules.yml and poolparity-demo.rules.yml
//	go run ./hack/genrules -check   # fail when a committed file differs from the template
//
// With -o it renders one file with overrides, like `helm template --set`:
//
//	go run ./hack/genrules -window 1m -for 20s -set rules.minRequestRate=0.5 -o out/rules.yml
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
	os.Exit(cli.Exit(os.Stderr, "genrules", err))
}

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
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		stop()
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0) // -h: the usage was the answer
		}
		fmt.Fprintln(os.Stderr, "genrules:", err)
		os.Exit(1)
	}
}

// Command poolparity-judge answers Flagger's webhooks and Argo Rollouts' web
// metric provider with poolparity's verdict: the one evaluator
// (internal/parity) over the Prometheus endpoints the admin allows, every
// query pinned to the rollout's namespace (internal/judge,
// internal/judge/judgehttp). It answers only for the namespaces of
// NAMESPACES (by default the one it runs in, POD_NAMESPACE), 403 for
// others: it cannot tell who calls it (docs/security.md). It serves the hooks on ADDR, and /healthz,
// /readyz and its own /metrics on HEALTH_ADDR. docs/flagger.md and
// docs/argo-rollouts.md say how to call it.
//
// Every setting is an environment variable and a flag; run with -h to list
// them.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/poolparity/poolparity/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Exit(os.Stderr, "poolparity-judge", err))
}

// run parses the configuration (a bad setting is exit 2) and serves until
// ctx ends.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := ParseConfig(args, getenv, stderr)
	if err != nil {
		return cli.Usage(err)
	}
	log, err := cli.NewLogger(stdout, cfg.LogLevel)
	if err != nil {
		return cli.Usage(err)
	}
	return serve(ctx, cfg, log, nil)
}

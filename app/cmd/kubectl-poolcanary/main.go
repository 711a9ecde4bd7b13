// Command kubectl-poolcanary is a kubectl plugin for PoolCanaries: `kubectl poolcanary get
// NAME` shows a canary's phase, steps, weight against the share it gives, replicas,
// conditions and last analysis; promote, abort, pause, resume and retry act on it through
// its spec (spec.paused, spec.trigger) or through the annotations the controller honours
// (poolparity.dev/promote, poolparity.dev/abort). It finds the cluster as kubectl does
// (KUBECONFIG, --kubeconfig, --context, -n/--namespace, the context's namespace).
//
// Exit status: 0 success, 1 an error (e.g. no such PoolCanary, a refused request), 2 bad
// usage.
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
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Exit(os.Stderr, "kubectl-poolcanary", err))
}

// Command poolparity-controller runs the PoolCanary controller: a controller-runtime manager
// with its metrics endpoint, health probes and leader election, and the PoolCanary
// reconciler from internal/controller. Settings come from flags and environment
// variables (see Config).
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
	os.Exit(cli.Exit(os.Stderr, "poolparity-controller", err))
}

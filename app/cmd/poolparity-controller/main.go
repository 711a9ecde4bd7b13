// Command poolparity-controller runs the PoolCanary controller: a controller-runtime manager
// with its metrics endpoint, health probes and leader election, and the PoolCanary
// reconciler from app/internal/controller. Settings come from flags and environment
// variables (see Config).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "poolparity-controller:", err)
		os.Exit(1)
	}
}

// Command poolparity-controller runs the PoolCanary controller: a controller-runtime manager
// with its metrics endpoint, health probes and leader election, and the PoolCanary
// reconciler from internal/controller. Settings come from flags and environment
// variables (see Config).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runMain(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}

// runMain runs the controller and returns the exit status: 0 after a clean stop or -h (the
// usage is the answer asked for), 1 on an error, which it prints.
func runMain(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	err := run(ctx, args, getenv, stderr)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "poolparity-controller:", err)
	return 1
}

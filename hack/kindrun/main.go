// Command kindrun drives poolparity on a kind cluster, offline or online, with one set of steps.
//
// Offline (the default, and what `make test-kind` and CI run) it builds everything here from Go
// modules and Debian packages: a Docker engine when none answers, a kind node image for
// Kubernetes v1.37.0 with its control-plane images, the service image, Redis, Prometheus,
// prometheus-operator and metrics-server; then it creates a one-node cluster, installs the chart
// with per-track HPAs, runs the in-cluster load generator, and reads the parity verdict from the
// operator-managed Prometheus. Online (`make kind-demo`) it uses kindest/node, the upstream charts
// and the repository's three-node kind-config.yaml.
//
//	go run ./hack/kindrun [-mode offline|online] [-steps STEP,...] [flags]
//
// Steps (the Makefile's cluster targets have the same names): env, kind-images, kind-up,
// kind-load, kind-deps, helm-install, load, parity, scenarios, canary, kind-down; `all` (the
// default) runs env through canary and then kind-down. Every flag is also an environment
// variable (-steps is KIND_STEPS); `go run ./hack/kindrun -h` lists them.
//
// Exit status: 0 when every step passed, 1 when a step failed (its diagnostics are printed and,
// unless -keep, the cluster is deleted), 2 for a bad flag or a missing prerequisite.
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
	code := runMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// runMain parses args, runs the steps and maps the outcome to an exit status.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, os.Getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "kindrun: %v\n", err)
		return 2
	}
	steps, err := stepsOf(cfg.Steps)
	if err == nil {
		_, err = runSteps(ctx, newEnv(cfg, stdout), steps)
	}
	if err != nil {
		var pe *prereqError
		if errors.As(err, &pe) {
			fmt.Fprintf(stderr, "kindrun: %v\n", err)
			return 2
		}
		fmt.Fprintf(stderr, "kindrun: FAILED: %v\n", err)
		return 1
	}
	return 0
}

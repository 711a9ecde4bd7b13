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
// kind-load, kind-deps, helm-install, load, parity, scenarios, example, chaos, canary, kind-down; `all` (the
// default) runs env through canary and then kind-down. Every flag is also an environment
// variable (-steps is KIND_STEPS); `go run ./hack/kindrun -h` lists them.
//
// Exit status: 0 when every step passed, 1 when a step failed (its diagnostics are printed and,
// unless -keep, the cluster is deleted), 2 for a bad flag or a missing prerequisite.
package main

import (
	"context"
	"errors"
	"fmt"
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
	os.Exit(cli.Exit(os.Stderr, "kindrun", err))
}

// run parses args and runs the steps. A bad setting or a missing
// prerequisite is exit 2, a failed step exit 1.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return cli.Usage(err)
	}
	steps, err := stepsOf(cfg.Steps)
	if err == nil {
		_, err = runSteps(ctx, newEnv(cfg, stdout), steps)
	}
	if err != nil {
		if errors.As(err, new(*prereqError)) {
			return cli.WithStatus(cli.ExitUsage, err)
		}
		return fmt.Errorf("FAILED: %w", err)
	}
	return nil
}

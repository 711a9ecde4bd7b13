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
// The steps are hack/kindrun/steps' registry (steps.Defs): `go run ./hack/kindrun -h` lists them
// with what each does, `all` (the default) runs those marked there, and docs/kind.md lists them
// too. Every flag is also an environment variable (-steps is KIND_STEPS).
//
// The harness is a library beside this command: harness (the run, the registry, the report),
// cluster (the engine and kind), images, kube (client-go) and steps.
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

	"github.com/poolparity/poolparity/hack/kindrun/cluster"
	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/steps"
	"github.com/poolparity/poolparity/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	reg, err := steps.Registry()
	if err == nil {
		err = run(ctx, reg, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	}
	stop()
	os.Exit(cli.Exit(os.Stderr, "kindrun", err))
}

// run parses args and runs the steps of reg they name. A bad setting or a missing
// prerequisite is exit 2, a failed step exit 1.
func run(ctx context.Context, reg *harness.Registry, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(reg, args, getenv, stderr)
	if err != nil {
		return cli.Usage(err)
	}
	defs, err := reg.Steps(cfg.Steps)
	if err != nil {
		return cli.Usage(err)
	}
	env := harness.NewEnv(cfg, stdout)
	_, err = runner(reg, env).Run(ctx, defs)
	if err != nil {
		if errors.As(err, new(*harness.PrereqError)) {
			return cli.WithStatus(cli.ExitUsage, err)
		}
		return fmt.Errorf("FAILED: %w", err)
	}
	return nil
}

// runner is the run of env's steps: the engine step before any step that needs it, and the
// cluster's diagnostics (then its deletion, unless -keep) after a failure.
func runner(reg *harness.Registry, env *harness.Env) harness.Runner {
	engine, _ := reg.Lookup(cluster.EngineDef().Name())
	return harness.Runner{Env: env, Engine: engine, OnFailure: func(ctx context.Context) {
		cluster.Diagnose(ctx, env)
		if !env.Cfg.Keep {
			_ = cluster.Delete(env)
		}
	}}
}

// Package cluster is the kind cluster and the container engine under it: the env step (a Docker
// engine, started here when none answers), kind-up, kind-load and kind-down, and the diagnostics
// of a failed run. It drives kind through its Go packages (sigs.k8s.io/kind/pkg/cluster).
package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
)

// wrapperRuntime is the name dockerd knows hack/runcwrap by (see harness.CapSysResourceMissing).
const wrapperRuntime = "poolparity-runc"

// engine is a Docker engine this run started (and stops).
type engine struct {
	cmd     *exec.Cmd
	wrapped bool
}

// dockerAnswers reports whether a Docker engine answers, and its default runtime.
func dockerAnswers(ctx context.Context) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.DefaultRuntime}}").Output()
	if err != nil {
		return false, ""
	}
	return true, strings.TrimSpace(string(out))
}

// envStep finds a Docker engine, or installs Docker from Debian and starts one, which the run
// stops at its end (unless -keep).
type envStep struct{}

// EngineDef declares the "env" step.
func EngineDef() harness.Def {
	return harness.Def{Step: envStep{}, Doc: "A Docker engine: the one that answers, or one started here (stopped at the end unless -keep).", Default: true}
}

// Name implements Step.
func (envStep) Name() string { return "env" }

// Run implements Step.
func (envStep) Run(ctx context.Context, env *harness.Env) (harness.Outcome, error) {
	note, e, err := startEngine(ctx, env)
	o := harness.Outcome{Note: note}
	if e != nil {
		o.Stop = func() { e.stop(env) }
	}
	return o, err
}

// startEngine finds a Docker engine, or starts one; it returns the engine it started.
func startEngine(ctx context.Context, env *harness.Env) (string, *engine, error) {
	missing, err := harness.CapSysResourceMissing()
	if err != nil {
		return "", nil, err
	}
	if err := checkDisk("/var/lib", minFreeDisk); err != nil {
		return "", nil, err
	}
	if _, err := exec.LookPath("docker"); err == nil {
		if ok, rt := dockerAnswers(ctx); ok {
			if missing && rt != wrapperRuntime {
				return "", nil, harness.Prereq("a Docker engine answers, but this machine lacks CAP_SYS_RESOURCE and the engine's default runtime is %q, not the %s workaround: stop that engine and run again, so that kindrun starts one with it", rt, wrapperRuntime)
			}
			return "existing engine, default runtime " + rt, nil, nil
		}
	}
	if os.Geteuid() != 0 {
		return "", nil, harness.Prereq("no Docker engine answers, and starting one needs root")
	}
	// Debian's docker.io (engine and client) and debootstrap, through the tool installer.
	if _, err := exec.LookPath("dockerd"); err != nil {
		env.Logf("no Docker engine: installing Debian's docker.io")
		if err := env.Run(ctx, "install-tools", harness.Cmd{Name: filepath.Join(env.Cfg.Root, "hack/install-tools.sh"), Args: []string{"docker.io", "debootstrap"}}); err != nil {
			return "", nil, harness.Prereq("installing Docker from Debian failed: %v", err)
		}
	}
	args := []string{"--host", "unix:///var/run/docker.sock", "--pidfile", filepath.Join(env.Cfg.OutDir, "dockerd.pid")}
	note := "started dockerd"
	if missing {
		wrap, err := buildRuncWrapper(ctx, env)
		if err != nil {
			return "", nil, err
		}
		args = append(args, "--add-runtime", wrapperRuntime+"="+wrap, "--default-runtime", wrapperRuntime)
		note += " with the runc workaround (CAP_SYS_RESOURCE is missing here)"
	}
	logf, err := os.Create(filepath.Join(env.LogDir, "dockerd.log"))
	if err != nil {
		return "", nil, err
	}
	c := exec.Command("dockerd", args...)
	c.Stdout, c.Stderr = logf, logf
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		logf.Close()
		return "", nil, fmt.Errorf("starting dockerd: %w", err)
	}
	e := &engine{cmd: c, wrapped: missing}
	go func() { _ = c.Wait(); logf.Close() }()
	err = kube.Poll(ctx, 500*time.Millisecond, 60*time.Second, "dockerd to answer", func() (bool, error) {
		ok, _ := dockerAnswers(ctx)
		return ok, nil
	})
	if err != nil {
		return "", e, fmt.Errorf("%w (log: %s)", err, filepath.Join(env.LogDir, "dockerd.log"))
	}
	env.Logf("%s (pid %d)", note, c.Process.Pid)
	return note, e, nil
}

// buildRuncWrapper builds hack/runcwrap into the cache and returns its path.
func buildRuncWrapper(ctx context.Context, env *harness.Env) (string, error) {
	out := filepath.Join(env.Cfg.CacheDir, "runcwrap", "runcwrap")
	err := env.Run(ctx, "build", harness.Cmd{Name: "go", Args: []string{"build", "-trimpath", "-o", out, "./hack/runcwrap"}, Env: []string{"CGO_ENABLED=0"}})
	if err != nil {
		return "", fmt.Errorf("building the runc wrapper: %w", err)
	}
	return out, nil
}

// minFreeDisk is what an offline run needs under /var/lib/docker: the node image (about 2 GB),
// the other images, and the cluster's containers.
const minFreeDisk = 8 << 30

// checkDisk fails with one line when the file system holding dir has less than need bytes free.
func checkDisk(dir string, need uint64) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", dir, err)
	}
	if free := st.Bavail * uint64(st.Bsize); free < need {
		return harness.Prereq("only %.1f GiB free under %s; the kind cluster and its images need %d GiB", float64(free)/(1<<30), dir, need>>30)
	}
	return nil
}

// stop stops the engine this run started, by PID: SIGTERM, then SIGKILL after 30 s.
func (e *engine) stop(env *harness.Env) {
	p := e.cmd.Process
	env.Logf("stopping dockerd (pid %d)", p.Pid)
	_ = p.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := p.Signal(syscall.Signal(0)); err != nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// wrapperRuntime is the name dockerd knows hack/runcwrap by (see capSysResourceMissing).
const wrapperRuntime = "poolparity-runc"

// engine is a Docker engine this run started (and stops).
type engine struct {
	cmd     *exec.Cmd
	wrapped bool
}

// capSysResourceMissing reports whether this process's capability bounding set lacks
// CAP_SYS_RESOURCE (bit 24). Some sandboxes, this project's CI machines among them, drop it;
// runc then cannot start a privileged container (kind's nodes are privileged). This is an
// environment workaround, detected at run time; a normal machine never needs it.
func capSysResourceMissing() (bool, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			bits, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("parsing CapBnd %q: %w", v, err)
			}
			return bits&(1<<24) == 0, nil
		}
	}
	return false, errors.New("no CapBnd line in /proc/self/status")
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

// Name implements Step.
func (envStep) Name() string { return "env" }

// Run implements Step.
func (envStep) Run(ctx context.Context, env *Env) (Outcome, error) {
	note, e, err := startEngine(ctx, env)
	o := Outcome{Note: note}
	if e != nil {
		o.Stop = func() { e.stop(env) }
	}
	return o, err
}

// startEngine finds a Docker engine, or starts one; it returns the engine it started.
func startEngine(ctx context.Context, env *Env) (string, *engine, error) {
	missing, err := capSysResourceMissing()
	if err != nil {
		return "", nil, err
	}
	if err := checkDisk("/var/lib", minFreeDisk); err != nil {
		return "", nil, err
	}
	if _, err := exec.LookPath("docker"); err == nil {
		if ok, rt := dockerAnswers(ctx); ok {
			if missing && rt != wrapperRuntime {
				return "", nil, prereq("a Docker engine answers, but this machine lacks CAP_SYS_RESOURCE and the engine's default runtime is %q, not the %s workaround: stop that engine and run again, so that kindrun starts one with it", rt, wrapperRuntime)
			}
			return "existing engine, default runtime " + rt, nil, nil
		}
	}
	if os.Geteuid() != 0 {
		return "", nil, prereq("no Docker engine answers, and starting one needs root")
	}
	// Debian's docker.io (engine and client) and debootstrap, through the tool installer.
	if _, err := exec.LookPath("dockerd"); err != nil {
		env.logf("no Docker engine: installing Debian's docker.io")
		if err := env.run(ctx, "install-tools", cmd{name: filepath.Join(env.cfg.Root, "hack/install-tools.sh"), args: []string{"docker.io", "debootstrap"}}); err != nil {
			return "", nil, prereq("installing Docker from Debian failed: %v", err)
		}
	}
	args := []string{"--host", "unix:///var/run/docker.sock", "--pidfile", filepath.Join(env.cfg.OutDir, "dockerd.pid")}
	note := "started dockerd"
	if missing {
		wrap, err := buildRuncWrapper(ctx, env)
		if err != nil {
			return "", nil, err
		}
		args = append(args, "--add-runtime", wrapperRuntime+"="+wrap, "--default-runtime", wrapperRuntime)
		note += " with the runc workaround (CAP_SYS_RESOURCE is missing here)"
	}
	logf, err := os.Create(filepath.Join(env.logDir, "dockerd.log"))
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
	err = poll(ctx, 500*time.Millisecond, 60*time.Second, "dockerd to answer", func() (bool, error) {
		ok, _ := dockerAnswers(ctx)
		return ok, nil
	})
	if err != nil {
		return "", e, fmt.Errorf("%w (log: %s)", err, filepath.Join(env.logDir, "dockerd.log"))
	}
	env.logf("%s (pid %d)", note, c.Process.Pid)
	return note, e, nil
}

// buildRuncWrapper builds hack/runcwrap into the cache and returns its path.
func buildRuncWrapper(ctx context.Context, env *Env) (string, error) {
	out := filepath.Join(env.cfg.CacheDir, "runcwrap", "runcwrap")
	err := env.run(ctx, "build", cmd{name: "go", args: []string{"build", "-trimpath", "-o", out, "./hack/runcwrap"}, env: []string{"CGO_ENABLED=0"}})
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
		return prereq("only %.1f GiB free under %s; the kind cluster and its images need %d GiB", float64(free)/(1<<30), dir, need>>30)
	}
	return nil
}

// stop stops the engine this run started, by PID: SIGTERM, then SIGKILL after 30 s.
func (e *engine) stop(env *Env) {
	p := e.cmd.Process
	env.logf("stopping dockerd (pid %d)", p.Pid)
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

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

// stepEnv finds a Docker engine, or installs Docker from Debian and starts one.
func (h *Harness) stepEnv(ctx context.Context) (string, error) {
	if h.engine != nil {
		return "engine started by this run", nil
	}
	missing, err := capSysResourceMissing()
	if err != nil {
		return "", err
	}
	if err := checkDisk("/var/lib", minFreeDisk); err != nil {
		return "", err
	}
	if _, err := exec.LookPath("docker"); err == nil {
		if ok, rt := dockerAnswers(ctx); ok {
			if missing && rt != wrapperRuntime {
				return "", prereq("a Docker engine answers, but this machine lacks CAP_SYS_RESOURCE and the engine's default runtime is %q, not the %s workaround: stop that engine and run again, so that kindrun starts one with it", rt, wrapperRuntime)
			}
			return "existing engine, default runtime " + rt, nil
		}
	}
	if os.Geteuid() != 0 {
		return "", prereq("no Docker engine answers, and starting one needs root")
	}
	// Debian's docker.io (engine and client) and debootstrap, through the tool installer.
	if _, err := exec.LookPath("dockerd"); err != nil {
		h.logf("no Docker engine: installing Debian's docker.io")
		if err := h.run(ctx, "install-tools", cmd{name: filepath.Join(h.cfg.Root, "hack/install-tools.sh"), args: []string{"docker.io", "debootstrap"}}); err != nil {
			return "", prereq("installing Docker from Debian failed: %v", err)
		}
	}
	args := []string{"--host", "unix:///var/run/docker.sock", "--pidfile", filepath.Join(h.cfg.OutDir, "dockerd.pid")}
	note := "started dockerd"
	if missing {
		wrap, err := h.buildRuncWrapper(ctx)
		if err != nil {
			return "", err
		}
		args = append(args, "--add-runtime", wrapperRuntime+"="+wrap, "--default-runtime", wrapperRuntime)
		note += " with the runc workaround (CAP_SYS_RESOURCE is missing here)"
	}
	logf, err := os.Create(filepath.Join(h.logDir, "dockerd.log"))
	if err != nil {
		return "", err
	}
	c := exec.Command("dockerd", args...)
	c.Stdout, c.Stderr = logf, logf
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		logf.Close()
		return "", fmt.Errorf("starting dockerd: %w", err)
	}
	h.engine = &engine{cmd: c, wrapped: missing}
	go func() { _ = c.Wait(); logf.Close() }()
	err = poll(ctx, 500*time.Millisecond, 60*time.Second, "dockerd to answer", func() (bool, error) {
		ok, _ := dockerAnswers(ctx)
		return ok, nil
	})
	if err != nil {
		return "", fmt.Errorf("%w (log: %s)", err, filepath.Join(h.logDir, "dockerd.log"))
	}
	h.logf("%s (pid %d)", note, c.Process.Pid)
	return note, nil
}

// buildRuncWrapper builds hack/runcwrap into the cache and returns its path.
func (h *Harness) buildRuncWrapper(ctx context.Context) (string, error) {
	out := filepath.Join(h.cfg.CacheDir, "runcwrap", "runcwrap")
	err := h.run(ctx, "build", cmd{name: "go", args: []string{"build", "-trimpath", "-o", out, "./hack/runcwrap"}, env: []string{"CGO_ENABLED=0"}})
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
func (e *engine) stop(h *Harness) {
	p := e.cmd.Process
	h.logf("stopping dockerd (pid %d)", p.Pid)
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

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// prereqError is a missing prerequisite: the run cannot start here (exit status 2).
type prereqError struct{ msg string }

func (e *prereqError) Error() string { return e.msg }

func prereq(format string, a ...any) error { return &prereqError{fmt.Sprintf(format, a...)} }

// Harness runs the steps of one Config. It is used by one goroutine.
type Harness struct {
	cfg    Config
	out    io.Writer // progress and the report
	logDir string
	kube   string // kubeconfig of the cluster
	bin    string // the repository's ./bin
	engine *engine
	res    Result
	start  time.Time
}

// Result is what a run measured; the test asserts on it and the report prints it.
type Result struct {
	Phases    []Phase        `json:"phases"`
	Replicas  []ReplicaPoint `json:"replicas"`
	Scaled    []string       `json:"scaled"` // tracks whose HPA raised replicas above their minimum
	Split     []SplitPoint   `json:"split"`
	Scenarios []Scenario     `json:"scenarios"`
	Canary    []CanaryRun    `json:"canary"`
}

// Phase is one step's wall time.
type Phase struct {
	Step    string        `json:"step"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Note    string        `json:"note,omitempty"`
}

func newHarness(cfg Config, out io.Writer) *Harness {
	return &Harness{
		cfg:    cfg,
		out:    out,
		logDir: filepath.Join(cfg.OutDir, "logs"),
		kube:   filepath.Join(cfg.OutDir, "kubeconfig"),
		bin:    filepath.Join(cfg.Root, "bin"),
	}
}

// logf prints one progress line.
func (h *Harness) logf(format string, a ...any) {
	fmt.Fprintf(h.out, "%s kindrun: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, a...))
}

// Run runs the configured steps. On a failure it prints diagnostics and, unless Keep, deletes
// the cluster; it always stops a Docker engine it started itself, unless Keep.
func (h *Harness) Run(ctx context.Context) (res Result, err error) {
	h.start = time.Now()
	if err := os.MkdirAll(h.logDir, 0o755); err != nil {
		return h.res, err
	}
	defer func() {
		if err != nil && !errors.As(err, new(*prereqError)) {
			h.diagnose(context.WithoutCancel(ctx))
			if !h.cfg.Keep {
				h.deleteCluster(context.WithoutCancel(ctx))
			}
		}
		if h.engine != nil && !h.cfg.Keep {
			h.engine.stop(h)
		}
		h.writeReport()
	}()
	for _, s := range h.cfg.Steps {
		if err := ctx.Err(); err != nil {
			return h.res, err
		}
		t := time.Now()
		h.logf("step %s", s)
		note, err := h.step(ctx, s)
		h.res.Phases = append(h.res.Phases, Phase{Step: s, Elapsed: time.Since(t).Round(time.Second), Note: note})
		if err != nil {
			return h.res, fmt.Errorf("step %s: %w", s, err)
		}
		h.logf("step %s done in %s%s", s, time.Since(t).Round(time.Second), noteSuffix(note))
	}
	h.printSummary()
	return h.res, nil
}

func noteSuffix(n string) string {
	if n == "" {
		return ""
	}
	return " (" + n + ")"
}

// stepFuncs are the steps by name; the Makefile's cluster targets have the same names.
var stepFuncs = map[string]func(*Harness, context.Context) (string, error){
	"env":          (*Harness).stepEnv,
	"kind-images":  (*Harness).stepImages,
	"kind-up":      (*Harness).stepUp,
	"kind-load":    (*Harness).stepLoad,
	"kind-deps":    (*Harness).stepDeps,
	"helm-install": (*Harness).stepInstall,
	"load":         (*Harness).stepLoadJob,
	"parity":       (*Harness).stepParity,
	"scenarios":    (*Harness).stepScenarios,
	"canary":       (*Harness).stepCanary,
	"kind-down":    (*Harness).stepDown,
}

func (h *Harness) stepDown(ctx context.Context) (string, error) {
	h.deleteCluster(ctx)
	return "", nil
}

func (h *Harness) step(ctx context.Context, s string) (string, error) {
	// Every step but env needs the engine; find (or start) it first.
	if s != "env" && h.engine == nil && s != "kind-down" {
		if _, err := h.stepEnv(ctx); err != nil {
			return "", err
		}
	}
	if f, ok := stepFuncs[s]; ok {
		return f(h, ctx)
	}
	return "", fmt.Errorf("unknown step %q", s)
}

// cmd is one external command: its output goes to a log file, and the last lines come back in
// the error when it fails.
type cmd struct {
	name   string
	args   []string
	env    []string
	stdin  io.Reader
	dir    string
	stdout io.Writer // besides the log
}

// run runs c, logging to logs/<log>.log.
func (h *Harness) run(ctx context.Context, log string, c cmd) error {
	_, err := h.exec(ctx, log, c, false)
	return err
}

// output runs c and returns its stdout (stderr goes to the log).
func (h *Harness) output(ctx context.Context, log string, c cmd) (string, error) {
	return h.exec(ctx, log, c, true)
}

func (h *Harness) exec(ctx context.Context, log string, c cmd, capture bool) (string, error) {
	f, err := os.OpenFile(filepath.Join(h.logDir, log+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fmt.Fprintf(f, "\n$ %s %s\n", c.name, strings.Join(c.args, " "))
	x := exec.CommandContext(ctx, c.name, c.args...)
	x.WaitDelay = 5 * time.Second
	x.Env = append(os.Environ(), "KUBECONFIG="+h.kube)
	x.Env = append(x.Env, c.env...)
	x.Dir = c.dir
	if x.Dir == "" {
		x.Dir = h.cfg.Root
	}
	x.Stdin = c.stdin
	tail := &tailBuffer{max: 4096}
	var stdout bytes.Buffer
	switch {
	case capture:
		x.Stdout = &stdout
	case c.stdout != nil:
		x.Stdout = io.MultiWriter(f, tail, c.stdout)
	default:
		x.Stdout = io.MultiWriter(f, tail)
	}
	x.Stderr = io.MultiWriter(f, tail)
	if err := x.Run(); err != nil {
		msg := strings.TrimSpace(tail.String())
		if msg != "" {
			msg = "\n" + indent(msg)
		}
		return stdout.String(), fmt.Errorf("%s %s: %w%s", c.name, strings.Join(short(c.args), " "), err, msg)
	}
	return stdout.String(), nil
}

// short keeps an error's command line readable.
func short(args []string) []string {
	if len(args) > 8 {
		return append(args[:8:8], "...")
	}
	return args
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

// tool returns the path of a pinned tool in ./bin (or a subdirectory), or a prerequisite error
// naming the install command.
func (h *Harness) tool(rel string) (string, error) {
	p := filepath.Join(h.bin, rel)
	if _, err := os.Stat(p); err != nil {
		return "", prereq("%s is missing: run 'hack/install-tools.sh kind' (or 'make tools')", filepath.Join("bin", rel))
	}
	return p, nil
}

// kubectl runs kubectl against the cluster.
func (h *Harness) kubectl(ctx context.Context, log string, args ...string) (string, error) {
	k, err := h.tool("k8s/kubectl")
	if err != nil {
		return "", err
	}
	return h.output(ctx, log, cmd{name: k, args: args})
}

// kubectlApply applies YAML from memory.
func (h *Harness) kubectlApply(ctx context.Context, log string, yaml []byte, extra ...string) error {
	k, err := h.tool("k8s/kubectl")
	if err != nil {
		return err
	}
	return h.run(ctx, log, cmd{name: k, args: append([]string{"apply", "-f", "-"}, extra...), stdin: bytes.NewReader(yaml)})
}

// poll calls f every interval until it reports done, returns an error, or timeout passes.
func poll(ctx context.Context, interval, timeout time.Duration, what string, f func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		done, err := f()
		if done && err == nil {
			return nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("timed out after %s waiting for %s: %w", timeout, what, last)
			}
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

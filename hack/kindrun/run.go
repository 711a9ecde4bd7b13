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
	"slices"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/kind/pkg/cluster"
)

// prereqError is a missing prerequisite: the run cannot start here (exit status 2).
type prereqError struct{ msg string }

func (e *prereqError) Error() string { return e.msg }

func prereq(format string, a ...any) error { return &prereqError{fmt.Sprintf(format, a...)} }

// Step is one phase of a run. Run reads what it needs from env (the configuration, the
// cluster, the tools) and returns what it did and measured; it keeps nothing for the steps
// after it, which read the cluster instead. The Makefile's cluster targets are named after
// the steps.
type Step interface {
	// Name is the step's name on the command line and in the Makefile.
	Name() string
	// Run runs the step.
	Run(ctx context.Context, env *Env) (Outcome, error)
}

// Outcome is what one step returns.
type Outcome struct {
	// Note is a one-line summary for the progress log and the report.
	Note string
	// Result holds what the step measured; the run adds it to the report.
	Result Result
	// Stop undoes what the step started outside the cluster (the Docker engine of the env
	// step); the run calls it at its end, unless -keep.
	Stop func()
}

// Env is what every step reads: the configuration, where the logs go, the cluster's
// kubeconfig and the pinned tools. It holds no results, and is safe for concurrent use.
type Env struct {
	cfg        Config
	logDir     string
	kubeconfig string // the cluster's kubeconfig, written by kind-up
	bin        string // the repository's ./bin
	mu         *sync.Mutex
	out        io.Writer // progress and the report; writes hold mu
}

// newEnv returns the Env of cfg, printing progress to out.
func newEnv(cfg Config, out io.Writer) *Env {
	return &Env{
		cfg:        cfg,
		out:        out,
		mu:         &sync.Mutex{},
		logDir:     filepath.Join(cfg.OutDir, "logs"),
		kubeconfig: filepath.Join(cfg.OutDir, "kubeconfig"),
		bin:        filepath.Join(cfg.Root, "bin"),
	}
}

// logf prints one progress line.
func (env *Env) logf(format string, a ...any) {
	env.print(fmt.Sprintf("%s kindrun: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, a...)))
}

// print writes s to the progress output.
func (env *Env) print(s string) {
	env.mu.Lock()
	defer env.mu.Unlock()
	_, _ = io.WriteString(env.out, s)
}

// kube returns a client of the cluster (kind-up writes its kubeconfig).
func (env *Env) kube() (*Kube, error) {
	if _, err := os.Stat(env.kubeconfig); err != nil {
		return nil, fmt.Errorf("no kubeconfig of cluster %s (run the kind-up step first): %w", env.cfg.Cluster, err)
	}
	return newKube(env.kubeconfig)
}

// kind returns kind's cluster provider, on Docker, logging to logs/kind.log.
func (env *Env) kind() *cluster.Provider {
	return cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(kindLogger{env: env}))
}

// logFile opens logs/<name>.log for appending.
func (env *Env) logFile(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(env.logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the log %s: %w", name, err)
	}
	return f, nil
}

// runSteps runs steps in order on the cluster and returns what they measured (see runner).
func runSteps(ctx context.Context, env *Env, steps []Step) (Result, error) {
	r := runner{env: env, engine: envStep{}, onFailure: func(ctx context.Context) {
		diagnose(ctx, env)
		if !env.cfg.Keep {
			_ = deleteCluster(env)
		}
	}}
	return r.run(ctx, steps)
}

// runner runs steps in order. Every step but the engine step and kind-down needs a Docker
// engine: when the engine step has not run, it runs first. On a failure (not a missing
// prerequisite) it calls onFailure; unless Keep it undoes what the steps started (their
// Stop). It always writes the report.
type runner struct {
	env       *Env
	engine    Step
	onFailure func(context.Context)
}

func (r runner) run(ctx context.Context, steps []Step) (res Result, err error) {
	env := r.env
	start := time.Now()
	if err := os.MkdirAll(env.logDir, 0o755); err != nil {
		return res, fmt.Errorf("creating %s: %w", env.logDir, err)
	}
	var stops []func()
	defer func() {
		if err != nil && !errors.As(err, new(*prereqError)) {
			r.onFailure(context.WithoutCancel(ctx))
		}
		if !env.cfg.Keep {
			for _, stop := range slices.Backward(stops) {
				stop()
			}
		}
		writeReport(env, res, time.Since(start))
	}()
	engine := false
	for _, s := range steps {
		if s.Name() != r.engine.Name() && s.Name() != (downStep{}).Name() && !engine {
			o, err := r.engine.Run(ctx, env)
			if o.Stop != nil {
				stops = append(stops, o.Stop)
			}
			if err != nil {
				return res, fmt.Errorf("step %s: %w", r.engine.Name(), err)
			}
			engine = true
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		t := time.Now()
		env.logf("step %s", s.Name())
		o, err := s.Run(ctx, env)
		res.add(Phase{Step: s.Name(), Elapsed: time.Since(t).Round(time.Second), Note: o.Note}, o.Result)
		if o.Stop != nil {
			stops = append(stops, o.Stop)
		}
		if err != nil {
			return res, fmt.Errorf("step %s: %w", s.Name(), err)
		}
		engine = engine || s.Name() == r.engine.Name()
		env.logf("step %s done in %s%s", s.Name(), time.Since(t).Round(time.Second), noteSuffix(o.Note))
	}
	env.print(summary(env.cfg.Mode, res, time.Since(start)))
	return res, nil
}

func noteSuffix(n string) string {
	if n == "" {
		return ""
	}
	return " (" + n + ")"
}

// Result is what a run measured; the test asserts on it and the report prints it.
type Result struct {
	Phases    []Phase        `json:"phases"`
	Replicas  []ReplicaPoint `json:"replicas"`
	Scaled    []string       `json:"scaled"` // tracks whose HPA raised replicas above their minimum
	Split     []SplitPoint   `json:"split"`
	Routed    []RoutePoint   `json:"routed"` // the weighted split through the Gateway (routing step)
	Scenarios []Scenario     `json:"scenarios"`
	Canary    []CanaryRun    `json:"canary"`
	Chaos     []FaultRow     `json:"chaos"`
}

// add appends one step's phase and measurements.
func (r *Result) add(p Phase, m Result) {
	r.Phases = append(r.Phases, p)
	r.merge(m)
}

// merge appends m's measurements (not its phases); a track scaled in both is listed once.
func (r *Result) merge(m Result) {
	r.Replicas = append(r.Replicas, m.Replicas...)
	for _, t := range m.Scaled {
		if !slices.Contains(r.Scaled, t) {
			r.Scaled = append(r.Scaled, t)
		}
	}
	r.Split = append(r.Split, m.Split...)
	r.Routed = append(r.Routed, m.Routed...)
	r.Scenarios = append(r.Scenarios, m.Scenarios...)
	r.Canary = append(r.Canary, m.Canary...)
	r.Chaos = append(r.Chaos, m.Chaos...)
}

// Phase is one step's wall time.
type Phase struct {
	Step    string        `json:"step"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Note    string        `json:"note,omitempty"`
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
func (env *Env) run(ctx context.Context, log string, c cmd) error {
	_, err := env.exec(ctx, log, c, false)
	return err
}

// output runs c and returns its stdout (stderr goes to the log).
func (env *Env) output(ctx context.Context, log string, c cmd) (string, error) {
	return env.exec(ctx, log, c, true)
}

func (env *Env) exec(ctx context.Context, log string, c cmd, capture bool) (string, error) {
	f, err := env.logFile(log)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fmt.Fprintf(f, "\n$ %s %s\n", c.name, strings.Join(c.args, " "))
	x := env.command(ctx, c)
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
		return stdout.String(), failure(c, err, tail)
	}
	return stdout.String(), nil
}

// command is c as an exec.Cmd, run in the repository root with the cluster's kubeconfig.
func (env *Env) command(ctx context.Context, c cmd) *exec.Cmd {
	x := exec.CommandContext(ctx, c.name, c.args...)
	x.WaitDelay = 5 * time.Second
	x.Env = append(os.Environ(), "KUBECONFIG="+env.kubeconfig)
	x.Env = append(x.Env, c.env...)
	x.Dir = c.dir
	if x.Dir == "" {
		x.Dir = env.cfg.Root
	}
	x.Stdin = c.stdin
	return x
}

// failure is the error of a failed command: its command line, and the tail of its output.
func failure(c cmd, err error, tail *tailBuffer) error {
	msg := strings.TrimSpace(tail.String())
	if msg != "" {
		msg = "\n" + indent(msg)
	}
	return fmt.Errorf("%s %s: %w%s", c.name, strings.Join(short(c.args), " "), err, msg)
}

// pipe runs from with its standard output connected to to's standard input (what a shell's
// `set -o pipefail; from | to` does, without a shell), logging both to logs/<log>.log. It
// fails when either fails.
func (env *Env) pipe(ctx context.Context, log string, from, to cmd) error {
	f, err := env.logFile(log)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(f, "\n$ %s %s | %s %s\n", from.name, strings.Join(from.args, " "), to.name, strings.Join(to.args, " "))
	a, b := env.command(ctx, from), env.command(ctx, to)
	// An OS pipe: the two processes talk directly, and a writer whose reader died gets EPIPE.
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("creating a pipe: %w", err)
	}
	ta, tb := &tailBuffer{max: 4096}, &tailBuffer{max: 4096}
	a.Stdout, a.Stderr = pw, io.MultiWriter(f, ta)
	b.Stdin, b.Stdout, b.Stderr = pr, io.MultiWriter(f, tb), io.MultiWriter(f, tb)
	errB := b.Start()
	if errB == nil {
		errB = a.Start()
		if errB != nil {
			_ = b.Process.Kill()
		}
	}
	// The children hold their ends now; ours would keep the reader from seeing the end.
	pr.Close()
	pw.Close()
	if errB != nil {
		_ = b.Wait()
		return fmt.Errorf("starting %s | %s: %w", from.name, to.name, errB)
	}
	errA := a.Wait()
	errB = b.Wait()
	// As a shell's pipefail, the rightmost failure: a reader that failed leaves its writer
	// with a broken pipe, which says less.
	switch {
	case errB != nil:
		return failure(to, errB, tb)
	case errA != nil:
		return failure(from, errA, ta)
	}
	return nil
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
func (env *Env) tool(rel string) (string, error) {
	p := filepath.Join(env.bin, rel)
	if _, err := os.Stat(p); err != nil {
		return "", prereq("%s is missing: run 'hack/install-tools.sh kind' (or 'make tools')", filepath.Join("bin", rel))
	}
	return p, nil
}

// poll calls f every interval until it reports done, returns an error, or timeout passes.
func poll(ctx context.Context, interval, timeout time.Duration, what string, f func() (bool, error)) error {
	return until(ctx, interval, timeout, what, func(context.Context) (bool, error) { return f() })
}

package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Cmd is one external command: its output goes to a log file, and the last lines come back in
// the error when it fails.
type Cmd struct {
	Name   string
	Args   []string
	Env    []string // added to the process's environment
	Stdin  io.Reader
	Dir    string    // the repository root when empty
	Stdout io.Writer // besides the log
}

// Run runs c, logging to logs/<log>.log.
func (env *Env) Run(ctx context.Context, log string, c Cmd) error {
	_, err := env.exec(ctx, log, c, false)
	return err
}

// Output runs c and returns its stdout (stderr goes to the log).
func (env *Env) Output(ctx context.Context, log string, c Cmd) (string, error) {
	return env.exec(ctx, log, c, true)
}

func (env *Env) exec(ctx context.Context, log string, c Cmd, capture bool) (string, error) {
	f, err := env.LogFile(log)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fmt.Fprintf(f, "\n$ %s %s\n", c.Name, strings.Join(c.Args, " "))
	x := env.Command(ctx, c)
	tail := &tailBuffer{max: 4096}
	var stdout bytes.Buffer
	switch {
	case capture:
		x.Stdout = &stdout
	case c.Stdout != nil:
		x.Stdout = io.MultiWriter(f, tail, c.Stdout)
	default:
		x.Stdout = io.MultiWriter(f, tail)
	}
	x.Stderr = io.MultiWriter(f, tail)
	if err := x.Run(); err != nil {
		return stdout.String(), failure(c, err, tail)
	}
	return stdout.String(), nil
}

// Command is c as an exec.Cmd, run in the repository root with the cluster's kubeconfig.
func (env *Env) Command(ctx context.Context, c Cmd) *exec.Cmd {
	x := exec.CommandContext(ctx, c.Name, c.Args...)
	x.WaitDelay = 5 * time.Second
	x.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	x.Env = append(x.Env, c.Env...)
	x.Dir = c.Dir
	if x.Dir == "" {
		x.Dir = env.Cfg.Root
	}
	x.Stdin = c.Stdin
	return x
}

// failure is the error of a failed command: its command line, and the tail of its output.
func failure(c Cmd, err error, tail *tailBuffer) error {
	msg := strings.TrimSpace(tail.String())
	if msg != "" {
		msg = "\n" + Indent(msg)
	}
	return fmt.Errorf("%s %s: %w%s", c.Name, strings.Join(short(c.Args), " "), err, msg)
}

// Pipe runs from with its standard output connected to to's standard input (what a shell's
// `set -o pipefail; from | to` does, without a shell), logging both to logs/<log>.log. It
// fails when either fails.
func (env *Env) Pipe(ctx context.Context, log string, from, to Cmd) error {
	f, err := env.LogFile(log)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(f, "\n$ %s %s | %s %s\n", from.Name, strings.Join(from.Args, " "), to.Name, strings.Join(to.Args, " "))
	a, b := env.Command(ctx, from), env.Command(ctx, to)
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
		return fmt.Errorf("starting %s | %s: %w", from.Name, to.Name, errB)
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

// Indent indents every line of s by four spaces.
func Indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

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

// Tool returns the path of a pinned tool in ./bin (or a subdirectory), or a prerequisite error
// naming the install command.
func (env *Env) Tool(rel string) (string, error) {
	p := filepath.Join(env.Bin, rel)
	if _, err := os.Stat(p); err != nil {
		return "", Prereq("%s is missing: run 'hack/install-tools.sh kind' (or 'make tools')", filepath.Join("bin", rel))
	}
	return p, nil
}

// Package racecheck runs the Go race detector over a service under test:
// Build compiles a Go package with -race, and Parse (or ParseFile, for the
// log file a process's output was redirected to) turns the detector's
// "WARNING: DATA RACE" reports into Race values, one per distinct pair of
// racing frames, whose String names both accesses in one line.
//
// It serves `poolparity-parity local`: misuses of sync.Pool (a buffer used
// after Put, a shared package-level buffer written by every request without
// a lock) show only while requests are in flight together, so the gray track
// is built with -race, driven concurrently over loopback, and any race it
// reports fails the run. Starting the process and driving load are the
// caller's; this package builds and parses.
//
// It is a library: it reads no flags and does not log; the environment only
// to pass it to the go command when the caller gives none. Its functions
// keep no state between calls and are safe for concurrent use.
package racecheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// ExitCode is the exit status of a -race binary that found at least one
// race and then exited normally (the default of GORACE=exitcode). A process
// killed by a signal prints neither this status nor the "Found N data
// race(s)" trailer, but its reports are still in its output.
const ExitCode = 66

// BuildOptions says what Build compiles and where.
type BuildOptions struct {
	// Package is what `go build` is given: an import path ("example.com/svc/cmd/svc"),
	// a directory relative to Dir ("./cmd/svc", "."), or a module path that names
	// the module's root package. A path@version is not accepted by go build.
	Package string
	// Dir is the directory the go command runs in, usually the root of the
	// module that holds Package. Empty means the current directory.
	Dir string
	// Output is the path of the binary to write; a relative path is relative to Dir.
	Output string
	// Env is the whole environment of the go command; nil means the current
	// process's. Build adds CGO_ENABLED=1 to it, which -race needs.
	Env []string
	// GoBin is the go command to run, a path or a name on PATH; empty means "go".
	GoBin string
}

// buildWaitDelay bounds how long Build waits, once its context is done and
// the go command killed, for the compilers the go command started to
// release the output pipe.
const buildWaitDelay = 5 * time.Second

// stderrTailLines and stderrTailBytes bound the part of the go command's
// output that a failed Build quotes.
const (
	stderrTailLines = 20
	stderrTailBytes = 8 << 10
)

// Build runs `go build -race -o Output Package` in Dir with CGO_ENABLED=1,
// bounded by ctx. When the build fails, the error names the package and
// quotes the last lines of the go command's output; when ctx ends first, the
// error wraps ctx.Err(). A go command that cannot be found gives an error
// that wraps exec.ErrNotFound.
func Build(ctx context.Context, opts BuildOptions) error {
	if opts.Package == "" {
		return errors.New("building with -race: no package given")
	}
	if strings.HasPrefix(opts.Package, "-") {
		return fmt.Errorf("building %s with -race: a package may not start with '-'", opts.Package)
	}
	if opts.Output == "" {
		return fmt.Errorf("building %s with -race: no output path given", opts.Package)
	}
	goBin := opts.GoBin
	if goBin == "" {
		goBin = "go"
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-race", "-o", opts.Output, opts.Package)
	cmd.Dir = opts.Dir
	cmd.Env = opts.Env
	// Environ is Env, or the inherited environment when Env is nil; a later
	// duplicate key wins, so this overrides any CGO_ENABLED=0.
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=1")
	out := &tailBuffer{max: stderrTailBytes}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = buildWaitDelay
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(err, ctxErr) { // it ended before the go command started
			return fmt.Errorf("building %s with -race: %w", opts.Package, ctxErr)
		}
		return fmt.Errorf("building %s with -race: %w (%v)", opts.Package, ctxErr, err)
	}
	if tail := out.tail(stderrTailLines); tail != "" {
		return fmt.Errorf("building %s with -race: %w; go build said:\n%s", opts.Package, err, tail)
	}
	return fmt.Errorf("building %s with -race: %w", opts.Package, err)
}

// tailBuffer keeps the last max bytes written to it. os/exec calls Write
// from one goroutine at a time when Stdout and Stderr are the same writer,
// so it needs no lock.
type tailBuffer struct {
	max int
	b   []byte
}

// Write implements io.Writer.
func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.b = append(t.b[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if drop := len(t.b) + len(p) - t.max; drop > 0 {
		t.b = append(t.b[:0], t.b[drop:]...)
	}
	t.b = append(t.b, p...)
	return n, nil
}

// tail returns the last n non-empty lines written, trimmed.
func (t *tailBuffer) tail(n int) string {
	lines := strings.Split(string(bytes.TrimSpace(t.b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

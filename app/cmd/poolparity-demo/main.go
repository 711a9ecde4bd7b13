// Command poolparity-demo runs the poolparity loop on one machine: a stable
// (unpooled) and a gray (pooled) instance of the service, a weighted
// splitter in front of them, a bounded load, and a real Prometheus
// evaluating the shipped rules; then it prints the parity report and writes
// it to ./out as text, JSON and HTML. `make demo` runs it through
// hack/demo.sh.
//
// Reading the same report from an existing Prometheus (`make parity`) is
// poolparity-parity's job; -report-only, which did it here, is refused with
// a pointer there.
//
// Exit status: 0 PASS, 1 FAIL, 2 a bad configuration, 3 NO DATA, 4 the demo
// could not run, 130 interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/poolparity/poolparity/internal/demo"
	"github.com/poolparity/poolparity/internal/parity"
)

// Exit statuses (parity's, shared with the other report command).
const (
	exitPass        = parity.ExitPass
	exitFail        = parity.ExitFail
	exitUsage       = parity.ExitUsage
	exitNoData      = parity.ExitNoData
	exitError       = parity.ExitError
	exitInterrupted = parity.ExitInterrupted
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, isTerminal(os.Stdout), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the demo and returns the exit status.
func run(ctx context.Context, args []string, getenv func(string) string, tty bool, stdout, stderr io.Writer) int {
	cfg, err := demo.Parse("poolparity-demo", args, getenv, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitPass
		}
		printErr(stderr, err)
		return exitUsage
	}
	cfg.TTY = tty
	res, err := demo.Run(ctx, cfg, stdout, stderr)
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "poolparity-demo: interrupted; everything it started is stopped")
		return exitInterrupted
	case err != nil:
		printErr(stderr, err)
		return exitError
	}
	return parity.ExitStatus(res.Report.Verdict)
}

// printErr prints each line of err with the program's name.
func printErr(w io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintln(w, "poolparity-demo:", line)
	}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

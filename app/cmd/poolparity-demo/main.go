// Command poolparity-demo runs the poolparity loop on one machine as one
// case of `poolparity-parity local` (internal/localmode): a stable (unpooled)
// and a gray (pooled) instance of the reference or the example service, the
// scenario's requests file replayed open-loop at both, and a real
// Prometheus evaluating the poolparity rules; then it prints the parity
// report, writes it to ./out as text, JSON and HTML, and checks the
// scenario's expectations. `make demo` runs it through hack/demo.sh.
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
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/demo"
	"github.com/poolparity/poolparity/internal/parity"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Exit(os.Stderr, "poolparity-demo", err))
}

// run runs the demo. Its error carries the exit status (internal/parity's):
// nil for PASS, a bare status for FAIL and NO DATA (the report said so).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := demo.Parse("poolparity-demo", args, getenv, stderr)
	if err != nil {
		return cli.WithStatus(parity.ExitUsage, err)
	}
	res, err := demo.Run(ctx, cfg, stdout, stderr)
	switch {
	case ctx.Err() != nil:
		return cli.WithStatus(parity.ExitInterrupted, errors.New("interrupted; everything it started is stopped"))
	case err != nil:
		return cli.WithStatus(parity.ExitError, err)
	}
	return cli.Status(parity.ExitStatus(res.Report.Verdict))
}

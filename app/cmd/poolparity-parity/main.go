// Command poolparity-parity reads the parity report from an existing
// Prometheus that loads the poolparity rules (a cluster's, or any other),
// prints the same table as `make demo` and writes it to ./out as text, JSON
// and HTML. It starts nothing. For a kind cluster, `make parity` gives the
// same report through hack/kindrun, which calls the same evaluator in
// process. With -pprof-gray and -pprof-stable, a FAIL also profiles one
// instance of each track and reports the functions whose cost per request
// differs most (docs/profiles.md); a profile that cannot be taken leaves the
// verdict and its exit status as they are.
//
// `poolparity-parity rules` renders the recording rules and alerts the report
// reads, for a Prometheus without the operator, from the chart's template
// compiled into the binary: no clone is needed (docs/adopt.md).
//
// `poolparity-parity local` runs two builds of a service on this machine
// (commands or URLs), replays a requests file against them, judges them
// with a Prometheus it starts and the rules it renders, compares their
// responses, and writes the same report (internal/localmode).
//
// Exit status: 0 PASS, 1 FAIL, 2 a bad configuration, 3 NO DATA, 4
// Prometheus could not be read or the report not written, 130 interrupted.
// Past the configuration, every end writes report.txt, report.json and
// report.html: an ERROR's with verdict ERROR and the error as its reason.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/promread"
	"github.com/poolparity/poolparity/internal/parity/render"
)

// chartSpan is how far back the report's charts reach.
const chartSpan = 15 * time.Minute

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Exit(os.Stderr, "poolparity-parity", err))
}

// run reads and writes the report. Its error carries the exit status
// (internal/parity's): nil for PASS, a bare status for FAIL and NO DATA (the
// report said so).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "rules" {
		return runRules(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "local" {
		return runLocal(ctx, args[1:], getenv, stdout, stderr)
	}
	cfg, err := parseConfig("poolparity-parity", args, getenv, stderr)
	if err != nil {
		return cli.WithStatus(parity.ExitUsage, err)
	}
	report, err := readReport(ctx, cfg, stdout, stderr)
	switch {
	case ctx.Err() != nil:
		return cli.WithStatus(parity.ExitInterrupted, errors.New("interrupted"))
	case err != nil:
		return cli.WithStatus(parity.ExitError, err)
	}
	return cli.Status(parity.ExitStatus(report.Verdict))
}

// readReport reads the parity report from cfg.PrometheusURL, profiles the
// instances cfg names on a FAIL, writes it to cfg.OutDir and prints it. Every
// end writes the report: one that cannot be read whole is written with
// verdict ERROR, its reason the error returned, and the rows judged before
// it (render.Write).
func readReport(ctx context.Context, cfg Config, stdout, stderr io.Writer) (parity.Report, error) {
	promURL := strings.TrimRight(cfg.PrometheusURL, "/")
	sel := cfg.Selector
	if sel == "" {
		sel = "(none)"
	}
	fmt.Fprintf(stdout, "parity: reading the parity report from Prometheus at %s (window %s, selector %s) ...\n", promURL, cfg.Window, sel)
	report, err := evaluate(ctx, cfg, promURL, stdout, stderr)
	if report.Title == "" {
		report.Title, report.Window = "poolparity: gray vs stable", cfg.Window // an error before the evaluation
	}
	report.Context = []parity.KV{
		{Key: "prometheus", Value: promURL},
		{Key: "selector", Value: sel},
		{Key: "charts", Value: fmt.Sprintf("the last %.0f minutes", chartSpan.Minutes())},
	}
	// The files first: the verdict is printed only once the report is written whole, so
	// that the exit status always goes with the verdict printed. An ERROR (a read that
	// failed, or a report that cannot be written) prints no verdict: the error, on
	// stderr, is its word, and the files give it as the reason of their ERROR.
	report, files, err := render.Write(report, cfg.OutDir, err)
	if err != nil {
		if len(files) > 0 {
			fmt.Fprintf(stdout, "report (ERROR): %s\n", strings.Join(files, ", "))
		}
		return report, err
	}
	fmt.Fprintln(stdout)
	if err := render.Text(stdout, report); err != nil {
		return report, err
	}
	fmt.Fprintf(stdout, "report: %s\n", strings.Join(files, ", "))
	return report, nil
}

// evaluate reads the parity report and its charts from promURL, and
// profiles the instances cfg names on a FAIL. On an error it returns what
// it read before it (parity.Evaluate's report, its rows so far) with the
// error.
func evaluate(ctx context.Context, cfg Config, promURL string, stdout, stderr io.Writer) (parity.Report, error) {
	// Queries get seconds: a range query on a busy Prometheus can take them. Answers are
	// bounded in size; an error answer shows only Prometheus' own error field.
	q, err := promread.New(promURL, promread.ClientConfig{MaxResponseBytes: int64(cfg.MaxResponseBytes)})
	if err != nil {
		return parity.Report{}, err
	}
	cat, err := cfg.Catalog()
	if err != nil {
		return parity.Report{}, err // Validate has refused it already
	}
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	now := time.Now()
	opts := parity.Options{
		At: now, Window: cfg.Window, Selector: cfg.Selector,
		Stat: parity.Gate(cfg.Gate).Mode(), Alerts: true, Pools: true, Inputs: true,
	}
	if opts.StatSince, err = cfg.SinceTime(); err != nil {
		return parity.Report{}, err // Validate has refused it already
	}
	report, err := parity.Evaluate(qctx, q, cat, opts)
	if err != nil {
		return report, promError(promURL, cfg.Window, err)
	}
	step := (chartSpan / 150).Round(time.Second)
	if report.Charts, err = parity.Charts(qctx, q, cat, cfg.Window, cfg.Selector, now.Add(-chartSpan), now, step); err != nil {
		return report, promError(promURL, cfg.Window, err)
	}
	if report.Verdict == parity.Fail && cfg.profiling() {
		addProfiles(ctx, q, cfg, &report, stdout, stderr)
	}
	return report, nil
}

// promError turns a failed read of promURL into one line: a transport
// failure names the Prometheus it could not reach, and missing rules say
// which window was asked for.
func promError(promURL, window string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("cannot reach Prometheus at %s: %w", promURL, ue.Err)
	}
	if errors.Is(err, parity.ErrNoRules) {
		return fmt.Errorf("%w; is the chart's PrometheusRule loaded, and does -window %s match its windows?", err, window)
	}
	return fmt.Errorf("reading the parity report from %s: %w", promURL, err)
}

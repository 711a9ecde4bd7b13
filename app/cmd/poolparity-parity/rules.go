package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/poolparity/poolparity/deploy"
	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/rulesgen"
)

// rulesGenerator is the command a rendered file's header names.
const rulesGenerator = "poolparity-parity rules"

// runRules is `poolparity-parity rules`: it renders the recording rules and alerts for a
// Prometheus without the operator from the chart's rules template and values compiled into this
// binary, with the chart's overrides (-set, -values) and the local shortcuts (-window, -for), and
// writes them to -o (stdout by default). A bad flag or value is exit 2.
func runRules(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("poolparity-parity rules", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: poolparity-parity rules [-o FILE] [-values FILE]... [-set key=value]... [-window 1m] [-for 30s]")
		fmt.Fprintln(stderr, "Renders the poolparity recording rules and alerts (the chart's rules: values, overridden) as a Prometheus rules file.")
		fs.PrintDefaults()
	}
	var opts rulesgen.Options
	out := fs.String("o", "-", `write the rules file here ("-": stdout)`)
	opts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return cli.WithStatus(parity.ExitUsage, err)
	}
	if fs.NArg() > 0 {
		return cli.WithStatus(parity.ExitUsage, fmt.Errorf("rules: unexpected arguments %q", fs.Args()))
	}
	got, err := rulesgen.Render(deploy.RulesSource(rulesGenerator), opts)
	if err != nil {
		return cli.WithStatus(parity.ExitUsage, fmt.Errorf("rendering the rules: %w", err))
	}
	if *out == "-" {
		_, err = stdout.Write(got)
		return err
	}
	if err := rulesgen.WriteFile(*out, got); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
}

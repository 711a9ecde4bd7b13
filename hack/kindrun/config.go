package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/internal/envflag"
)

// Config is what one kindrun invocation does.
type Config = harness.Config

// parseConfig reads the flags and their KIND_* variables; the steps are reg's.
func parseConfig(reg *harness.Registry, args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	c := Config{
		Mode: "offline", Cluster: "poolparity", Namespace: "poolparity", Release: "poolparity",
		LoadDuration: 130 * time.Second, LoadRPS: 60,
	}
	fs := flag.NewFlagSet("kindrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage of kindrun:\n")
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nSteps (all runs those marked *, in this order):\n%s", stepList(reg))
	}
	e := envflag.New(fs, getenv, envflag.TrimPrefix("KIND_"))
	e.String(&c.Mode, "KIND_MODE", "offline (build every image here) or online (kindest/node and upstream charts)")
	e.String(&c.Cluster, "KIND_CLUSTER", "kind cluster name")
	e.String(&c.Namespace, "KIND_NAMESPACE", "namespace of the chart")
	e.String(&c.Release, "KIND_RELEASE", "Helm release name")
	e.Bool(&c.Keep, "KIND_KEEP", "keep the cluster after the run (and after a failure)")
	e.Duration(&c.LoadDuration, "KIND_LOAD_DURATION", "length of each load phase")
	e.Float64(&c.LoadRPS, "KIND_LOAD_RPS", "request rate of the in-cluster load generator")
	e.String(&c.CacheDir, "POOLPARITY_CACHE", "tool and image cache (default ~/.cache/poolparity)")
	e.String(&c.OutDir, "KIND_OUT", "directory for the run's report and logs (default out/kind)")
	e.Int(&c.HPACPUTarget, "KIND_HPA_CPU_TARGET", "the per-track HPAs' CPU target, % of requests (autoscaling.targetCPUUtilizationPercentage); 0 keeps the chart's. A high one (100, the most the chart takes) makes the scenarios' load alone move no HPA")
	e.String(&c.CPURequest, "KIND_CPU_REQUEST", "the service pods' CPU request (resources.requests.cpu); empty keeps values-kind.yaml's 50m. A larger one makes the scenarios' load alone move no HPA; it must leave the node room for a rolling upgrade's extra pod")
	steps := "all"
	e.String(&steps, "KIND_STEPS", "steps to run, separated by commas or spaces: all, or of "+strings.Join(reg.Names(), " ")+" (below)")
	if err := e.Parse(args); err != nil {
		return c, err
	}
	c.Steps = strings.FieldsFunc(steps, func(r rune) bool { return r == ',' || r == ' ' })
	if len(c.Steps) == 0 || (len(c.Steps) == 1 && c.Steps[0] == "all") {
		c.Steps = reg.Default()
	}
	wd, err := os.Getwd()
	if err != nil {
		return c, err
	}
	c.Root, err = repoRoot(wd)
	if err != nil {
		return c, err
	}
	if c.CacheDir == "" {
		base := getenv("XDG_CACHE_HOME")
		if base == "" {
			home, _ := os.UserHomeDir()
			base = filepath.Join(home, ".cache")
		}
		c.CacheDir = filepath.Join(base, "poolparity")
	}
	if c.OutDir == "" {
		c.OutDir = filepath.Join(c.Root, "out", "kind")
	}
	_, stepsErr := reg.Steps(c.Steps)
	return c, errors.Join(c.Validate(), stepsErr)
}

// repoRoot walks up from dir to the directory holding go.mod and kind-config.yaml.
func repoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "kind-config.yaml")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				return d, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no repository root (go.mod + kind-config.yaml) above %s", dir)
		}
	}
}

// stepList is the registry's steps, one a line: name, whether `all` runs it, its Makefile
// target, what it needs and its doc.
func stepList(reg *harness.Registry) string {
	var w strings.Builder
	for _, d := range reg.Defs() {
		all := " "
		if d.Default {
			all = "*"
		}
		doc := d.Doc
		if d.Beside != "" {
			doc += " [side by side: " + d.Beside + "]"
		}
		fmt.Fprintf(&w, "  %s %-13s %s\n", all, d.Name(), doc)
	}
	return w.String()
}

// stepsTable is docs/kind.md's list of the steps, a Markdown table from reg
// (TestDocsListTheSteps holds the doc to it).
func stepsTable(reg *harness.Registry) string {
	var w strings.Builder
	w.WriteString("| step | in `all` | make target | needs | what it does |\n|---|---|---|---|---|\n")
	for _, d := range reg.Defs() {
		all, target, needs := "", "", strings.Join(d.Needs, ", ")
		if d.Default {
			all = "yes"
		}
		if d.Default && d.Beside != "" {
			all = "yes, side by side (" + d.Beside + ")"
		}
		if d.Target != "" {
			target = "`make " + d.Target + "`"
		}
		fmt.Fprintf(&w, "| `%s` | %s | %s | %s | %s |\n", d.Name(), all, target, needs, d.Doc)
	}
	return w.String()
}

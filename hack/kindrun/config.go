package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/poolparity/poolparity/internal/envflag"
)

// Config is what one kindrun invocation does.
type Config struct {
	Mode         string        // offline or online
	Cluster      string        // kind cluster name
	Namespace    string        // the chart's namespace
	Release      string        // the chart's release name
	Steps        []string      // steps to run, in order
	Keep         bool          // keep the cluster (and the engine it started) after the run
	LoadDuration time.Duration // length of each load phase
	LoadRPS      float64       // request rate of the in-cluster load generator
	Root         string        // repository root
	CacheDir     string        // tool cache (~/.cache/poolparity)
	OutDir       string        // where the run's report and logs go
	HPAGroups    string        // hpa-groups: short (group C, CI) or full (A, B, C; docs/hpa-groups.md)
}

// allSteps returns every step, in the order stepNames lists them: first those `all` runs, in
// its order, then the ones run only by name. A new phase is one more Step here.
func allSteps() []Step {
	return []Step{
		envStep{}, imagesStep{}, upStep{}, loadImagesStep{}, depsStep{}, installStep{},
		scenariosStep{names: kindScenarios()}, routingStep{}, exampleStep{}, chaosStep{}, canaryStep{canaries: defaultCanaries()}, hpaGroupsStep{}, downStep{},
		// Run only by name (the Makefile's load and parity).
		loadStep{}, parityStep{},
	}
}

// defaultSteps are the steps `all` runs.
func defaultSteps() []string {
	return []string{"env", "kind-images", "kind-up", "kind-load", "kind-deps", "helm-install", "scenarios", "routing", "example", "chaos", "canary", "hpa-groups", "kind-down"}
}

// stepByName returns the step called name.
func stepByName(name string) (Step, bool) {
	i := slices.IndexFunc(allSteps(), func(s Step) bool { return s.Name() == name })
	if i < 0 {
		return nil, false
	}
	return allSteps()[i], true
}

// stepsOf returns the steps of names, in order.
func stepsOf(names []string) ([]Step, error) {
	out := make([]Step, 0, len(names))
	for _, n := range names {
		s, ok := stepByName(n)
		if !ok {
			return nil, fmt.Errorf("unknown step %q (steps: all %s)", n, strings.Join(stepNames(), " "))
		}
		out = append(out, s)
	}
	return out, nil
}

func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	c := Config{
		Mode: "offline", Cluster: "poolparity", Namespace: "poolparity", Release: "poolparity",
		LoadDuration: 130 * time.Second, LoadRPS: 60, HPAGroups: "short",
	}
	fs := flag.NewFlagSet("kindrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
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
	e.String(&c.HPAGroups, "KIND_HPA_GROUPS", "the hpa-groups step: short (group C, asserting its latency trigger) or full (groups A, B, C; writes docs/hpa-groups.md)")
	steps := "all"
	e.String(&steps, "KIND_STEPS", "steps to run, separated by commas or spaces: all, or of "+strings.Join(stepNames(), " "))
	if err := e.Parse(args); err != nil {
		return c, err
	}
	c.Steps = strings.FieldsFunc(steps, func(r rune) bool { return r == ',' || r == ' ' })
	if len(c.Steps) == 0 || (len(c.Steps) == 1 && c.Steps[0] == "all") {
		c.Steps = defaultSteps()
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
	return c, c.Validate()
}

// Validate reports every bad setting at once.
func (c Config) Validate() error {
	var errs []error
	if c.Mode != "offline" && c.Mode != "online" {
		errs = append(errs, fmt.Errorf("mode must be offline or online, got %q", c.Mode))
	}
	for _, s := range c.Steps {
		if _, err := stepsOf([]string{s}); err != nil {
			errs = append(errs, err)
		}
	}
	if c.LoadDuration < 30*time.Second || c.LoadDuration > 30*time.Minute {
		errs = append(errs, fmt.Errorf("load duration must be in [30s, 30m], got %s", c.LoadDuration))
	}
	if c.LoadRPS <= 0 || c.LoadRPS > 2000 {
		errs = append(errs, fmt.Errorf("load rps must be in (0, 2000], got %g", c.LoadRPS))
	}
	if c.HPAGroups != "short" && c.HPAGroups != "full" {
		errs = append(errs, fmt.Errorf("hpa-groups must be short or full, got %q", c.HPAGroups))
	}
	if c.Cluster == "" || c.Namespace == "" || c.Release == "" {
		errs = append(errs, errors.New("cluster, namespace and release must not be empty"))
	}
	return errors.Join(errs...)
}

// stepNames lists the steps a user may name, in allSteps' order.
func stepNames() []string {
	var names []string
	for _, s := range allSteps() {
		names = append(names, s.Name())
	}
	return names
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

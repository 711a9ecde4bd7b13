package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
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
}

// Steps in the order `all` runs them.
var allSteps = []string{"env", "kind-images", "kind-up", "kind-load", "kind-deps", "helm-install", "scenarios", "canary", "kind-down"}

func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	c := Config{
		Mode: "offline", Cluster: "poolparity", Namespace: "poolparity", Release: "poolparity",
		LoadDuration: 150 * time.Second, LoadRPS: 60,
	}
	fs := flag.NewFlagSet("kindrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	e := &envFlags{fs: fs, getenv: getenv}
	e.str(&c.Mode, "KIND_MODE", "offline (build every image here) or online (kindest/node and upstream charts)")
	e.str(&c.Cluster, "KIND_CLUSTER", "kind cluster name")
	e.str(&c.Namespace, "KIND_NAMESPACE", "namespace of the chart")
	e.str(&c.Release, "KIND_RELEASE", "Helm release name")
	e.boolean(&c.Keep, "KIND_KEEP", "keep the cluster after the run (and after a failure)")
	e.duration(&c.LoadDuration, "KIND_LOAD_DURATION", "length of each load phase")
	e.float(&c.LoadRPS, "KIND_LOAD_RPS", "request rate of the in-cluster load generator")
	e.str(&c.CacheDir, "POOLPARITY_CACHE", "tool and image cache (default ~/.cache/poolparity)")
	e.str(&c.OutDir, "KIND_OUT", "directory for the run's report and logs (default out/kind)")
	steps := "all"
	e.str(&steps, "KIND_STEPS", "steps to run, separated by commas or spaces: all, or of "+strings.Join(stepNames(), " "))
	if err := e.parse(args); err != nil {
		return c, err
	}
	c.Steps = strings.FieldsFunc(steps, func(r rune) bool { return r == ',' || r == ' ' })
	if len(c.Steps) == 0 || (len(c.Steps) == 1 && c.Steps[0] == "all") {
		c.Steps = allSteps
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
		if _, ok := stepFuncs[s]; !ok {
			errs = append(errs, fmt.Errorf("unknown step %q (steps: all %s)", s, strings.Join(stepNames(), " ")))
		}
	}
	if c.LoadDuration < 30*time.Second || c.LoadDuration > 30*time.Minute {
		errs = append(errs, fmt.Errorf("load duration must be in [30s, 30m], got %s", c.LoadDuration))
	}
	if c.LoadRPS <= 0 || c.LoadRPS > 2000 {
		errs = append(errs, fmt.Errorf("load rps must be in (0, 2000], got %g", c.LoadRPS))
	}
	if c.Cluster == "" || c.Namespace == "" || c.Release == "" {
		errs = append(errs, errors.New("cluster, namespace and release must not be empty"))
	}
	return errors.Join(errs...)
}

// stepNames lists the steps a user may name: allSteps' order, then the others.
func stepNames() []string {
	names := slices.Clone(allSteps)
	for n := range stepFuncs {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names[len(allSteps):])
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

// envFlags binds each setting to a flag and an environment variable (the variable gives the
// default, the flag wins), like the service's app/internal/envflag, which a hack/ command may not
// import.
type envFlags struct {
	fs     *flag.FlagSet
	getenv func(string) string
	errs   []error
}

// flagName is the variable's name without KIND_, in lower case with - for _ (KIND_STEPS is -steps).
func flagName(env string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(env, "KIND_")), "_", "-")
}

func envBind[T any](e *envFlags, p *T, env, help string, parse func(string) (T, error), define func(*T, string, T, string)) {
	if v := e.getenv(env); v != "" {
		x, err := parse(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("parsing %s=%q: %w", env, v, err))
		} else {
			*p = x
		}
	}
	define(p, flagName(env), *p, help+" (env "+env+")")
}

func (e *envFlags) str(p *string, env, help string) {
	envBind(e, p, env, help, func(s string) (string, error) { return s, nil }, e.fs.StringVar)
}

func (e *envFlags) boolean(p *bool, env, help string) {
	envBind(e, p, env, help, strconv.ParseBool, e.fs.BoolVar)
}

func (e *envFlags) duration(p *time.Duration, env, help string) {
	envBind(e, p, env, help, time.ParseDuration, e.fs.DurationVar)
}

func (e *envFlags) float(p *float64, env, help string) {
	envBind(e, p, env, help, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }, e.fs.Float64Var)
}

func (e *envFlags) parse(args []string) error {
	if err := errors.Join(e.errs...); err != nil {
		return err
	}
	if err := e.fs.Parse(args); err != nil {
		return err
	}
	if e.fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (steps go in -steps or KIND_STEPS)", e.fs.Args())
	}
	return nil
}

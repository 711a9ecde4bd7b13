// Package harness is the library under hack/kindrun: the configuration of a run, the Env every
// step reads, external commands with their logs, the step registry, the runner that runs the
// steps in order, and the report each step writes its own results into. It knows no step:
// the cluster, the images and the steps are packages beside it (cluster, images, steps) that
// register with a Registry.
package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/poolparity/poolparity/hack/kindrun/kube"
	"k8s.io/apimachinery/pkg/api/resource"
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
	HPACPUTarget int           // the HPAs' CPU target in % of requests; 0: the chart's
	CPURequest   string        // the service pods' CPU request (a quantity); "": the kind values'
}

// Validate reports every bad setting at once; the step names are the registry's to check
// (Registry.Steps).
func (c Config) Validate() error {
	var errs []error
	if c.Mode != "offline" && c.Mode != "online" {
		errs = append(errs, fmt.Errorf("mode must be offline or online, got %q", c.Mode))
	}
	if c.LoadDuration < 30*time.Second || c.LoadDuration > 30*time.Minute {
		errs = append(errs, fmt.Errorf("load duration must be in [30s, 30m], got %s", c.LoadDuration))
	}
	if c.LoadRPS <= 0 || c.LoadRPS > 2000 {
		errs = append(errs, fmt.Errorf("load rps must be in (0, 2000], got %g", c.LoadRPS))
	}
	if c.HPACPUTarget < 0 || c.HPACPUTarget > 100 {
		errs = append(errs, fmt.Errorf("the HPA CPU target must be a percentage in [1, 100] (the chart's schema; 0: the chart's), got %d", c.HPACPUTarget))
	}
	if c.CPURequest != "" {
		if q, err := resource.ParseQuantity(c.CPURequest); err != nil || q.Sign() <= 0 {
			errs = append(errs, fmt.Errorf("the CPU request must be a positive quantity (200m), got %q", c.CPURequest))
		}
	}
	if c.Cluster == "" || c.Namespace == "" || c.Release == "" {
		errs = append(errs, errors.New("cluster, namespace and release must not be empty"))
	}
	return errors.Join(errs...)
}

// PrereqError is a missing prerequisite: the run cannot start here (exit status 2).
type PrereqError struct{ msg string }

func (e *PrereqError) Error() string { return e.msg }

// Prereq returns a PrereqError with the formatted message.
func Prereq(format string, a ...any) error { return &PrereqError{fmt.Sprintf(format, a...)} }

// Env is what every step reads: the configuration, where the logs go, the cluster's
// kubeconfig and the pinned tools. It holds no results, and is safe for concurrent use; its
// fields are set by NewEnv and only read after.
type Env struct {
	Cfg        Config
	LogDir     string // out/kind/logs: one log per tool
	Kubeconfig string // the cluster's kubeconfig, written by kind-up
	Bin        string // the repository's ./bin
	mu         *sync.Mutex
	out        io.Writer // progress and the report; writes hold mu
}

// NewEnv returns the Env of cfg, printing progress to out.
func NewEnv(cfg Config, out io.Writer) *Env {
	return &Env{
		Cfg:        cfg,
		out:        out,
		mu:         &sync.Mutex{},
		LogDir:     filepath.Join(cfg.OutDir, "logs"),
		Kubeconfig: filepath.Join(cfg.OutDir, "kubeconfig"),
		Bin:        filepath.Join(cfg.Root, "bin"),
	}
}

// Logf prints one progress line.
func (env *Env) Logf(format string, a ...any) {
	env.Print(fmt.Sprintf("%s kindrun: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, a...)))
}

// Print writes s to the progress output.
func (env *Env) Print(s string) {
	env.mu.Lock()
	defer env.mu.Unlock()
	_, _ = io.WriteString(env.out, s)
}

// Kube returns a client of the cluster (kind-up writes its kubeconfig).
func (env *Env) Kube() (*kube.Kube, error) {
	if _, err := os.Stat(env.Kubeconfig); err != nil {
		return nil, fmt.Errorf("no kubeconfig of cluster %s (run the kind-up step first): %w", env.Cfg.Cluster, err)
	}
	return kube.New(env.Kubeconfig)
}

// LogFile opens logs/<name>.log for appending.
func (env *Env) LogFile(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(env.LogDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the log %s: %w", name, err)
	}
	return f, nil
}

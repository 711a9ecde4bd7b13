package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/images"
	"github.com/poolparity/poolparity/hack/kindrun/steps"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    func(Config) bool
		wantErr string
	}{
		{"defaults run every step offline", nil, nil, func(c Config) bool {
			return c.Mode == "offline" && strings.Join(c.Steps, ",") == strings.Join(testRegistry(t).Default(), ",") && c.LoadDuration == 130*time.Second
		}, ""},
		{"steps come from -steps, separated by commas or spaces", []string{"-steps", "kind-up, helm-install"}, nil, func(c Config) bool {
			return strings.Join(c.Steps, ",") == "kind-up,helm-install"
		}, ""},
		{"a variable sets the default and a flag wins", []string{"-mode", "offline"}, map[string]string{"KIND_MODE": "online", "KIND_LOAD_RPS": "20"}, func(c Config) bool {
			return c.Mode == "offline" && c.LoadRPS == 20
		}, ""},
		{"an unknown step is refused", []string{"-steps", "kind-up,deploy"}, nil, nil, `unknown step "deploy"`},
		{"an unknown mode is refused", []string{"-mode", "cloud"}, nil, nil, "mode must be offline or online"},
		{"a load too short to judge is refused", []string{"-load-duration", "5s"}, nil, nil, "load duration must be in"},
		{"a bad variable is refused", nil, map[string]string{"KIND_LOAD_DURATION": "soon"}, nil, "KIND_LOAD_DURATION"},
		{"KIND_CPU_REQUEST and KIND_HPA_CPU_TARGET set the HPAs' inputs", nil, map[string]string{"KIND_CPU_REQUEST": "200m", "KIND_HPA_CPU_TARGET": "90"}, func(c Config) bool {
			return c.CPURequest == "200m" && c.HPACPUTarget == 90
		}, ""},
		{"a CPU target above the chart's 100% is refused", []string{"-hpa-cpu-target", "1000"}, nil, nil, "the HPA CPU target must be a percentage in [1, 100]"},
		{"a CPU request that is no quantity is refused", []string{"-cpu-request", "lots"}, nil, nil, "the CPU request must be a positive quantity"},
		{"positional arguments are refused", []string{"kind-up"}, nil, nil, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig(testRegistry(t), tt.args, func(k string) string { return tt.env[k] }, &strings.Builder{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want(c) {
				t.Errorf("config %+v", c)
			}
		})
	}
}

// TestAllIsWhatMakeTestKindRuns holds `all` (make test-kind, CI) to its steps and their order.
func TestAllIsWhatMakeTestKindRuns(t *testing.T) {
	want := []string{"env", "kind-images", "kind-up", "kind-load", "kind-deps", "helm-install", "scenarios", "flagger", "argo", "routing", "example", "chaos", "canary", "hpa-groups", "kind-down"}
	r := testRegistry(t)
	if got := r.Default(); !slices.Equal(got, want) {
		t.Errorf("all runs %v, want %v", got, want)
	}
	if names := r.Names(); !slices.Equal(names[:len(want)], want) {
		t.Errorf("the steps %v: want all's first, in its order", names)
	}
}

// TestMakefileStepTargetsAreTheSteps holds the Makefile's cluster targets to the registry: every
// step with a Target has that target, with the step's doc line as its help, running the step
// (alone when the target is named after it); every target that runs one step is that step's
// Target; and every step a target names exists.
func TestMakefileStepTargetsAreTheSteps(t *testing.T) {
	reg := testRegistry(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		doc   string
		steps []string
	}
	targets := map[string]*target{}
	var cur *target
	curName := ""
	for line := range strings.Lines(string(data)) {
		line = strings.TrimRight(line, "\n")
		if name, rest, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "\t") && !strings.ContainsAny(name, " =$") && name != ".PHONY" {
			_, doc, _ := strings.Cut(rest, "## ")
			cur, curName = &target{doc: doc}, name
			targets[name] = cur
			continue
		}
		if cur == nil || !strings.HasPrefix(line, "\t") || !strings.Contains(line, "$(KINDRUN)") {
			continue
		}
		f := strings.Fields(line)
		i := slices.Index(f, "-steps")
		if i < 0 || i+1 >= len(f) {
			t.Errorf("make %s runs $(KINDRUN) without -steps: %s", curName, line)
			continue
		}
		cur.steps = strings.Split(f[i+1], ",")
		if _, err := reg.Steps(cur.steps); err != nil {
			t.Errorf("make %s: %v", curName, err)
		}
	}
	for _, d := range reg.Defs() {
		if d.Target == "" {
			continue
		}
		tg, ok := targets[d.Target]
		switch {
		case !ok:
			t.Errorf("step %s: the Makefile has no target %s", d.Name(), d.Target)
		case tg.doc != d.Doc:
			t.Errorf("make %s's help is %q, want the step's doc line %q", d.Target, tg.doc, d.Doc)
		case !slices.Contains(tg.steps, d.Name()):
			t.Errorf("make %s runs %v, not the step %s", d.Target, tg.steps, d.Name())
		case d.Target == d.Name() && len(tg.steps) != 1:
			t.Errorf("make %s runs %v: a target named after a step runs it alone", d.Target, tg.steps)
		}
	}
	single := 0
	for name, tg := range targets {
		if len(tg.steps) != 1 || tg.steps[0] == "all" {
			continue
		}
		single++
		if d, _ := reg.Lookup(tg.steps[0]); d.Target != name {
			t.Errorf("make %s runs the step %s alone: register it with Target %q", name, tg.steps[0], name)
		}
	}
	if single == 0 {
		t.Error("no Makefile target runs a single step: the Makefile was not parsed")
	}
}

// testRegistry is the harness's registry of steps.
func testRegistry(t *testing.T) *harness.Registry {
	t.Helper()
	r, err := steps.Registry()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestKindModuleIsThePinnedKind: the kind Go package the harness creates clusters with is the
// kind whose node-image recipe it builds from, the version hack/install-tools.sh pins.
func TestKindModuleIsThePinnedKind(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Skip("no build information in the test binary")
	}
	for _, d := range bi.Deps {
		if d.Path == "sigs.k8s.io/kind" {
			if d.Version != images.KindVersion {
				t.Errorf("go.mod requires sigs.k8s.io/kind %s, the harness builds kind %s's node recipe", d.Version, images.KindVersion)
			}
			return
		}
	}
	t.Error("sigs.k8s.io/kind is not a dependency of the harness")
}

// TestDocsListTheSteps holds docs/kind.md's step table to the registry.
func TestDocsListTheSteps(t *testing.T) {
	const begin, end = "<!-- steps: hack/kindrun's registry (TestDocsListTheSteps) -->\n", "<!-- /steps -->"
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "kind.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), begin)
	got, _, ok2 := strings.Cut(rest, end)
	want := stepsTable(testRegistry(t))
	if !ok || !ok2 || got != want {
		t.Errorf("docs/kind.md's step table is not the registry's; between the markers put:\n%s%s%s", begin, want, end)
	}
}

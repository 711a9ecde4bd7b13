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
	want := []string{"env", "kind-images", "kind-up", "kind-load", "kind-deps", "helm-install", "scenarios", "routing", "example", "chaos", "canary", "hpa-groups", "kind-down"}
	r := testRegistry(t)
	if got := r.Default(); !slices.Equal(got, want) {
		t.Errorf("all runs %v, want %v", got, want)
	}
	if names := r.Names(); !slices.Equal(names[:len(want)], want) {
		t.Errorf("the steps %v: want all's first, in its order", names)
	}
}

// TestMakefileStepTargetsAreTheSteps holds the Makefile's cluster targets and the harness's steps
// to one set of names: a target that runs one step is named after it, every step has such a
// target or is listed here as run only inside test-kind and kind-demo, and every step a target
// names exists.
func TestMakefileStepTargetsAreTheSteps(t *testing.T) {
	root, err := repoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	// hpa-groups' target (make hpa-groups) runs it on a cluster of its own, with -hpa-groups full.
	withoutTarget := map[string]bool{"env": true, "scenarios": true, "canary": true, "hpa-groups": true}
	targets := map[string]bool{} // targets that run exactly one step
	target := ""
	for line := range strings.Lines(string(data)) {
		line = strings.TrimRight(line, "\n")
		if name, _, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "\t") && !strings.ContainsAny(name, " =$") {
			target = name
			continue
		}
		if !strings.HasPrefix(line, "\t") || !strings.Contains(line, "$(KINDRUN)") {
			continue
		}
		f := strings.Fields(line)
		i := slices.Index(f, "-steps")
		if i < 0 || i+1 >= len(f) {
			t.Errorf("make %s runs $(KINDRUN) without -steps: %s", target, line)
			continue
		}
		steps := strings.Split(f[i+1], ",")
		for _, s := range steps {
			if _, ok := testRegistry(t).Lookup(s); !ok && s != "all" {
				t.Errorf("make %s runs the step %q, which hack/kindrun does not have", target, s)
			}
		}
		if len(steps) == 1 && steps[0] != "all" {
			if steps[0] != target {
				t.Errorf("make %s runs the step %q: name the target after the step", target, steps[0])
			}
			targets[target] = true
		}
	}
	for _, s := range testRegistry(t).Names() {
		if !targets[s] && !withoutTarget[s] {
			t.Errorf("step %q has no Makefile target of its name", s)
		}
		if targets[s] && withoutTarget[s] {
			t.Errorf("step %q has a Makefile target: drop it from withoutTarget", s)
		}
	}
	if len(targets) == 0 {
		t.Error("no Makefile target runs a single step: the Makefile was not parsed")
	}
}

func TestParseConfigHPAGroups(t *testing.T) {
	getenv := func(env map[string]string) func(string) string { return func(k string) string { return env[k] } }
	c, err := parseConfig(testRegistry(t), nil, getenv(nil), &strings.Builder{})
	if err != nil || c.HPAGroups != "short" {
		t.Errorf("default hpa-groups = %q, %v; want short (CI)", c.HPAGroups, err)
	}
	c, err = parseConfig(testRegistry(t), nil, getenv(map[string]string{"KIND_HPA_GROUPS": "full"}), &strings.Builder{})
	if err != nil || c.HPAGroups != "full" {
		t.Errorf("KIND_HPA_GROUPS=full gives %q, %v", c.HPAGroups, err)
	}
	if _, err := parseConfig(testRegistry(t), []string{"-hpa-groups", "long"}, getenv(nil), &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "hpa-groups must be short or full") {
		t.Errorf("-hpa-groups long: err = %v, want it refused", err)
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

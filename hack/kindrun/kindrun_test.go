package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
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
			return c.Mode == "offline" && strings.Join(c.Steps, ",") == strings.Join(defaultSteps(), ",") && c.LoadDuration == 130*time.Second
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
			c, err := parseConfig(tt.args, func(k string) string { return tt.env[k] }, &strings.Builder{})
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

func TestOfflineKindConfigKeepsTheControlPlaneOnly(t *testing.T) {
	root, err := repoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(Config{Mode: "offline", Cluster: "x", Root: root}, &strings.Builder{})
	b, note, err := env.kindConfig()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Name       string
		Nodes      []map[string]any
		Networking map[string]any
		Patches    []string `json:"kubeadmConfigPatches"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Name != "x" || len(doc.Nodes) != 1 || doc.Nodes[0]["role"] != "control-plane" || doc.Nodes[0]["extraPortMappings"] == nil {
		t.Errorf("nodes %v (name %q), want the control plane of kind-config.yaml with its port mappings", doc.Nodes, doc.Name)
	}
	if doc.Networking["disableDefaultCNI"] != true {
		t.Errorf("networking %v: the default CNI (kindnetd) cannot run offline", doc.Networking)
	}
	all := strings.Join(doc.Patches, "\n")
	for _, want := range []string{"imageRepository: " + registry, "imageTag: " + etcdTag, "syncFrequency: 10s"} {
		if !strings.Contains(all, want) {
			t.Errorf("kubeadm patches lack %q:\n%s", want, all)
		}
	}
	if v1, _ := cgroupV1(); v1 != strings.Contains(all, "failCgroupV1: false") || v1 != strings.Contains(note, "cgroup v1") {
		t.Errorf("failCgroupV1 must be set exactly on a cgroup v1 host (v1=%v):\n%s", v1, all)
	}
	env.cfg.Mode = "online"
	b, _, err = env.kindConfig()
	src, _ := os.ReadFile(filepath.Join(root, "kind-config.yaml"))
	if err != nil || string(b) != string(src) {
		t.Errorf("online must use kind-config.yaml as it is (err %v)", err)
	}
}

func TestOverrideImagesFailsOnAMissingImage(t *testing.T) {
	m := []byte("image: quay.io/a:v1\nargs: [--reloader=quay.io/b:v1]\n")
	out, err := overrideImages(m, map[string]string{"quay.io/a:v1": "local/a:v1", "quay.io/b:v1": "local/b:v1"})
	if err != nil || string(out) != "image: local/a:v1\nargs: [--reloader=local/b:v1]\n" {
		t.Errorf("overrideImages = %q, %v", out, err)
	}
	if _, err := overrideImages(m, map[string]string{"quay.io/c:v1": "local/c:v1"}); err == nil {
		t.Error("an image the manifest lacks must be an error, not a half-local install")
	}
}

func TestCheckDiskSaysWhatIsMissing(t *testing.T) {
	err := checkDisk(t.TempDir(), 1<<62)
	var pe *prereqError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "GiB free") {
		t.Errorf("checkDisk = %v, want a prerequisite error naming the free space", err)
	}
	if err := checkDisk(t.TempDir(), 1); err != nil {
		t.Errorf("checkDisk with room = %v", err)
	}
}

func TestStepsHaveOneNameEach(t *testing.T) {
	names := stepNames()
	for i, n := range names {
		if slices.Contains(names[:i], n) {
			t.Errorf("two steps are called %q", n)
		}
		if s, ok := stepByName(n); !ok || s.Name() != n {
			t.Errorf("stepByName(%q) = %v, %v", n, s, ok)
		}
	}
	for _, n := range defaultSteps() {
		if _, ok := stepByName(n); !ok {
			t.Errorf("step %q of all does not exist", n)
		}
	}
	if !slices.Equal(names[:len(defaultSteps())], defaultSteps()) {
		t.Errorf("stepNames %v: want all's steps first, in its order %v", names, defaultSteps())
	}
}

func TestCheckSplit(t *testing.T) {
	tests := []struct {
		name string
		pts  []SplitPoint
		ok   bool
	}{
		{"steady samples close to the ready share pass", []SplitPoint{{ReqShare: 0.34, ReadyShare: 1.0 / 3, Steady: true}, {ReqShare: 0.9, ReadyShare: 0.5}}, true},
		{"a steady sample far from the ready share fails", []SplitPoint{{ReqShare: 0.5, ReadyShare: 0.25, Steady: true}}, false},
		{"no steady sample fails", []SplitPoint{{ReqShare: 0.5, ReadyShare: 0.5}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkSplit(tt.pts); (err == nil) != tt.ok {
				t.Errorf("checkSplit = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// TestPinnedVersionsMatchInstallTools fails when a version the cluster runs differs from the one
// hack/install-tools.sh builds (which reads the tool modules' go.mod files).
func TestPinnedVersionsMatchInstallTools(t *testing.T) {
	root, err := repoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", filepath.Join(root, "hack", "install-tools.sh"), "versions").CombinedOutput()
	if err != nil {
		t.Fatalf("hack/install-tools.sh versions: %v\n%s", err, out)
	}
	pinned := map[string]string{}
	for line := range strings.Lines(string(out)) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			t.Fatalf("hack/install-tools.sh versions printed %q, want NAME=version", line)
		}
		pinned[k] = v
	}
	tests := []struct{ variable, kindrun string }{
		{"K8S_VERSION", k8sVersion},
		{"KIND_VERSION", kindVersion},
		{"ETCD_VERSION", etcdTag},
		{"PROMETHEUS_VERSION", strings.TrimPrefix(prometheusVersion, "v")},
		{"PROMETHEUS_OPERATOR_VERSION", operatorVersion},
		{"METRICS_SERVER_VERSION", metricsServerVersion},
		{"COREDNS_VERSION", corednsVersion},
		{"LOCAL_PATH_PROVISIONER_VERSION", localPathVersion},
		{"TRAEFIK_VERSION", traefikVersion},
		{"GATEWAY_API_VERSION", gatewayAPIVersion},
		{"KEDA_VERSION", kedaVersion},
	}
	for _, tt := range tests {
		t.Run(tt.variable, func(t *testing.T) {
			if got, ok := pinned[tt.variable]; !ok || got != tt.kindrun {
				t.Errorf("hack/install-tools.sh pins %s=%q, hack/kindrun runs %q", tt.variable, got, tt.kindrun)
			}
		})
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
			if _, ok := stepByName(s); !ok && s != "all" {
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
	for _, s := range stepNames() {
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

// TestKindModuleIsThePinnedKind: the kind Go package the harness creates clusters with is the
// kind whose node-image recipe it builds from, the version hack/install-tools.sh pins.
func TestKindModuleIsThePinnedKind(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Skip("no build information in the test binary")
	}
	for _, d := range bi.Deps {
		if d.Path == "sigs.k8s.io/kind" {
			if d.Version != kindVersion {
				t.Errorf("go.mod requires sigs.k8s.io/kind %s, the harness builds kind %s's node recipe", d.Version, kindVersion)
			}
			return
		}
	}
	t.Error("sigs.k8s.io/kind is not a dependency of the harness")
}

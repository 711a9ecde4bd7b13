package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/images"
	"sigs.k8s.io/yaml"
)

func TestThawFrozen(t *testing.T) {
	root := t.TempDir()
	states := map[string]string{
		"a/freezer.state":       "FROZEN\n",
		"a/b/c/freezer.state":   "FREEZING\n",
		"d/freezer.state":       "THAWED\n",
		"d/e/freezer.procs.txt": "FROZEN\n", // not a freezer.state
	}
	for rel, st := range states {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(st), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	thawed, err := thawFrozen(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "a"), filepath.Join(root, "a/b/c")}
	if slices.Sort(thawed); !slices.Equal(thawed, want) {
		t.Errorf("thawed %v, want %v", thawed, want)
	}
	for rel, before := range states {
		b, _ := os.ReadFile(filepath.Join(root, rel))
		wantState := before
		if strings.HasSuffix(rel, "freezer.state") && before != "THAWED\n" {
			wantState = "THAWED"
		}
		if string(b) != wantState {
			t.Errorf("%s reads %q, want %q", rel, b, wantState)
		}
	}
	if thawed, err := thawFrozen(filepath.Join(root, "missing")); err != nil || len(thawed) != 0 {
		t.Errorf("a missing root: thawed %v, %v; want nothing and no error", thawed, err)
	}
}

func TestOfflineKindConfigKeepsTheControlPlaneOnly(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	env := harness.NewEnv(harness.Config{Mode: "offline", Cluster: "x", Root: root}, &strings.Builder{})
	b, note, err := kindConfig(env)
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
	for _, want := range []string{"imageRepository: " + images.Registry, "imageTag: " + images.EtcdTag, "syncFrequency: 10s"} {
		if !strings.Contains(all, want) {
			t.Errorf("kubeadm patches lack %q:\n%s", want, all)
		}
	}
	if v1, _ := cgroupV1(); v1 != strings.Contains(all, "failCgroupV1: false") || v1 != strings.Contains(note, "cgroup v1") {
		t.Errorf("failCgroupV1 must be set exactly on a cgroup v1 host (v1=%v):\n%s", v1, all)
	}
	env.Cfg.Mode = "online"
	b, _, err = kindConfig(env)
	src, _ := os.ReadFile(filepath.Join(root, "kind-config.yaml"))
	if err != nil || string(b) != string(src) {
		t.Errorf("online must use kind-config.yaml as it is (err %v)", err)
	}
}

func TestCheckDiskSaysWhatIsMissing(t *testing.T) {
	err := checkDisk(t.TempDir(), 1<<62)
	var pe *harness.PrereqError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "GiB free") {
		t.Errorf("checkDisk = %v, want a prerequisite error naming the free space", err)
	}
	if err := checkDisk(t.TempDir(), 1); err != nil {
		t.Errorf("checkDisk with room = %v", err)
	}
}

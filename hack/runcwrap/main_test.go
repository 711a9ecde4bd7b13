package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestRewriteDropsTheCapabilityAndRaisesOOMScoreAdj(t *testing.T) {
	dir := t.TempDir()
	spec := `{"ociVersion":"1.0.2","process":{"oomScoreAdj":-998,"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_RESOURCE"],"effective":["CAP_SYS_RESOURCE"],"permitted":["CAP_CHOWN"]},"args":["/pause"]},"root":{"path":"rootfs"}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	proc := filepath.Join(dir, "process.json")
	if err := os.WriteFile(proc, []byte(`{"capabilities":{"bounding":["CAP_SYS_RESOURCE","CAP_KILL"]},"args":["sh"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		file string
		full bool
	}{
		{"create with --bundle after global flags", []string{"--root", "/run/runc", "--log", "x", "create", "--bundle", dir, "id"}, filepath.Join(dir, "config.json"), true},
		{"exec with --process", []string{"exec", "--process", proc, "id"}, proc, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := rewrite(tt.args); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(tt.file)
			var doc struct {
				Process struct {
					OOMScoreAdj  *int `json:"oomScoreAdj"`
					Capabilities map[string][]string
					Args         []string
				}
				Root         map[string]any
				Capabilities map[string][]string
				Args         []string
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			caps, args := doc.Capabilities, doc.Args
			if tt.full {
				caps, args = doc.Process.Capabilities, doc.Process.Args
				if doc.Process.OOMScoreAdj == nil || *doc.Process.OOMScoreAdj != 0 || doc.Root["path"] != "rootfs" {
					t.Errorf("oomScoreAdj %v, root %v: want 0 and the rest kept", doc.Process.OOMScoreAdj, doc.Root)
				}
			}
			for set, list := range caps {
				if slices.Contains(list, dropCap) {
					t.Errorf("%s still holds %s: %v", set, dropCap, list)
				}
			}
			if len(args) == 0 {
				t.Error("fields it does not edit must be kept")
			}
		})
	}
}

func TestRewriteLeavesOtherCommandsAlone(t *testing.T) {
	if err := rewrite([]string{"state", "id"}); err != nil {
		t.Errorf("rewrite(state) = %v", err)
	}
	if err := rewrite([]string{"create", "--bundle", t.TempDir(), "id"}); err == nil {
		t.Error("a bundle without config.json must be an error, not a silent pass")
	}
}

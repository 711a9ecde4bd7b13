package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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

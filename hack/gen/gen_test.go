package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/testtool"
)

// repo is the repository root, two directories above this package.
const repo = "../.."

// TestMissingToolFailsWithOneLine runs the generator and `make generate` with an empty tool
// directory: each must stop before writing anything, with one line naming the tool.
func TestMissingToolFailsWithOneLine(t *testing.T) {
	// A root that looks like the repository but is not it: nothing real can be overwritten.
	fake := t.TempDir()
	if err := os.MkdirAll(filepath.Join(fake, "deploy", "helm", "poolparity"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fake, "go.mod"), []byte("module example.com/fake\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	partial := t.TempDir() // controller-gen present, helm missing
	if err := os.WriteFile(filepath.Join(partial, "controller-gen"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"the default ./bin is empty", []string{"-root", fake}, "bin/controller-gen not found: run make tools"},
		{"a -bin without the tools", []string{"-root", fake, "-bin", empty}, filepath.Join(empty, "controller-gen") + " not found: run make tools"},
		{"a -bin with only some tools", []string{"-root", fake, "-bin", partial}, filepath.Join(partial, "helm") + " not found: run make tools"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			err := run(context.Background(), tt.args, &out, &out)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if out.Len() > 0 {
				t.Errorf("the generator ran something before failing:\n%s", out.String())
			}
		})
	}

	t.Run("make generate", func(t *testing.T) {
		makeBin, err := exec.LookPath("make")
		if err != nil {
			testtool.SkipOrFail(t, "make not found: %v", err)
		}
		cmd := exec.Command(makeBin, "-s", "-C", repo, "generate", "BIN="+empty)
		for _, kv := range os.Environ() { // not the flags of a make this test runs under
			if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("make generate with an empty BIN succeeded:\n%s", out)
		}
		if !strings.HasPrefix(string(out), "bin/controller-gen not found: run make tools\n") {
			t.Errorf("make generate with an empty BIN said:\n%s\nwant first the one line naming bin/controller-gen", out)
		}
	})
}

// TestCheckCatchesChangedAndUntrackedFiles runs -check on a scratch git repository.
func TestCheckCatchesChangedAndUntrackedFiles(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testtool.SkipOrFail(t, "git not found: %v", err)
	}
	tests := []struct {
		name   string
		change func(root string) error
		want   string // in the error; empty: no error
	}{
		{"a clean tree passes", func(string) error { return nil }, ""},
		{"a new untracked golden file fails", func(root string) error {
			return os.WriteFile(filepath.Join(root, "deploy", "testdata", "new.yaml"), []byte("x: 1\n"), 0o644)
		}, "?? deploy/testdata/new.yaml"},
		{"a changed generated file fails", func(root string) error {
			return os.WriteFile(filepath.Join(root, "deploy", "testdata", "default.yaml"), []byte("x: 2\n"), 0o644)
		}, " M deploy/testdata/default.yaml"},
		{"a new file under app/api fails", func(root string) error {
			return os.WriteFile(filepath.Join(root, "app", "api", "zz_new.go"), []byte("package api\n"), 0o644)
		}, "?? app/api/zz_new.go"},
		{"a threshold that differs from the catalog fails naming the file", func(root string) error {
			p := filepath.Join(root, valuesPath)
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(p, bytes.Replace(data, []byte("threshold: 1.15"), []byte("threshold: 1.5"), 1), 0o644)
		}, "stale against internal/catalog: " + valuesPath + ": run make generate and commit"},
		{"a chart README that differs from its template fails naming it", func(root string) error {
			p := filepath.Join(root, readmeTemplatePath)
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(p, append(data, "\nOne more line.\n"...), 0o644)
		}, readmePath + ": run make generate and commit"},
		{"a change outside the generated paths passes", func(root string) error {
			return os.WriteFile(filepath.Join(root, "README.md"), []byte("changed\n"), 0o644)
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := scratchRepo(t)
			if err := tt.change(root); err != nil {
				t.Fatal(err)
			}
			err := run(context.Background(), []string{"-root", root, "-check"}, &strings.Builder{}, &strings.Builder{})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("check failed: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want one naming %q", err, tt.want)
			}
		})
	}
}

// scratchRepo returns a git repository with one commit holding a go.mod, the chart directory, a
// README, a golden file, app/api, the repository's files written from the catalog, and the chart's
// README with what it is rendered from.
func scratchRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"go.mod":                       "module example.com/scratch\n",
		"README.md":                    "scratch\n",
		"deploy/testdata/default.yaml": "x: 1\n",
		"app/api/types.go":             "package api\n",
	}
	for _, p := range []string{chartYAMLPath, readmeTemplatePath} {
		data, err := os.ReadFile(filepath.Join(repo, p))
		if err != nil {
			t.Fatal(err)
		}
		files[p] = string(data)
	}
	cat, err := catalogFiles(repo, catalog.Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range cat {
		files[f.Path] = string(f.Data)
	}
	readme, err := readmeFrom(repo, cat)
	if err != nil {
		t.Fatal(err)
	}
	files[readme.Path] = string(readme.Data)
	for p, data := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "."},
		{"-c", "user.name=gen test", "-c", "user.email=gen@example.com", "commit", "-q", "-m", "scratch"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", root}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return root
}

// TestMakefileRunsGenerationAlone checks the Makefile keeps generation from racing under make -j:
// targets run one at a time, and generate-check generates before it checks.
func TestMakefileRunsGenerationAlone(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repo, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	has := func(pred func(string) bool) bool {
		for _, l := range lines {
			if pred(l) {
				return true
			}
		}
		return false
	}
	if !has(func(l string) bool { return strings.TrimSpace(l) == ".NOTPARALLEL:" }) {
		t.Error("the Makefile has no .NOTPARALLEL: line: make -j would run generate beside the targets that read its files")
	}
	if !has(func(l string) bool {
		target, prereqs, ok := strings.Cut(l, ":")
		return ok && target == "generate-check" && strings.Contains(" "+strings.SplitN(prereqs, "##", 2)[0]+" ", " generate ")
	}) {
		t.Error("generate-check does not depend on generate")
	}
}

// Package deploytest renders the repository's deployment manifests for tests, through package
// deploy/render (`helm template` of the chart with its value sets, `kustomize build` of the
// overlays), using the real tools found on PATH or in the repository's ./bin, and checks the
// contracts the manifests keep.
//
// When a tool is missing, tests are skipped with a clear message, except when CI=true, where they fail.
package deploytest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poolparity/poolparity/deploy/render"
	"github.com/poolparity/poolparity/internal/testtool"
)

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

// RepoRoot returns the repository root: the nearest parent directory holding a go.mod without
// a parent go.mod module of the same tree (the directory of `go env GOMOD`).
func RepoRoot() (string, error) {
	rootOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			rootErr = fmt.Errorf("running go env GOMOD: %w", err)
			return
		}
		gomod := strings.TrimSpace(string(out))
		if gomod == "" || gomod == os.DevNull {
			rootErr = errors.New("not inside a Go module")
			return
		}
		rootDir = filepath.Dir(gomod)
	})
	return rootDir, rootErr
}

// ChartDir returns the chart's directory.
func ChartDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(Root(t), render.ChartPath)
}

// Tool returns the path of a command-line tool: PATH first (the Makefile puts ./bin first),
// then the repository's ./bin. It skips (or fails under CI=true) when the tool is missing.
func Tool(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if root, err := RepoRoot(); err == nil {
		p := filepath.Join(root, "bin", name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	testtool.SkipOrFail(t, "%s not found on PATH or in ./bin: run `make tools` (hack/install-tools.sh)", name)
	return ""
}

// Tools returns the helm and kustomize binaries the renderings run (see Tool).
func Tools(t testing.TB) render.Tools {
	t.Helper()
	return render.Tools{Helm: Tool(t, "helm"), Kustomize: Tool(t, "kustomize")}
}

// Root returns the repository root, failing the test when there is none.
func Root(t testing.TB) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// HelmTemplate renders the chart with a value set (test hooks included) and returns the manifests.
func HelmTemplate(t testing.TB, vs render.ValueSet, extra ...string) []byte {
	t.Helper()
	helm := Tool(t, "helm")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := render.HelmTemplate(ctx, Root(t), helm, vs, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// KustomizeBuild builds deploy/kustomize/<path> and returns the manifests.
func KustomizeBuild(t testing.TB, path string) []byte {
	t.Helper()
	kustomize := Tool(t, "kustomize")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := render.KustomizeBuild(ctx, Root(t), kustomize, path)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

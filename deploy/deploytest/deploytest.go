// Package deploytest renders the repository's deployment manifests for tests: `helm template`
// of the chart with named value sets and `kustomize build` of the overlays, using the real tools
// found on PATH or in the repository's ./bin.
//
// When a tool is missing, tests are skipped with a clear message, except when CI=true, where they fail.
package deploytest

import (
	"bytes"
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

	"github.com/poolparity/poolparity/internal/testtool"
)

// KubeVersion is the Kubernetes version the chart is rendered and linted for; it matches the
// kube-apiserver the envtest harness runs.
const KubeVersion = "1.37.0"

// Release and Namespace are the release name and namespace every golden rendering uses.
const (
	Release   = "poolparity"
	Namespace = "poolparity"
)

// ValueSet is a named list of values files, relative to the chart directory.
type ValueSet struct {
	Name  string
	Files []string
}

// ValueSets are the value sets the chart is linted, rendered and applied with.
var ValueSets = []ValueSet{
	{Name: "default"},
	{Name: "kind", Files: []string{"values-kind.yaml"}},
	{Name: "staging", Files: []string{"values-staging.yaml"}},
	{Name: "everything", Files: []string{"ci/everything-values.yaml"}},
	{Name: "no-hpa", Files: []string{"ci/no-hpa-values.yaml"}},
}

// Overlays are the kustomize overlays under deploy/kustomize/overlays.
var Overlays = []string{"kind", "staging"}

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
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "deploy", "helm", "poolparity")
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

// Run runs a command and returns its stdout; on failure the error carries stderr.
func Run(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// HelmTemplateArgs returns the `helm template` arguments for a value set plus extra arguments.
func HelmTemplateArgs(chartDir string, vs ValueSet, extra ...string) []string {
	args := []string{"template", Release, chartDir, "--namespace", Namespace, "--kube-version", KubeVersion}
	for _, f := range vs.Files {
		args = append(args, "-f", filepath.Join(chartDir, f))
	}
	return append(args, extra...)
}

// HelmTemplate renders the chart with a value set (test hooks included) and returns the manifests.
func HelmTemplate(t testing.TB, vs ValueSet, extra ...string) []byte {
	t.Helper()
	helm := Tool(t, "helm")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := Run(ctx, "", helm, HelmTemplateArgs(ChartDir(t), vs, extra...)...)
	if err != nil {
		t.Fatalf("rendering value set %q: %v", vs.Name, err)
	}
	return out
}

// KustomizeBuild builds deploy/kustomize/<path> and returns the manifests.
func KustomizeBuild(t testing.TB, path string) []byte {
	t.Helper()
	kustomize := Tool(t, "kustomize")
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := Run(ctx, "", kustomize, "build", filepath.Join(root, "deploy", "kustomize", path))
	if err != nil {
		t.Fatalf("building %s: %v", path, err)
	}
	return out
}

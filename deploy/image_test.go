package deploy_test

import (
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/poolparity/poolparity/deploy/deploytest"
	"github.com/poolparity/poolparity/internal/testtool"
)

// TestBinariesBuildStatic builds the image's binaries (the service and the PoolCanary
// controller) the way the Dockerfile's builder stage does (CGO_ENABLED=0, linux) and checks each
// has no ELF interpreter and no shared libraries, so it runs on distroless static. `docker build`
// itself needs an engine (hack/image.sh).
func TestBinariesBuildStatic(t *testing.T) {
	root, err := deploytest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"poolparity", "poolparity-controller", "poolparity-load", "poolparity-judge", "poolparity-argo-plugin"} {
		t.Run(name, func(t *testing.T) {
			pkg := "./app/cmd/" + name
			if _, err := os.Stat(filepath.Join(root, "app", "cmd", name)); err != nil {
				testtool.SkipOrFail(t, "%s missing: %v", pkg, err)
			}
			out := filepath.Join(t.TempDir(), name)
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("CGO_ENABLED=0 go build %s: %v\n%s", pkg, err, b)
			}
			f, err := elf.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("%s requests a program interpreter: it is not static", name)
				}
			}
			if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
				t.Errorf("%s needs shared libraries %v", name, libs)
			}
		})
	}
}

// TestDockerfileGoVersionMatchesGoMod keeps the builder image's Go release in step with go.mod.
func TestDockerfileGoVersionMatchesGoMod(t *testing.T) {
	root, err := deploytest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	df, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	gm, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	dv := regexp.MustCompile(`(?m)^ARG GO_VERSION=(\d+\.\d+)`).FindSubmatch(df)
	mv := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gm)
	if dv == nil || mv == nil {
		t.Fatalf("cannot find GO_VERSION in Dockerfile (%q) or the go directive in go.mod (%q)", dv, mv)
	}
	if string(dv[1]) != string(mv[1]) {
		t.Errorf("Dockerfile builds with Go %s, go.mod says go %s", dv[1], mv[1])
	}
	for _, want := range []string{"CGO_ENABLED=0", "distroless/static", "USER 65532:65532", "./app/cmd/poolparity ", "./app/cmd/poolparity-controller", "/poolparity-controller /poolparity-controller", "/poolparity-judge /poolparity-judge", "/poolparity-argo-plugin /poolparity-argo-plugin"} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).Match(df) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}

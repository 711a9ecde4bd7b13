package instrument_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestModuleDependencies builds a throwaway user module that imports this
// module, pointed at the checked-out copy with a replace directive, and
// checks that its module graph (`go list -m all`) holds no Kubernetes
// module: importing the pool library must not pull in the app's
// dependencies. It uses this module's go.sum, so it needs no network when
// the module cache already holds this module's dependencies.
func TestModuleDependencies(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list a user module's dependencies: %v", err)
	}
	self, err := filepath.Abs(".") // the test runs in the module root
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(self, "go.sum"))
	if err != nil {
		t.Fatalf("reading this module's go.sum: %v", err)
	}
	tests := []struct {
		name    string
		imports []string
	}{
		{"instrument only", []string{"github.com/poolparity/poolparity/instrument"}},
		{"instrument and its exporters", []string{
			"github.com/poolparity/poolparity/instrument",
			"github.com/poolparity/poolparity/instrument/promexport",
			"github.com/poolparity/poolparity/instrument/otelexport",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			goMod := "module example.com/user\n\ngo 1.26.0\n\n" +
				"require github.com/poolparity/poolparity/instrument v0.0.0-00010101000000-000000000000\n\n" +
				"replace github.com/poolparity/poolparity/instrument => " + self + "\n"
			var src strings.Builder
			src.WriteString("package main\n\nimport (\n")
			for _, imp := range tt.imports {
				src.WriteString("\t_ \"" + imp + "\"\n")
			}
			src.WriteString(")\n\nfunc main() {}\n")
			for name, data := range map[string][]byte{"go.mod": []byte(goMod), "go.sum": sum, "main.go": []byte(src.String())} {
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			run := func(args ...string) string {
				cmd := exec.Command(goBin, args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return string(out)
			}
			run("mod", "tidy")
			modules := strings.Fields(run("list", "-m", "-f", "{{.Path}}", "all"))
			if len(modules) < 2 {
				t.Fatalf("go list -m all listed %v, want the user module and its dependencies", modules)
			}
			for _, m := range modules {
				if strings.HasPrefix(m, "k8s.io/") || strings.HasPrefix(m, "sigs.k8s.io/") ||
					m == "github.com/poolparity/poolparity" || strings.HasPrefix(m, "github.com/prometheus/prometheus") {
					t.Errorf("importing %v pulls in %s", tt.imports, m)
				}
			}
			t.Logf("%d modules: %s", len(modules), strings.Join(modules, " "))
		})
	}
}

package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/deploy/deploytest"
	"github.com/poolparity/poolparity/internal/docblocks"
)

// adoptRunners are who runs docs/adopt.md's shell blocks: this test, the kind run's example
// step (hack/kindrun/steps/example.go), and the walk-through's test (internal/adoptcheck:
// adopt:setup, adopt:local, adopt:race).
var adoptRunners = []string{"test", "kind:install", "kind:judge", "adopt:setup", "adopt:local", "adopt:race"}

// TestAdoptDocCommands runs every `run: test` block of docs/adopt.md, verbatim, with bash from the
// repository root (the installed CLIs, helm and promtool first on PATH), and checks that every
// other block names a runner that exists. A command the guide gives that no longer works fails
// here.
func TestAdoptDocCommands(t *testing.T) {
	root := deploytest.Root(t)
	helm := deploytest.Tool(t, "helm")
	promtool := deploytest.Tool(t, "promtool")
	blocks, err := docblocks.ReadFile(filepath.Join(root, "docs", "adopt.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range adoptRunners {
		if len(docblocks.Of(blocks, r)) == 0 {
			t.Errorf("docs/adopt.md has no block run by %s", r)
		}
	}
	// The CLIs as section 1 installs them: go install from the clone into a directory of their own.
	gobin := t.TempDir()
	install := exec.Command("go", "install", "./app/cmd/poolparity-parity")
	install.Dir, install.Env = root, append(os.Environ(), "GOBIN="+gobin)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install ./app/cmd/poolparity-parity: %v\n%s", err, out)
	}
	path := strings.Join([]string{gobin, filepath.Dir(helm), filepath.Dir(promtool), os.Getenv("PATH")}, string(os.PathListSeparator))
	for _, b := range blocks {
		if !slices.Contains(adoptRunners, b.Runner) {
			t.Errorf("docs/adopt.md:%d: runner %q, want one of %v", b.Line, b.Runner, adoptRunners)
			continue
		}
		if b.Runner != "test" {
			continue
		}
		t.Run("line"+strconv.Itoa(b.Line), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", b.Script)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "PATH="+path, "TMPDIR="+t.TempDir())
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("docs/adopt.md:%d failed: %v\n%s\n%s", b.Line, err, b.Script, out)
			}
		})
	}
}

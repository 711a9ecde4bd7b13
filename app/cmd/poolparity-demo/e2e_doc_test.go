package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/docblocks"
	"github.com/poolparity/poolparity/internal/parity"
)

// TestE2EDemoLocalCommand runs docs/demo.md's `poolparity-parity local`
// command line (the loop of `make demo SERVICE=example`, which
// internal/demo's TestDocumentedLocalCommand holds to the demo's
// configuration) as written, with sh, in a directory holding what its
// relative paths name: bin/imagesvc, bin/poolparity-parity, bin/prometheus
// and examples/imagesvc/requests.txt. Only the duration is shortened and the
// output directory set, by flags appended to it (the last of a flag wins).
// The pooled example against the unpooled one must PASS. It needs
// POOLPARITY_E2E=1 (`make test-e2e`) and ./bin/prometheus, as TestE2E.
func TestE2EDemoLocalCommand(t *testing.T) {
	if os.Getenv("POOLPARITY_E2E") != "1" {
		t.Skip("set POOLPARITY_E2E=1 to run the end-to-end scenarios (make test-e2e)")
	}
	t.Parallel() // beside TestE2E, as TestE2EExampleLocalMisuses
	root := repoRoot(t)
	prom := prometheusBin(t, root)
	blocks, err := docblocks.ReadFile(filepath.Join(root, "docs", "demo.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds := docblocks.Of(blocks, "demo-local")
	if len(cmds) != 1 {
		t.Fatalf("docs/demo.md has %d demo-local blocks, want 1", len(cmds))
	}
	dir := t.TempDir()
	for _, d := range []string{"bin", "examples/imagesvc"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	example := goBuild(t, root, filepath.Join(dir, "bin", "imagesvc"), "./examples/imagesvc")
	goBuild(t, root, filepath.Join(dir, "bin", "poolparity-parity"), "./app/cmd/poolparity-parity")
	if err := os.Symlink(prom, filepath.Join(dir, "bin", "prometheus")); err != nil {
		t.Fatal(err)
	}
	reqs, err := os.ReadFile(filepath.Join(root, "examples", "imagesvc", "requests.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "examples", "imagesvc", "requests.txt"), reqs, 0o644); err != nil {
		t.Fatal(err)
	}
	// Shortened to 40 s, which the count-based gate (the demo's) cannot decide in: the
	// thresholds judge it (a later flag wins).
	script := strings.TrimRight(cmds[0].Script, "\n") + " -duration 40s -gate thresholds -out out\n"
	sh := exec.Command("/bin/sh", "-c", script)
	sh.Dir = dir
	start := time.Now()
	out, err := sh.CombinedOutput()
	t.Logf("docs/demo.md line %d, in %s:\n%s", cmds[0].Line, time.Since(start).Round(time.Second), out)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	noStrays(t, example, dir)
	b, rerr := os.ReadFile(filepath.Join(dir, "out", "report.json"))
	if rerr != nil {
		t.Fatalf("exit %v, no report: %v", err, rerr)
	}
	var r parity.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	if err != nil || r.Verdict != parity.Pass {
		t.Errorf("exit %v, verdict %s (%q), want exit 0 and PASS for a pooled example against an unpooled one", err, r.Verdict, r.Reasons)
	}
	if r.Title != "poolparity local: gray (pooled) vs stable (unpooled)" {
		t.Errorf("title %q, want the local mode's", r.Title)
	}
}

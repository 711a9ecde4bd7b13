package adoptcheck_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poolparity/poolparity/deploy/deploytest"
	"github.com/poolparity/poolparity/internal/adoptcheck"
	"github.com/poolparity/poolparity/internal/diffcheck"
	"github.com/poolparity/poolparity/internal/docblocks"
	"github.com/poolparity/poolparity/internal/parity"
)

// The runners of docs/adopt.md's walk-through blocks: the setup blocks run once, in order, as one
// shell session; the local block once per gray mode.
const (
	runnerSetup = "adopt:setup"
	runnerLocal = "adopt:local"
	runnerRace  = "adopt:race"
)

// TestAdoptWalkThrough runs docs/adopt.md's walk-through verbatim: it installs poolparity-parity
// from this clone, makes csvjson's module in a temporary directory outside this one (instrument
// through a replace, the other modules at pinned versions through the module proxy), builds it,
// writes the requests file, renders and checks the rules, and runs `poolparity-parity local` with
// an unpooled stable against five gray builds, in two waves (three, then two, at once), 90
// seconds of load each at 200 requests a second (about 4 minutes in all). It holds each
// report.json to adoptcheck.Problems (pooled: PASS; never-reset: FAIL through the differential
// check and the response-size row; never-put: FAIL through the sync.Pool hit-ratio row;
// use-after-put and shared-buffer, which only concurrency or poisoned Puts show: FAIL through
// the differential check under load, the count of failed requests or the race run) and the exit
// status to the verdict's; and, in the second wave, the race block: gray built by the run in
// shared-buffer mode, whose race phase must FAIL it.
//
// It needs go, prometheus and promtool (on PATH or in ./bin): outside CI it skips without them, with
// CI=true it fails. -short skips it.
func TestAdoptWalkThrough(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the walk-through builds a module and runs three local checks of about 2 minutes")
	}
	root := deploytest.Root(t)
	prom, promtool := deploytest.Tool(t, "prometheus"), deploytest.Tool(t, "promtool")
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	blocks, err := docblocks.ReadFile(filepath.Join(root, "docs", "adopt.md"))
	if err != nil {
		t.Fatal(err)
	}
	setup, local, race := docblocks.Of(blocks, runnerSetup), docblocks.Of(blocks, runnerLocal), docblocks.Of(blocks, runnerRace)
	if len(setup) == 0 || len(local) != 1 || len(race) != 1 {
		t.Fatalf("docs/adopt.md has %d %s blocks, %d %s and %d %s, want some, one and one", len(setup), runnerSetup, len(local), runnerLocal, len(race), runnerRace)
	}
	var script []string
	for _, b := range setup {
		script = append(script, b.Script)
	}

	work := t.TempDir()
	svc, gobin := filepath.Join(work, "csvjson"), filepath.Join(work, "bin")
	path := strings.Join([]string{gobin, filepath.Dir(prom), filepath.Dir(promtool), filepath.Dir(goBin), os.Getenv("PATH")}, string(os.PathListSeparator))
	env := slices.Concat(os.Environ(), []string{"PATH=" + path, "GOBIN=" + gobin, "SVC_DIR=" + svc, "TMPDIR=" + work})
	start := time.Now()
	if out, err := runBash(t, root, env, 4*time.Minute, strings.Join(script, "\n")); err != nil {
		t.Fatalf("docs/adopt.md's %s blocks failed: %v\n%s", runnerSetup, err, out)
	}
	t.Logf("set up (CLI installed, service built, rules checked) in %s", time.Since(start).Round(time.Second))

	// Beyond adoptcheck.Problems: csvjson answers JSON, which the differential check compares as
	// data, never as bytes.
	cases := []struct {
		mode  string
		check func(t *testing.T, r parity.Report)
	}{
		{adoptcheck.Pooled, func(t *testing.T, r parity.Report) {
			if d := r.Differential; d != nil && slices.ContainsFunc(d.Notes, func(n string) bool { return strings.Contains(n, "compared as bytes") }) {
				t.Errorf("the JSON bodies were compared as bytes: %q", d.Notes)
			}
		}},
		{adoptcheck.NeverReset, func(t *testing.T, r parity.Report) {
			if d := r.Differential; d != nil && (len(d.Paths) == 0 || d.Paths[0].Kind != diffcheck.KindInvalidJSON) {
				t.Errorf("differential check's mismatches %+v, want gray's bodies found invalid JSON first", d.Paths)
			}
		}},
		{adoptcheck.NeverPut, func(*testing.T, parity.Report) {}},
		{adoptcheck.UseAfterPut, func(t *testing.T, r parity.Report) {
			// Poisoned Puts (-poison, in the block) corrupt every response used after Put.
			if d := r.Differential; d == nil || !strings.HasPrefix(d.Method, "under load") || d.Outcome != diffcheck.Fail {
				t.Errorf("differential check %+v, want a FAIL under load", d)
			}
		}},
		{adoptcheck.SharedBuffer, func(*testing.T, parity.Report) {}},
	}
	// The runs in two waves of at most three at once, not as parallel subtests (go test runs as
	// many of those as there are CPUs): each is light, 200 requests a second, and a wave's time is
	// one run's. The pooled run goes in the first wave, with the misuses whose rows it shares the
	// machine's noise with as before; the concurrency misuses, caught by what does not read CPU,
	// in the second.
	// The race block (gray built by the run, shared-buffer, then a race phase) goes in the second
	// wave too.
	outs, codes := make([]string, len(cases)), make([]int, len(cases))
	var raceOut string
	var raceCode int
	start = time.Now()
	for w, wave := range [][]int{{0, 1, 2}, {3, 4}} {
		var wg sync.WaitGroup
		for _, i := range wave {
			wg.Go(func() {
				var err error
				outs[i], err = runBash(t, root, slices.Concat(env, []string{"GRAY_MODE=" + cases[i].mode}), 4*time.Minute, local[0].Script)
				codes[i] = exitCode(err)
			})
		}
		if w == 1 {
			wg.Go(func() {
				var err error
				raceOut, err = runBash(t, root, env, 5*time.Minute, race[0].Script)
				raceCode = exitCode(err)
			})
		}
		wg.Wait()
	}
	t.Logf("%d local runs and the race run in %s", len(cases), time.Since(start).Round(time.Second))
	t.Run("race", func(t *testing.T) {
		t.Logf("the race block: exit %d\n%s", raceCode, raceOut)
		r := readReport(t, filepath.Join(svc, "out-race", "report.json"))
		if r.Verdict != parity.Fail || raceCode != parity.ExitFail {
			t.Errorf("verdict %s, exit %d: want FAIL (exit %d)", r.Verdict, raceCode, parity.ExitFail)
		}
		if r.Races == nil || !r.Races.Failed || len(r.Races.Found) == 0 {
			t.Fatalf("race phase %+v, want races found", r.Races)
		}
		if !slices.ContainsFunc(r.Reasons, func(s string) bool { return strings.HasPrefix(s, "data race in gray under concurrent load") }) {
			t.Errorf("reasons %q, want one naming the data race", r.Reasons)
		}
	})
	for i, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			t.Logf("GRAY_MODE=%s: exit %d\n%s", c.mode, codes[i], outs[i])
			r := readReport(t, filepath.Join(svc, "out-"+c.mode, "report.json"))
			if parity.ExitStatus(r.Verdict) != codes[i] {
				t.Errorf("exit %d with verdict %s: the exit status is not the verdict's", codes[i], r.Verdict)
			}
			for _, p := range adoptcheck.Problems(c.mode, r) {
				t.Error(p)
			}
			c.check(t, r)
		})
	}
}

// readReport reads a local run's report.json.
func readReport(t *testing.T, path string) parity.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the report: %v", err)
	}
	var r parity.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// runBash runs script with bash -euo pipefail in dir, bounded by timeout, and returns its output.
func runBash(t *testing.T, dir string, env []string, timeout time.Duration, script string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env, cmd.WaitDelay = dir, env, 10*time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Errorf("the script ran past %s", timeout)
	}
	return out.String(), err
}

// exitCode returns the exit status err carries: 0 for nil, -1 when the script did not run to an
// exit (the report it should have written is then missing, which the test reports).
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}

// Command mutants shows that `make test` catches a change of the count judge's bars, weights and
// allowances. Each mutant is one edit of internal/parity/seqcount (a bar halved, a mixture
// removed, an allowance halved, a weight changed) laid over the tree with `go test -overlay`, so
// the tree itself is never written; the guard tests are run against it and must fail. The
// unmutated package must pass them first. It prints one line per mutant and exits 1 when one
// survives, or when an edit no longer finds the code it changes (the mutant is stale).
//
//	go run ./hack/mutants [-run REGEXP] [-timeout 5m]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// mutant is one edit of one file: old must occur exactly once. shipped marks the mutants that
// only the guard tests on the shipped path (shippedPkg) catch; the others run the judge's own.
type mutant struct {
	name, file, old, new string
	shipped              bool
}

const pkg = "internal/parity/seqcount"

// shippedPkg holds the guard tests on the shipped path (parity.JudgeCounts on simulated counters).
const shippedPkg = "hack/verdicteval/countsim"

// mutants are the edits that survived `make test` before the guard tests (issue 59), and the
// judge's other weights.
var mutants = []mutant{
	{"a PASS at half the bar", "look.go", "case passable && j.logEP >= math.Log(j.bar) && !j.tailHolds():", "case passable && j.logEP >= math.Log(j.bar/2) && !j.tailHolds():", false},
	{"the conditional FAIL mixture removed", "look.go",
		"j.logEF = logSumExp(math.Log1p(-eventsFailWeight)+j.logEF, math.Log(eventsFailWeight)+j.logEventsFail(j.condFloor, j.failTemper))", "", false},
	{"the pod-offset allowance halved", "look.go", "a := q * se\n", "a := q * se / 2\n", false},
	{"the tail's bar ignored", "look.go", "j.failBar = max(j.bar, j.tail.bar)", "j.failBar = j.bar", false},
	{"the tail's weight halved", "judge.go", "const tailWeight = 0.1\n", "const tailWeight = 0.05\n", false},
	{"the watch's weight halved", "watch.go", "const watchWeight = 0.25\n", "const watchWeight = 0.125\n", false},
	{"the watches' weights steepened", "watch.go", "const watchShift = 3\n", "const watchShift = 0\n", false},
	{"a watch every 15 steps", "watch.go", "const watchEvery = 10\n", "const watchEvery = 15\n", false},
	{"one watch running", "watch.go", "const watchRunning = 3\n", "const watchRunning = 1\n", false},
	{"the tail's hold on a PASS removed", "look.go", "case passable && j.logEP >= math.Log(j.bar) && !j.tailHolds():", "case passable && j.logEP >= math.Log(j.bar):", true},
	{"the tail's wide prior removed", "look.go", "\ttailWideWeight = 0.5\n", "\ttailWideWeight = 0\n", false},
	{"the FAIL prior tuned to the margin alone", "look.go", "j.priorScale(j.lim.Floor, failTarget(j.lim), j.lim.Floor)", "j.priorScale(j.lim.Floor, j.lim.Margin, j.lim.Floor)", false},
}

type config struct {
	run     string
	timeout time.Duration
}

func main() {
	var cfg config
	flag.StringVar(&cfg.run, "run", "TestVerdictsGolden|TestTailOnlyRegressionsSeldomPass", "the guard tests (go test -run), in the judge's package and the count evaluation's (the shipped path)")
	flag.DurationVar(&cfg.timeout, "timeout", 5*time.Minute, "the longest one go test may take")
	flag.Parse()
	if err := run(context.Background(), cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	if cfg.run == "" || cfg.timeout <= 0 {
		return errors.New("-run must name tests and -timeout be positive")
	}
	dir, err := os.MkdirTemp("", "mutants")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if fails, log := goTest(ctx, cfg, "", true); fails {
		return fmt.Errorf("the guard tests fail on the unmutated judge:\n%s", log)
	}
	fmt.Fprintf(out, "mutants: the unmutated judge passes %s\n", cfg.run)
	var survived []string
	for i, m := range mutants {
		overlay, err := lay(dir, i, m)
		if err != nil {
			return err
		}
		caught, log := goTest(ctx, cfg, overlay, m.shipped)
		verdict := "caught"
		if !caught {
			verdict = "SURVIVED"
			survived = append(survived, m.name)
		}
		fmt.Fprintf(out, "mutants: %-40s %s%s\n", m.name, verdict, firstFailure(log))
	}
	if len(survived) > 0 {
		return fmt.Errorf("%d of %d mutants survived %s: %s", len(survived), len(mutants), cfg.run, strings.Join(survived, "; "))
	}
	fmt.Fprintf(out, "mutants: all %d caught\n", len(mutants))
	return nil
}

// lay writes m's edited file and an overlay naming it, and returns the overlay's path.
func lay(dir string, i int, m mutant) (string, error) {
	src, err := filepath.Abs(filepath.Join(pkg, m.file))
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return "", fmt.Errorf("mutant %q: %w", m.name, err)
	}
	if n := strings.Count(string(b), m.old); n != 1 {
		return "", fmt.Errorf("mutant %q is stale: %s holds %q %d times, want once", m.name, src, m.old, n)
	}
	edited := filepath.Join(dir, fmt.Sprintf("%d-%s", i, m.file))
	if err := os.WriteFile(edited, []byte(strings.Replace(string(b), m.old, m.new, 1)), 0o644); err != nil {
		return "", err
	}
	ov, err := json.Marshal(map[string]map[string]string{"Replace": {src: edited}})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("%d.json", i))
	return path, os.WriteFile(path, ov, 0o644)
}

// goTest runs the guard tests of the judge's package (and with shipped, of the shipped path's),
// over the overlay when one is named; it reports whether they failed, with their output.
func goTest(ctx context.Context, cfg config, overlay string, shipped bool) (failed bool, log string) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	args := []string{"test", "-count=1", "-run", cfg.run}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	pkgs := []string{"./" + pkg}
	if shipped {
		pkgs = append(pkgs, "./"+shippedPkg)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkgs...)...)
	b, err := cmd.CombinedOutput()
	return err != nil, string(b)
}

// firstFailure returns ": " and the first line of log that says what failed, or "".
func firstFailure(log string) string {
	for _, l := range strings.Split(log, "\n") {
		if t := strings.TrimSpace(l); strings.Contains(t, "_test.go:") {
			if len(t) > 120 {
				t = t[:120] + "..."
			}
			return ": " + t
		}
	}
	return ""
}

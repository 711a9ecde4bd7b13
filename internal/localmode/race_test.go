package localmode_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poolparity/poolparity/deploy/deploytest"
	"github.com/poolparity/poolparity/internal/localmode"
	"github.com/poolparity/poolparity/internal/localproc"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/rulesgen"
	"github.com/poolparity/poolparity/internal/testtool"
)

// TestRacePhase runs `poolparity-parity local` with -gray-pkg on csvjson
// (internal/adoptcheck/testdata/csvjson), unpooled stable, twice at once:
// gray in shared-buffer mode, one buffer written by every request without a
// lock, whose race phase must FAIL the run naming both stacks' top frames;
// and gray pooled, whose race phase must find none. 20 s of main load and 5
// s of race phase each (about 45 s in all, with a warm build cache).
func TestRacePhase(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two local runs with a race phase take about 45 seconds")
	}
	testtool.RaceToolchain(t)
	root := deploytest.Root(t)
	prom := deploytest.Tool(t, "prometheus")
	dir := t.TempDir()
	pkg := filepath.Join(root, "internal", "adoptcheck", "testdata", "csvjson")
	stableBin := filepath.Join(dir, "csvjson")
	if out, err := exec.Command("go", "build", "-o", stableBin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("building csvjson: %v\n%s", err, out)
	}
	csv := "id,customer,item,quantity\n1001,Ada Lovelace,notebook,3\n1002,Charles Babbage,fountain pen,1\n1003,Grace Hopper,compiler manual,2\n"
	for name, text := range map[string]string{"orders.csv": csv, "requests.txt": "POST /convert\nContent-Type: text/csv\n@orders.csv\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		mode string
		racy bool
	}{{"shared-buffer", true}, {"pooled", false}}
	ports := new(localproc.Ports)
	results := make([]localmode.Result, len(cases))
	errs := make([]error, len(cases))
	logs := make([]testtool.LogBuffer, len(cases))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range cases {
		cfg := localmode.Default()
		cfg.Stable = localmode.Track{Cmd: "HTTP_ADDR=127.0.0.1:$PORT POOL_MODE=unpooled exec " + stableBin, Mode: "unpooled"}
		cfg.Gray = localmode.Track{Cmd: `HTTP_ADDR=127.0.0.1:$PORT exec "$BIN"`, Env: []string{"POOL_MODE=" + c.mode}, Mode: c.mode}
		cfg.GrayPackage, cfg.RaceDuration = pkg, 5*time.Second
		cfg.RequestsFile, cfg.RPS, cfg.Duration, cfg.Burst, cfg.DiffSample = filepath.Join(dir, "requests.txt"), 100, 20*time.Second, 8, 0
		cfg.ScrapeInterval, cfg.PrometheusBin, cfg.OutDir, cfg.Ports = 2*time.Second, prom, filepath.Join(dir, "out-"+c.mode), ports
		cfg.Rules = rulesgen.Options{Window: "1m", For: "30s", Sets: []string{"rules.http.metrics=semconv", "rules.runtime.metrics=otel"}}
		wg.Go(func() { results[i], errs[i] = localmode.Run(ctx, cfg, &logs[i]) })
	}
	wg.Wait()
	t.Logf("two local runs with a race phase in %s", time.Since(start).Round(time.Second))
	for i, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			t.Logf("output:\n%s", logs[i].String())
			if errs[i] != nil {
				t.Fatalf("Run: %v", errs[i])
			}
			r := results[i].Report
			if r.Races == nil {
				t.Fatalf("no race phase in the report; reasons %q", r.Reasons)
			}
			if r.Races.Requests == 0 || r.Races.Package != pkg {
				t.Errorf("race phase %+v, want requests sent to a -race build of %s", r.Races.RaceRun, pkg)
			}
			if _, err := os.Stat(filepath.Join(dir, "out-"+c.mode, "logs", "gray-race.log")); err != nil {
				t.Errorf("the race build's log: %v", err)
			}
			raced := slices.ContainsFunc(r.Reasons, func(s string) bool { return strings.HasPrefix(s, "data race in gray") })
			if !c.racy {
				if r.Races.Failed || raced || r.Verdict == parity.Error {
					t.Errorf("verdict %s, reasons %q, races %+v: want no race and no ERROR", r.Verdict, r.Reasons, r.Races)
				}
				return
			}
			if r.Verdict != parity.Fail || len(r.Reasons) == 0 || !strings.HasPrefix(r.Reasons[0], "data race in gray under concurrent load (race detector): ") {
				t.Fatalf("verdict %s, reasons %q: want FAIL, a data race first", r.Verdict, r.Reasons)
			}
			// Both accesses named by their top frame in csvjson's own code.
			if reason := r.Reasons[0]; strings.Count(reason, "main.") < 2 || !strings.Contains(reason, " vs previous ") || !strings.Contains(reason, "main.go:") {
				t.Errorf("reason %q, want both stacks' top frames in csvjson's main package", reason)
			}
			if !strings.Contains(logs[i].String(), "local: race phase: ") || len(r.Races.Found) == 0 {
				t.Errorf("races %+v, want the races found, and the phase in the output", r.Races)
			}
		})
	}
}

// TestGrayPackageThatDoesNotBuild checks that a -gray-pkg that does not
// build ends the run before any process starts, with one line naming it,
// and the report written as ERROR.
func TestGrayPackageThatDoesNotBuild(t *testing.T) {
	dir := t.TempDir()
	reqs := filepath.Join(dir, "requests.txt")
	if err := os.WriteFile(reqs, []byte("GET /\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := localmode.Default()
	cfg.Stable.Cmd, cfg.RequestsFile, cfg.OutDir, cfg.PrometheusBin = "exit 3", reqs, filepath.Join(dir, "out"), "/bin/true"
	cfg.GrayPackage, cfg.RaceDuration = "./no/such/package", time.Second
	var out testtool.LogBuffer
	res, err := localmode.Run(context.Background(), cfg, &out)
	if err == nil || !strings.Contains(err.Error(), "-gray-pkg ./no/such/package") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Run: %v, want one line naming -gray-pkg ./no/such/package\n%s", err, out.String())
	}
	if res.Report.Verdict != parity.Error || len(res.Files) == 0 {
		t.Errorf("verdict %s, files %q: want the report written as ERROR", res.Report.Verdict, res.Files)
	}
}

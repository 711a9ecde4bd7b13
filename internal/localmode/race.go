package localmode

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/racecheck"
)

// goRace is the GORACE of the race build: every race reported, the process
// going on (halt_on_error=0), and exit status racecheck.ExitCode when it
// found one. A GORACE in Gray.Env wins.
const goRace = "GORACE=halt_on_error=0 exitcode=66"

// raceStopGrace is how long the race build has to shut down and print its
// "Found N data race(s)" trailer before it is killed.
const raceStopGrace = 10 * time.Second

// grayBuild is gray's builds, when Config.GrayPackage names its package.
type grayBuild struct {
	// bin is the build gray runs in the main phase; raceBin the -race build
	// of the race phase. Both are absolute paths under OutDir/bin.
	bin, raceBin string
	// raceDone is closed when the -race build has ended, with raceErr its
	// error and raceTook its time; nil when no race phase runs.
	raceDone chan struct{}
	raceErr  error
	raceTook time.Duration
	// cancel ends the -race build early (teardown).
	cancel context.CancelFunc
}

// raceRuns reports whether the run has a race phase.
func (c Config) raceRuns() bool { return c.GrayPackage != "" && c.RaceDuration > 0 }

// buildGray builds gray from GrayPackage into OutDir/bin, starting its
// -race build in the background first when the race phase is to run
// (waitRaceBuild waits for it). Without GrayPackage it does nothing.
func (r *runner) buildGray(ctx context.Context) error {
	pkg := r.cfg.GrayPackage
	if pkg == "" {
		return nil
	}
	dir, err := filepath.Abs(filepath.Join(r.cfg.OutDir, "bin"))
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return fmt.Errorf("the directory of gray's builds: %w", err)
	}
	b := &grayBuild{bin: filepath.Join(dir, "gray"), raceBin: filepath.Join(dir, "gray-race")}
	r.build = b
	if r.cfg.raceRuns() {
		bctx, cancel := context.WithCancel(ctx)
		b.cancel, b.raceDone = cancel, make(chan struct{})
		fmt.Fprintf(r.stdout, "local: building %s with -race into %s, in the background (a first -race build recompiles the standard library) ...\n", pkg, b.raceBin)
		go func() {
			defer close(b.raceDone)
			start := time.Now()
			b.raceErr = racecheck.Build(bctx, racecheck.BuildOptions{Package: pkg, Output: b.raceBin})
			b.raceTook = time.Since(start)
		}()
	}
	fmt.Fprintf(r.stdout, "local: building gray from %s into %s ...\n", pkg, b.bin)
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", b.bin, pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("building gray (-gray-pkg %s): %w: %s", pkg, err, oneLine(string(out)))
	}
	fmt.Fprintf(r.stdout, "local: built gray in %s\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// waitRaceBuild waits for the -race build, when one runs: before the main
// load, so that no compiler takes the CPU the tracks are measured on. A
// failed build ends the run.
func (r *runner) waitRaceBuild(ctx context.Context) error {
	b := r.build
	if b == nil || b.raceDone == nil {
		return nil
	}
	select {
	case <-b.raceDone:
	default:
		fmt.Fprintf(r.stdout, "local: waiting for the -race build of %s before the load ...\n", r.cfg.GrayPackage)
		select {
		case <-b.raceDone:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if b.raceErr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the race phase (-race-duration %s; 0 runs none): %s", r.cfg.RaceDuration, oneLine(b.raceErr.Error()))
	}
	fmt.Fprintf(r.stdout, "local: built %s with -race in %s\n", r.cfg.GrayPackage, b.raceTook.Round(100*time.Millisecond))
	return nil
}

// stopBuild ends a -race build still running and waits for it.
func (r *runner) stopBuild() {
	if b := r.build; b != nil && b.raceDone != nil {
		b.cancel()
		<-b.raceDone
	}
}

// grayBin is the build gray's command gets in BIN, or "".
func (r *runner) grayBin() string {
	if r.build == nil {
		return ""
	}
	return r.build.bin
}

// racePhase runs the race phase, when asked, and puts it into the report:
// it stops gray, starts the -race build with gray's command on a fresh port
// (BIN the race build, GORACE set), loads it at the run's concurrency for
// RaceDuration, stops it gracefully (its idle connections closed first, so
// that it shuts down at once and prints the detector's trailer) and reads
// the race reports from its log, OutDir/logs/gray-race.log.
func (r *runner) racePhase(ctx context.Context, report *parity.Report, gray *trackRun) error {
	if !r.cfg.raceRuns() {
		return nil
	}
	if gray.proc != nil {
		gray.proc.Stop(raceStopGrace) // its CPU, and a port its command may not take from $PORT
	}
	tr := r.cfg.Gray
	tr.URL, tr.ScrapeURL, tr.PprofURL = "", "", ""
	tr.Env = append([]string{goRace}, tr.Env...)
	t := newTrack("gray", tr)
	t.name, t.bin = "gray-race", r.build.raceBin
	start := time.Now()
	fmt.Fprintf(r.stdout, "local: race phase: starting the -race build of %s ...\n", r.cfg.GrayPackage)
	if err := r.startTrack(ctx, t); err != nil {
		return fmt.Errorf("the race phase: %w", err)
	}
	stats, err := r.raceLoad(ctx, t)
	if err != nil {
		return err
	}
	t.proc.Stop(raceStopGrace)
	rep, err := racecheck.ParseFile(t.proc.LogPath())
	if err != nil {
		return fmt.Errorf("the race phase: reading the race build's log: %w", err)
	}
	report.AddRaces(parity.RaceRun{
		Package: r.cfg.GrayPackage, Seconds: stats.Elapsed.Seconds(), Concurrency: r.cfg.Concurrency,
		Requests: stats.Requests, Errors: stats.Errors, Log: t.proc.LogPath(),
	}, rep)
	fmt.Fprintf(r.stdout, "local: race phase: %s (%s in all)\n", report.Races.Line(), time.Since(start).Round(100*time.Millisecond))
	return nil
}

// raceLoad loads the race build t at the run's rate (both tracks' arrivals
// together), concurrency and bursts for RaceDuration, and closes the
// load's idle connections.
func (r *runner) raceLoad(ctx context.Context, t *trackRun) (loadgen.Stats, error) {
	cfg := r.cfg
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConns: cfg.Concurrency, MaxIdleConnsPerHost: cfg.Concurrency}}
	defer client.CloseIdleConnections()
	order := loadgen.RoundRobin
	if cfg.Random {
		order = loadgen.Random
	}
	g, err := loadgen.New(loadgen.Config{
		BaseURL: t.url, Duration: cfg.RaceDuration, MaxRequests: int(cfg.RPS*cfg.RaceDuration.Seconds()*1.1) + 100,
		RPS: cfg.RPS, Concurrency: cfg.Concurrency, Keys: 1, Seed: cfg.Seed + 3, Targets: r.targets,
		Order: order, Burst: cfg.Burst, Timeout: 10 * time.Second,
	}, client)
	if err != nil {
		return loadgen.Stats{}, fmt.Errorf("the race phase's load: %w", err)
	}
	fmt.Fprintf(r.stdout, "local: race phase: %.0f req/s on the -race build at concurrency %d for %s ...\n", cfg.RPS, cfg.Concurrency, cfg.RaceDuration)
	stats, err := g.Run(ctx)
	client.CloseIdleConnections() // before the stop: the server's shutdown waits for none
	if ctx.Err() != nil {
		return stats, ctx.Err()
	}
	if err != nil {
		return stats, fmt.Errorf("the race phase's load: %w", err)
	}
	return stats, nil
}

// raceContext is the report's context line of gray's build, when the run
// built it.
func (r *runner) raceContext() []parity.KV {
	if r.build == nil {
		return nil
	}
	v := fmt.Sprintf("built from %s into %s (BIN)", r.cfg.GrayPackage, r.build.bin)
	if r.cfg.raceRuns() {
		v += fmt.Sprintf("; race phase: the -race build %s, %s of load after the main one", r.build.raceBin, r.cfg.RaceDuration)
	}
	return []parity.KV{{Key: "gray build", Value: v}}
}

// oneLine joins the non-empty lines of s with "; ", at most 600 bytes of
// them, for a one-line error.
func oneLine(s string) string {
	var lines []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	out := strings.Join(lines, "; ")
	if len(out) > 600 {
		out = out[:600] + " ..."
	}
	return out
}

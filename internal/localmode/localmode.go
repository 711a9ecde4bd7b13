// Package localmode runs `poolparity-parity local`: the parity check of any
// two builds of a service on one machine. It starts each track from a
// command (or uses one already running at a URL), checks that each port
// answers with the expected track and pool mode, renders the poolparity
// rules for the service's own metric names (package rulesgen, from the
// chart's template compiled into the binary), starts Prometheus scraping
// both tracks, replays a requests file (package targets) against them
// open-loop (package loadgen), judges with parity.Evaluate as the demo
// does, runs a differential check of the tracks' responses (package
// diffcheck) that counts in the verdict, and writes the report.
//
// The differential check runs under the load, at its concurrency
// (Config.DiffUnderLoad, the default): gray's load hands over DiffSample of
// its own responses, one taken at random in each block of its arrivals so
// that they spread over the first 80% of the run, and each is compared with
// stable's answer to the same request, asked twice at once (the noise, as
// diffcheck learns it) as the sample comes, the load going on; the
// comparisons still under way when the load has run Duration end before it
// stops. Responses that only concurrency corrupts, which a check sending
// one request at a time never sees, count so: a buffer put back to its pool
// before the response is written from it, one buffer shared by every
// request. Every request of the requests file is compared but those
// Config.DiffExclude names (a method, or an endpoint as the report names
// it): exclude the ones whose answer depends on when they are asked (a
// write, a counter, a read of what the load writes). Config.DiffIgnore
// names the fields that legitimately differ. With Config.DiffRequestsFile
// (the load writes a store both tracks share) or DiffUnderLoad false, the
// check runs after the load instead, one request at a time. The report
// says which ran.
//
// The tracks' failed requests as their loads saw them count in the verdict
// too (parity.Report.AddLoadErrors): a 5xx, no response at all (a transport
// error, a connection a panicking handler closed), or a malformed answer
// (every JSON answer of both loads is parsed: a body that does not parse,
// or has trailing data, is malformed). More on gray than on stable beyond
// chance (Fisher's exact test, one-sided, at 1%) is a FAIL naming both
// tracks' counts. It sees the rare corruption the differential check's
// sample is too small to tell from its 1% maximum, when it garbles JSON.
//
// With Config.GrayPackage, the run builds gray itself (go build, from the
// working directory, into OutDir/bin) and gives its command the build in
// BIN; with RaceDuration too it builds it with -race (racecheck.Build) while
// the tracks and Prometheus start, and the load waits for that build, so
// that no compiler takes the CPU the tracks are measured on. After the main
// load and the differential check comes the race phase (race.go): gray
// stopped, the -race build started with gray's command on a fresh port
// (GORACE=halt_on_error=0 exitcode=66), loaded at the run's rate and
// concurrency for RaceDuration, stopped gracefully, and its log
// (OutDir/logs/gray-race.log) read with racecheck: a data race fails the run
// naming both stacks' top frames (parity.Report.AddRaces). A build that
// fails ends the run with an error.
//
// Every process it starts is a child in its own process group on loopback,
// stopped (SIGTERM, then SIGKILL to the group) when Run returns, whether it
// returns normally, on an error or because its context ended.
//
// It is a library: it reads no flags; the environment only to pass it to
// the processes it starts.
package localmode

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/poolparity/poolparity/deploy"
	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/localproc"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/render"
	"github.com/poolparity/poolparity/internal/rulesgen"
	"github.com/poolparity/poolparity/internal/targets"
)

// Job is the Prometheus job the tracks are scraped as when Config.Job is
// empty; the report reads job="poolparity-local".
const Job = "poolparity-local"

// RulesGenerator names the rules file's generator in its header.
const RulesGenerator = "poolparity-parity local"

// ErrRefused is wrapped by the error of a track refused before any load:
// its command exited, its port did not answer, or its metrics name another
// track or pool mode. The error names the track.
var ErrRefused = errors.New("refused before any load")

// Result is what a run produced.
type Result struct {
	// Report is the parity report, the differential check in it.
	Report parity.Report
	// Stable and Gray are the load's counts per track.
	Stable, Gray loadgen.Stats
	// Files are the report files written.
	Files []string
}

// Run runs the local check cfg describes, writing progress and the report
// to stdout. It returns an error when the check could not run: cfg invalid
// (wrapping ErrInvalid), the requests file malformed (wrapping
// targets.ErrSyntax, one line naming the file, the line and the problem), a
// track refused (ErrRefused), or a failure of Prometheus or of the files. A
// run that produced a report returns it with a nil error, the verdict
// inside it. Past the settings (an error wrapping neither ErrInvalid nor
// targets.ErrSyntax), an error leaves the report written too, with verdict
// ERROR and the error as its reason, in Result.Report and Result.Files.
func Run(ctx context.Context, cfg Config, stdout io.Writer) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	cfg.Gray = cfg.grayTrack()
	ts, err := ReadRequests(cfg.RequestsFile)
	if err != nil {
		return Result{}, err
	}
	diff := ts
	if cfg.DiffRequestsFile != "" {
		if diff, err = ReadRequests(cfg.DiffRequestsFile); err != nil {
			return Result{}, err
		}
	}
	exclude, err := parseExclude(cfg.DiffExclude)
	if err != nil {
		return Result{}, fmt.Errorf("%w: DIFF_EXCLUDE: %w", ErrInvalid, err) // Validate refused it already
	}
	if diff, err = compared(cfg, ts, diff, exclude); err != nil {
		return Result{}, err
	}
	r := &runner{cfg: cfg, stdout: stdout, targets: ts, diffTargets: diff, exclude: exclude, ports: cfg.Ports,
		client: &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{Proxy: nil}}}
	if r.ports == nil {
		r.ports = new(localproc.Ports)
	}
	defer r.teardown()
	return r.run(ctx)
}

// compared returns the requests the differential check may compare after
// the load, those of diff that exclude does not leave out, and refuses a
// check left with none (under load: of the load's requests ts).
func compared(cfg Config, ts, diff []targets.Target, exclude func(targets.Target) bool) ([]targets.Target, error) {
	if cfg.DiffSample == 0 {
		return diff, nil
	}
	keep := slices.DeleteFunc(slices.Clone(diff), exclude)
	pool, file := keep, cmp.Or(cfg.DiffRequestsFile, cfg.RequestsFile)
	if cfg.underLoad() {
		pool, file = slices.DeleteFunc(slices.Clone(ts), exclude), cfg.RequestsFile
	}
	if len(pool) == 0 {
		return nil, fmt.Errorf("%w: DIFF_EXCLUDE leaves none of the requests of %s to compare (-diff-sample 0 runs no differential check)", ErrInvalid, file)
	}
	return keep, nil
}

// ReadRequests reads and checks the requests file at path: a malformed
// file is an error wrapping targets.ErrSyntax, on one line naming the
// file, the line and the problem.
func ReadRequests(path string) ([]targets.Target, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the requests file: %w", ErrInvalid, err)
	}
	defer f.Close()
	ts, err := targets.Parse(f, path, os.ReadFile)
	if err != nil {
		return nil, err
	}
	if err := loadgen.CheckTargets(ts, nil); err != nil {
		return nil, fmt.Errorf("%w %s: %w", targets.ErrSyntax, path, err)
	}
	return ts, nil
}

type runner struct {
	cfg     Config
	stdout  io.Writer
	client  *http.Client
	targets []targets.Target
	// diffTargets are the differential check's requests after the load:
	// targets, or DiffRequestsFile's, but those DiffExclude leaves out.
	diffTargets []targets.Target
	// exclude reports whether DiffExclude leaves a request out.
	exclude func(targets.Target) bool

	procs  localproc.Group
	ports  *localproc.Ports
	tmpDir string
	logDir string
	// build is gray's builds (Config.GrayPackage), nil without.
	build *grayBuild
}

// teardown stops every process and removes the temp dir.
func (r *runner) teardown() {
	r.stopBuild()
	if n := r.procs.Stop(10 * time.Second); n > 0 {
		fmt.Fprintf(r.stdout, "local: stopped %d processes\n", n)
	}
	if r.tmpDir != "" {
		_ = os.RemoveAll(r.tmpDir)
	}
}

// run starts the tracks and Prometheus, runs the load, reads the report,
// runs the differential check and writes the report. Past the settings,
// an error writes the report too, as ERROR with what was read before it
// (render.Write).
func (r *runner) run(ctx context.Context) (res Result, err error) {
	report, err := r.check(ctx, &res)
	if errors.Is(err, ErrInvalid) || errors.Is(err, targets.ErrSyntax) {
		return res, err // a bad setting: nothing was checked
	}
	report.Title = "poolparity local: " + r.cfg.Gray.label("gray") + " vs " + r.cfg.Stable.label("stable")
	if r.cfg.Title != "" {
		report.Title = r.cfg.Title
	}
	if report.Context == nil {
		report.Context, report.Window = r.cfg.Context, r.cfg.Rules.Window // an error before the load
	}
	res.Report, res.Files, err = r.write(report, err)
	return res, err
}

// check is run's work but the writing: the report, or what was read of it
// before an error, and the error.
func (r *runner) check(ctx context.Context, res *Result) (parity.Report, error) {
	promBin, rules, err := r.prepare()
	if err != nil {
		return parity.Report{}, err
	}
	if err := r.buildGray(ctx); err != nil {
		return parity.Report{}, err
	}
	stable, gray := newTrack("stable", r.cfg.Stable), newTrack("gray", r.cfg.Gray)
	gray.bin = r.grayBin()
	for _, t := range []*trackRun{stable, gray} {
		if err := r.startTrack(ctx, t); err != nil {
			return parity.Report{}, err
		}
	}
	promVersion := localproc.PrometheusVersion(promBin)
	q, err := r.startPrometheus(ctx, promBin, rules, stable, gray)
	if err != nil {
		return parity.Report{}, err
	}
	if err := r.waitRaceBuild(ctx); err != nil {
		return parity.Report{}, err
	}
	fmt.Fprintf(r.stdout, "local: stable %s, gray %s; Prometheus %s; %d requests in %s; load %.0f req/s for %s, %.0f%% to gray (Ctrl-C stops everything)\n",
		stable.desc(), gray.desc(), promVersion, len(r.targets), r.cfg.RequestsFile, r.cfg.RPS, r.cfg.Duration, 100*r.cfg.GrayWeight)
	report, stats, diff, err := r.loadAndRead(ctx, q, stable, gray)
	res.Stable, res.Gray = stats[0], stats[1]
	report.Context = slices.Concat(r.context(stable, gray, stats, promVersion), r.raceContext(), r.cfg.Context)
	if err != nil {
		return report, err
	}
	report.AddLoadErrors(stats[0], stats[1])
	if diff != nil { // run under load
		report.AddDifferential(*diff)
	} else if err := r.differential(ctx, &report, stable, gray); err != nil {
		return report, err
	}
	return report, r.racePhase(ctx, &report, gray)
}

// prepare creates the output, log and temporary directories, resolves
// Prometheus and renders the rules into the output directory.
func (r *runner) prepare() (promBin, rules string, err error) {
	r.logDir = filepath.Join(r.cfg.OutDir, "logs")
	if err := os.MkdirAll(r.logDir, 0o755); err != nil {
		return "", "", fmt.Errorf("creating %s: %w", r.logDir, err)
	}
	if r.tmpDir, err = os.MkdirTemp("", "poolparity-local-"); err != nil {
		return "", "", err
	}
	if promBin, err = prometheusBin(r.cfg.PrometheusBin); err != nil {
		return "", "", err
	}
	if r.cfg.RulesFile != "" {
		if rules, err = filepath.Abs(r.cfg.RulesFile); err == nil {
			_, err = os.Stat(rules)
		}
		if err != nil {
			return "", "", fmt.Errorf("%w: the rules file: %w", ErrInvalid, err)
		}
		return promBin, rules, nil
	}
	text, err := rulesgen.Render(deploy.RulesSource(RulesGenerator), r.cfg.Rules)
	if err != nil {
		return "", "", fmt.Errorf("%w: rendering the rules: %w", ErrInvalid, err)
	}
	if rules, err = filepath.Abs(filepath.Join(r.cfg.OutDir, "rules.yml")); err != nil {
		return "", "", err
	}
	return promBin, rules, rulesgen.WriteFile(rules, text)
}

// prometheusBin resolves the prometheus binary: bin when set, else
// ./bin/prometheus when present, else prometheus on PATH.
func prometheusBin(bin string) (string, error) {
	const what = "the prometheus binary (-prometheus; in a clone: hack/install-tools.sh prometheus)"
	if bin != "" {
		return localproc.Executable(bin, what)
	}
	if p, err := localproc.Executable(filepath.Join("bin", "prometheus"), what); err == nil {
		return p, nil
	}
	return localproc.Executable("prometheus", what)
}

// write writes the report files of a run that ended in runErr (nil: it
// produced report) and prints the report: the files first, so that the
// verdict printed always goes with files written whole. An ERROR prints no
// verdict: the error returned says it.
func (r *runner) write(report parity.Report, runErr error) (parity.Report, []string, error) {
	report, files, err := render.Write(report, r.cfg.OutDir, runErr)
	if err != nil {
		if len(files) > 0 {
			fmt.Fprintf(r.stdout, "report (ERROR): %s\n", strings.Join(files, ", "))
		}
		return report, files, err
	}
	fmt.Fprintln(r.stdout)
	if err := render.Text(r.stdout, report); err != nil {
		return report, files, err
	}
	fmt.Fprintf(r.stdout, "report: %s\n", strings.Join(files, ", "))
	return report, files, nil
}

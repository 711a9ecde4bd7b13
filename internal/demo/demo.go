// Package demo runs the poolparity loop on one machine for the reference
// service or the example one, as one case of `poolparity-parity local`
// (package localmode): it chooses the scenario's two track commands, their
// environment and the requests file, starts what the service depends on
// (Redis for the reference service, embedded or redis-server; with
// TELEMETRY=otlp an OpenTelemetry Collector beside each track), runs the
// local mode's loop (tracks, Prometheus and the rules, the load, the judge,
// the differential check, profiles on a FAIL, the report), and checks the
// report against the scenario's expectations.
//
// Reading the same report from an existing Prometheus, such as a cluster's
// (`make parity`), is app/cmd/poolparity-parity's job.
//
// Every process it starts is a child in its own process group, on a
// loopback port, and is stopped (SIGTERM, then SIGKILL to the group) when
// Run returns, whether it returns normally, on an error or because its
// context was cancelled (Ctrl-C).
package demo

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/poolparity/poolparity/instrument/pprofhttp"
	"github.com/poolparity/poolparity/internal/embedredis"
	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/localmode"
	"github.com/poolparity/poolparity/internal/localproc"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/scenario"
)

// Result is what a run produced.
type Result struct {
	Report parity.Report
	// Stable and Gray are the load's counts per track.
	Stable, Gray loadgen.Stats
	// Expectations are the scenario's expected outcomes, checked.
	Expectations []Expectation
	// Files are the report files written.
	Files []string
}

// Run runs the demo described by cfg, writing progress and the report to
// stdout and diagnostics to stderr. It returns an error when the demo could
// not run; a run that produced a report returns it with a nil error, the
// verdict inside it.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) (res Result, err error) {
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	r := &runner{cfg: cfg, stdout: stdout, stderr: stderr, client: &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{Proxy: nil}}}
	defer r.teardown()
	return r.run(ctx)
}

type runner struct {
	cfg            Config
	stdout, stderr io.Writer
	client         *http.Client

	// procs are the processes the demo starts itself (redis-server, the
	// collectors); the tracks and Prometheus are localmode's.
	procs    localproc.Group
	ports    localproc.Ports // every port of the run, the tracks' and Prometheus' too
	mu       sync.Mutex      // guards closers
	closers  []func()
	tmpDir   string
	redisArg string
}

// teardown runs the closers, newest first, stops every process and
// removes the temp dir.
func (r *runner) teardown() {
	r.mu.Lock()
	closers := r.closers
	r.closers = nil
	r.mu.Unlock()
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
	if n := r.procs.Stop(10 * time.Second); n > 0 {
		fmt.Fprintf(r.stdout, "demo: stopped %d processes\n", n)
	}
	if r.tmpDir != "" {
		_ = os.RemoveAll(r.tmpDir)
	}
}

func (r *runner) onTeardown(f func()) {
	r.mu.Lock()
	r.closers = append(r.closers, f)
	r.mu.Unlock()
}

// run starts what the service depends on, then runs the local mode's loop
// on the scenario's two tracks and checks the report against the
// scenario's expectations.
func (r *runner) run(ctx context.Context) (res Result, err error) {
	cfg := r.cfg
	build := "go build -o bin/poolparity ./app/cmd/poolparity"
	if cfg.Service == ServiceExample {
		build = "go build -o " + ExampleServiceBin + " ./examples/imagesvc"
	}
	bin, err := localproc.Executable(cfg.ServiceBin, "the service binary (build it: "+build+")")
	if err != nil {
		return res, err
	}
	logDir := filepath.Join(cfg.OutDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return res, fmt.Errorf("creating %s: %w", logDir, err)
	}
	if r.tmpDir, err = os.MkdirTemp("", "poolparity-demo-"); err != nil {
		return res, err
	}
	redisDesc, err := r.startRedis(ctx, logDir)
	if err != nil {
		return res, err
	}
	var pprof [2]int
	for i := range pprof {
		if pprof[i], err = r.ports.Reserve(0); err != nil {
			return res, fmt.Errorf("profile port: %w", err)
		}
	}
	lc := LocalConfig(cfg, bin, r.redisArg, pprof)
	lc.Ports = &r.ports
	if err := r.startSidecars(ctx, logDir, &lc); err != nil {
		return res, err
	}
	lc.Context = append(lc.Context, parity.KV{Key: "redis", Value: redisDesc})
	fmt.Fprintf(r.stdout, "demo: %s, scenario %s; Redis %s\n", cfg.jobName(), scenarioDesc(cfg), redisDesc)
	fmt.Fprintf(r.stdout, "demo: the local mode's loop, as `%s`\n", CommandLine(lc))

	lr, err := localmode.Run(ctx, lc, r.stdout)
	res.Report, res.Stable, res.Gray, res.Files = lr.Report, lr.Stable, lr.Gray, lr.Files
	if err != nil {
		return res, err
	}
	res.Expectations = Expect(cfg.Scenario, res.Report)
	ok := true
	for _, e := range res.Expectations {
		ok = ok && e.OK
	}
	as := "as expected"
	if !ok {
		as = "NOT as expected"
	}
	fmt.Fprintf(r.stdout, "scenario %s: %s (%s)\n", cfg.Scenario, as, expectationText(res.Expectations))
	return res, nil
}

// Scenario files: the requests the load replays, under the repository's
// root (docs/demo.md, "The load").
const (
	// ReferenceRequests is the reference service's item API mix.
	ReferenceRequests = "examples/requests/poolparity.txt"
	// ReferenceLargeRequests is the same mix with one PUT in 16 of
	// RetainLargeBodyBytes: misuse-retain's and misuse-hold's load.
	ReferenceLargeRequests = "examples/requests/poolparity-large.txt"
	// ReferenceDiffRequests are the differential check's requests of the
	// reference service: the mix's reads (its writes race on the one Redis
	// both tracks share).
	ReferenceDiffRequests = "examples/requests/poolparity-diff.txt"
	// ExampleRequests is the example service's thumbnails.
	ExampleRequests = "examples/imagesvc/requests.txt"
)

// ScenarioRequests is the requests file of service's scenario, relative to
// the repository's root.
func ScenarioRequests(service, scenarioName string) string {
	switch {
	case service == ServiceExample:
		return ExampleRequests
	case scenarioName == ScenarioMisuseRetain || scenarioName == ScenarioMisuseHold:
		return ReferenceLargeRequests
	}
	return ReferenceRequests
}

// serviceEnvKeys are the variables the services read; the demo sets them
// itself and never passes the caller's values through.
var serviceEnvKeys = []string{
	"HTTP_ADDR", "GRAY_STATUS", "POOL_MODE", "LOG_LEVEL", "REDIS_", "SHUTDOWN_", "FAULT_", "OTEL_", "PPROF_",
}

// semconvRules are the rules' overrides of the example service's names
// (OpenTelemetry's HTTP and runtime names): the overrides of
// deploy/prometheus/poolparity-semconv-demo.rules.yml.
var semconvRules = []string{"rules.http.metrics=semconv", "rules.runtime.metrics=otel", `rules.httpSelector=http_route!~".*(healthz|readyz|metrics).*"`}

// LocalConfig is the local mode's configuration of cfg's scenario: the
// service binary bin as both tracks' command, each with the scenario's pool
// mode and environment (Redis at redisAddr for the reference service, the
// profiles on the ports pprof), the scenario's requests file and load
// shape, and the rules for the service's names. The collectors of
// TELEMETRY=otlp are added by the run.
func LocalConfig(cfg Config, bin, redisAddr string, pprof [2]int) localmode.Config {
	lc := localmode.Default()
	stable, gray := scenarioTracks(cfg)
	for i, t := range []trackSpec{stable, gray} {
		tr := localmode.Track{Cmd: trackCmd + shellQuote(bin), Mode: t.mode, Env: trackSettings(t, redisAddr, pprof[i])}
		if t.port != 0 {
			tr.URL = "http://127.0.0.1:" + strconv.Itoa(t.port)
		}
		if pprof[i] != 0 {
			tr.PprofURL = "http://127.0.0.1:" + strconv.Itoa(pprof[i]) + pprofhttp.Prefix
		}
		if i == 0 {
			lc.Stable = tr
		} else {
			lc.Gray = tr
		}
	}
	lc.ClearEnv = serviceEnvKeys
	lc.RequestsFile = cfg.Requests
	if lc.RequestsFile == "" {
		lc.RequestsFile = filepath.Join(cfg.Root, ScenarioRequests(cfg.Service, cfg.Scenario))
		if cfg.Service == ServiceReference {
			lc.DiffRequestsFile = filepath.Join(cfg.Root, ReferenceDiffRequests)
		}
	}
	lc.RPS, lc.GrayWeight, lc.Duration = cfg.RPS, float64(cfg.GrayWeight)/100, cfg.Duration
	// DEMO_CONCURRENCY bounds both tracks together, as one load did before
	// the local mode's two: half to each.
	lc.Concurrency, lc.Burst = max(1, (cfg.Concurrency+1)/2), 0
	if cfg.Service == ServiceReference && cfg.Scenario == ScenarioMisuseRetain {
		lc.Concurrency = max(cfg.Concurrency, RetainWave)
		lc.Burst = lc.Concurrency
	}
	lc.Seed, lc.Random = cfg.Seed, true
	lc.Rules.Window, lc.RulesFile = cfg.Window, cfg.RulesFile
	if cfg.Service == ServiceExample {
		lc.Rules.Sets = semconvRules
	}
	lc.PrometheusBin, lc.OutDir, lc.Job = cfg.PrometheusBin, cfg.OutDir, cfg.jobName()
	lc.DiffSample, lc.Gate = cfg.DiffSample, cfg.Gate
	lc.ScrapeInterval, lc.Progress, lc.ProfileSeconds = cfg.ScrapeInterval, cfg.Progress, cfg.ProfileSeconds
	lc.Record, lc.RecordName = cfg.Record, cfg.Scenario
	lc.RecordCommand = fmt.Sprintf("make demo SCENARIO=%s DURATION=%s DEMO_SEED=%d DEMO_RECORD=%s", cfg.Scenario, cfg.Duration, cfg.Seed, cfg.Record)
	lc.Title = "poolparity demo: " + cfg.Scenario
	if cfg.Service != ServiceReference {
		lc.Title = "poolparity demo: " + cfg.jobName() + " " + cfg.Scenario
	}
	lc.Context = []parity.KV{{Key: "scenario", Value: scenarioDesc(cfg)}}
	return lc
}

// CommandLine is the `poolparity-parity local` command line that runs the
// loop lc describes (its Title, Context and Record's description aside).
func CommandLine(lc localmode.Config) string {
	args := []string{"poolparity-parity", "local"}
	add := func(flag, v string) {
		if v != "" {
			args = append(args, "-"+flag, shellQuote(v))
		}
	}
	for _, t := range []struct {
		name string
		tr   localmode.Track
	}{{"stable", lc.Stable}, {"gray", lc.Gray}} {
		add(t.name+"-cmd", t.tr.Cmd)
		add(t.name+"-url", t.tr.URL)
		add(t.name+"-mode", t.tr.Mode)
		for _, e := range t.tr.Env {
			add(t.name+"-env", e)
		}
		add(t.name+"-scrape-url", t.tr.ScrapeURL)
		add(t.name+"-pprof", t.tr.PprofURL)
	}
	add("clear-env", strings.Join(lc.ClearEnv, ","))
	add("requests", lc.RequestsFile)
	add("diff-requests", lc.DiffRequestsFile)
	def := localmode.Default()
	num := func(flag string, v, d any) {
		if v != d {
			add(flag, fmt.Sprint(v))
		}
	}
	num("rps", lc.RPS, def.RPS)
	num("gray-weight", lc.GrayWeight, def.GrayWeight)
	num("duration", lc.Duration, def.Duration)
	num("concurrency", lc.Concurrency, def.Concurrency)
	num("burst", lc.Burst, def.Burst)
	num("seed", lc.Seed, def.Seed)
	if lc.Random {
		args = append(args, "-random")
	}
	for _, s := range lc.Rules.Sets {
		add("set", s)
	}
	num("window", lc.Rules.Window, def.Rules.Window)
	num("for", lc.Rules.For, def.Rules.For)
	add("rules-file", lc.RulesFile)
	add("job", lc.Job)
	num("diff-sample", lc.DiffSample, def.DiffSample)
	num("gate", lc.Gate, def.Gate)
	num("scrape-interval", lc.ScrapeInterval, def.ScrapeInterval)
	if lc.Stable.PprofURL != "" {
		num("profile-seconds", lc.ProfileSeconds, def.ProfileSeconds)
	}
	add("prometheus", lc.PrometheusBin)
	num("out", lc.OutDir, def.OutDir)
	add("record", lc.Record)
	return strings.Join(args, " ")
}

// shellQuote quotes s for sh when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// trackSpec is one track of a scenario: its name, pool mode, port (0: a
// free one), and the settings beyond the common ones (the scenario's
// fault, GOGC).
type trackSpec struct {
	name, mode string
	port       int
	extra      []string
}

// scenarioTracks returns the stable and gray tracks of cfg's scenario.
func scenarioTracks(cfg Config) (stable, gray trackSpec) {
	// Validate has checked the name; an unknown one runs the good tracks.
	sc, err := scenario.Lookup(cfg.Scenario)
	if err != nil {
		sc, _ = scenario.Lookup(scenario.Good)
	}
	var grayFault []string
	if sc.FaultLatency > 0 {
		// The demo's latency is configurable (DEMO_FAULT_LATENCY); its
		// default is the scenario's.
		grayFault = []string{"FAULT_LATENCY=" + cfg.FaultLatency.String()}
		if cfg.FaultErrorRate > 0 {
			grayFault = append(grayFault, "FAULT_ERROR_RATE="+strconv.FormatFloat(cfg.FaultErrorRate, 'g', -1, 64))
		}
	}
	var both []string
	if cfg.Scenario == ScenarioMisuseRetain {
		// Both tracks collect as rarely as a service whose live heap is
		// a few times this one's; see RetainGOGC.
		both = []string{"GOGC=" + strconv.Itoa(RetainGOGC)}
	}
	return trackSpec{name: "stable", mode: sc.StableMode, port: cfg.StablePort, extra: both},
		trackSpec{name: "gray", mode: sc.GrayMode, port: cfg.GrayPort, extra: append(grayFault, both...)}
}

// trackCmd starts a track's service binary (appended, quoted): its
// address on the local mode's PORT, the settings both tracks share.
const trackCmd = "HTTP_ADDR=127.0.0.1:$PORT LOG_LEVEL=warn SHUTDOWN_DELAY=0s SHUTDOWN_TIMEOUT=5s exec "

// trackSettings is the service's configuration for track t beyond
// trackCmd's and GRAY_STATUS (the local mode's): its pool mode, the Redis at
// redisAddr (none: the example service), the profiles on pprofPort (0:
// none) and the scenario's settings.
func trackSettings(t trackSpec, redisAddr string, pprofPort int) []string {
	s := []string{"POOL_MODE=" + t.mode}
	if redisAddr != "" {
		s = append(s, "REDIS_ADDR="+redisAddr)
	}
	if pprofPort != 0 {
		s = append(s, "PPROF_ADDR=127.0.0.1:"+strconv.Itoa(pprofPort))
	}
	return append(s, t.extra...)
}

// startRedis starts the Redis server shared by both tracks, redis-server or
// one embedded in the demo process as the mode says (auto: redis-server when
// on PATH), and returns a description.
func (r *runner) startRedis(ctx context.Context, logDir string) (string, error) {
	if r.cfg.Service == ServiceExample {
		return "none: the example service has no Redis, so the Redis SLI is not judged", nil
	}
	mode := r.cfg.Redis
	bin, lookErr := exec.LookPath("redis-server")
	if mode == RedisAuto {
		mode = RedisEmbedded
		if lookErr == nil {
			mode = RedisServer
		}
	}
	if mode == RedisEmbedded {
		// One server in the demo process, shared by both tracks: a server
		// inside each track would count its own allocations in that
		// track's heap, and blame the pool for them.
		srv, err := embedredis.Start()
		if err != nil {
			return "", err
		}
		r.onTeardown(srv.Close)
		r.redisArg = srv.Addr()
		return fmt.Sprintf("embedded in the demo process at %s, shared by both tracks (install redis-server to use it instead)", srv.Addr()), nil
	}
	if lookErr != nil {
		return "", fmt.Errorf("REDIS=server: %w", lookErr)
	}
	port, err := r.ports.Reserve(0)
	if err != nil {
		return "", fmt.Errorf("redis port: %w", err)
	}
	dir := filepath.Join(r.tmpDir, "redis")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p, err := localproc.Start("redis", bin, []string{
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no", "--dir", dir,
	}, childEnv(), logDir)
	if err != nil {
		return "", err
	}
	r.procs.Add(p)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := localproc.WaitUntil(ctx, p, 15*time.Second, 100*time.Millisecond, "redis-server", redisPing(addr)); err != nil {
		return "", err
	}
	r.redisArg = addr
	return fmt.Sprintf("redis-server %s at %s, shared by both tracks", redisVersion(bin), addr), nil
}

// childEnv returns the demo's environment without the service's variables,
// plus set (KEY=value entries): what the processes the demo starts itself
// get.
func childEnv(set ...string) []string {
	return localproc.Environ(os.Environ(), serviceEnvKeys, set...)
}

var redisVersionRe = regexp.MustCompile(`v=(\S+)`)

// redisVersion returns e.g. "7.0.15" from `redis-server --version`.
func redisVersion(bin string) string {
	if m := redisVersionRe.FindStringSubmatch(localproc.Output(bin, "--version")); m != nil {
		return m[1]
	}
	return "(unknown version)"
}

func faultDesc(fault []string) string {
	if len(fault) == 0 {
		return ""
	}
	return ", " + strings.Join(fault, " ")
}

// scenarioDesc describes cfg's scenario on one line.
func scenarioDesc(cfg Config) string {
	stable, gray := scenarioTracks(cfg)
	return fmt.Sprintf("%s: stable %s%s, gray %s%s; %s of load, %d%% to gray", cfg.Scenario, stable.mode, faultDesc(stable.extra),
		gray.mode, faultDesc(gray.extra), cfg.Duration, cfg.GrayWeight)
}

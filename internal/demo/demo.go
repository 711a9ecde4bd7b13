// Package demo runs the whole poolparity loop on one machine: a stable and a
// gray instance of the service, a weighted splitter in front of them, a
// bounded load generator, and a real Prometheus that scrapes both instances
// and evaluates the shipped rules. When the load has run, it reads the
// parity report through the Prometheus HTTP API, prints it, and writes it
// as JSON and HTML.
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
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/instrument/pprofhttp"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/embedredis"
	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/localproc"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/promread"
	"github.com/poolparity/poolparity/internal/parity/render"
	"github.com/poolparity/poolparity/internal/recorded"
	"github.com/poolparity/poolparity/internal/scenario"
	"github.com/poolparity/poolparity/internal/splitter"
)

// Result is what a run produced.
type Result struct {
	Report       parity.Report
	Load         loadgen.Stats
	Stable, Gray splitter.Stats
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

	procs    localproc.Group
	mu       sync.Mutex // guards closers
	closers  []func()
	tmpDir   string
	promURL  string
	redisArg string
	// pprofPorts are the stable and gray tracks' profile ports.
	pprofPorts [2]int
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

// binaries are the files a local run needs, resolved.
type binaries struct {
	service, prometheus string
	rules               string // the rules file, absolute
	logDir              string // the processes' logs, under OutDir
}

// run runs the local demo: it starts Redis, the two tracks, Prometheus and
// the split, runs the load, and reads, prints and writes the report.
func (r *runner) run(ctx context.Context) (res Result, err error) {
	bins, err := r.prepare()
	if err != nil {
		return res, err
	}
	splitLn, err := r.reservePorts()
	if err != nil {
		return res, err
	}
	redisDesc, err := r.startRedis(ctx, bins.logDir)
	if err != nil {
		return res, err
	}
	stable, gray := scenarioTracks(r.cfg)
	stable.pprofPort, gray.pprofPort = r.pprofPorts[0], r.pprofPorts[1]
	targets, err := r.startTracks(ctx, bins, stable, gray)
	if err != nil {
		return res, err
	}
	promVersion := localproc.PrometheusVersion(bins.prometheus)
	if err := r.startPrometheus(ctx, bins.prometheus, bins.rules, r.cfg, targets, bins.logDir); err != nil {
		return res, err
	}
	sp, splitURL, err := r.startSplit(splitLn, stable, gray)
	if err != nil {
		return res, err
	}

	cfg := r.cfg
	fmt.Fprintf(r.stdout, "demo: %s, scenario %s: stable %s (%s%s), gray %s (%s%s); split %d%% to gray at %s\n",
		cfg.jobName(), cfg.Scenario, stable.url(), stable.mode, faultDesc(stable.extra), gray.url(), gray.mode, faultDesc(gray.extra), cfg.GrayWeight, splitURL)
	fmt.Fprintf(r.stdout, "demo: Redis %s; Prometheus %s at %s (rules %s)\n", redisDesc, promVersion, r.promURL, cfg.RulesFile)
	fmt.Fprintf(r.stdout, "demo: load %.0f req/s for %s with %s; report at the end (Ctrl-C stops everything)\n",
		cfg.RPS, cfg.Duration, scenarioLoad(cfg))

	report, loadStats, err := r.loadAndRead(ctx, splitURL, sp, stable, gray)
	if err != nil {
		return res, err
	}
	res.Load, res.Stable, res.Gray = loadStats, sp.Stats(splitter.Stable), sp.Stats(splitter.Gray)
	report.Title = "poolparity demo: " + cfg.Scenario
	if cfg.Service != ServiceReference {
		report.Title = "poolparity demo: " + cfg.jobName() + " " + cfg.Scenario
	}
	report.Context = []parity.KV{
		{Key: "scenario", Value: scenarioDesc(cfg, stable, gray)},
		{Key: "load", Value: fmt.Sprintf("%d requests in %s (%.0f req/s target, %s, seed %d), %d errors, %d arrivals dropped at the in-flight bound",
			loadStats.Requests, loadStats.Elapsed.Round(time.Second), cfg.RPS, scenarioLoad(cfg), cfg.Seed, loadStats.Errors, loadStats.Dropped)},
		{Key: "client latency", Value: "from each arrival's scheduled time, both tracks: " + loadStats.Latency.String()},
		{Key: "split", Value: fmt.Sprintf("%d%% to gray: stable %d requests, gray %d", cfg.GrayWeight, res.Stable.Requests, res.Gray.Requests)},
		{Key: "prometheus", Value: fmt.Sprintf("Prometheus %s, scrape and evaluation every %s, rules %s", promVersion, cfg.ScrapeInterval, cfg.RulesFile)},
		{Key: "redis", Value: redisDesc},
	}
	res.Report = report
	res.Expectations = Expect(cfg.Scenario, report)
	res.Files, err = r.printAndWrite(report, res.Expectations)
	return res, err
}

// prepare resolves the binaries and the rules file, and creates the log
// and temporary directories.
func (r *runner) prepare() (b binaries, err error) {
	cfg := r.cfg
	build := "go build -o bin/poolparity ./app/cmd/poolparity"
	if cfg.Service == ServiceExample {
		build = "go build -o " + ExampleServiceBin + " ./examples/imagesvc"
	}
	if b.service, err = localproc.Executable(cfg.ServiceBin, "the service binary (build it: "+build+")"); err != nil {
		return b, err
	}
	if b.prometheus, err = localproc.Executable(cfg.PrometheusBin, "the prometheus binary (install it: hack/install-tools.sh prometheus, or set DEMO_PROMETHEUS_BIN)"); err != nil {
		return b, err
	}
	if b.rules, err = filepath.Abs(cfg.RulesFile); err != nil {
		return b, err
	}
	if _, err := os.Stat(b.rules); err != nil {
		return b, fmt.Errorf("rules file: %w (generate it: go run ./hack/genrules)", err)
	}
	b.logDir = filepath.Join(cfg.OutDir, "logs")
	if err := os.MkdirAll(b.logDir, 0o755); err != nil {
		return b, fmt.Errorf("creating %s: %w", b.logDir, err)
	}
	if r.tmpDir, err = os.MkdirTemp("", "poolparity-demo-"); err != nil {
		return b, err
	}
	return b, nil
}

// reservePorts checks the configured ports free, or picks free ones, and
// records them in r.cfg. The splitter's port is held open (its listener is
// returned) until the split serves on it.
func (r *runner) reservePorts() (net.Listener, error) {
	cfg := &r.cfg
	ports := map[string]*int{"stable": &cfg.StablePort, "gray": &cfg.GrayPort, "prometheus": &cfg.PrometheusPort}
	for _, name := range []string{"stable", "gray", "prometheus"} {
		var err error
		if *ports[name], err = localproc.ReservePort(*ports[name]); err != nil {
			return nil, fmt.Errorf("%s port: %w", name, err)
		}
	}
	for i := range r.pprofPorts {
		var err error
		if r.pprofPorts[i], err = localproc.ReservePort(0); err != nil {
			return nil, fmt.Errorf("profile port: %w", err)
		}
	}
	splitLn, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.SplitterPort)))
	if err != nil {
		return nil, fmt.Errorf("splitter port %d on 127.0.0.1 is not free: %w", cfg.SplitterPort, err)
	}
	cfg.SplitterPort = splitLn.Addr().(*net.TCPAddr).Port
	r.onTeardown(func() { splitLn.Close() })
	return splitLn, nil
}

// trackSpec is one track of a run: its name, pool mode, gray_status, port,
// and the settings beyond the common ones (the scenario's fault).
type trackSpec struct {
	name, mode, gray string
	port             int
	pprofPort        int // 0: no profile port
	extra            []string
}

func (t trackSpec) url() string { return fmt.Sprintf("http://127.0.0.1:%d", t.port) }

// pprofURL is the root of the track's profiles.
func (t trackSpec) pprofURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", t.pprofPort, pprofhttp.Prefix)
}

// scenarioTracks returns the stable and gray tracks of cfg's scenario.
func scenarioTracks(cfg Config) (stable, gray trackSpec) {
	// Validate has checked the name; an unknown one runs the good tracks.
	sc, err := scenario.Lookup(cfg.Scenario)
	if err != nil {
		sc, _ = scenario.Lookup(scenario.Good)
	}
	stableMode, grayMode := sc.StableMode, sc.GrayMode
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
	return trackSpec{name: "stable", mode: stableMode, gray: instrument.GrayStatusStable, port: cfg.StablePort, extra: both},
		trackSpec{name: "gray", mode: grayMode, gray: instrument.GrayStatusGray, port: cfg.GrayPort, extra: append(grayFault, both...)}
}

// loadShape is what a scenario changes in the load: how many requests in flight at most, how
// bursty the arrivals and how large the rare large bodies.
type loadShape struct {
	concurrency, burst, largeBodyBytes int
	// path, when set, replaces the item API's mix (the example service).
	path func(key int, rnd *rand.Rand) string
}

// scenarioLoad is the load of cfg's scenario. misuse-retain and
// misuse-hold add large PUTs: retain's pools keep whatever a large request
// grew, and hold's GC pressure empties the pools a held request takes many
// objects from at once. misuse-retain's arrivals also come in waves of
// RetainWave, so that a wave's worth of objects is in use at once and the
// pools keep that many (docs/pool-misuse.md).
func scenarioLoad(cfg Config) loadShape {
	l := loadShape{concurrency: cfg.Concurrency}
	if cfg.Service == ServiceExample {
		l.path = thumbnailPath
		return l
	}
	switch cfg.Scenario {
	case ScenarioMisuseRetain:
		l.largeBodyBytes = RetainLargeBodyBytes
		l.concurrency = max(cfg.Concurrency, RetainWave)
		l.burst = l.concurrency
	case ScenarioMisuseHold:
		l.largeBodyBytes = RetainLargeBodyBytes
	}
	return l
}

// thumbnailPath is scenario.ExampleLoadPath, parsed.
var thumbnailPath = func() func(int, *rand.Rand) string {
	p, err := loadgen.ParsePath(scenario.ExampleLoadPath)
	if err != nil {
		panic(err) // a constant: TestScenarioLoad parses it
	}
	return p
}()

func (l loadShape) String() string {
	s := fmt.Sprintf("open loop, at most %d in flight", l.concurrency)
	if l.path != nil {
		s += ", GET /thumbnail/{id}?w=32-256"
	}
	if l.burst > 1 {
		s += fmt.Sprintf(", in waves of %d", l.burst)
	}
	if l.largeBodyBytes > 0 {
		s += fmt.Sprintf(", one PUT in %d of %d KiB", loadgen.LargeBodyShare, l.largeBodyBytes>>10)
	}
	return s
}

// trackSettings is the service's configuration for track t on the Redis at
// redisAddr: what its process gets besides the caller's environment.
func trackSettings(t trackSpec, redisAddr string) []string {
	s := []string{
		"HTTP_ADDR=127.0.0.1:" + strconv.Itoa(t.port), "GRAY_STATUS=" + t.gray, "POOL_MODE=" + t.mode,
		"LOG_LEVEL=warn", "SHUTDOWN_DELAY=0s", "SHUTDOWN_TIMEOUT=5s", "REDIS_ADDR=" + redisAddr,
	}
	if t.pprofPort != 0 {
		s = append(s, "PPROF_ADDR=127.0.0.1:"+strconv.Itoa(t.pprofPort))
	}
	return append(s, t.extra...)
}

// startTracks starts the two tracks (TELEMETRY=otlp: each with a collector
// beside it), waits until each is ready, and returns what Prometheus
// scrapes: the tracks, or their collectors.
func (r *runner) startTracks(ctx context.Context, bins binaries, tracks ...trackSpec) ([]string, error) {
	sidecars, err := r.newSidecars(ctx, bins.logDir)
	if err != nil {
		return nil, err
	}
	var targets []string
	for _, tr := range tracks {
		target := fmt.Sprintf("127.0.0.1:%d", tr.port)
		if sidecars != nil {
			if target, tr.extra, err = sidecars.start(ctx, tr.name, tr.extra); err != nil {
				return nil, err
			}
		}
		targets = append(targets, target)
		p, err := localproc.Start(tr.name, bins.service, nil, childEnv(trackSettings(tr, r.redisArg)...), bins.logDir)
		if err != nil {
			return nil, err
		}
		r.procs.Add(p)
		if err := localproc.WaitUntil(ctx, p, 30*time.Second, 200*time.Millisecond, tr.name+" instance", localproc.HTTPOK(r.client, tr.url()+"/readyz")); err != nil {
			return nil, err
		}
	}
	return targets, nil
}

// startSplit serves the weighted split of stable and gray on splitLn and
// returns the splitter and its URL; teardown stops it.
func (r *runner) startSplit(splitLn net.Listener, stable, gray trackSpec) (*splitter.Splitter, string, error) {
	su, err := url.Parse(stable.url())
	if err != nil {
		return nil, "", err
	}
	gu, err := url.Parse(gray.url())
	if err != nil {
		return nil, "", err
	}
	sp, err := splitter.New(su, gu, r.cfg.GrayWeight, r.cfg.Seed)
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: sp, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(splitLn) }()
	r.onTeardown(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		sp.Close()
	})
	return sp, fmt.Sprintf("http://127.0.0.1:%d", r.cfg.SplitterPort), nil
}

// loadAndRead runs the load through the split at splitURL for the
// configured duration, showing progress, then reads the parity report and
// its charts while the load still runs, and stops the load.
func (r *runner) loadAndRead(ctx context.Context, splitURL string, sp *splitter.Splitter, stable, gray trackSpec) (parity.Report, loadgen.Stats, error) {
	cfg := r.cfg
	// The load runs on past Duration, so that the report reads rules fed by
	// live traffic; it is stopped right after the report is read.
	margin := 90 * time.Second
	shape := scenarioLoad(cfg)
	gen, err := loadgen.New(loadgen.Config{
		BaseURL: splitURL, Duration: cfg.Duration + margin,
		MaxRequests: int(cfg.RPS*(cfg.Duration+margin).Seconds()*1.1) + 100,
		RPS:         cfg.RPS, Concurrency: shape.concurrency, Keys: 2000, Seed: cfg.Seed,
		LargeBodyBytes: shape.largeBodyBytes, Burst: shape.burst, Path: shape.path,
	}, nil)
	if err != nil {
		return parity.Report{}, loadgen.Stats{}, err
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	loadDone := make(chan struct{})
	var loadStats loadgen.Stats
	go func() {
		defer close(loadDone)
		loadStats, _ = gen.Run(loadCtx)
	}()
	start := time.Now()

	if err := r.progress(ctx, start, gen, sp); err != nil {
		stopLoad()
		<-loadDone
		fmt.Fprintln(r.stdout)
		return parity.Report{}, loadStats, err
	}

	promAPI, err := r.promAPI()
	if err != nil {
		return parity.Report{}, loadStats, err
	}
	// A demo run is minutes long, so the statistical test samples the window's rules every
	// few scrapes since the rules filled (overlapping samples: shown, not decisive).
	now := time.Now()
	statSpan := max(now.Sub(start)-30*time.Second, 10*cfg.ScrapeInterval)
	cat := catalog.Default()
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	report, err := parity.Evaluate(qctx, promAPI, cat, parity.Options{
		At: now, Window: cfg.Window, Selector: cfg.selector(),
		Stat: parity.StatReport, StatWindow: statSpan, StatStep: max(statSpan/20, cfg.ScrapeInterval), SampleFamily: "-",
		Alerts: true, Pools: true,
	})
	if err != nil {
		return report, loadStats, err
	}
	if report.Verdict == parity.Fail && cfg.ProfileSeconds > 0 {
		// The evidence of a FAIL, taken while the load still runs.
		fmt.Fprintf(r.stdout, "demo: FAIL: profiling both tracks for %ds to compare them (the load goes on)\n", cfg.ProfileSeconds)
		if report.Profiles, err = r.profiles(ctx, sp, stable, gray); err != nil {
			report.Notes = append(report.Notes, "profiles not compared: "+err.Error())
		}
	}
	if cfg.Record != "" {
		rec, err := recorded.Record(qctx, promAPI, start, now, cfg.ScrapeInterval)
		if err != nil {
			return report, loadStats, err
		}
		rec.Name, rec.Scenario = filepath.Base(cfg.Record), cfg.Scenario
		rec.Command = fmt.Sprintf("make demo SCENARIO=%s DURATION=%s DEMO_SEED=%d DEMO_RECORD=%s", cfg.Scenario, cfg.Duration, cfg.Seed, cfg.Record)
		if err := rec.WriteFile(cfg.Record); err != nil {
			return report, loadStats, err
		}
		fmt.Fprintf(r.stdout, "recorded %d series, %d steps of %s, into %s\n", len(rec.Series), rec.Len(), rec.Step, cfg.Record)
	}
	step := max(cfg.ScrapeInterval, now.Sub(start)/150).Round(time.Second)
	if report.Charts, err = parity.Charts(qctx, promAPI, cat, cfg.Window, cfg.selector(), start, now, step); err != nil {
		return report, loadStats, err
	}
	stopLoad()
	<-loadDone
	return report, loadStats, nil
}

// printAndWrite prints the report and the scenario's expectations, and
// writes the report files.
func (r *runner) printAndWrite(report parity.Report, exps []Expectation) ([]string, error) {
	fmt.Fprintln(r.stdout)
	if err := render.Text(r.stdout, report); err != nil {
		return nil, err
	}
	ok := true
	for _, e := range exps {
		ok = ok && e.OK
	}
	if ok {
		fmt.Fprintf(r.stdout, "scenario %s: as expected (%s)\n", r.cfg.Scenario, expectationText(exps))
	} else {
		fmt.Fprintf(r.stdout, "scenario %s: NOT as expected (%s)\n", r.cfg.Scenario, expectationText(exps))
	}
	files, err := render.Files(report, r.cfg.OutDir)
	if err != nil {
		return files, err
	}
	fmt.Fprintf(r.stdout, "report: %s\n", strings.Join(files, ", "))
	return files, nil
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
	port, err := localproc.ReservePort(0)
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

// prometheusConfig renders the Prometheus configuration of a run: scrape
// and evaluate every ScrapeInterval, load rules, scrape the two targets as
// job poolparity (with TELEMETRY=otlp, keeping the targets' job and
// instance over the collectors' exported ones, as the chart does).
func prometheusConfig(cfg Config, rules string, targets []string) string {
	conf := localproc.PrometheusHeader("poolparity-demo", cfg.ScrapeInterval, rules) + fmt.Sprintf(`  - job_name: %[3]s
    static_configs:
      - targets: [%[1]q, %[2]q]
`, targets[0], targets[1], cfg.jobName())
	if cfg.Telemetry == TelemetryOTLP {
		// As in the chart's ServiceMonitor: the collector names the job after
		// service.name; keep the target's job and instance.
		conf += `    metric_relabel_configs:
      - action: labeldrop
        regex: exported_(job|instance)
`
	}
	return conf
}

// startPrometheus writes a config scraping the two targets (the tracks, or
// their collectors), starts Prometheus and waits until it has scraped both.
func (r *runner) startPrometheus(ctx context.Context, bin, rules string, cfg Config, targets []string, logDir string) error {
	conf := prometheusConfig(cfg, rules, targets)
	confPath := filepath.Join(cfg.OutDir, "prometheus.yml")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", confPath, err)
	}
	p, promURL, err := localproc.StartPrometheus(ctx, r.client, localproc.Prometheus{
		Bin: bin, ConfigFile: confPath, DataDir: r.tmpDir, LogDir: logDir, Port: cfg.PrometheusPort, Env: childEnv(),
	})
	if p != nil {
		r.procs.Add(p)
	}
	r.promURL = promURL
	if err != nil {
		return err
	}
	promAPI, err := r.promAPI()
	if err != nil {
		return err
	}
	return localproc.WaitScraping(ctx, p, promAPI, cfg.selector(), 2)
}

func (r *runner) promAPI() (promread.Querier, error) {
	// The one client of every reader (bounded in time and size); queries get
	// more time than the readiness probes: on a busy machine a range query
	// can take seconds.
	return promread.New(r.promURL, promread.ClientConfig{})
}

// progress prints the progress line until the load has run cfg.Duration or
// ctx ends.
func (r *runner) progress(ctx context.Context, start time.Time, gen *loadgen.Generator, sp *splitter.Splitter) error {
	interval := r.cfg.Progress
	if r.cfg.TTY {
		interval = time.Second
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	end := time.NewTimer(r.cfg.Duration)
	defer end.Stop()
	last, lastAt := [2]uint64{}, start
	print := func(final bool) {
		now := time.Now()
		st, gr := sp.Stats(splitter.Stable), sp.Stats(splitter.Gray)
		dt := now.Sub(lastAt).Seconds()
		if dt <= 0 {
			dt = 1
		}
		ls := gen.Stats()
		line := fmt.Sprintf("[%s/%s] stable %5.1f req/s  gray %5.1f req/s  errors %d (stable %d, gray %d)  %d requests",
			clock(now.Sub(start)), clock(r.cfg.Duration),
			float64(st.Requests-last[0])/dt, float64(gr.Requests-last[1])/dt,
			ls.Errors, st.Errors, gr.Errors, ls.Requests)
		last, lastAt = [2]uint64{st.Requests, gr.Requests}, now
		if r.cfg.TTY {
			fmt.Fprint(r.stdout, "\r\033[K"+line)
			if final {
				fmt.Fprintln(r.stdout)
			}
			return
		}
		fmt.Fprintln(r.stdout, line)
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-end.C:
			if time.Since(lastAt) > interval/2 {
				print(true)
			} else if r.cfg.TTY {
				fmt.Fprintln(r.stdout)
			}
			fmt.Fprintln(r.stdout, "demo: reading the parity report from Prometheus ...")
			return nil
		case <-ticker.C:
			print(false)
		}
	}
}

func clock(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	return fmt.Sprintf("%d:%02d", s/60, s%60)
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

func scenarioDesc(cfg Config, stable, gray trackSpec) string {
	return fmt.Sprintf("%s: stable %s%s, gray %s%s; %s of load, %d%% to gray", cfg.Scenario, stable.mode, faultDesc(stable.extra),
		gray.mode, faultDesc(gray.extra), cfg.Duration, cfg.GrayWeight)
}

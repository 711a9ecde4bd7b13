package demo

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/diffcheck"
	"github.com/poolparity/poolparity/internal/envflag"
	"github.com/poolparity/poolparity/internal/localmode"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/scenario"
)

// Scenarios: the names of internal/scenario, which holds what each one runs
// on the gray track and what its report must say.
const (
	// ScenarioGood runs a pooled gray track against an unpooled stable one.
	ScenarioGood = scenario.Good
	// ScenarioRegression adds FaultLatency to the pooled gray track.
	ScenarioRegression = scenario.Regression
	// ScenarioAA runs both tracks unpooled: an A/A test of the comparison.
	ScenarioAA = scenario.AA
	// ScenarioMisuseHold runs the gray track with POOL_MODE=misuse-hold:
	// pooled objects taken when a request arrives and held to its end.
	ScenarioMisuseHold = scenario.MisuseHold
	// ScenarioMisuseReset runs the gray track with POOL_MODE=misuse-reset:
	// buffers pre-sized to the largest request and zeroed on every Put.
	ScenarioMisuseReset = scenario.MisuseReset
	// ScenarioMisuseRetain runs the gray track with POOL_MODE=misuse-retain
	// (no size cap), under a load where one PUT in 16 is large.
	ScenarioMisuseRetain = scenario.MisuseRetain
	// ScenarioMisuseDirty runs the gray track with POOL_MODE=misuse-dirty: a
	// reset that forgets the decoded item, caught by the sanitizer.
	ScenarioMisuseDirty = scenario.MisuseDirty
)

// Services: the demo's SERVICE values.
const (
	// ServiceReference runs the reference service, bin/poolparity, with
	// Redis and the rules for the project's metric names.
	ServiceReference = scenario.ServiceReference
	// ServiceExample runs the example service, bin/imagesvc
	// (examples/imagesvc): thumbnails, no Redis, OpenTelemetry's HTTP and
	// runtime names, read by the rules rendered for them (semconvRules).
	ServiceExample = scenario.ServiceExample
)

// ExampleServiceBin is the default binary of the example service.
const ExampleServiceBin = "bin/imagesvc"

// RetainLargeBodyBytes is about the size of the large PUTs (one in 16,
// examples/requests/large-item.json) of the misuse-retain and misuse-hold
// scenarios' load, over the pools' 256 KiB size cap.
const RetainLargeBodyBytes = 768 << 10

// RetainWave is the smallest in-flight bound per track of the load of the
// misuse-retain scenario, whose arrivals come to each track in waves of
// that many: the objects of
// one wave are in use at once, so each pool holds that many, and without
// a size cap each of them keeps the largest buffer any request grew.
const RetainWave = 128

// RetainGOGC is the GOGC of both tracks in the misuse-retain scenario.
// sync.Pool drops the objects not reused within two garbage collections.
// The demo service's live heap is about 10 MiB, so at the scenario's rate
// of allocation it collects several times a second and its pools keep
// little; a service with a live heap several times larger (caches,
// connections) collects that many times less often, and its pools keep
// what they hold across collections. GOGC=400 gives the small service that
// cadence, on both tracks alike.
const RetainGOGC = 400

// Redis modes.
const (
	// RedisAuto uses redis-server when it is on PATH, else RedisEmbedded.
	RedisAuto = "auto"
	// RedisEmbedded runs one server in the demo process, shared by both
	// tracks, so that neither track's heap counts the server's allocations.
	RedisEmbedded = "embedded"
	// RedisServer starts redis-server (which must be on PATH), shared by
	// both tracks.
	RedisServer = "server"
)

// Telemetry paths: how Prometheus gets the tracks' series.
const (
	// TelemetryMetrics scrapes each track's /metrics.
	TelemetryMetrics = "metrics"
	// TelemetryOTLP runs one OpenTelemetry Collector beside each track (the
	// sidecar pattern): the track pushes OTLP to it, Prometheus scrapes the
	// collectors and never the tracks.
	TelemetryOTLP = "otlp"
)

// Config is the demo's configuration. Ports of 0 mean a free ephemeral port
// on 127.0.0.1; every other port is checked free before use. It becomes a
// localmode.Config (LocalConfig).
type Config struct {
	Service    string // poolparity (the reference service) or example
	Scenario   string
	Duration   time.Duration // how long the load runs
	GrayWeight int           // percent of the arrivals sent to gray

	RPS         float64 // target request rate, both tracks together
	Concurrency int     // the bound on requests in flight, both tracks together, half each (arrivals past it are dropped)
	Seed        uint64  // the load's random draw of requests

	StablePort, GrayPort int

	ServiceBin    string // the service's binary
	PrometheusBin string // the prometheus binary
	RulesFile     string // a rules file holding the Window family; empty: rendered for the service's names
	Window        string // recording-rule window read by the report: 1m
	OutDir        string // reports and logs
	Requests      string // the requests file; empty: the scenario's (ScenarioRequests) under Root
	Root          string // the repository's checkout, which holds the scenarios' requests files
	DiffSample    int    // requests of the differential check; 0: none
	// Gate is the verdict behind the exit status, as poolparity-parity's
	// -gate: counts by default, as poolparity-parity's and PoolCanary's
	// (docs/demo.md, "The report").
	Gate string

	Redis          string        // auto, embedded or server
	Telemetry      string        // metrics or otlp
	CollectorBin   string        // the collector binary (otlp)
	CollectorConf  string        // the sidecar's collector configuration (otlp)
	ScrapeInterval time.Duration // Prometheus scrape and rule evaluation interval

	FaultLatency   time.Duration // regression: added to every gray API request
	FaultErrorRate float64       // regression: fraction of gray API requests answered 500

	// ProfileSeconds is the length of the CPU profiles taken from both
	// tracks when the verdict is FAIL, compared in the report with their
	// allocation profiles (docs/profiles.md); 0 takes none.
	ProfileSeconds int

	// Record, when set, is a file the run's per-track series are dumped to
	// (gzip JSON, hack/verdicteval/recorded) before Prometheus stops.
	Record string

	// Progress is the interval between progress lines.
	Progress time.Duration
}

// Default returns the defaults: a 3-minute good scenario at 150 req/s split
// 50/50.
func Default() Config {
	return Config{
		Service:        ServiceReference,
		Scenario:       ScenarioGood,
		Duration:       3 * time.Minute,
		GrayWeight:     50,
		RPS:            150,
		Concurrency:    16,
		Seed:           1,
		ServiceBin:     "bin/poolparity",
		PrometheusBin:  "bin/prometheus",
		Window:         "1m",
		Gate:           string(parity.GateCounts),
		OutDir:         "out",
		Root:           ".",
		DiffSample:     localmode.Default().DiffSample,
		Redis:          RedisAuto,
		Telemetry:      TelemetryMetrics,
		CollectorBin:   "bin/otelcol",
		CollectorConf:  "deploy/helm/poolparity/files/otel-collector.yaml",
		ScrapeInterval: 2 * time.Second,
		FaultLatency:   scenario.FaultLatency,
		Progress:       10 * time.Second,
		ProfileSeconds: 5,
	}
}

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid demo configuration")

// ErrReportOnlyMoved is returned by Parse for -report-only (DEMO_REPORT_ONLY):
// reading the report from an existing Prometheus is poolparity-parity's job.
var ErrReportOnlyMoved = fmt.Errorf("%w: -report-only moved to poolparity-parity: run `make parity` for the kind cluster, "+
	"or `go run ./app/cmd/poolparity-parity -prometheus-url URL [-window 5m] [-selector ...]`", ErrInvalid)

// Validate checks c and returns every problem at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...))
	}
	if _, err := model.ParseDuration(c.Window); err != nil {
		bad("WINDOW must be a Prometheus duration such as 1m or 5m, got %q", c.Window)
	}
	if !slices.Contains(scenario.Services, c.Service) {
		bad("SERVICE must be one of %s, got %q", strings.Join(scenario.Services, ", "), c.Service)
	} else if names := scenario.NamesFor(c.Service); !slices.Contains(names, c.Scenario) {
		bad("SCENARIO must be one of %s with SERVICE=%s, got %q", strings.Join(names, ", "), c.Service, c.Scenario)
	}
	if _, err := parity.ParseGate(c.Gate); err != nil {
		bad("DEMO_GATE: %v", err)
	}
	if c.Duration < 20*time.Second || c.Duration > 2*time.Hour {
		bad("DURATION must be between 20s and 2h (the rules need about 15s of traffic), got %s", c.Duration)
	}
	if c.GrayWeight < 1 || c.GrayWeight > 99 {
		bad("GRAY_WEIGHT must be between 1 and 99 (both tracks need traffic), got %d", c.GrayWeight)
	}
	if c.RPS < 10 || c.RPS > 5000 {
		bad("RPS must be between 10 and 5000, got %g", c.RPS)
	}
	if c.ProfileSeconds < 0 || c.ProfileSeconds > 60 {
		bad("PROFILE_SECONDS must be between 0 (no profiles) and 60, got %d", c.ProfileSeconds)
	}
	if c.Concurrency < 1 || c.Concurrency > 512 {
		bad("CONCURRENCY must be between 1 and 512, got %d", c.Concurrency)
	}
	for _, p := range []struct {
		name string
		port int
	}{{"STABLE_PORT", c.StablePort}, {"GRAY_PORT", c.GrayPort}} {
		if p.port < 0 || p.port > 65535 {
			bad("%s must be 0 (any free port) or 1-65535, got %d", p.name, p.port)
		}
	}
	if c.StablePort != 0 && c.StablePort == c.GrayPort {
		bad("port %d is configured twice", c.StablePort)
	}
	if c.DiffSample < 0 || c.DiffSample > diffcheck.MaxRequests {
		bad("DIFF_SAMPLE must be between 0 (no differential check) and %d, got %d", diffcheck.MaxRequests, c.DiffSample)
	}
	for name, v := range map[string]string{"SERVICE_BIN": c.ServiceBin, "PROMETHEUS_BIN": c.PrometheusBin, "OUT": c.OutDir} {
		if v == "" {
			bad("%s must not be empty", name)
		}
	}
	if !slices.Contains([]string{RedisAuto, RedisEmbedded, RedisServer}, c.Redis) {
		bad("REDIS must be auto, embedded or server, got %q", c.Redis)
	}
	if c.Telemetry != TelemetryMetrics && c.Telemetry != TelemetryOTLP {
		bad("TELEMETRY must be %s or %s, got %q", TelemetryMetrics, TelemetryOTLP, c.Telemetry)
	}
	if c.Telemetry == TelemetryOTLP && (c.CollectorBin == "" || c.CollectorConf == "") {
		bad("OTELCOL_BIN and OTELCOL_CONFIG must not be empty with TELEMETRY=otlp")
	}
	if c.ScrapeInterval < time.Second || c.ScrapeInterval > 15*time.Second {
		bad("SCRAPE_INTERVAL must be between 1s and 15s, got %s", c.ScrapeInterval)
	}
	if c.FaultLatency < 0 || c.FaultLatency > 5*time.Second {
		bad("FAULT_LATENCY must be between 0 and 5s, got %s", c.FaultLatency)
	}
	if c.FaultErrorRate < 0 || c.FaultErrorRate > 1 {
		bad("FAULT_ERROR_RATE must be between 0 and 1, got %g", c.FaultErrorRate)
	}
	if c.Progress < time.Second {
		bad("PROGRESS must be at least 1s, got %s", c.Progress)
	}
	return errors.Join(errs...)
}

// Parse fills a Config from args and the environment read by getenv, then
// validates it. SCENARIO, DURATION, GRAY_WEIGHT and TELEMETRY are read as they are
// (the Makefile passes them); every other variable has the prefix DEMO_
// (DEMO_RPS, DEMO_STABLE_PORT, ...) so that the demo never picks up a
// variable meant for the service, such as REDIS_ADDR. Each setting is also
// a flag, the variable's name in lower case with '-' for '_' and without
// the prefix (-scenario, -rps, -stable-port); a flag wins over a variable.
// -report-only (DEMO_REPORT_ONLY), which read the report from an existing
// Prometheus, is refused with an error that points to poolparity-parity,
// where it moved.
func Parse(name string, args []string, getenv func(string) string, usage io.Writer) (Config, error) {
	c := Default()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(usage)
	e := envflag.New(fs, getenv, envflag.TrimPrefix("DEMO_"), envflag.WrapErrors(ErrInvalid))

	var reportOnly bool
	e.Bool(&reportOnly, "DEMO_REPORT_ONLY", "moved: use poolparity-parity (make parity) to read the report from an existing Prometheus")

	e.String(&c.Service, "SERVICE", "poolparity (the reference service, with Redis) or example (examples/imagesvc: thumbnails, no Redis, OpenTelemetry names; docs/adopt.md)")
	e.String(&c.Scenario, "SCENARIO", "good (pooled gray vs unpooled stable), regression (gray with injected latency), aa (both unpooled), or a pool misuse on gray: misuse-hold, misuse-reset, misuse-retain, misuse-dirty (docs/pool-misuse.md); with SERVICE=example: good, aa or misuse-cap")
	e.Duration(&c.Duration, "DURATION", "how long the load runs")
	e.Int(&c.GrayWeight, "GRAY_WEIGHT", "percent of the arrivals sent to the gray track")
	e.Float64(&c.RPS, "DEMO_RPS", "target requests per second, both tracks together")
	e.Int(&c.Concurrency, "DEMO_CONCURRENCY", "the open-loop bound on requests in flight, both tracks together (half each); an arrival past it is dropped and counted")
	e.Uint64(&c.Seed, "DEMO_SEED", "seed of the load's random draw from the requests file")
	e.Int(&c.StablePort, "DEMO_STABLE_PORT", "port of the stable instance on 127.0.0.1; 0 picks a free one")
	e.Int(&c.GrayPort, "DEMO_GRAY_PORT", "port of the gray instance; 0 picks a free one")
	e.String(&c.Requests, "DEMO_REQUESTS", "requests file the load draws from and the differential check sends (default: the scenario's, "+ReferenceRequests+", "+ReferenceLargeRequests+" or "+ExampleRequests+")")
	e.String(&c.Root, "DEMO_ROOT", "the repository's checkout, where the scenarios' requests files are (examples/)")
	e.Int(&c.DiffSample, "DEMO_DIFF_SAMPLE", "requests whose responses the differential check compares (0: no check)")
	e.String(&c.Gate, "DEMO_GATE", "verdict behind the exit status, as poolparity-parity -gate (counts needs about two minutes of load): "+parity.GateHelp())
	e.String(&c.ServiceBin, "DEMO_SERVICE_BIN", "path of the service's binary (default bin/poolparity; "+ExampleServiceBin+" with SERVICE=example)")
	e.String(&c.PrometheusBin, "DEMO_PROMETHEUS_BIN", "path of the prometheus binary")
	e.String(&c.RulesFile, "DEMO_RULES", "a Prometheus rules file with the short-window family (default: rendered for the service's names into OUT/rules.yml, as deploy/prometheus/poolparity-demo.rules.yml or, with SERVICE=example, poolparity-semconv-demo.rules.yml)")
	e.String(&c.Window, "DEMO_WINDOW", "recording-rule window the report reads")
	e.String(&c.OutDir, "DEMO_OUT", "directory for report.{txt,json,html} and logs/")
	e.String(&c.Redis, "DEMO_REDIS", "auto (redis-server if installed, else embedded), embedded or server")
	e.String(&c.Telemetry, "TELEMETRY", "metrics (Prometheus scrapes each track's /metrics) or otlp (each track pushes OTLP to its own collector, which Prometheus scrapes)")
	e.String(&c.CollectorBin, "DEMO_OTELCOL_BIN", "path of the OpenTelemetry Collector binary (TELEMETRY=otlp; hack/install-tools.sh otelcol)")
	e.String(&c.CollectorConf, "DEMO_OTELCOL_CONFIG", "the collector configuration run beside each track (TELEMETRY=otlp)")
	e.Duration(&c.ScrapeInterval, "DEMO_SCRAPE_INTERVAL", "Prometheus scrape and rule evaluation interval")
	e.Duration(&c.FaultLatency, "DEMO_FAULT_LATENCY", "latency added to the gray track in the regression scenario")
	e.Float64(&c.FaultErrorRate, "DEMO_FAULT_ERROR_RATE", "fraction of gray requests answered 500 in the regression scenario")
	e.String(&c.Record, "DEMO_RECORD", "dump the run's per-track series to this file (gzip JSON) for verdicteval's recorded corpus")
	e.Int(&c.ProfileSeconds, "DEMO_PROFILE_SECONDS", "on a FAIL, profile both tracks' CPU this many seconds and compare it and their allocations per request in the report (0: no profiles)")
	e.Duration(&c.Progress, "DEMO_PROGRESS", "interval between progress lines")

	if err := e.Parse(args); err != nil {
		return c, err
	}
	if reportOnly {
		return c, ErrReportOnlyMoved
	}
	if c.Service == ServiceExample {
		// The example's own binary, unless set by flag or variable.
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["service-bin"] && getenv("DEMO_SERVICE_BIN") == "" {
			c.ServiceBin = ExampleServiceBin
		}
	}
	return c, c.Validate()
}

// jobName is the Prometheus job the demo scrapes the tracks as: poolparity,
// or imagesvc for the example service.
func (c Config) jobName() string {
	if c.Service == ServiceExample {
		return "imagesvc"
	}
	return "poolparity"
}

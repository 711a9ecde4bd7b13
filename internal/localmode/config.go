package localmode

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/diffcheck"
	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/localproc"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/rulesgen"
)

// PoisonEnv is the variable Config.Poison sets to 1 in the tracks' command
// environment: the reference service, the examples and docs/adopt.md's
// csvjson then build their instrument pools with poisoning on.
const PoisonEnv = "POOLPARITY_POISON"

// ErrInvalid is wrapped by every configuration error (exit status 2).
var ErrInvalid = errors.New("invalid local configuration")

// Track is how a run gets one track: a command it starts, a URL already
// serving, or both (the command, told to listen on the URL's port).
type Track struct {
	// Cmd is a command line run with sh -c, with PORT (the port it must
	// listen on, on 127.0.0.1) and GRAY_STATUS (false or true) added to
	// the environment. Empty: the track is already running at URL.
	Cmd string
	// URL is the track's base URL on loopback (http://127.0.0.1:8081). With
	// Cmd its port is the one given in PORT; empty with Cmd, a free
	// loopback port is chosen.
	URL string
	// Mode is the pool_mode label the track's metrics must carry (e.g.
	// unpooled, pooled); empty checks none.
	Mode string
	// Env are KEY=value variables added to the command's environment,
	// after PORT and GRAY_STATUS (a key given here wins over the caller's).
	// Unused without Cmd.
	Env []string
	// ScrapeURL, when set, is the base URL whose MetricsPath Prometheus
	// scrapes instead of URL's: a collector the track pushes its metrics to
	// (an OpenTelemetry Collector beside it). The track's own metrics are
	// still the ones its pool mode is checked on.
	ScrapeURL string
	// PprofURL is the root of the track's net/http/pprof handlers
	// (http://127.0.0.1:6060/debug/pprof/): with Config.ProfileSeconds, a
	// FAIL takes both tracks' profiles and compares them per request.
	PprofURL string
}

// Config is a local run's configuration.
type Config struct {
	// Stable and Gray are the two tracks.
	Stable, Gray Track
	// RequestsFile is the requests file (package targets) the load replays
	// and the differential check sends.
	RequestsFile string
	// RPS is the rate of arrivals, both tracks together; GrayWeight the
	// share of them sent to gray (0 to 1, both excluded).
	RPS        float64
	GrayWeight float64
	// Duration is how long the load runs before the report is read.
	Duration time.Duration
	// Concurrency bounds each track's requests in flight (an arrival past
	// it is dropped and counted, never delayed).
	Concurrency int
	// MetricsPath is the tracks' metrics path, scraped by Prometheus.
	MetricsPath string
	// Rules are the overrides of the chart's rules (the service's own
	// metric names); Rules.Window is the family the report reads.
	Rules rulesgen.Options
	// PrometheusBin is the prometheus binary; empty: ./bin/prometheus if
	// present, else prometheus on PATH.
	PrometheusBin string
	// DiffSample is how many requests the differential check compares; 0
	// runs none.
	DiffSample int
	// DiffRequestsFile, when set, is the requests file the differential
	// check sends instead of RequestsFile: for example the load's reads
	// only, when its writes go to a store both tracks share (sent to both
	// at once, two writes race). The check then runs after the load, one
	// request at a time, as DiffUnderLoad false makes it: the load's writes
	// would race its comparisons.
	DiffRequestsFile string
	// DiffUnderLoad makes the differential check compare gray's own load
	// responses, DiffSample of them sampled over the run (one in each block
	// of arrivals, at a random position), each with stable's answer to the
	// same request, asked twice at once as the sample comes, the load going
	// on at its concurrency: what only concurrency corrupts (a buffer put
	// back to its pool before the response is written from it, one buffer
	// shared by all requests) is seen. False, or with DiffRequestsFile, the
	// check runs after the load, one request at a time (diffcheck.Check),
	// and sees none of it.
	DiffUnderLoad bool
	// DiffIgnore lists the paths where gray may legitimately differ from
	// stable (diffcheck.Options.Ignore: ".id", ".items[*].created_at",
	// "status"), besides the noise the check learns from stable asked twice.
	DiffIgnore []string
	// DiffExclude lists the requests the differential check leaves out: a
	// method (DELETE) or an endpoint, METHOD and path as the report names
	// them, every segment of digits written {n} or as digits ("PUT
	// /api/v1/items/{n}"). Every other request of the file is compared: list
	// here the ones whose answer depends on when they are asked (a write, a
	// counter, a read of what the load writes).
	DiffExclude []string
	// Poison adds POOLPARITY_POISON=1 to both tracks' command environment
	// (a track's own Env still wins): a service built on instrument's pools
	// with instrument.WithBytePoison or WithPoison behind that variable, as
	// the reference service and docs/adopt.md's csvjson are, overwrites each
	// object at Put and checks it at Get, so that a use after Put corrupts
	// its response every time (the differential check sees it) and a write
	// after Put is counted as dirty (PoolParityDirtyObjects). Off by
	// default: it costs about 25 ns per KiB of capacity put back, which only
	// a pooled track pays (an unpooled stable puts nothing back), so that it
	// biases the CPU and latency rows against a pooled gray with large
	// buffers (the reference service's misuse-reset gray paid 3 ms per
	// request). A correctness run, not a performance verdict. Unused for a
	// track given by URL only.
	Poison bool
	// OutDir receives the report files, the Prometheus configuration, the
	// rules and the processes' logs.
	OutDir string
	// Gate is the verdict behind the exit status, as poolparity-parity's
	// -gate: confirmed (Default's), thresholds, sequential or counts. A
	// local run is read once, at the end of a load of minutes, which the
	// windowed confirmed gate suits; the report's default, counts, is for
	// a rollout read again and again.
	Gate string
	// ScrapeInterval is Prometheus' scrape and rule evaluation interval.
	ScrapeInterval time.Duration
	// Progress is the interval between progress lines.
	Progress time.Duration

	// Job is the Prometheus job the tracks are scraped as, which every
	// query selects; empty: Job.
	Job string
	// RulesFile, when set, is a rules file of the caller's own that
	// Prometheus loads instead of the rules rendered from Rules; Rules.Window
	// still names the family the report reads.
	RulesFile string
	// Seed seeds the load (Random order) and nothing else.
	Seed uint64
	// Random draws each arrival's request from the requests file at random
	// (seeded) instead of replaying the file in order.
	Random bool
	// Burst, when above 1, makes each track's arrivals come in waves of
	// Burst at once, the average rate unchanged (loadgen.Config.Burst); at
	// most Concurrency.
	Burst int
	// ProfileSeconds, when above 0 and both tracks have a PprofURL, takes
	// a CPU profile of this many seconds from both tracks at once when the
	// verdict is FAIL (the load still running), then their allocation
	// profiles, and compares them per request in the report.
	ProfileSeconds int
	// Record, when set, is a file the run's per-track series are dumped to
	// (gzip JSON, package recorded) before Prometheus stops; RecordName and
	// RecordCommand describe the run in it.
	Record, RecordName, RecordCommand string
	// ClearEnv are variables removed from the caller's environment before
	// the tracks' commands get it (a name ending with '_' removes every
	// variable with that prefix): the service's own settings, which a
	// shell may hold for another purpose.
	ClearEnv []string
	// Title replaces the report's title.
	Title string
	// Context are lines added to the report's context, after its own.
	Context []parity.KV
	// Ports hands out the loopback ports of the tracks without a URL and
	// of Prometheus; a caller that starts processes of its own for the run
	// passes the one it picks their ports from, so no two get the same.
	// Nil: the run's own.
	Ports *localproc.Ports

	// GrayPackage, when set, is the Go main package of gray (an import
	// path, or a directory such as ./cmd/svc), built from the working
	// directory: the run builds it into OutDir (go build) and starts
	// Gray.Cmd with BIN, the build's path, in its environment ($BIN, as
	// $PORT); an empty Gray.Cmd is then exec "$BIN". With RaceDuration it
	// is also built with -race for the race phase.
	GrayPackage string
	// RaceDuration, with GrayPackage, is how long the race phase loads a
	// -race build of gray, after the main load: started with Gray.Cmd (BIN
	// the race build, GORACE set, a fresh port), driven at Concurrency (and
	// Burst) with the requests file at RPS, then stopped; a data race its
	// log reports fails the run, naming both stacks' top frames. 0 runs no
	// race phase, and so does an empty GrayPackage: Validate refuses a
	// RaceDuration without it. DefaultRaceDuration is the flag's default.
	RaceDuration time.Duration
}

// DefaultRaceDuration is -race-duration's default: the race phase's load,
// when -gray-pkg is given.
const DefaultRaceDuration = 20 * time.Second

// maxRaceDuration bounds RaceDuration.
const maxRaceDuration = 30 * time.Minute

// raceCmd is gray's command when GrayPackage is set and Gray.Cmd empty.
const raceCmd = `exec "$BIN"`

// grayTrack is gray as the run starts it: with GrayPackage and no command,
// its command runs the build.
func (c Config) grayTrack() Track {
	t := c.Gray
	if c.GrayPackage != "" && t.Cmd == "" {
		t.Cmd = raceCmd
	}
	return t
}

// raceProblems are the problems of the gray build and the race phase.
func (c Config) raceProblems() []string {
	var out []string
	switch {
	case c.RaceDuration < 0 || c.RaceDuration > maxRaceDuration:
		out = append(out, fmt.Sprintf("RACE_DURATION must be between 0 (no race phase) and %s, got %s", maxRaceDuration, c.RaceDuration))
	case c.RaceDuration > 0 && c.GrayPackage == "":
		out = append(out, "-race-duration needs -gray-pkg: the race phase builds gray's Go package with -race")
	}
	if strings.HasPrefix(c.GrayPackage, "-") || strings.ContainsAny(c.GrayPackage, " \t\n") {
		out = append(out, fmt.Sprintf("GRAY_PKG must be a Go package, an import path or a directory such as ./cmd/svc, got %q", c.GrayPackage))
	}
	return out
}

// job is the Prometheus job of the run.
func (c Config) job() string {
	if c.Job != "" {
		return c.Job
	}
	return Job
}

// selector picks the run's series in every query.
func (c Config) selector() string { return fmt.Sprintf("job=%q", c.job()) }

// Default returns the defaults: 2 minutes at 200 requests/s, half to gray
// (at a few tens a second per track, a process's CPU with no request at all
// is a large and uneven share of its CPU per request: docs/adopt.md),
// the rules' 1m family with 30s alerts, 400 requests compared (with
// none mismatching, the fewest whose 95% interval lies under diffcheck's 1%
// maximum: 381), under load.
func Default() Config {
	return Config{
		RPS: 200, GrayWeight: 0.5, Duration: 2 * time.Minute, Concurrency: 32, MetricsPath: "/metrics",
		Rules:      rulesgen.Options{Window: "1m", For: "30s"},
		DiffSample: 400, DiffUnderLoad: true, OutDir: "out", Gate: string(parity.GateConfirmed),
		ScrapeInterval: 5 * time.Second, Progress: 10 * time.Second,
	}
}

// Validate checks c and returns every problem at once.
func (c Config) Validate() error {
	var errs []error
	for _, msg := range slices.Concat(c.trackProblems(), c.loadProblems(), c.checkProblems(), c.raceProblems()) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrInvalid, msg))
	}
	return errors.Join(errs...)
}

// trackProblems are the problems of the tracks.
func (c Config) trackProblems() []string {
	var out []string
	for _, t := range []struct {
		name string
		tr   Track
	}{{"STABLE", c.Stable}, {"GRAY", c.grayTrack()}} {
		if msg := t.tr.problem(); msg != "" {
			out = append(out, t.name+": "+msg)
		}
	}
	if c.Stable.URL != "" && c.Stable.URL == c.Gray.URL {
		out = append(out, fmt.Sprintf("STABLE_URL and GRAY_URL are the same, %s: the tracks are two builds", c.Stable.URL))
	}
	return out
}

// loadProblems are the problems of the load.
func (c Config) loadProblems() []string {
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	if c.RequestsFile == "" {
		bad("REQUESTS is required: a requests file (docs/loadgen.md), e.g. one line GET /api/v1/items/1")
	}
	if !(c.RPS >= 1 && c.RPS <= 5000) {
		bad("RPS must be between 1 and 5000, got %g", c.RPS)
	}
	if !(c.GrayWeight > 0 && c.GrayWeight < 1) {
		bad("GRAY_WEIGHT must be between 0 and 1, both excluded (both tracks need traffic), got %g", c.GrayWeight)
	}
	if c.Duration < 20*time.Second || c.Duration > 2*time.Hour {
		bad("DURATION must be between 20s and 2h (the rules need about 15s of traffic), got %s", c.Duration)
	}
	if c.Concurrency < 1 || c.Concurrency > 1024 {
		bad("CONCURRENCY must be between 1 and 1024, got %d", c.Concurrency)
	}
	if c.Progress < time.Second {
		bad("PROGRESS must be at least 1s, got %s", c.Progress)
	}
	if c.Burst < 0 || c.Burst > c.Concurrency {
		bad("BURST must be between 0 and CONCURRENCY (%d), got %d", c.Concurrency, c.Burst)
	}
	return out
}

// checkProblems are the problems of what reads and judges the tracks.
func (c Config) checkProblems() []string {
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	if !strings.HasPrefix(c.MetricsPath, "/") || strings.ContainsAny(c.MetricsPath, "?# ") {
		bad("METRICS_PATH must be a path such as /metrics, got %q", c.MetricsPath)
	}
	if _, err := model.ParseDuration(c.Rules.Window); err != nil {
		bad("-window must be a Prometheus duration such as 1m, got %q", c.Rules.Window)
	}
	if c.DiffSample < 0 || c.DiffSample > diffcheck.MaxRequests {
		bad("DIFF_SAMPLE must be between 0 (no differential check) and %d, got %d", diffcheck.MaxRequests, c.DiffSample)
	}
	if _, err := diffcheck.ParseIgnore(c.DiffIgnore); err != nil {
		bad("DIFF_IGNORE: %v", err)
	}
	if _, err := parseExclude(c.DiffExclude); err != nil {
		bad("DIFF_EXCLUDE: %v", err)
	}
	if c.OutDir == "" {
		bad("OUT must not be empty")
	}
	if _, err := parity.ParseGate(c.Gate); err != nil {
		bad("GATE: %v", err)
	}
	if c.ScrapeInterval < time.Second || c.ScrapeInterval > 15*time.Second {
		bad("SCRAPE_INTERVAL must be between 1s and 15s, got %s", c.ScrapeInterval)
	}
	if c.ProfileSeconds < 0 || c.ProfileSeconds > 60 {
		bad("PROFILE_SECONDS must be between 0 (no profiles) and 60, got %d", c.ProfileSeconds)
	}
	if c.ProfileSeconds > 0 && (c.Stable.PprofURL == "") != (c.Gray.PprofURL == "") {
		bad("-profile-seconds compares two tracks' profiles: give both -stable-pprof and -gray-pprof, or neither")
	}
	if c.Job != "" && !model.LabelValue(c.Job).IsValid() {
		bad("JOB must be a label value, got %q", c.Job)
	}
	return out
}

// problem says what is wrong with t, or "".
func (t Track) problem() string {
	if t.Cmd == "" && t.URL == "" {
		return "give a command (_CMD) that starts the track, or the URL (_URL) where it runs"
	}
	for _, kv := range t.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.ContainsAny(k, " \t") {
			return fmt.Sprintf("ENV %q is not KEY=value", kv)
		}
	}
	for _, u := range []struct{ name, url string }{{"SCRAPE_URL", t.ScrapeURL}, {"PPROF", t.PprofURL}} {
		if u.url == "" {
			continue
		}
		if err := loadgen.CheckLoopback(u.url); err != nil {
			return fmt.Sprintf("%s must be an http URL on loopback: %v", u.name, err)
		}
	}
	if t.URL == "" {
		return ""
	}
	if err := loadgen.CheckLoopback(t.URL); err != nil {
		return fmt.Sprintf("URL must be an http URL on loopback such as http://127.0.0.1:8081: %v", err)
	}
	u, err := url.Parse(t.URL)
	if err != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return fmt.Sprintf("URL must be a base URL without a path or query, such as http://127.0.0.1:8081, got %q", t.URL)
	}
	if t.Cmd != "" && u.Port() == "" {
		return fmt.Sprintf("URL %q needs a port: the command is told to listen on it", t.URL)
	}
	return ""
}

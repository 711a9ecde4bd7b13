// Package config holds the service's configuration: one struct, filled from
// flags whose defaults come from environment variables, and validated before
// anything starts.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/envflag"
	"github.com/poolparity/poolparity/internal/pools"
	"github.com/poolparity/poolparity/internal/telemetry"
)

// Pool modes. The mode decides where the service takes its hot-path
// buffers, encoders and scratch structs from; the responses are the same
// (the misuse modes of pools.Modes pool them wrongly on purpose).
const (
	// ModePooled takes them from instrumented sync.Pools.
	ModePooled = string(pools.ModePooled)
	// ModeUnpooled allocates them plainly, per use.
	ModeUnpooled = string(pools.ModeUnpooled)
)

// DefaultPoolCheckEvery is POOL_CHECK_EVERY's default: the sanitizer
// checks one object in 16 taken from each pool.
const DefaultPoolCheckEvery = 16

// Config is the service's configuration. The zero value is not valid; use
// Default or Parse.
type Config struct {
	// HTTPAddr is the address the single HTTP port listens on (API, health,
	// metrics).
	HTTPAddr string
	// GrayStatus is this process's track: "true" for the gray (canary)
	// track, "false" for the stable one, "baseline" for a PoolCanary's fresh
	// baseline. It becomes the gray_status constant label on every series.
	GrayStatus string
	// PoolMode is one of pools.Modes: ModePooled, ModeUnpooled or a
	// misuse mode (docs/pool-misuse.md). It becomes the pool_mode constant
	// label on every series.
	PoolMode string
	// PoolCheckEvery runs the pool sanitizer on one object in every
	// PoolCheckEvery taken from each pool (syncpool_dirty_total counts the
	// dirty ones); 0 turns it off.
	PoolCheckEvery int
	// Poison turns on the pools' poisoned Puts (instrument.WithPoison), a
	// debug mode for a gray track or a test: every Put overwrites the
	// pooled object with a pattern (its buffers with 0xDB bytes), so a
	// use of the object after its Put reads the pattern every time instead
	// of another request's data now and then, and every Get checks the
	// pattern, counting an object written after its Put in
	// syncpool_dirty_total (which PoolParityDirtyObjects alerts on). Off
	// by default; no effect in POOL_MODE=unpooled, which has no pools.
	Poison bool
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// PprofAddr is the address of a port of its own serving the Go
	// runtime's profiles (instrument/pprofhttp); empty, the default, serves
	// none. It must differ from HTTPAddr: profiles never share the API's
	// port.
	PprofAddr string

	// GOGC is the garbage collector's target percentage, as the GOGC
	// environment variable gives it: a whole number, "off", or empty for
	// the Go default. The Go runtime reads the variable itself but ignores a
	// value it cannot parse; Validate refuses one, and GCPercent gives the
	// value to apply when it came as the -gogc flag.
	GOGC string

	// RedisAddr is host:port of the Redis server. Empty starts an embedded
	// in-process Redis-protocol server on a loopback port (data in memory).
	RedisAddr         string
	RedisPassword     string
	RedisDB           int
	RedisPoolSize     int
	RedisDialTimeout  time.Duration
	RedisReadTimeout  time.Duration
	RedisWriteTimeout time.Duration
	RedisPoolTimeout  time.Duration
	// RedisHealthInterval is the time between the pings of the Redis
	// health watcher (redis_up, redis_ping_failures_total and a log line
	// at a bounded rate). Readiness never depends on them.
	RedisHealthInterval time.Duration

	// ShutdownDelay is how long the service keeps serving, with /readyz
	// false, after a stop signal, so that load balancers stop sending
	// traffic before the listener closes.
	ShutdownDelay time.Duration
	// ShutdownTimeout bounds the drain of in-flight requests.
	ShutdownTimeout time.Duration

	// HeavyMaxInFlight bounds the heavy requests (reports and lists) a pod
	// serves at once; one more is shed with 429 and Retry-After. 0: no
	// bound. It is the only bound answered 429: a request past a byte
	// bound below is refused with 422, as no retry can help it.
	HeavyMaxInFlight int
	// HeavyQueueWait is how long a heavy request waits for a free slot
	// before it is shed. 0: shed at once.
	HeavyQueueWait time.Duration
	// HeavyMaxReadBytes bounds the bytes of stored items one heavy request
	// reads; past it the request is refused with 422. 0: no bound.
	HeavyMaxReadBytes int
	// HeavyMaxHeldBytes bounds the working state one report holds (term
	// counts, entries); past it the request is refused with 422. 0: no
	// bound.
	HeavyMaxHeldBytes int

	// FaultLatency is added to every API request. A testing knob: off (0)
	// by default.
	FaultLatency time.Duration
	// FaultErrorRate is the fraction (0..1) of API requests answered 500.
	// A testing knob: off (0) by default.
	FaultErrorRate float64

	// OTLP export (docs/otlp.md). Each is the standard OTEL_* variable of
	// the same meaning and also a flag; a flag given on the command line
	// wins over its variable, and the resolved values are handed to the
	// exporters explicitly, so either route behaves the same.
	//
	// OTLPEndpoint is the base URL of an OTLP receiver: when set, the
	// service exports traces to OTLPEndpoint/v1/traces and pushes metrics
	// to OTLPEndpoint/v1/metrics (over grpc, both to OTLPEndpoint).
	OTLPEndpoint string
	// OTLPTracesEndpoint and OTLPMetricsEndpoint are full URLs that replace
	// the derived one for their signal (and switch that signal on alone).
	OTLPTracesEndpoint  string
	OTLPMetricsEndpoint string
	// OTLPProtocol is http/protobuf or grpc.
	OTLPProtocol string
	// OTLPHeaders are comma-separated key=value pairs (values URL-encoded)
	// sent with every export.
	OTLPHeaders string
	// OTLPTimeoutMillis bounds one export request, in milliseconds.
	OTLPTimeoutMillis int
	// MetricExportIntervalMillis is the time between metric pushes, in
	// milliseconds.
	MetricExportIntervalMillis int
}

// Default returns the configuration with every default filled in.
func Default() Config {
	return Config{
		HTTPAddr:            ":8080",
		GrayStatus:          instrument.GrayStatusStable,
		PoolMode:            ModeUnpooled,
		PoolCheckEvery:      DefaultPoolCheckEvery,
		LogLevel:            "info",
		RedisPoolSize:       0, // go-redis default: 10 per GOMAXPROCS
		RedisDialTimeout:    2 * time.Second,
		RedisReadTimeout:    1 * time.Second,
		RedisWriteTimeout:   1 * time.Second,
		RedisPoolTimeout:    2 * time.Second,
		RedisHealthInterval: 5 * time.Second,
		ShutdownDelay:       5 * time.Second,
		ShutdownTimeout:     20 * time.Second,
		// Sized against the chart's 256Mi memory limit (GOMEMLIMIT 0.9 of it):
		// a report reads items in chunks of at most 4 MiB and holds at
		// most HeavyMaxHeldBytes besides, so two in flight stay well
		// under 100 MiB of heap (docs/service.md, "Cost budget").
		HeavyMaxInFlight:  2,
		HeavyQueueWait:    time.Second,
		HeavyMaxReadBytes: 256 << 20,
		HeavyMaxHeldBytes: 32 << 20,

		OTLPProtocol:               telemetry.ProtocolHTTPProtobuf,
		OTLPTimeoutMillis:          10000, // the OpenTelemetry default
		MetricExportIntervalMillis: 60000, // the OpenTelemetry default
	}
}

// Parse fills a Config from args (without the program name) and from the
// environment as read by getenv. Every setting is a flag whose name is the
// lower-case environment variable with '-' for '_' (REDIS_ADDR is
// -redis-addr); a flag given on the command line wins over the variable.
// Parse validates the result.
func Parse(name string, args []string, getenv func(string) string, usage io.Writer) (Config, error) {
	c := Default()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(usage)

	e := envflag.New(fs, getenv)
	e.String(&c.HTTPAddr, "HTTP_ADDR", "address of the HTTP port (API, /healthz, /readyz, /metrics)")
	e.String(&c.GrayStatus, "GRAY_STATUS", "this process's track: true (gray, the canary), false (stable) or baseline (a PoolCanary's fresh baseline)")
	e.String(&c.PoolMode, "POOL_MODE", "where hot-path buffers come from: pooled, unpooled, or a misuse mode for demos (misuse-hold, misuse-reset, misuse-retain, misuse-dirty)")
	e.Int(&c.PoolCheckEvery, "POOL_CHECK_EVERY", "pool sanitizer: check one object in every N taken from each pool for state its reset left (0: off)")
	e.Bool(&c.Poison, "POOLPARITY_POISON", "debug: poison every object the pools take back (1 or true), so that a use after Put reads 0xDB bytes and a write after Put is counted in syncpool_dirty_total")
	e.String(&c.LogLevel, "LOG_LEVEL", "log level: debug, info, warn or error")
	e.String(&c.GOGC, "GOGC", "the GC's target percentage: a whole number, or off; empty: the Go default (100); refused when the runtime could not parse it")
	e.String(&c.PprofAddr, "PPROF_ADDR", "address of a separate port serving /debug/pprof/ (CPU, heap, allocs, trace); empty: off")
	e.String(&c.RedisAddr, "REDIS_ADDR", "Redis host:port; empty starts an embedded in-memory server")
	e.String(&c.RedisPassword, "REDIS_PASSWORD", "Redis password")
	e.Int(&c.RedisDB, "REDIS_DB", "Redis database number")
	e.Int(&c.RedisPoolSize, "REDIS_POOL_SIZE", "Redis connection pool size (0: go-redis default)")
	e.Duration(&c.RedisDialTimeout, "REDIS_DIAL_TIMEOUT", "Redis dial timeout")
	e.Duration(&c.RedisReadTimeout, "REDIS_READ_TIMEOUT", "Redis read timeout")
	e.Duration(&c.RedisWriteTimeout, "REDIS_WRITE_TIMEOUT", "Redis write timeout")
	e.Duration(&c.RedisPoolTimeout, "REDIS_POOL_TIMEOUT", "wait for a free Redis connection")
	e.Duration(&c.RedisHealthInterval, "REDIS_HEALTH_INTERVAL", "time between Redis health pings (metric redis_up and bounded-rate logs; never readiness)")
	e.Duration(&c.ShutdownDelay, "SHUTDOWN_DELAY", "serve with /readyz false this long after a stop signal")
	e.Duration(&c.ShutdownTimeout, "SHUTDOWN_TIMEOUT", "bound on draining in-flight requests")
	e.Int(&c.HeavyMaxInFlight, "HEAVY_MAX_IN_FLIGHT", "heavy requests (reports, lists) served at once; more are shed with 429 (0: no bound)")
	e.Duration(&c.HeavyQueueWait, "HEAVY_QUEUE_WAIT", "how long a heavy request waits for a free slot before it is shed (0: shed at once)")
	e.Int(&c.HeavyMaxReadBytes, "HEAVY_MAX_READ_BYTES", "bytes of items one heavy request may read; past it 422 (0: no bound)")
	e.Int(&c.HeavyMaxHeldBytes, "HEAVY_MAX_HELD_BYTES", "bytes of working state one report may hold; past it 422 (0: no bound)")
	e.Duration(&c.FaultLatency, "FAULT_LATENCY", "testing knob: latency added to every API request")
	e.Float64(&c.FaultErrorRate, "FAULT_ERROR_RATE", "testing knob: fraction (0..1) of API requests answered 500")
	e.String(&c.OTLPEndpoint, "OTEL_EXPORTER_OTLP_ENDPOINT", "OTLP base URL: traces to <url>/v1/traces, metrics to <url>/v1/metrics (grpc: both to <url>); empty: no export")
	e.String(&c.OTLPTracesEndpoint, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTLP URL for traces, replacing the one derived from the endpoint")
	e.String(&c.OTLPMetricsEndpoint, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTLP URL for metrics, replacing the one derived from the endpoint")
	e.String(&c.OTLPProtocol, "OTEL_EXPORTER_OTLP_PROTOCOL", "OTLP protocol: http/protobuf or grpc")
	e.String(&c.OTLPHeaders, "OTEL_EXPORTER_OTLP_HEADERS", "headers for every OTLP export: key=value,... (values URL-encoded)")
	e.Int(&c.OTLPTimeoutMillis, "OTEL_EXPORTER_OTLP_TIMEOUT", "bound on one OTLP export, in milliseconds")
	e.Int(&c.MetricExportIntervalMillis, "OTEL_METRIC_EXPORT_INTERVAL", "time between OTLP metric pushes, in milliseconds")

	if err := e.Parse(args); err != nil {
		return Config{}, err
	}
	if gs, err := instrument.ParseGrayStatus(c.GrayStatus); err == nil {
		c.GrayStatus = gs // "1", "T"... are spellings of true; Validate names a bad value
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate reports every invalid setting at once.
func (c Config) Validate() error {
	var errs []error
	if c.HTTPAddr == "" {
		errs = append(errs, errors.New("HTTP_ADDR is empty"))
	}
	if gs, err := instrument.ParseGrayStatus(c.GrayStatus); err != nil || gs != c.GrayStatus {
		errs = append(errs, fmt.Errorf("GRAY_STATUS %q: want true, false or baseline", c.GrayStatus))
	}
	if _, err := pools.ParseMode(c.PoolMode); err != nil {
		errs = append(errs, fmt.Errorf("POOL_MODE: %w", err))
	}
	if c.PoolCheckEvery < 0 {
		errs = append(errs, fmt.Errorf("POOL_CHECK_EVERY=%d: want 0 (off) or more", c.PoolCheckEvery))
	}
	if _, _, err := c.GCPercent(); err != nil {
		errs = append(errs, err)
	}
	if c.PprofAddr != "" {
		if _, _, err := net.SplitHostPort(c.PprofAddr); err != nil {
			errs = append(errs, fmt.Errorf("PPROF_ADDR %q: want host:port or :port (empty: off)", c.PprofAddr))
		} else if c.PprofAddr == c.HTTPAddr {
			errs = append(errs, fmt.Errorf("PPROF_ADDR %q: the same as HTTP_ADDR; profiles get a port of their own", c.PprofAddr))
		}
	}
	if _, err := cli.ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("LOG_LEVEL=%w", err))
	}
	if c.RedisDB < 0 {
		errs = append(errs, fmt.Errorf("REDIS_DB=%d: must be >= 0", c.RedisDB))
	}
	if c.RedisPoolSize < 0 {
		errs = append(errs, fmt.Errorf("REDIS_POOL_SIZE=%d: must be >= 0", c.RedisPoolSize))
	}
	for _, n := range []struct {
		name string
		v    int
	}{
		{"HEAVY_MAX_IN_FLIGHT", c.HeavyMaxInFlight},
		{"HEAVY_MAX_READ_BYTES", c.HeavyMaxReadBytes},
		{"HEAVY_MAX_HELD_BYTES", c.HeavyMaxHeldBytes},
	} {
		if n.v < 0 {
			errs = append(errs, fmt.Errorf("%s=%d: must be >= 0 (0: no bound)", n.name, n.v))
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"REDIS_DIAL_TIMEOUT", c.RedisDialTimeout},
		{"REDIS_READ_TIMEOUT", c.RedisReadTimeout},
		{"REDIS_WRITE_TIMEOUT", c.RedisWriteTimeout},
		{"REDIS_POOL_TIMEOUT", c.RedisPoolTimeout},
		{"REDIS_HEALTH_INTERVAL", c.RedisHealthInterval},
		{"SHUTDOWN_DELAY", c.ShutdownDelay},
		{"SHUTDOWN_TIMEOUT", c.ShutdownTimeout},
		{"HEAVY_QUEUE_WAIT", c.HeavyQueueWait},
		{"FAULT_LATENCY", c.FaultLatency},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s=%s: must be >= 0", d.name, d.v))
		}
	}
	if c.RedisHealthInterval == 0 {
		errs = append(errs, errors.New("REDIS_HEALTH_INTERVAL=0s: must be > 0"))
	}
	if c.ShutdownTimeout == 0 {
		errs = append(errs, errors.New("SHUTDOWN_TIMEOUT=0s: must be > 0, or in-flight requests are dropped at shutdown"))
	}
	if c.FaultErrorRate < 0 || c.FaultErrorRate > 1 || c.FaultErrorRate != c.FaultErrorRate {
		errs = append(errs, fmt.Errorf("FAULT_ERROR_RATE=%v: want a fraction in [0, 1]", c.FaultErrorRate))
	}
	errs = append(errs, c.validateOTLP()...)
	return errors.Join(errs...)
}

func (c Config) validateOTLP() []error {
	var errs []error
	for _, u := range []struct{ name, v string }{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", c.OTLPEndpoint},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", c.OTLPTracesEndpoint},
		{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", c.OTLPMetricsEndpoint},
	} {
		if u.v == "" {
			continue
		}
		if err := telemetry.ValidateEndpoint(u.v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u.name, err))
		}
	}
	if c.OTLPProtocol != telemetry.ProtocolHTTPProtobuf && c.OTLPProtocol != telemetry.ProtocolGRPC {
		errs = append(errs, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want %s or %s", c.OTLPProtocol, telemetry.ProtocolHTTPProtobuf, telemetry.ProtocolGRPC))
	}
	if _, err := telemetry.ParseHeaders(c.OTLPHeaders); err != nil {
		errs = append(errs, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: %w", err))
	}
	if c.OTLPTimeoutMillis <= 0 {
		errs = append(errs, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT=%d: must be > 0 (milliseconds)", c.OTLPTimeoutMillis))
	}
	if c.MetricExportIntervalMillis <= 0 {
		errs = append(errs, fmt.Errorf("OTEL_METRIC_EXPORT_INTERVAL=%d: must be > 0 (milliseconds)", c.MetricExportIntervalMillis))
	}
	return errs
}

// OTLP returns the resolved OTLP export settings. Call it on a validated
// Config: headers that do not parse are left out.
func (c Config) OTLP() telemetry.OTLP {
	h, _ := telemetry.ParseHeaders(c.OTLPHeaders)
	return telemetry.OTLP{
		Protocol:        c.OTLPProtocol,
		Endpoint:        c.OTLPEndpoint,
		TracesEndpoint:  c.OTLPTracesEndpoint,
		MetricsEndpoint: c.OTLPMetricsEndpoint,
		Headers:         h,
		Timeout:         time.Duration(c.OTLPTimeoutMillis) * time.Millisecond,
		MetricInterval:  time.Duration(c.MetricExportIntervalMillis) * time.Millisecond,
	}
}

// Mode returns PoolMode as a pools.Mode (Validate has checked it).
func (c Config) Mode() pools.Mode { return pools.Mode(c.PoolMode) }

// GCPercent returns GOGC as runtime/debug.SetGCPercent takes it (-1 for
// "off") and whether it is set; an error for a value the Go runtime would
// silently replace by its default.
func (c Config) GCPercent() (percent int, set bool, err error) {
	switch c.GOGC {
	case "":
		return 0, false, nil
	case "off":
		return -1, true, nil
	}
	n, err := strconv.Atoi(c.GOGC)
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("GOGC=%q: want a whole number or off (the Go runtime would ignore it and use 100)", c.GOGC)
	}
	return n, true, nil
}

// Command imagesvc is an example service of another shape than the
// reference one: it draws thumbnails and answers them as PNG, with no Redis,
// instrumented with OpenTelemetry only (otelhttp's HTTP semantic
// conventions and the runtime instrumentation, exported to Prometheus) and
// the instrument module's pools. It imports nothing from poolparity's
// internal packages: it is what a team's own service looks like when it
// adopts poolparity (docs/adopt.md).
//
//	GET /thumbnail/{id}?w=N   a PNG of N x N pixels (16-512, default 128), the same for the same id
//	GET /healthz, /readyz     liveness and readiness
//	GET /metrics              Prometheus exposition
//
// Configuration is by flag or environment (the flag wins): -addr
// (HTTP_ADDR, default :8080), -gray-status (GRAY_STATUS, default false),
// -pool-mode (POOL_MODE: unpooled, pooled, or one of three misuses:
// misuse-cap, never-reset, never-put; default pooled),
// -shutdown-timeout (SHUTDOWN_TIMEOUT, default 10s), -pprof-addr (PPROF_ADDR: a
// separate port serving /debug/pprof/; default empty, off), -poison
// (POOLPARITY_POISON: 1 or true poisons what the pools take back, a debug
// mode that makes a use after Put visible; default off). `make demo
// SERVICE=example` runs a stable and a gray track of it side by side.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/instrument/pprofhttp"
)

// Config is the service's configuration.
type Config struct {
	// Addr is the listen address.
	Addr string
	// GrayStatus is the track's gray_status: true, false or baseline.
	GrayStatus string
	// PoolMode is one of Modes.
	PoolMode string
	// ShutdownTimeout bounds the graceful shutdown.
	ShutdownTimeout time.Duration
	// PprofAddr, when set, serves the Go profiles on a port of its own
	// (instrument/pprofhttp); empty, the default, serves none.
	PprofAddr string
	// Poison turns on the pools' poisoned Puts (instrument.WithPoison), a
	// debug mode: a use of an image or output buffer after its Put reads
	// 0xDB bytes every time, and a write after Put is counted in
	// syncpool_dirty_total. Off by default; no effect when unpooled.
	Poison bool
}

// parseConfig reads the flags in args over the environment in getenv.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	env := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	var cfg Config
	fs := flag.NewFlagSet("imagesvc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Addr, "addr", env("HTTP_ADDR", ":8080"), "listen address (HTTP_ADDR)")
	fs.StringVar(&cfg.GrayStatus, "gray-status", env("GRAY_STATUS", "false"), "the track's gray_status: true, false or baseline (GRAY_STATUS)")
	fs.StringVar(&cfg.PoolMode, "pool-mode", env("POOL_MODE", ModePooled), "pool mode: "+strings.Join(Modes, ", ")+" (POOL_MODE)")
	fs.StringVar(&cfg.PprofAddr, "pprof-addr", env("PPROF_ADDR", ""), "address of a separate port serving /debug/pprof/; empty: off (PPROF_ADDR)")
	poison, err := parseBool(env("POOLPARITY_POISON", "false"))
	if err != nil {
		return cfg, fmt.Errorf("POOLPARITY_POISON: %w", err)
	}
	fs.BoolVar(&cfg.Poison, "poison", poison, "poison what the pools take back, a debug mode that makes a use after Put visible (POOLPARITY_POISON: 1 or true)")
	timeout := env("SHUTDOWN_TIMEOUT", "10s")
	fs.Func("shutdown-timeout", "graceful shutdown bound (SHUTDOWN_TIMEOUT, default 10s)", func(s string) error { timeout = s; return nil })
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	d, err := time.ParseDuration(timeout)
	if err != nil {
		return cfg, fmt.Errorf("SHUTDOWN_TIMEOUT %q: %w", timeout, err)
	}
	cfg.ShutdownTimeout = d
	return cfg, cfg.Validate()
}

// parseBool reads a boolean setting: 1, t, true, 0, f, false in any case,
// as strconv.ParseBool does.
func parseBool(s string) (bool, error) {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%q: want 1, true, 0 or false", s)
	}
	return b, nil
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("HTTP_ADDR %q: %w", c.Addr, err)
	}
	if _, err := instrument.ParseTrack(c.GrayStatus, c.PoolMode); err != nil {
		return fmt.Errorf("GRAY_STATUS/POOL_MODE: %w", err)
	}
	if !slices.Contains(Modes, c.PoolMode) {
		return fmt.Errorf("POOL_MODE %q: want one of %s", c.PoolMode, strings.Join(Modes, ", "))
	}
	if c.PprofAddr != "" {
		if _, _, err := net.SplitHostPort(c.PprofAddr); err != nil || c.PprofAddr == c.Addr {
			return fmt.Errorf("PPROF_ADDR %q: want host:port, not the API's address (empty: off)", c.PprofAddr)
		}
	}
	if c.ShutdownTimeout <= 0 {
		return fmt.Errorf("SHUTDOWN_TIMEOUT %s: want a positive duration", c.ShutdownTimeout)
	}
	return nil
}

func main() {
	cfg, err := parseConfig(os.Args[1:], os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagesvc:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, cfg, log, nil)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagesvc:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, then shuts down gracefully. When ready is not
// nil, it receives the listener's address once the service serves.
func run(ctx context.Context, cfg Config, log *slog.Logger, ready chan<- string) error {
	track, err := instrument.ParseTrack(cfg.GrayStatus, cfg.PoolMode)
	if err != nil {
		return err
	}
	pools := instrument.NewRegistry()
	svc, err := newService(cfg.PoolMode, cfg.Poison, pools)
	if err != nil {
		return err
	}
	tel, err := newTelemetry(track, pools)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/thumbnail/", otelhttp.NewHandler(svc.routes(), "imagesvc", otelhttp.WithMeterProvider(tel.meters)))
	mux.Handle("GET /metrics", tel.handler)
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }
	mux.HandleFunc("GET /healthz", ok)
	mux.HandleFunc("GET /readyz", ok)

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if cfg.PprofAddr != "" {
		pln, err := net.Listen("tcp", cfg.PprofAddr)
		if err != nil {
			return errors.Join(fmt.Errorf("listening on PPROF_ADDR %s: %w", cfg.PprofAddr, err), srv.Close())
		}
		pctx, stopProfiles := context.WithCancel(context.WithoutCancel(ctx))
		pdone := make(chan error, 1)
		go func() { pdone <- pprofhttp.Serve(pctx, pln) }()
		defer func() { stopProfiles(); <-pdone }()
		log.Info("serving profiles", "addr", pln.Addr().String(), "path", pprofhttp.Prefix)
	}
	log.Info("serving", "addr", ln.Addr().String(), "gray_status", track.GrayStatus, "pool_mode", track.PoolMode, "poison", cfg.Poison)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	if terr := tel.shutdown(sctx); err == nil {
		err = terr
	}
	if err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}

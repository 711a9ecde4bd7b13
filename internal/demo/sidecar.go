package demo

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/poolparity/poolparity/internal/localmode"
	"github.com/poolparity/poolparity/internal/localproc"
)

// sidecars runs one OpenTelemetry Collector per track for TELEMETRY=otlp,
// with the chart's sidecar configuration, and a loopback sink that accepts
// the traces the collectors forward.
type sidecars struct {
	r       *runner
	bin     string
	conf    string
	traces  string // OTLP/HTTP base URL of the trace sink
	logDir  string
	pushInt time.Duration
}

// startSidecars, with TELEMETRY=otlp, starts one collector per track and
// makes each track push to its own and Prometheus scrape the collectors.
func (r *runner) startSidecars(ctx context.Context, logDir string, lc *localmode.Config) error {
	s, err := r.newSidecars(ctx, logDir)
	if s == nil || err != nil {
		return err
	}
	for _, t := range []struct {
		name string
		tr   *localmode.Track
	}{{"stable", &lc.Stable}, {"gray", &lc.Gray}} {
		prom, env, err := s.start(ctx, t.name, t.tr.Env)
		if err != nil {
			return err
		}
		t.tr.ScrapeURL, t.tr.Env = "http://"+prom, env
	}
	return nil
}

// newSidecars returns nil for TELEMETRY=metrics.
func (r *runner) newSidecars(ctx context.Context, logDir string) (*sidecars, error) {
	if r.cfg.Telemetry != TelemetryOTLP {
		return nil, nil
	}
	bin, err := localproc.Executable(r.cfg.CollectorBin, "the collector binary (install it: hack/install-tools.sh otelcol, or set DEMO_OTELCOL_BIN)")
	if err != nil {
		return nil, err
	}
	conf, err := filepath.Abs(r.cfg.CollectorConf)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("trace sink: %w", err)
	}
	sink := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
	})}
	go func() { _ = sink.Serve(ln) }()
	r.onTeardown(func() { _ = sink.Close() })
	return &sidecars{r: r, bin: bin, conf: conf, traces: "http://" + ln.Addr().String(), logDir: logDir, pushInt: r.cfg.ScrapeInterval}, nil
}

// start runs the collector of track name and waits for its Prometheus
// port. It returns the address Prometheus scrapes and env plus the
// variables that make the track push to the collector, once per scrape
// interval.
func (s *sidecars) start(ctx context.Context, name string, env []string) (string, []string, error) {
	otlpPort, err := s.r.ports.Reserve(0)
	if err != nil {
		return "", nil, fmt.Errorf("%s collector OTLP port: %w", name, err)
	}
	promPort, err := s.r.ports.Reserve(0)
	if err != nil {
		return "", nil, fmt.Errorf("%s collector Prometheus port: %w", name, err)
	}
	otlp := "127.0.0.1:" + strconv.Itoa(otlpPort)
	prom := "127.0.0.1:" + strconv.Itoa(promPort)
	p, err := localproc.Start(name+"-otelcol", s.bin, []string{"--config=" + s.conf}, childEnv(
		"OTELCOL_OTLP_HTTP="+otlp, "OTELCOL_PROMETHEUS="+prom, "OTELCOL_TRACES_ENDPOINT="+s.traces,
	), s.logDir)
	if err != nil {
		return "", nil, err
	}
	s.r.procs.Add(p)
	if err := localproc.WaitUntil(ctx, p, 30*time.Second, 200*time.Millisecond, name+" collector", localproc.HTTPOK(s.r.client, "http://"+prom+"/metrics")); err != nil {
		return "", nil, err
	}
	return prom, append(env,
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://"+otlp,
		"OTEL_METRIC_EXPORT_INTERVAL="+strconv.FormatInt(s.pushInt.Milliseconds(), 10),
	), nil
}

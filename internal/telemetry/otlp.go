package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	promb "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/instrument/otelexport"
)

// OTLP protocols (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolHTTPProtobuf = "http/protobuf"
	ProtocolGRPC         = "grpc"
)

// OTLP is the service's OTLP export configuration, already resolved from
// flags and environment by the caller. Every field is passed to the
// exporters explicitly, so a value given only as a flag takes effect
// exactly like its OTEL_* variable (the exporters' own reading of the
// process environment is overridden by these options).
type OTLP struct {
	// Protocol is ProtocolHTTPProtobuf (the default when empty) or
	// ProtocolGRPC.
	Protocol string
	// Endpoint is the base URL (OTEL_EXPORTER_OTLP_ENDPOINT). Over
	// http/protobuf traces go to Endpoint/v1/traces and metrics to
	// Endpoint/v1/metrics; over grpc both go to Endpoint as it is.
	Endpoint string
	// TracesEndpoint and MetricsEndpoint are full URLs
	// (OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT) that replace the one
	// derived from Endpoint for their signal.
	TracesEndpoint  string
	MetricsEndpoint string
	// Headers are sent with every export request (OTEL_EXPORTER_OTLP_HEADERS).
	Headers map[string]string
	// Timeout bounds one export request (OTEL_EXPORTER_OTLP_TIMEOUT).
	Timeout time.Duration
	// MetricInterval is the time between metric pushes
	// (OTEL_METRIC_EXPORT_INTERVAL).
	MetricInterval time.Duration
}

// TracesURL is the URL spans are posted to, or "" when traces are not
// exported.
func (o OTLP) TracesURL() string { return o.signalURL(o.TracesEndpoint, "v1/traces") }

// MetricsURL is the URL metrics are posted to, or "" when metrics are not
// pushed.
func (o OTLP) MetricsURL() string { return o.signalURL(o.MetricsEndpoint, "v1/metrics") }

func (o OTLP) signalURL(specific, path string) string {
	switch {
	case specific != "":
		return specific
	case o.Endpoint == "" || o.Protocol == ProtocolGRPC:
		return o.Endpoint
	}
	return strings.TrimSuffix(o.Endpoint, "/") + "/" + path
}

// exporterOptions builds one exporter package's options from o: the
// endpoint URL always, headers and timeout when set. Every OTLP exporter
// package has the same three option constructors, each of its own type.
func exporterOptions[Opt any](o OTLP, url string, endpoint func(string) Opt, headers func(map[string]string) Opt, timeout func(time.Duration) Opt) []Opt {
	opts := []Opt{endpoint(url)}
	if len(o.Headers) > 0 {
		opts = append(opts, headers(o.Headers))
	}
	if o.Timeout > 0 {
		opts = append(opts, timeout(o.Timeout))
	}
	return opts
}

// newMetricExporter returns the OTLP metric exporter for o's protocol,
// with every setting passed explicitly.
func newMetricExporter(ctx context.Context, o OTLP) (sdkmetric.Exporter, error) {
	if o.Protocol == ProtocolGRPC {
		return otlpmetricgrpc.New(ctx, exporterOptions(o, o.MetricsURL(),
			otlpmetricgrpc.WithEndpointURL, otlpmetricgrpc.WithHeaders, otlpmetricgrpc.WithTimeout)...)
	}
	return otlpmetrichttp.New(ctx, exporterOptions(o, o.MetricsURL(),
		otlpmetrichttp.WithEndpointURL, otlpmetrichttp.WithHeaders, otlpmetrichttp.WithTimeout)...)
}

// newSpanExporter returns the OTLP span exporter for o's protocol, with
// every setting passed explicitly.
func newSpanExporter(ctx context.Context, o OTLP) (sdktrace.SpanExporter, error) {
	if o.Protocol == ProtocolGRPC {
		return otlptracegrpc.New(ctx, exporterOptions(o, o.TracesURL(),
			otlptracegrpc.WithEndpointURL, otlptracegrpc.WithHeaders, otlptracegrpc.WithTimeout)...)
	}
	return otlptracehttp.New(ctx, exporterOptions(o, o.TracesURL(),
		otlptracehttp.WithEndpointURL, otlptracehttp.WithHeaders, otlptracehttp.WithTimeout)...)
}

// ValidateEndpoint reports whether u is an absolute http or https URL with
// a host, as OTLP/HTTP endpoints must be.
func ValidateEndpoint(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("parsing %q: %w", u, err)
	}
	if (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("%q: want an http:// or https:// URL with a host", u)
	}
	return nil
}

// ParseHeaders parses the OTEL_EXPORTER_OTLP_HEADERS format: comma-separated
// key=value pairs whose values are URL-encoded.
func ParseHeaders(s string) (map[string]string, error) {
	h := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("header %q: want key=value", kv)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("header %q: %w", k, err)
		}
		h[k] = dv
	}
	return h, nil
}

// Export failure counter: one series per signal, on the service registry,
// so /metrics shows failed pushes even when the collector is gone.
const (
	ExportFailuresName = "otlp_export_failures_total"
	SignalMetrics      = "metrics"
	SignalTraces       = "traces"
)

// ExportErrors counts failed OTLP exports and logs them at a bounded rate:
// at most one line per signal per Every, carrying how many failures it
// stands for. Its Handle method is an otel.ErrorHandler for the SDK's
// own errors.
type ExportErrors struct {
	failures *prometheus.CounterVec
	log      *slog.Logger
	every    time.Duration

	mu         sync.Mutex
	last       map[string]time.Time
	suppressed map[string]int
}

// NewExportErrors registers the failure counter on reg. log receives at
// most one line per signal per every.
func NewExportErrors(reg prometheus.Registerer, log *slog.Logger, every time.Duration) (*ExportErrors, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: ExportFailuresName,
		Help: "OTLP export requests that failed (endpoint unreachable, refused or too slow), by signal.",
	}, []string{"signal"})
	for _, s := range []string{SignalMetrics, SignalTraces} {
		c.WithLabelValues(s)
	}
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("registering %s: %w", ExportFailuresName, err)
	}
	return &ExportErrors{failures: c, log: log, every: every, last: map[string]time.Time{}, suppressed: map[string]int{}}, nil
}

// Record counts a failed export of signal and logs it unless a line for
// that signal was logged less than Every ago.
func (e *ExportErrors) Record(signal string, err error) {
	e.failures.WithLabelValues(signal).Inc()
	e.logLimited(signal, "OTLP export failed", err)
}

// Handle implements otel.ErrorHandler: SDK errors (dropped spans, failed
// collections) are logged at the same bounded rate, under signal "sdk".
func (e *ExportErrors) Handle(err error) { e.logLimited("sdk", "OpenTelemetry SDK error", err) }

func (e *ExportErrors) logLimited(key, msg string, err error) {
	now := time.Now()
	e.mu.Lock()
	if t, ok := e.last[key]; ok && now.Sub(t) < e.every {
		e.suppressed[key]++
		e.mu.Unlock()
		return
	}
	n := e.suppressed[key]
	e.last[key], e.suppressed[key] = now, 0
	e.mu.Unlock()
	e.log.Warn(msg, "signal", key, "error", err.Error(), "suppressed_since_last", n)
}

type metricExporter struct {
	sdkmetric.Exporter
	errs *ExportErrors
}

func (m metricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := m.Exporter.Export(ctx, rm)
	if err != nil {
		m.errs.Record(SignalMetrics, err)
	}
	return err
}

type spanExporter struct {
	sdktrace.SpanExporter
	errs *ExportErrors
}

func (s spanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := s.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		s.errs.Record(SignalTraces, err)
	}
	return err
}

// MetricsPush is a running OTLP metrics push.
type MetricsPush struct {
	Provider metric.MeterProvider
	Shutdown func(context.Context) error
}

// NewMetricsPush starts pushing metrics to o.MetricsURL() every
// o.MetricInterval, on its own goroutine, so that a slow or dead endpoint
// never delays a request. It pushes:
//   - every family gathered from g except the syncpool_* ones, through the
//     Prometheus bridge (http_*, redis_pool_*, go_*, process_*), with the
//     labels they carry on /metrics;
//   - the pools' counters through instrument/otelexport, with attrs added to
//     every point (gray_status and pool_mode).
//
// Failed pushes are counted and logged through errs.
func NewMetricsPush(ctx context.Context, o OTLP, res *resource.Resource, g prometheus.Gatherer, pools *instrument.Registry, attrs map[string]string, errs *ExportErrors) (*MetricsPush, error) {
	exp, err := newMetricExporter(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("creating OTLP metric exporter: %w", err)
	}
	ropts := []sdkmetric.PeriodicReaderOption{
		sdkmetric.WithProducer(promb.NewMetricProducer(promb.WithGatherer(withoutPrefix(g, PoolsPrefix)))),
	}
	if o.MetricInterval > 0 {
		ropts = append(ropts, sdkmetric.WithInterval(o.MetricInterval))
	}
	if o.Timeout > 0 {
		ropts = append(ropts, sdkmetric.WithTimeout(o.Timeout))
	}
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithResource(res),
		sdkmetric.WithView(poolViews()...),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metricExporter{Exporter: exp, errs: errs}, ropts...)),
	)
	kv := make([]attribute.KeyValue, 0, len(attrs))
	for k, v := range attrs {
		kv = append(kv, attribute.String(k, v))
	}
	if _, err := otelexport.Register(mp, pools, otelexport.WithAttributes(kv...)); err != nil {
		return nil, errors.Join(fmt.Errorf("registering pool counters for OTLP: %w", err), mp.Shutdown(ctx))
	}
	return &MetricsPush{Provider: mp, Shutdown: mp.Shutdown}, nil
}

// poolViews renames the otelexport instruments (syncpool.gets, ...) to
// the names /metrics shows (syncpool_gets_total, ...). With the names
// final on the wire, the collector's Prometheus exporter runs without
// suffix translation (translation_strategy
// UnderscoreEscapingWithoutSuffixes), which leaves every bridged name as it
// is; its suffixing would rewrite go_gc_cycles_total_gc_cycles_total, for
// one, to go_gc_cycles_gc_cycles_total.
func poolViews() []sdkmetric.View {
	var vs []sdkmetric.View
	for _, n := range []string{otelexport.GetsName, otelexport.MissesName, otelexport.PutsName, otelexport.DropsName, otelexport.DirtyName} {
		vs = append(vs, sdkmetric.NewView(
			sdkmetric.Instrument{Name: n},
			sdkmetric.Stream{Name: PrometheusName(n)},
		))
	}
	return vs
}

// PrometheusName is the /metrics name of an otelexport counter: dots to
// underscores, plus _total.
func PrometheusName(instrument string) string {
	return strings.ReplaceAll(instrument, ".", "_") + "_total"
}

// PoolsPrefix begins the names of the families that instrument/promexport
// writes; over OTLP they come from instrument/otelexport instead.
const PoolsPrefix = "syncpool_"

// withoutPrefix gathers from g and leaves out the families whose names
// begin with prefix.
func withoutPrefix(g prometheus.Gatherer, prefix string) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := g.Gather()
		out := mfs[:0]
		for _, mf := range mfs {
			if !strings.HasPrefix(mf.GetName(), prefix) {
				out = append(out, mf)
			}
		}
		return out, err
	})
}

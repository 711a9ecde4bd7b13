package service_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/poolparity/poolparity/instrument/otelexport"
	"github.com/poolparity/poolparity/internal/config"
	"github.com/poolparity/poolparity/internal/service"
)

// receiver is a minimal OTLP/HTTP receiver: it decodes what arrives on
// /v1/traces and /v1/metrics and keeps the span and metric names with the
// attributes of each metric's first point.
type receiver struct {
	mu      sync.Mutex
	spans   []string
	metrics map[string]map[string]string // name -> attributes of a point
	scopes  map[string][]string          // name -> instrumentation scopes it came from
}

func newReceiver(t *testing.T) (*receiver, string) {
	r := &receiver{metrics: map[string]map[string]string{}, scopes: map[string][]string{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		switch req.URL.Path {
		case "/v1/traces":
			var m coltrace.ExportTraceServiceRequest
			if err := proto.Unmarshal(body, &m); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			r.addSpans(&m)
		case "/v1/metrics":
			var m colmetrics.ExportMetricsServiceRequest
			if err := proto.Unmarshal(body, &m); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			r.addMetrics(&m)
		default:
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(srv.Close)
	return r, srv.URL
}

// addSpans and addMetrics record a request; the caller holds r.mu.
func (r *receiver) addSpans(m *coltrace.ExportTraceServiceRequest) {
	for _, rs := range m.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, s.Name)
			}
		}
	}
}

func (r *receiver) addMetrics(m *colmetrics.ExportMetricsServiceRequest) {
	for _, rm := range m.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, mt := range sm.Metrics {
				r.metrics[mt.Name] = firstPointAttrs(mt)
				if !slices.Contains(r.scopes[mt.Name], sm.Scope.GetName()) {
					r.scopes[mt.Name] = append(r.scopes[mt.Name], sm.Scope.GetName())
				}
			}
		}
	}
}

// grpcReceiver serves the OTLP gRPC trace and metrics services into r.
type grpcReceiver struct {
	coltrace.UnimplementedTraceServiceServer
	colmetrics.UnimplementedMetricsServiceServer
	r *receiver
}

func (g grpcReceiver) Export(_ context.Context, m *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	g.r.mu.Lock()
	defer g.r.mu.Unlock()
	g.r.addSpans(m)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

type grpcMetrics struct {
	colmetrics.UnimplementedMetricsServiceServer
	r *receiver
}

func (g grpcMetrics) Export(_ context.Context, m *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, error) {
	g.r.mu.Lock()
	defer g.r.mu.Unlock()
	g.r.addMetrics(m)
	return &colmetrics.ExportMetricsServiceResponse{}, nil
}

// newGRPCReceiver is newReceiver over OTLP/gRPC, on loopback.
func newGRPCReceiver(t *testing.T) (*receiver, string) {
	r := &receiver{metrics: map[string]map[string]string{}, scopes: map[string][]string{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(srv, grpcReceiver{r: r})
	colmetrics.RegisterMetricsServiceServer(srv, grpcMetrics{r: r})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return r, "http://" + ln.Addr().String()
}

func firstPointAttrs(m *metricspb.Metric) map[string]string {
	var kv []*commonpb.KeyValue
	switch {
	case len(m.GetSum().GetDataPoints()) > 0:
		kv = m.GetSum().GetDataPoints()[0].Attributes
	case len(m.GetGauge().GetDataPoints()) > 0:
		kv = m.GetGauge().GetDataPoints()[0].Attributes
	case len(m.GetHistogram().GetDataPoints()) > 0:
		kv = m.GetHistogram().GetDataPoints()[0].Attributes
	case len(m.GetSummary().GetDataPoints()) > 0:
		kv = m.GetSummary().GetDataPoints()[0].Attributes
	}
	out := map[string]string{}
	for _, a := range kv {
		out[a.Key] = a.Value.GetStringValue()
	}
	return out
}

// TestOTLPFlagOnlyEndpointReceivesSpansAndMetrics sets the endpoint (and
// protocol) with flags alone, no OTEL_* variable anywhere, and checks that
// the receiver behind it gets the spans and every kind of metric, with the
// track labels as attributes.
func TestOTLPFlagOnlyEndpointReceivesSpansAndMetrics(t *testing.T) {
	for _, tt := range []struct {
		protocol string
		receiver func(*testing.T) (*receiver, string)
	}{
		{"http/protobuf", newReceiver},
		{"grpc", newGRPCReceiver},
	} {
		t.Run(tt.protocol, func(t *testing.T) {
			rcv, url := tt.receiver(t)
			cfg, err := config.Parse("t", []string{
				"-otel-exporter-otlp-endpoint=" + url, "-otel-exporter-otlp-protocol=" + tt.protocol,
				"-pool-mode=pooled", "-gray-status=true",
			}, func(string) string { return "" }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			s, err := service.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			exerciseAllRoutes(t, s.Handler())
			if err := s.Close(); err != nil { // flushes spans and pushes metrics once more
				t.Fatal(err)
			}
			checkReceived(t, rcv)
		})
	}
}

func checkReceived(t *testing.T, rcv *receiver) {
	t.Helper()
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.spans) == 0 {
		t.Error("the flag's endpoint received no spans")
	}
	for _, name := range []string{
		"http_requests_total", "http_request_duration_seconds", "redis_pool_hit_total",
		"go_goroutines", "process_cpu_seconds_total", "otlp_export_failures_total",
		"syncpool_gets_total", "syncpool_misses_total", "syncpool_puts_total", "syncpool_drops_total", "syncpool_dirty_total",
	} {
		attrs, ok := rcv.metrics[name]
		if !ok {
			t.Errorf("metric %s was not pushed", name)
			continue
		}
		if attrs["gray_status"] != "true" || attrs["pool_mode"] != "pooled" {
			t.Errorf("metric %s attributes = %v, want gray_status=true pool_mode=pooled", name, attrs)
		}
	}
	for name, scopes := range rcv.scopes {
		if strings.HasPrefix(name, "syncpool") && !slices.Equal(scopes, []string{otelexport.DefaultMeterName}) {
			t.Errorf("%s came from scopes %v, want only instrument/otelexport (not the bridge too)", name, scopes)
		}
	}
}

// TestOTLPUnreachableEndpoint points the push at a closed port: requests
// are served as usual, /metrics still works and counts the failures.
func TestOTLPUnreachableEndpoint(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	cfg := config.Default()
	cfg.OTLPEndpoint = url
	cfg.OTLPTimeoutMillis = 200
	s, err := service.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	exerciseAllRoutes(t, s.Handler())
	if code := do(t, s.Handler(), "GET", "/healthz", ""); code != 200 {
		t.Errorf("/healthz = %d with a dead collector", code)
	}
	closeErr := s.Close() // the final push fails
	if closeErr == nil {
		t.Error("Close: want the failed final push reported")
	}
	body := string(scrape(t, s.Handler()))
	if !strings.Contains(body, `otlp_export_failures_total{gray_status="false",pool_mode="unpooled",signal="metrics"} `) ||
		strings.Contains(body, `otlp_export_failures_total{gray_status="false",pool_mode="unpooled",signal="metrics"} 0`) {
		t.Errorf("/metrics does not count the failed metric push:\n%s", grepLines(body, "otlp_export"))
	}
	if !strings.Contains(body, "http_requests_total") {
		t.Error("/metrics lost its series")
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

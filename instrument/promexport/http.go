package promexport

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The request metrics the poolparity rules read by default (rules.http.metrics
// "poolparity"), and their labels.
const (
	RequestsName = "http_requests_total"
	DurationName = "http_request_duration_seconds"
	// ResponseSizeName is the response-size histogram, whose _sum over
	// _count is the response-bytes-per-request SLI.
	ResponseSizeName = "http_response_size_bytes"
	MethodLabel      = "method"
	RouteLabel       = "route"
	CodeLabel        = "code"
	// Other is the label value of a method, route or status code outside the
	// bounded set.
	Other = "other"
)

// DurationBuckets are the default buckets of http_request_duration_seconds,
// from 1 ms to 10 s.
var DurationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10}

// ResponseSizeBuckets are the default buckets of http_response_size_bytes:
// 1 KiB, 16 KiB, 256 KiB and 4 MiB. The SLI reads only _sum and _count,
// which are exact whatever the buckets; four keep the series few.
var ResponseSizeBuckets = []float64{1024, 16384, 262144, 4194304}

// HTTPOption configures HTTPMetrics.
type HTTPOption func(*httpConfig)

type httpConfig struct {
	buckets     []float64
	sizeBuckets []float64 // nil: response size not recorded
	route       func(*http.Request) string
}

// WithDurationBuckets replaces DurationBuckets.
func WithDurationBuckets(b []float64) HTTPOption {
	return func(c *httpConfig) { c.buckets = append([]float64(nil), b...) }
}

// WithResponseSizeBuckets replaces ResponseSizeBuckets.
func WithResponseSizeBuckets(b []float64) HTTPOption {
	return func(c *httpConfig) { c.sizeBuckets = append([]float64{}, b...) }
}

// WithoutResponseSize leaves out http_response_size_bytes, for a service
// that records its response sizes otherwise.
func WithoutResponseSize() HTTPOption {
	return func(c *httpConfig) { c.sizeBuckets = nil }
}

// WithRoute replaces how a request's route label is found: by default the
// pattern http.ServeMux matched (r.Pattern, without its method), Other when
// none did. The function runs after the handler and must return values of
// a bounded set: route templates, never raw paths.
func WithRoute(route func(*http.Request) string) HTTPOption {
	return func(c *httpConfig) { c.route = route }
}

// HTTPMetrics records requests as http_requests_total{method,route,code},
// http_request_duration_seconds{method,route} and
// http_response_size_bytes{method,route} (the body bytes written), the
// series the poolparity rules read. Every label is bounded whatever requests arrive:
// method is one of the methods of RFC 9110 and PATCH (HEAD counts as
// GET) or Other; route is the route template; code is the status when it
// is a valid one (100-599), else Other. It is safe for concurrent use.
type HTTPMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	size     *prometheus.HistogramVec // nil: WithoutResponseSize
	route    func(*http.Request) string
}

// NewHTTPMetrics creates the request metrics and registers them with reg
// (wrap it with WithTrack for the track labels).
func NewHTTPMetrics(reg prometheus.Registerer, opts ...HTTPOption) (*HTTPMetrics, error) {
	c := httpConfig{buckets: DurationBuckets, sizeBuckets: ResponseSizeBuckets, route: PatternRoute}
	for _, o := range opts {
		o(&c)
	}
	m := &HTTPMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: RequestsName,
			Help: "HTTP requests served, by method, route template and status code.",
		}, []string{MethodLabel, RouteLabel, CodeLabel}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    DurationName,
			Help:    "HTTP request latency, by method and route template.",
			Buckets: c.buckets,
		}, []string{MethodLabel, RouteLabel}),
		route: c.route,
	}
	cols := []prometheus.Collector{m.requests, m.duration}
	if c.sizeBuckets != nil {
		m.size = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    ResponseSizeName,
			Help:    "HTTP response body bytes, by method and route template.",
			Buckets: c.sizeBuckets,
		}, []string{MethodLabel, RouteLabel})
		cols = append(cols, m.size)
	}
	for _, col := range cols {
		if err := reg.Register(col); err != nil {
			return nil, fmt.Errorf("registering HTTP metrics: %w", err)
		}
	}
	return m, nil
}

// Observe records one finished request without its response size: use
// ObserveResponse where the size is known, so that the size histogram
// counts every request the latency histogram does.
func (m *HTTPMetrics) Observe(method, route string, code int, elapsed time.Duration) {
	method = MethodValue(method)
	m.requests.WithLabelValues(method, route, CodeValue(code)).Inc()
	m.duration.WithLabelValues(method, route).Observe(elapsed.Seconds())
}

// ObserveResponse records one finished request and size, the bytes of its
// response body (not recorded WithoutResponseSize).
func (m *HTTPMetrics) ObserveResponse(method, route string, code int, elapsed time.Duration, size int64) {
	m.Observe(method, route, code, elapsed)
	if m.size != nil {
		m.size.WithLabelValues(MethodValue(method), route).Observe(float64(size))
	}
}

// Middleware records every request next serves. Wrap the http.ServeMux (not
// the handlers behind it), so that the mux sets r.Pattern on the request
// the middleware reads after next returns.
func (m *HTTPMetrics) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		code := sw.code
		if code == 0 {
			code = http.StatusOK
		}
		m.ObserveResponse(r.Method, m.route(r), code, time.Since(start), sw.size)
	})
}

// PatternRoute returns the route label of a request served by an
// http.ServeMux: the pattern it matched without its method ("GET
// /items/{id}" is "/items/{id}"), and Other for none or the catch-all "/".
func PatternRoute(r *http.Request) string {
	p := r.Pattern
	if i := strings.IndexByte(p, ' '); i >= 0 {
		p = p[i+1:]
	}
	if p == "" || p == "/" {
		return Other
	}
	return p
}

// MethodValue returns the method label of method: a standard method (HEAD
// as GET, which serves it), else Other.
func MethodValue(method string) string {
	switch method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	case http.MethodHead:
		return http.MethodGet
	}
	return Other
}

// CodeValue returns the code label of a status: the code for 100-599, else
// Other.
func CodeValue(code int) string {
	if code < 100 || code > 599 {
		return Other
	}
	return strconv.Itoa(code)
}

// statusWriter remembers the first status written through it and counts
// the body bytes written.
type statusWriter struct {
	http.ResponseWriter
	code int
	size int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.size += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

package server

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Recorder records finished HTTP requests. Implementations must be safe for
// concurrent use. NopRecorder is the default.
type Recorder interface {
	// ObserveRequest records one request. route is a route template or
	// RouteOther, method one of a fixed set, so the label values are
	// bounded.
	ObserveRequest(method, route string, code int, elapsed time.Duration)
}

// NopRecorder records nothing.
type NopRecorder struct{}

// ObserveRequest does nothing.
func (NopRecorder) ObserveRequest(string, string, int, time.Duration) {}

// DurationBuckets are the classic buckets of http_request_duration_seconds,
// from 1 ms to 10 s.
var DurationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10}

// PromRecorder records requests as http_requests_total and
// http_request_duration_seconds.
type PromRecorder struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	codes    [600]string // status code label values, made once
	// children caches the labelled children by label values, so that a
	// request costs one map lookup instead of hashing and validating the
	// label values in two vecs. The key set is bounded like the labels.
	children sync.Map // childKey -> *child
}

type childKey struct {
	method, route string
	code          int
}

type child struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// NewPromRecorder creates the request metrics and registers them with reg.
func NewPromRecorder(reg prometheus.Registerer) (*PromRecorder, error) {
	r := &PromRecorder{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_total",
			Help: "HTTP requests served, by method, route template and status code.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_request_duration_seconds",
			Help:    "HTTP request latency, by method and route template.",
			Buckets: DurationBuckets,
		}, []string{"method", "route"}),
	}
	for i := range r.codes {
		r.codes[i] = strconv.Itoa(i)
	}
	for _, c := range []prometheus.Collector{r.requests, r.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering HTTP metrics: %w", err)
		}
	}
	return r, nil
}

// ObserveRequest implements Recorder.
func (r *PromRecorder) ObserveRequest(method, route string, code int, elapsed time.Duration) {
	key := childKey{method, route, code}
	c, ok := r.children.Load(key)
	if !ok {
		codeText := "other"
		if code >= 0 && code < len(r.codes) {
			codeText = r.codes[code]
		}
		c, _ = r.children.LoadOrStore(key, &child{
			requests: r.requests.WithLabelValues(method, route, codeText),
			duration: r.duration.WithLabelValues(method, route),
		})
	}
	ch := c.(*child)
	ch.requests.Inc()
	ch.duration.Observe(elapsed.Seconds())
}

package server

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/poolparity/poolparity/instrument/promexport"
	"github.com/poolparity/poolparity/internal/termstats"
)

// Recorder records finished HTTP requests. Implementations must be safe for
// concurrent use. NopRecorder is the default.
type Recorder interface {
	// ObserveRequest records one request. method is the request's method,
	// route a route template or RouteOther, code the status written,
	// elapsed its latency and size the bytes of its response body. An
	// implementation that turns them into labels bounds them: PromRecorder
	// does so with the route table (see routeCodes).
	ObserveRequest(method, route string, code int, elapsed time.Duration, size int64)
	// ObserveShed records a heavy request on route shed (429) for reason
	// ShedInFlight.
	ObserveShed(route, reason string)
	// ObserveRefused records a heavy request on route refused (422) for
	// passing bound, a termstats.Bound.
	ObserveRefused(route, bound string)
}

// NopRecorder records nothing.
type NopRecorder struct{}

// ObserveRequest does nothing.
func (NopRecorder) ObserveRequest(string, string, int, time.Duration, int64) {}

// ObserveShed does nothing.
func (NopRecorder) ObserveShed(string, string) {}

// ObserveRefused does nothing.
func (NopRecorder) ObserveRefused(string, string) {}

// DurationBuckets are the classic buckets of http_request_duration_seconds,
// from 1 ms to 10 s: promexport's, which a team's own service uses too.
var DurationBuckets = promexport.DurationBuckets

// ResponseSizeName is the response-size histogram of the API routes, whose
// _sum over _count is the response-bytes-per-request SLI: promexport's.
const ResponseSizeName = promexport.ResponseSizeName

// ResponseSizeBuckets are the classic buckets of http_response_size_bytes,
// promexport's: 1 KiB, 16 KiB, 256 KiB and 4 MiB, from an item's JSON (a
// few hundred bytes, in the first) to a report or list near the heavy
// routes' byte bounds. Four buckets keep a pod's worst case under 300
// series (docs/service.md); the SLI reads only _sum and _count, which are
// exact.
var ResponseSizeBuckets = promexport.ResponseSizeBuckets

// PromRecorder records requests as http_requests_total,
// http_request_duration_seconds and http_response_size_bytes (the body
// bytes written, by method and route, as the latency). Its labels are bounded in the worst case,
// whatever requests arrive:
//   - method is the request's method only on a route that accepts it (HEAD
//     counts as GET, which serves it), "other" everywhere else;
//   - code is the exact status only when the route table lists it for the
//     route and method, otherwise "5xx" for a server error and "other" for
//     the rest, so that code=~"5.." still finds every server error;
//   - the histograms observe only the API routes, with an accepted method,
//     and not requests shed by the cost budget (429), which would flatter
//     the latency and the response size of the track that sheds.
type PromRecorder struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	size     *prometheus.HistogramVec
	shed     *prometheus.CounterVec
	refused  *prometheus.CounterVec
	// children caches the labelled children by the raw values, so that a
	// request costs one map lookup instead of hashing and validating the
	// label values in two vecs. Keys whose method or route are not in the
	// route table are not cached, so the cache stays bounded too.
	children sync.Map // childKey -> *child
}

type childKey struct {
	method, route string
	code          int
}

type child struct {
	requests prometheus.Counter
	duration prometheus.Observer // nil: not observed (nor is the size)
	size     prometheus.Observer
}

// NewPromRecorder creates the request metrics and registers them with reg.
func NewPromRecorder(reg prometheus.Registerer) (*PromRecorder, error) {
	r := &PromRecorder{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: promexport.RequestsName,
			Help: "HTTP requests served, by method (other: a method the route does not accept), route template and status code (5xx, other: a code the route table does not list).",
		}, []string{promexport.MethodLabel, promexport.RouteLabel, promexport.CodeLabel}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    promexport.DurationName,
			Help:    "HTTP request latency of the API routes, by method and route template; requests shed by the cost budget are not observed.",
			Buckets: DurationBuckets,
		}, []string{promexport.MethodLabel, promexport.RouteLabel}),
		size: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    ResponseSizeName,
			Help:    "HTTP response body bytes of the API routes, by method and route template; requests shed by the cost budget are not observed.",
			Buckets: ResponseSizeBuckets,
		}, []string{promexport.MethodLabel, promexport.RouteLabel}),
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_shed_total",
			Help: "Heavy requests (reports, lists) answered 429 with Retry-After because HEAVY_MAX_IN_FLIGHT others were in flight, by route and reason (in_flight).",
		}, []string{"route", "reason"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_refused_total",
			Help: "Heavy requests (reports, lists) answered 422 because they passed a per-request byte bound, by route and bound (read_bytes: HEAVY_MAX_READ_BYTES, held_bytes: HEAVY_MAX_HELD_BYTES).",
		}, []string{"route", "bound"}),
	}
	for _, c := range []prometheus.Collector{r.requests, r.duration, r.size, r.shed, r.refused} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering HTTP metrics: %w", err)
		}
	}
	return r, nil
}

// ObserveRequest implements Recorder.
func (r *PromRecorder) ObserveRequest(method, route string, code int, elapsed time.Duration, size int64) {
	key := childKey{method, route, code}
	c, ok := r.children.Load(key)
	if !ok {
		ch := r.newChild(method, route, code)
		if _, known := routeCodes[route][method]; !known {
			ch.observe(elapsed, size) // arbitrary method strings are not cached
			return
		}
		c, _ = r.children.LoadOrStore(key, ch)
	}
	c.(*child).observe(elapsed, size)
}

// ObserveShed implements Recorder.
func (r *PromRecorder) ObserveShed(route, reason string) {
	if route != RouteItems && route != RouteReport {
		route = RouteOther
	}
	if reason != ShedInFlight {
		reason = "other"
	}
	r.shed.WithLabelValues(route, reason).Inc()
}

// ObserveRefused implements Recorder.
func (r *PromRecorder) ObserveRefused(route, bound string) {
	if route != RouteItems && route != RouteReport {
		route = RouteOther
	}
	if bound != string(termstats.BoundReadBytes) && bound != string(termstats.BoundHeldBytes) {
		bound = "other"
	}
	r.refused.WithLabelValues(route, bound).Inc()
}

func (r *PromRecorder) newChild(method, route string, code int) *child {
	route, methodLabel, codeLabel := requestLabels(method, route, code)
	ch := &child{requests: r.requests.WithLabelValues(methodLabel, route, codeLabel)}
	if apiRoutes[route] && methodLabel != MethodOther && code != http.StatusTooManyRequests {
		ch.duration = r.duration.WithLabelValues(methodLabel, route)
		ch.size = r.size.WithLabelValues(methodLabel, route)
	}
	return ch
}

func (c *child) observe(elapsed time.Duration, size int64) {
	c.requests.Inc()
	if c.duration != nil {
		c.duration.Observe(elapsed.Seconds())
		c.size.Observe(float64(size))
	}
}

// MethodOther is the method label of a method the route does not accept.
const MethodOther = "other"

// requestLabels maps a request to its bounded labels.
func requestLabels(method, route string, code int) (routeLabel, methodLabel, codeLabel string) {
	methods, ok := routeCodes[route]
	if !ok {
		route, methods = RouteOther, routeCodes[RouteOther]
	}
	if method == http.MethodHead {
		method = http.MethodGet
	}
	codes, ok := methods[method]
	if !ok {
		method, codes = MethodOther, methods[MethodOther]
	}
	switch {
	case slices.Contains(codes, code):
		return route, method, strconv.Itoa(code)
	case code >= 500 && code <= 599:
		return route, method, "5xx"
	}
	return route, method, "other"
}

// Status codes answered by the API handlers, by method.
var (
	readCodes   = []int{http.StatusOK, http.StatusBadRequest, http.StatusNotFound, StatusClientClosedRequest, http.StatusInternalServerError, http.StatusServiceUnavailable}
	writeCodes  = []int{http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge, StatusClientClosedRequest, http.StatusInternalServerError, http.StatusServiceUnavailable}
	deleteCodes = []int{http.StatusNoContent, http.StatusBadRequest, http.StatusNotFound, StatusClientClosedRequest, http.StatusInternalServerError, http.StatusServiceUnavailable}
	heavyCodes  = []int{http.StatusOK, http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusTooManyRequests, StatusClientClosedRequest, http.StatusInternalServerError, http.StatusServiceUnavailable}
	wrongMethod = []int{http.StatusMethodNotAllowed}
)

// routeCodes is the route table of the labels: for each route label, the
// methods it accepts (MethodOther: every other method) and the status
// codes each answers. It must list what the handlers answer; a code it
// does not list is still counted, as 5xx or other.
var routeCodes = map[string]map[string][]int{
	RouteItem:    {http.MethodGet: readCodes, http.MethodPut: writeCodes, http.MethodDelete: deleteCodes, MethodOther: wrongMethod},
	RouteItems:   {http.MethodGet: heavyCodes, MethodOther: wrongMethod},
	RouteReport:  {http.MethodGet: heavyCodes, MethodOther: wrongMethod},
	RouteHealthz: {http.MethodGet: {http.StatusOK}, MethodOther: wrongMethod},
	RouteReadyz:  {http.MethodGet: {http.StatusOK, http.StatusServiceUnavailable}, MethodOther: wrongMethod},
	RouteMetrics: {http.MethodGet: {http.StatusOK, http.StatusInternalServerError, http.StatusServiceUnavailable}, MethodOther: wrongMethod},
	RouteOther:   {MethodOther: {http.StatusBadRequest, http.StatusNotFound}},
}

// apiRoutes are the routes whose latency is observed.
var apiRoutes = map[string]bool{RouteItem: true, RouteItems: true, RouteReport: true}

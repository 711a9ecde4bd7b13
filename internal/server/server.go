// Package server is the service's HTTP layer: routes, handlers, request
// metrics, fault injection and readiness. It decodes and validates input,
// maps errors to status codes and leaves storage to the store package and
// the report to the termstats package. Readiness is this pod's alone: it
// never asks the store (docs/service.md, "Probes").
package server

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/internal/item"
	"github.com/poolparity/poolparity/internal/pools"
	"github.com/poolparity/poolparity/internal/store"
	"github.com/poolparity/poolparity/internal/termstats"
)

// Store is the storage the handlers use. *store.Store implements it.
type Store interface {
	termstats.Store
	Put(ctx context.Context, id string, value, summary []byte) error
	GetSummaries(ctx context.Context, ids []string, keys []string, fn func(i int, value string, found bool) error) ([]string, error)
	Get(ctx context.Context, id string) (string, error)
	Delete(ctx context.Context, id string) error
}

var _ Store = (*store.Store)(nil)

// Options configures a Server. Only Store is required.
type Options struct {
	// Store holds the items.
	Store Store
	// Mode says where hot-path objects come from: instrument pools
	// registered in Pools, or (ModeUnpooled, the zero value) an allocation
	// per use; the misuse modes pool them wrongly on purpose.
	Mode pools.Mode
	// Pools receives the pools in a pooled mode. Nil: a private registry.
	Pools *instrument.Registry
	// CheckEvery runs the pool sanitizer on one object in every CheckEvery
	// taken from each pool (instrument.WithCheck); 0: off.
	CheckEvery int
	// Poison turns on the pools' poisoned Puts (pools.Settings.Poison), a
	// debug mode that makes a use of a pooled object after its Put visible.
	Poison bool
	// Metrics records requests. Nil: NopRecorder.
	Metrics Recorder
	// MetricsHandler serves GET /metrics. Nil: 404.
	MetricsHandler http.Handler
	// Logger logs request failures; storage failures at most once per
	// LogEvery. Nil: discard.
	Logger *slog.Logger
	// LogEvery is the shortest time between two "storage unavailable"
	// lines; the next line says how many it stands for. Zero: 10s.
	LogEvery time.Duration
	// FaultLatency is added to each API request (testing knob).
	FaultLatency time.Duration
	// FaultErrorRate is the fraction of API requests answered 500 (testing knob).
	FaultErrorRate float64
	// Rand returns numbers in [0, 1) for fault injection. Nil: math/rand/v2.
	Rand func() float64
	// HeavyMaxInFlight bounds the heavy requests (reports and lists)
	// served at once; one more is shed with 429. Zero: no bound.
	HeavyMaxInFlight int
	// HeavyQueueWait is how long a heavy request waits for a free slot
	// before it is shed. Waiting holds no memory. Zero: shed at once.
	HeavyQueueWait time.Duration
	// HeavyBudget bounds the bytes one heavy request reads and holds;
	// past it the request is refused with 422 (a Refusal body): no retry
	// can help. MaxHeldBytes applies to the report. Zero fields: no bound.
	HeavyBudget termstats.Budget
}

// Server serves the API. Create one with New. It is safe for concurrent use.
type Server struct {
	store          Store
	report         *termstats.Builder
	enc            pools.Source[*pools.Encoder]
	scratch        pools.Source[*requestScratch]
	hold           bool
	metrics        Recorder
	metricsHandler http.Handler
	log            *slog.Logger
	faultLatency   time.Duration
	faultErrorRate float64
	rand           func() float64
	storageLog     rateLog
	shuttingDown   atomic.Bool
	handler        http.Handler
	// heavy holds a token per heavy request in flight; nil: no bound.
	heavy      chan struct{}
	heavyWait  time.Duration
	listBudget int64
}

// New returns a Server.
func New(o Options) (*Server, error) {
	if o.Store == nil {
		return nil, errors.New("server: Options.Store is nil")
	}
	if o.Pools == nil {
		o.Pools = instrument.NewRegistry()
	}
	s := &Server{
		store:          o.Store,
		metrics:        o.Metrics,
		metricsHandler: o.MetricsHandler,
		log:            o.Logger,
		faultLatency:   o.FaultLatency,
		faultErrorRate: o.FaultErrorRate,
		rand:           o.Rand,
		storageLog:     rateLog{every: o.LogEvery},
		listBudget:     o.HeavyBudget.MaxReadBytes,
		heavyWait:      o.HeavyQueueWait,
		hold:           o.Mode == pools.ModeMisuseHold,
	}
	if o.HeavyMaxInFlight > 0 {
		s.heavy = make(chan struct{}, o.HeavyMaxInFlight)
	}
	if s.metrics == nil {
		s.metrics = NopRecorder{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.rand == nil {
		s.rand = rand.Float64
	}
	if s.storageLog.every <= 0 {
		s.storageLog.every = 10 * time.Second
	}
	var err error
	ps := pools.Settings{Mode: o.Mode, Registry: o.Pools, CheckEvery: o.CheckEvery, Poison: o.Poison}
	if s.report, err = termstats.NewBuilder(o.Store, ps, o.HeavyBudget); err != nil {
		return nil, err
	}
	if s.enc, err = pools.NewSource(ps, pools.EncoderConfig(pools.JSONBuffer)); err != nil {
		return nil, err
	}
	if s.scratch, err = pools.NewSource(ps, pools.Config[*requestScratch]{
		Name: pools.RequestScratch, New: newRequestScratch,
		Reset: (*requestScratch).reset, Keep: (*requestScratch).small, Clean: (*requestScratch).clean,
		Presize:     func(rs *requestScratch) { rs.body = make([]byte, 0, pools.PresizeBytes) },
		Scrub:       func(rs *requestScratch) { pools.ScrubBytes(rs.body) },
		SloppyReset: (*requestScratch).sloppyReset,
		Poison:      (*requestScratch).poison,
		Intact:      (*requestScratch).intact,
	}); err != nil {
		return nil, err
	}
	s.handler = s.instrument(s.routes())
	return s, nil
}

// Route templates: with RouteOther, the complete set of route labels.
const (
	RouteItem    = "/api/v1/items/{id}"
	RouteItems   = "/api/v1/items"
	RouteReport  = "/api/v1/report"
	RouteHealthz = "/healthz"
	RouteReadyz  = "/readyz"
	RouteMetrics = "/metrics"
)

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT "+RouteItem, s.holding(s.faults(s.putItem)))
	mux.HandleFunc("GET "+RouteItem, s.holding(s.faults(s.getItem)))
	mux.HandleFunc("DELETE "+RouteItem, s.faults(s.deleteItem))
	mux.HandleFunc(RouteItem, methodNotAllowed("GET, PUT, DELETE"))
	mux.HandleFunc("GET "+RouteItems, s.holding(s.faults(s.bounded(s.listItems))))
	mux.HandleFunc(RouteItems, methodNotAllowed("GET"))
	mux.HandleFunc("GET "+RouteReport, s.faults(s.bounded(s.getReport)))
	mux.HandleFunc(RouteReport, methodNotAllowed("GET"))
	mux.HandleFunc("GET "+RouteHealthz, s.healthz)
	mux.HandleFunc(RouteHealthz, methodNotAllowed("GET"))
	mux.HandleFunc("GET "+RouteReadyz, s.readyz)
	mux.HandleFunc(RouteReadyz, methodNotAllowed("GET"))
	if s.metricsHandler != nil {
		mux.Handle("GET "+RouteMetrics, s.metricsHandler)
		mux.HandleFunc(RouteMetrics, methodNotAllowed("GET"))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "no such route")
	})
	return mux
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// StartShutdown makes /readyz answer 503 from now on, so that load
// balancers stop routing here while in-flight and late requests are still
// served, and answers every request from now on with Connection: close, so
// that clients on keep-alive connections move to a new connection (and so
// to another pod) before the listener closes.
func (s *Server) StartShutdown() { s.shuttingDown.Store(true) }

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSONString(w, http.StatusOK, `{"status":"ok"}`)
}

// readyz says whether this pod can serve: it is started (the handler
// answers only once the service is wired and listening) and not draining
// (StartShutdown). It never asks Redis: Redis is shared by every pod of
// both tracks, so a Redis stall that failed readiness would take every
// pod out of the Service at once and turn JSON 503s into refused
// connections. Nor does it turn false when the heavy-request slots are
// full: item requests are still served then, and a load that fills one
// pod's slots fills its peers' too. docs/service.md, "Probes", has the
// trade-off.
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if s.shuttingDown.Load() {
		writeError(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	writeJSONString(w, http.StatusOK, `{"status":"ready"}`)
}

// rateLog lets through at most one log line per every and counts the
// lines it held back since the last one let through.
type rateLog struct {
	every      time.Duration
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// allow reports whether a line may be logged now, and how many were held
// back before it.
func (l *rateLog) allow(now time.Time) (suppressed int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.suppressed++
		return 0, false
	}
	suppressed, l.suppressed, l.last = l.suppressed, 0, now
	return suppressed, true
}

// requestScratch is what an item request needs: the body, the decoded
// item and the list's working slices. It comes from request_scratch.
type requestScratch struct {
	body    []byte
	item    item.Item
	ids     []string
	keys    []string
	entries []listEntry
}

func newRequestScratch() *requestScratch { return new(requestScratch) }

func (rs *requestScratch) reset() {
	rs.sloppyReset()
	rs.item.Reset()
}

// sloppyReset is reset without the item's Reset: what a change that "only
// truncates the slices" leaves (pools.ModeMisuseDirty). encoding/json and
// item.Decode leave fields absent from the next body untouched, so a
// stale item hands one request's tags or payload to the next.
func (rs *requestScratch) sloppyReset() {
	rs.body = rs.body[:0]
	clear(rs.ids)
	rs.ids = rs.ids[:0]
	clear(rs.keys)
	rs.keys = rs.keys[:0]
	clear(rs.entries)
	rs.entries = rs.entries[:0]
}

// clean is the sanitizer's check: everything reset clears is empty.
func (rs *requestScratch) clean() error {
	if len(rs.body)+len(rs.ids)+len(rs.keys)+len(rs.entries) != 0 {
		return errors.New("request scratch holds a previous request's slices")
	}
	if rs.item.Name != "" || rs.item.Payload != "" || len(rs.item.Tags) != 0 {
		return errors.New("request scratch holds a previous request's item")
	}
	return nil
}

// poison fills the body buffer's whole capacity with instrument.PoisonByte
// (pools.Settings.Poison): a request body read after the Put of its
// scratch reads the poison.
func (rs *requestScratch) poison() { instrument.PoisonBytes(rs.body) }

// intact reports whether the body buffer is as poison left it.
func (rs *requestScratch) intact() bool {
	return len(rs.body) == 0 && instrument.BytesPoisoned(rs.body)
}

// small is the keep policy: a scratch object is pooled again only while
// every part of it is no larger than a normal request needs, so one odd
// request (a body near the cap, a tag list that validation then refused)
// does not pin its memory in the pool.
func (rs *requestScratch) small() bool {
	return cap(rs.body) <= pools.MaxBufferCap &&
		cap(rs.item.Tags) <= 4*item.MaxTags &&
		cap(rs.ids) <= 2*MaxListLimit &&
		cap(rs.keys) <= 2*MaxListLimit &&
		cap(rs.entries) <= 2*MaxListLimit
}

package promread

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Defaults of the endpoint guard (ClientConfig's StallAfter, Backoff, MaxBackoff and
// MaxInFlight).
const (
	// DefaultStallAfter is how long a request may go unanswered, with no other answer from
	// its endpoint meanwhile, before the endpoint counts as stalled.
	DefaultStallAfter = 5 * time.Second
	// DefaultBackoff is how long an endpoint is backed off after its first failure in a row;
	// each further failure doubles it, up to DefaultMaxBackoff.
	DefaultBackoff = 10 * time.Second
	// DefaultMaxBackoff bounds the backoff.
	DefaultMaxBackoff = 5 * time.Minute
	// DefaultMaxInFlight bounds the requests in flight to one endpoint.
	DefaultMaxInFlight = 16
)

// Observer is told of every request a guarded endpoint (one of Clients') handles: the
// controller exports them as its own metrics. Implementations must be safe for concurrent use
// and quick: they run on the request's path.
type Observer interface {
	// ObserveRequest is called when a request of kind (query, query_range, rules or
	// rule_list) to endpoint ends: outcome is ok, error (the query's: a bad query, an answer
	// too large), failed (the endpoint's: no answer in time, a transport error, a 5xx) or
	// unavailable (refused or cut short by the guard); seconds is its duration.
	ObserveRequest(endpoint, kind, outcome string, seconds float64)
	// AddInFlight is called with +1 when a request to endpoint is sent and -1 when it ends.
	AddInFlight(endpoint string, delta int)
}

// ErrEndpointUnavailable is returned (wrapped) for a request that a guarded endpoint did not
// send, or cut short, because the endpoint is stalled (a request has waited StallAfter with
// no answer from it) or backed off after failures. The message says which and until when.
var ErrEndpointUnavailable = errors.New("the Prometheus endpoint is unavailable")

// guard is one endpoint's circuit breaker, shared by every Querier of that endpoint that
// Clients hands out, so that one tenant's stalled or failing Prometheus costs the
// controller's workers one request at a time, not one per canary:
//
//   - a request that has had no answer for stallAfter, while no other request to the
//     endpoint was answered since it began, stalls the endpoint: the requests that began
//     after it are cancelled, and new ones fail at once, until it ends;
//   - a request that fails for the endpoint's sake (no answer in time, a transport error,
//     a 5xx or Prometheus' own timeout or unavailable error) backs the endpoint off for
//     backoff, doubled per failure in a row up to maxBackoff: requests fail at once until
//     then, and the first one after it is sent alone (a probe) while the others still fail;
//   - any answer (an API error about the query included) closes the breaker.
//
// Safe for concurrent use.
type guard struct {
	endpoint                     string
	stallAfter, base, maxBackoff time.Duration
	slots                        chan struct{}
	obs                          Observer

	mu         sync.Mutex
	next       uint64
	inFlight   map[uint64]*flight
	lastAnswer time.Time
	stalledBy  uint64 // the request that stalls the endpoint; 0 when none
	failures   int
	openUntil  time.Time
	lastErr    string
	probing    bool
}

// flight is one request in flight through a guard.
type flight struct {
	start  time.Time
	cancel context.CancelCauseFunc
	probe  bool
}

func newGuard(endpoint string, cfg ClientConfig) *guard {
	return &guard{
		endpoint:   endpoint,
		stallAfter: cfg.StallAfter,
		base:       cfg.Backoff,
		maxBackoff: cfg.MaxBackoff,
		slots:      make(chan struct{}, cfg.MaxInFlight),
		inFlight:   map[uint64]*flight{},
		obs:        cfg.Observer,
	}
}

// errStalledOut is the cause of a request cancelled because an earlier one stalls its
// endpoint.
var errStalledOut = errors.New("cancelled: an earlier request to the endpoint has had no answer")

// do sends one request of kind (see Observer) through the guard: call runs with a context
// the guard may cancel.
func (g *guard) do(ctx context.Context, kind string, call func(context.Context) error) (err error) {
	start := time.Now()
	defer func() {
		if g.obs != nil {
			g.obs.ObserveRequest(g.endpoint, kind, outcome(ctx, err), time.Since(start).Seconds())
		}
	}()
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("waiting for one of the %d request slots of %s: %w", cap(g.slots), g.endpoint, ctx.Err())
	}
	defer func() { <-g.slots }()
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	id, err := g.begin(time.Now(), cancel)
	if err != nil {
		return err
	}
	if g.obs != nil {
		g.obs.AddInFlight(g.endpoint, 1)
		defer g.obs.AddInFlight(g.endpoint, -1)
	}
	timer := time.AfterFunc(g.stallAfter, func() { g.stall(id) })
	err = call(rctx)
	timer.Stop()
	if errors.Is(context.Cause(rctx), errStalledOut) && ctx.Err() == nil {
		err = fmt.Errorf("%w: %s: a request to it has had no answer for %s, so this one was cut short", ErrEndpointUnavailable, g.endpoint, g.stallAfter)
	}
	g.end(ctx, id, time.Now(), err)
	return err
}

// outcome names how a request ended, for an Observer.
func outcome(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrEndpointUnavailable):
		return "unavailable"
	case endpointFailed(ctx, err):
		return "failed"
	}
	return "error"
}

// begin registers a request, or refuses it while the endpoint is stalled or backed off.
func (g *guard) begin(now time.Time, cancel context.CancelCauseFunc) (uint64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	why := g.unavailableLocked(now)
	if why == "" && g.failures > 0 && g.probing {
		why = fmt.Sprintf("%s is being probed after %d failure(s) in a row (last: %s)", g.endpoint, g.failures, g.lastErr)
	}
	if why != "" {
		return 0, fmt.Errorf("%w: %s: no request sent", ErrEndpointUnavailable, why)
	}
	probe := g.failures > 0
	g.probing = g.probing || probe
	g.next++
	g.inFlight[g.next] = &flight{start: now, cancel: cancel, probe: probe}
	return g.next, nil
}

// unavailable says why the endpoint refuses new requests now (stalled or backed off), or "".
func (g *guard) unavailable(now time.Time) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.unavailableLocked(now)
}

// unavailableLocked is unavailable with g.mu held.
func (g *guard) unavailableLocked(now time.Time) string {
	switch {
	case g.stalledBy != 0:
		return fmt.Sprintf("%s has not answered a request for %s", g.endpoint, now.Sub(g.inFlight[g.stalledBy].start).Round(time.Second))
	case g.failures > 0 && now.Before(g.openUntil):
		return fmt.Sprintf("%s is backed off until %s after %d failure(s) in a row (last: %s)", g.endpoint, g.openUntil.UTC().Format(time.TimeOnly), g.failures, g.lastErr)
	}
	return ""
}

// stall runs stallAfter after request id began: if it is still in flight and nothing was
// answered since it began, the endpoint is stalled and the requests that began after it are
// cancelled.
func (g *guard) stall(id uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f, ok := g.inFlight[id]
	if !ok || g.stalledBy != 0 || g.lastAnswer.After(f.start) {
		return
	}
	g.stalledBy = id
	for oid, o := range g.inFlight {
		if oid != id && !o.start.Before(f.start) {
			o.cancel(errStalledOut)
		}
	}
}

// end records how request id ended: err (nil for an answer) judged for the endpoint's sake,
// ctx being the caller's.
func (g *guard) end(ctx context.Context, id uint64, now time.Time, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.inFlight[id]
	delete(g.inFlight, id)
	if g.stalledBy == id {
		g.stalledBy = 0
	}
	if f.probe {
		g.probing = false
	}
	// A caller's own deadline is the caller's budget running out, not the endpoint's failure,
	// when the endpoint answered other requests meanwhile or the budget was under a second
	// (the shortest analysis timeout): one tenant's short timeout must not back off an
	// endpoint that other tenants share.
	callersBudget := errors.Is(ctx.Err(), context.DeadlineExceeded) && (g.lastAnswer.After(f.start) || now.Sub(f.start) < time.Second)
	switch {
	case endpointFailed(ctx, err) && !callersBudget:
		g.failures++
		g.lastErr = Sanitize(err.Error(), maxErrorText)
		g.openUntil = now.Add(g.backoff())
	case err == nil || answered(err):
		g.lastAnswer = now
		g.failures, g.lastErr, g.openUntil = 0, "", time.Time{}
	}
}

// backoff is the wait after g.failures failures in a row.
func (g *guard) backoff() time.Duration {
	d := g.base
	for i := 1; i < g.failures && d < g.maxBackoff; i++ {
		d *= 2
	}
	return min(d, g.maxBackoff)
}

// endpointFailed reports whether err says the endpoint failed (rather than the query, the
// caller or the guard): no answer in time, a transport error, a 5xx, or Prometheus' own
// timeout or unavailable error. A caller's cancellation and a request the guard cut short
// are not the endpoint's failures.
func endpointFailed(ctx context.Context, err error) bool {
	if err == nil || errors.Is(err, ErrEndpointUnavailable) || errors.Is(err, ErrResponseTooLarge) {
		return false
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return false
	}
	var perr *v1.Error
	if errors.As(err, &perr) {
		return endpointFailedType(perr.Type)
	}
	var nerr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &nerr)
}

// answered reports whether err is an answer of the endpoint about the query (a bad query, an
// execution error, an answer too large): the endpoint is up.
func answered(err error) bool {
	var perr *v1.Error
	return errors.Is(err, ErrResponseTooLarge) || (errors.As(err, &perr) && !endpointFailedType(perr.Type))
}

// endpointFailedType reports whether an API error of type t is the endpoint's failure rather
// than the query's.
func endpointFailedType(t v1.ErrorType) bool {
	return t == v1.ErrServer || t == v1.ErrTimeout || t == "unavailable"
}

// guarded is a Querier whose requests go through its endpoint's guard, and whose RuleSet
// comes from the endpoint's rule cache.
type guarded struct {
	q     Querier
	g     *guard
	rules *ruleCache
}

func (gq guarded) RuleSet(ctx context.Context) (RuleSet, error) { return gq.rules.get(ctx) }

func (gq guarded) Query(ctx context.Context, query string, ts time.Time, opts ...v1.Option) (val model.Value, w v1.Warnings, in v1.Infos, err error) {
	err = gq.g.do(ctx, "query", func(ctx context.Context) error {
		var err error
		val, w, in, err = gq.q.Query(ctx, query, ts, opts...)
		return err
	})
	return val, w, in, err
}

func (gq guarded) QueryRange(ctx context.Context, query string, r v1.Range, opts ...v1.Option) (val model.Value, w v1.Warnings, in v1.Infos, err error) {
	err = gq.g.do(ctx, "query_range", func(ctx context.Context) error {
		var err error
		val, w, in, err = gq.q.QueryRange(ctx, query, r, opts...)
		return err
	})
	return val, w, in, err
}

func (gq guarded) Rules(ctx context.Context, matches []string) (res v1.RulesResult, err error) {
	err = gq.g.do(ctx, "rules", func(ctx context.Context) error {
		var err error
		res, err = gq.q.Rules(ctx, matches)
		return err
	})
	return res, err
}

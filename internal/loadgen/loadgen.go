// Package loadgen sends a bounded, reproducible mix of API calls to a
// poolparity endpoint on the local machine: item writes, reads, listings,
// reports and deletes, in proportions that resemble a read-mostly JSON API.
//
// The load is open-loop: arrival i is due at the run's start plus i/RPS (or,
// with Config.Burst, in waves of Burst arrivals at once at the same average
// rate), whether or not earlier requests were answered, so that a service
// that slows down still gets the rate it was offered rather than a lower one
// (no coordinated omission). An arrival that finds Config.Concurrency
// requests in flight is not sent and counts in Stats.Dropped.
//
// Every run is bounded four ways: by its context, by Config.Duration, by
// Config.MaxRequests (arrivals, sent or dropped) and by Config.Concurrency
// (requests in flight). The target must be a loopback address, or a host name
// the caller lists in Config.AllowHosts (the in-cluster load generator lists
// the Service it was pointed at, and only when it runs in a pod); New refuses
// any other, and never an IP address outside loopback.
//
// With Config.Targets the calls are not the item API's mix but the requests
// of a requests file (package targets), replayed in the file's order or
// drawn at random (Config.Order), each sent to the base URL whatever host
// the file names (targets.Target.Resolve), with the same schedule and
// bounds; CheckTargets applies the loopback rule to the hosts a file names.
// Their counts and latency are kept per method and path template
// (Stats.ByTarget), for at most MaxTargetKeys of them.
//
// The client-side latency of every answered request, from its arrival's due
// time to the end of its response body (so that a late send counts against
// the latency), goes into a Histogram; Stats.Latency sums it up beside the
// counts, for comparison with the service's own latency series.
//
// With Config.Sample a run of Config.Targets also hands a bounded sample of
// its own responses (status, Content-Type, the body up to a cap) to a sink:
// one arrival in each block of Sampling.Every, at a random position in it,
// so spread over the run. A differential check compares them with another
// build's answers to the same requests, and so sees the responses that only
// concurrency corrupts (Sampling). With Config.CheckJSON every JSON answer
// is parsed, and those that do not parse are counted (Stats.Malformed).
//
// # Concurrency
//
// Run may be called once per Generator. It schedules arrivals from one
// goroutine, which never waits for an answer, and sends each request from a
// goroutine of its own, at most Config.Concurrency at once; it returns after
// every request it sent has ended. Stats may be called concurrently with Run,
// from any goroutine. A Histogram is safe for concurrent use. A Sampling's
// Sink is called from the requests' goroutines, concurrently.
package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/poolparity/poolparity/internal/targets"
)

// Op is one kind of API call.
type Op int

// The API calls the generator makes.
const (
	OpPut    Op = iota // PUT /api/v1/items/{id}
	OpGet              // GET /api/v1/items/{id}
	OpList             // GET /api/v1/items?limit=N
	OpReport           // GET /api/v1/report?n=N
	OpDelete           // DELETE /api/v1/items/{id}
	numOps
)

var opNames = [numOps]string{"put", "get", "list", "report", "delete"}

// String returns the op's short name.
func (o Op) String() string {
	if o < 0 || o >= numOps {
		return fmt.Sprintf("op(%d)", int(o))
	}
	return opNames[o]
}

// Mix gives the relative weight of each op. Weights are not percentages;
// only their proportions matter.
type Mix struct {
	Put, Get, List, Report, Delete int
}

// DefaultMix is read-mostly: 40% reads, 25% writes, 15% listings, 15%
// reports, 5% deletes.
var DefaultMix = Mix{Put: 25, Get: 40, List: 15, Report: 15, Delete: 5}

func (m Mix) weights() [numOps]int {
	return [numOps]int{m.Put, m.Get, m.List, m.Report, m.Delete}
}

// Config bounds and shapes a run.
type Config struct {
	// BaseURL is the endpoint, e.g. http://127.0.0.1:8080. It must be a
	// loopback address.
	BaseURL string
	// Duration bounds the run's wall time. Required.
	Duration time.Duration
	// MaxRequests bounds the number of arrivals, sent or dropped. Required.
	MaxRequests int
	// RPS is the rate of arrivals per second: arrival i is due at the run's
	// start plus i/RPS, whether or not earlier requests were answered.
	RPS float64
	// Concurrency bounds the requests in flight. It is not a number of
	// workers that wait for their answers: an arrival that finds
	// Concurrency requests in flight is dropped (Stats.Dropped), not
	// delayed, so that the offered rate does not fall when the service
	// slows down.
	Concurrency int
	// Keys is the size of the id space items are written to and read from.
	Keys int
	// Seed makes the sequence of calls and bodies reproducible.
	Seed uint64
	// Mix weighs the ops; the zero Mix means DefaultMix.
	Mix Mix
	// Timeout bounds one request; zero means 5s.
	Timeout time.Duration
	// LargeBodyBytes, when > 0, makes one PUT body in LargeBodyShare (1 in
	// 16) carry a payload of about this many bytes instead of the usual
	// 200 to 2,000: the long tail of request sizes a pool's size cap exists
	// for. At most MaxLargeBodyBytes, under the service's 1 MiB body limit.
	LargeBodyBytes int
	// Burst, when > 1, makes calls arrive in waves of Burst at once (wave k
	// is due at the run's start plus k*Burst/RPS), so that the average rate
	// stays RPS: the bursty arrivals of real traffic, under which a wave's
	// requests are in flight at once and a pool must hold that many
	// objects. 0 or 1 spreads the calls evenly. At most Concurrency, so that
	// a wave can be in flight at once.
	Burst int
	// Path, when set, replaces the item API's mix: every call is a GET of
	// the path (with its query) that Path returns for the key it is given
	// (0 to Keys-1) and the run's random source, counted as OpGet. It is
	// how the load drives a service of another shape (the example
	// service's thumbnails). Mix and LargeBodyBytes are then unused. Path
	// is called from one goroutine, once per arrival (dropped ones too), and
	// must return a path starting with /.
	Path func(key int, rnd *rand.Rand) string
	// AllowHosts lists host names (never IP addresses) that BaseURL may name
	// besides loopback: for example the Kubernetes Service an in-cluster load
	// generator targets. Empty allows loopback only.
	AllowHosts []string
	// Targets, when set, replaces the item API's mix (and Path): every
	// arrival sends one of these requests, chosen by Order, to BaseURL
	// (targets.Target.Resolve: a path is appended to it; an absolute URL's
	// path and query are, its host only checked by CheckTargets). The
	// target's headers and body go with it; a Host header in it is the
	// request's Host unless Host below is set. Mix, Keys' use in paths and
	// LargeBodyBytes are then unused, and Stats.ByOp stays zero: the counts
	// are in Stats.ByTarget. At most targets.MaxTargets, each body at most
	// targets.MaxBodyBytes. The Generator reads Targets and never changes
	// them; the caller must not change them during a run.
	Targets []targets.Target
	// Order says which of Targets arrival i sends: RoundRobin (the zero
	// value) sends Targets[i mod len(Targets)], Random one drawn with the
	// run's seeded random source (reproducible with Seed).
	Order Order
	// Host, when set, is the Host header of every request instead of
	// BaseURL's host: the virtual host of a route behind a shared gateway
	// (a Gateway API HTTPRoute's hostnames). It never changes where the
	// request is sent. A host name, optionally with a port.
	Host string
	// Sample, when set, hands some of the run's own responses to its Sink
	// (Sampling): a run of Targets only. Nil samples none, at no cost.
	Sample *Sampling
	// CheckJSON, when set, reads every answer whose Content-Type says JSON
	// (application/json or a +json type) whole, and counts in
	// Stats.Malformed those whose body is not one valid JSON value (trailing
	// data after one included): the answers a corrupted buffer garbles. A
	// HEAD, a 1xx, 204 or 304 answer is not judged, nor a body over
	// MaxCheckedBodyBytes. The bodies are read into pooled buffers, one per
	// request in flight (a buffer over 1 MiB is not kept). Off, bodies are
	// discarded unread.
	CheckJSON bool
}

// Order says how a run picks the target of each arrival from
// Config.Targets.
type Order int

// The orders of Config.Targets.
const (
	// RoundRobin sends the targets in the file's order, over and over.
	RoundRobin Order = iota
	// Random draws each arrival's target uniformly with the run's seed.
	Random
)

// MaxTargetKeys bounds Stats.ByTarget: the first MaxTargetKeys distinct
// method and path templates of Config.Targets (in their order) have counts
// of their own, and every later one is counted under OtherTarget.
const MaxTargetKeys = 16

// OtherTarget is the Stats.ByTarget key of the targets beyond
// MaxTargetKeys distinct ones.
const OtherTarget = "other"

// MaxLargeBodyBytes bounds LargeBodyBytes, leaving room under the
// service's 1 MiB body limit for the rest of the JSON.
const MaxLargeBodyBytes = 900 << 10

// LargeBodyShare is how rare the large bodies are: one in this many.
const LargeBodyShare = 16

// Errors returned by Validate.
var (
	ErrNotLoopback = errors.New("loadgen: target is not a loopback address")
	ErrBounds      = errors.New("loadgen: invalid bounds")
)

// Validate checks the bounds and that the target is on loopback.
func (c Config) Validate() error {
	if err := CheckTarget(c.BaseURL, c.AllowHosts); err != nil {
		return err
	}
	var errs []error
	if c.Duration <= 0 {
		errs = append(errs, fmt.Errorf("%w: duration must be > 0", ErrBounds))
	}
	if c.MaxRequests <= 0 {
		errs = append(errs, fmt.Errorf("%w: max requests must be > 0", ErrBounds))
	}
	if c.RPS <= 0 || c.RPS > 10000 {
		errs = append(errs, fmt.Errorf("%w: rps must be in (0, 10000], got %g", ErrBounds, c.RPS))
	}
	if c.Concurrency < 1 || c.Concurrency > 1024 {
		errs = append(errs, fmt.Errorf("%w: concurrency must be in [1, 1024], got %d", ErrBounds, c.Concurrency))
	}
	if c.Keys < 1 {
		errs = append(errs, fmt.Errorf("%w: keys must be >= 1", ErrBounds))
	}
	if c.Burst < 0 || c.Burst > c.Concurrency {
		errs = append(errs, fmt.Errorf("%w: burst must be in [0, concurrency %d], got %d", ErrBounds, c.Concurrency, c.Burst))
	}
	if c.Host != "" && !validHost(c.Host) {
		errs = append(errs, fmt.Errorf("%w: host must be a host name with an optional port, got %q", ErrBounds, c.Host))
	}
	if c.LargeBodyBytes < 0 || c.LargeBodyBytes > MaxLargeBodyBytes {
		errs = append(errs, fmt.Errorf("%w: large body bytes must be in [0, %d], got %d", ErrBounds, MaxLargeBodyBytes, c.LargeBodyBytes))
	}
	errs = append(errs, c.validateTargets()...)
	if c.Sample != nil {
		errs = append(errs, c.Sample.validate(len(c.Targets))...)
	}
	total := 0
	for _, w := range c.mix().weights() {
		if w < 0 {
			errs = append(errs, fmt.Errorf("%w: mix weights must be >= 0", ErrBounds))
		}
		total += w
	}
	if total <= 0 {
		errs = append(errs, fmt.Errorf("%w: mix weights sum to zero", ErrBounds))
	}
	return errors.Join(errs...)
}

// validateTargets checks Targets and Order.
func (c Config) validateTargets() []error {
	var errs []error
	if c.Order != RoundRobin && c.Order != Random {
		errs = append(errs, fmt.Errorf("%w: order must be RoundRobin or Random, got %d", ErrBounds, c.Order))
	}
	if len(c.Targets) == 0 {
		return errs
	}
	if c.Path != nil {
		errs = append(errs, fmt.Errorf("%w: set Path or Targets, not both", ErrBounds))
	}
	if len(c.Targets) > targets.MaxTargets {
		errs = append(errs, fmt.Errorf("%w: %d targets, more than %d", ErrBounds, len(c.Targets), targets.MaxTargets))
	}
	for i, t := range c.Targets {
		if !slices.Contains(targets.Methods, t.Method) {
			errs = append(errs, fmt.Errorf("%w: target %d: unknown method %q", ErrBounds, i+1, t.Method))
		}
		if len(t.Body) > targets.MaxBodyBytes {
			errs = append(errs, fmt.Errorf("%w: target %d: body of %d bytes, more than %d", ErrBounds, i+1, len(t.Body), targets.MaxBodyBytes))
		}
		if !t.IsPath() && !strings.HasPrefix(t.URL, "http://") && !strings.HasPrefix(t.URL, "https://") {
			errs = append(errs, fmt.Errorf("%w: target %d: URL %q is neither a path nor absolute", ErrBounds, i+1, t.URL))
		}
	}
	if err := CheckTargets(c.Targets, c.AllowHosts); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// CheckTargets applies CheckTarget to every target of ts that names a host
// (an absolute URL; a path is resolved against a base URL that is checked
// on its own), and returns the first refusal, naming the target's line.
func CheckTargets(ts []targets.Target, allow []string) error {
	for _, t := range ts {
		if t.IsPath() {
			continue
		}
		if err := CheckTarget(t.URL, allow); err != nil {
			return fmt.Errorf("request of line %d: %w", t.Line, err)
		}
	}
	return nil
}

func (c Config) mix() Mix {
	if c.Mix == (Mix{}) {
		return DefaultMix
	}
	return c.Mix
}

// CheckLoopback returns an error wrapping ErrNotLoopback unless rawURL is an
// http URL whose host is localhost or a loopback IP.
func CheckLoopback(rawURL string) error { return CheckTarget(rawURL, nil) }

// CheckTarget is CheckLoopback that also accepts the host names in allow.
// An IP address outside loopback is refused even if allow lists it.
func CheckTarget(rawURL string, allow []string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("loadgen: parsing target %q: %w", rawURL, err)
	}
	if u.Scheme != "http" {
		return fmt.Errorf("%w: %q is not an http URL", ErrNotLoopback, rawURL)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip != nil && ip.IsLoopback() {
		return nil
	}
	if ip == nil && host != "" && slices.Contains(allow, host) {
		return nil
	}
	return fmt.Errorf("%w: %q", ErrNotLoopback, rawURL)
}

// Stats are cumulative counts of a run. Requests counts the requests that
// ended, answered or failed (not those cut off by the run's end); Errors
// counts 5xx responses and transport failures; ClientErrors counts 4xx
// responses (a read of an id that was deleted is a normal 404).
type Stats struct {
	Requests     uint64            `json:"requests"`
	Errors       uint64            `json:"errors"`
	ClientErrors uint64            `json:"client_errors"`
	ByOp         map[string]uint64 `json:"by_op"`
	Elapsed      time.Duration     `json:"elapsed_ns"`
	// Arrivals counts the arrivals that came due: sent (Requests, and
	// those cut off by the run's end or still in flight) or Dropped.
	Arrivals uint64 `json:"arrivals"`
	// Dropped counts the arrivals not sent because Config.Concurrency
	// requests were in flight.
	Dropped uint64 `json:"dropped"`
	// Malformed counts the answers Config.CheckJSON found not to be valid
	// JSON; they count in Requests (and by their status) too.
	Malformed uint64 `json:"malformed,omitempty"`
	// OfferedRPS is Arrivals per second of Elapsed; AchievedRPS is
	// Requests per second of Elapsed.
	OfferedRPS  float64 `json:"offered_rps"`
	AchievedRPS float64 `json:"achieved_rps"`
	// Latency sums up the client-side latency of every request that was
	// answered (any status): from its arrival's due time to the end of
	// the response body. Transport failures are not in it.
	Latency LatencySummary `json:"latency"`
	// ByOpLatency is Latency for each op, by its name.
	ByOpLatency map[string]LatencySummary `json:"by_op_latency"`
	// ByTarget holds the counts of a run of Config.Targets by method and
	// path template (targets.Target.Key: "GET /api/v1/items/{n}", the path
	// without its query, every segment of digits only written {n}), at most
	// MaxTargetKeys of them and OtherTarget; nil without Targets.
	ByTarget map[string]TargetStats `json:"by_target,omitempty"`
}

// TargetStats are the counts of the requests of one Stats.ByTarget key, as
// Stats counts them all.
type TargetStats struct {
	Requests     uint64         `json:"requests"`
	Errors       uint64         `json:"errors"`
	ClientErrors uint64         `json:"client_errors"`
	Latency      LatencySummary `json:"latency"`
}

// String returns the stats on one line: the counts, the rates and the
// client-side latency.
func (s Stats) String() string {
	return fmt.Sprintf("%d requests (%d errors, %d client errors) in %v, %.1f req/s achieved; %d arrivals, %.1f req/s offered, %d dropped; client latency %v",
		s.Requests, s.Errors, s.ClientErrors, s.Elapsed.Round(time.Millisecond), s.AchievedRPS,
		s.Arrivals, s.OfferedRPS, s.Dropped, s.Latency)
}

// Generator runs one bounded load. It holds a Histogram for all requests
// and one for each op: about 180 KiB in all, whatever the run's length;
// with Config.Targets, one more for each Stats.ByTarget key (at most
// MaxTargetKeys+1, about 510 KiB more).
type Generator struct {
	cfg    Config
	client *http.Client
	base   string
	start  atomic.Int64 // unix nanos, 0 until Run starts
	end    atomic.Int64

	requests, errs, clientErrs atomic.Uint64
	arrivals, dropped          atomic.Uint64
	malformed                  atomic.Uint64
	byOp                       [numOps]atomic.Uint64
	latency                    Histogram
	byOpLatency                [numOps]Histogram

	// With Config.Targets: each target's resolved URL and key (an index
	// in keys and byTarget).
	urls     []string
	keyOf    []int
	keys     []string
	byTarget []counts

	// smp picks the sampled arrivals (Config.Sample); nil samples none.
	smp *sampler
	// bodies holds the buffers Config.CheckJSON reads bodies into.
	bodies sync.Pool
}

// counts are the counts of one Stats.ByTarget key.
type counts struct {
	requests, errs, clientErrs atomic.Uint64
	latency                    Histogram
}

// New validates cfg and returns a Generator. client may be nil for a
// dedicated client whose connection pool fits the concurrency.
func New(cfg Config, client *http.Client) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if client == nil {
		client = &http.Client{
			Timeout: cfg.Timeout,
			Transport: &http.Transport{
				Proxy:               nil, // never leave the machine through a proxy
				MaxIdleConns:        cfg.Concurrency,
				MaxIdleConnsPerHost: cfg.Concurrency,
				IdleConnTimeout:     30 * time.Second,
			},
		}
	}
	g := &Generator{cfg: cfg, client: client, base: strings.TrimRight(cfg.BaseURL, "/")}
	if err := g.indexTargets(); err != nil {
		return nil, err
	}
	g.smp = newSampler(cfg.Sample, cfg.Seed, len(cfg.Targets))
	return g, nil
}

// indexTargets resolves every target's URL and gives it its stats key.
func (g *Generator) indexTargets() error {
	if len(g.cfg.Targets) == 0 {
		return nil
	}
	g.urls = make([]string, len(g.cfg.Targets))
	g.keyOf = make([]int, len(g.cfg.Targets))
	index := map[string]int{}
	other := -1
	for i, t := range g.cfg.Targets {
		u, err := t.Resolve(g.base)
		if err != nil {
			return fmt.Errorf("loadgen: target %d: %w", i+1, err)
		}
		g.urls[i] = u
		key := t.Key()
		k, ok := index[key]
		switch {
		case ok:
		case len(g.keys) < MaxTargetKeys:
			k = len(g.keys)
			index[key] = k
			g.keys = append(g.keys, key)
		default:
			if other < 0 {
				other = len(g.keys)
				g.keys = append(g.keys, OtherTarget)
			}
			k = other
		}
		g.keyOf[i] = k
	}
	g.byTarget = make([]counts, len(g.keys))
	return nil
}

// Stats returns the counts so far.
func (g *Generator) Stats() Stats {
	s := Stats{
		Requests:     g.requests.Load(),
		Errors:       g.errs.Load(),
		ClientErrors: g.clientErrs.Load(),
		ByOp:         make(map[string]uint64, numOps),
		Arrivals:     g.arrivals.Load(),
		Dropped:      g.dropped.Load(),
		Malformed:    g.malformed.Load(),
		Latency:      g.latency.Summary(),
		ByOpLatency:  make(map[string]LatencySummary, numOps),
	}
	for i := range g.byOp {
		s.ByOp[Op(i).String()] = g.byOp[i].Load()
		s.ByOpLatency[Op(i).String()] = g.byOpLatency[i].Summary()
	}
	if g.keys != nil {
		s.ByTarget = make(map[string]TargetStats, len(g.keys))
		for i, k := range g.keys {
			c := &g.byTarget[i]
			s.ByTarget[k] = TargetStats{
				Requests: c.requests.Load(), Errors: c.errs.Load(),
				ClientErrors: c.clientErrs.Load(), Latency: c.latency.Summary(),
			}
		}
	}
	if start := g.start.Load(); start != 0 {
		end := g.end.Load()
		if end == 0 {
			end = time.Now().UnixNano()
		}
		s.Elapsed = time.Duration(end - start)
	}
	if secs := s.Elapsed.Seconds(); secs > 0 {
		s.OfferedRPS = float64(s.Arrivals) / secs
		s.AchievedRPS = float64(s.Requests) / secs
	}
	return s
}

// call is one planned request.
type call struct {
	op   Op
	id   string
	body []byte
	n    int
	path string // Config.Path's, when set
	// target is Config.Targets' index + 1, or 0 for a call of the mix.
	target int
	// sample asks for the response to be sampled (Config.Sample).
	sample bool
}

// Run sends load until ctx is done, Duration has passed or MaxRequests
// arrivals came due, waits for the requests in flight (those the run's end
// cuts off are not counted), and returns the final counts. It returns ctx's
// error only when ctx ended the run early.
func (g *Generator) Run(ctx context.Context) (Stats, error) {
	return g.run(ctx, time.Now())
}

// run is Run with the schedule's start: a start in the past makes the
// arrivals due since then overdue, as a held-up scheduler finds them.
func (g *Generator) run(ctx context.Context, start time.Time) (Stats, error) {
	if !g.start.CompareAndSwap(0, start.UnixNano()) {
		return g.Stats(), errors.New("loadgen: Run called twice")
	}
	runCtx, cancel := context.WithTimeout(ctx, g.cfg.Duration)
	defer cancel()

	// A slot in inFlight is a request in flight; an arrival that finds
	// none free is dropped rather than waiting for one.
	inFlight := make(chan struct{}, g.cfg.Concurrency)
	var wg sync.WaitGroup
	g.schedule(runCtx, start, func(c call, due time.Time) {
		if g.smp != nil {
			c.sample = g.smp.next(c.target - 1)
		}
		select {
		case inFlight <- struct{}{}:
			wg.Go(func() {
				defer func() { <-inFlight }()
				g.do(runCtx, c, due)
			})
		default:
			g.dropped.Add(1)
			if c.sample {
				g.smp.missed()
			}
		}
	})
	wg.Wait()
	g.end.Store(time.Now().UnixNano())
	if err := ctx.Err(); err != nil {
		return g.Stats(), fmt.Errorf("loadgen: %w", err)
	}
	return g.Stats(), nil
}

// schedule calls arrive with every arrival's call, drawn from the seeded
// sequence, and its due time, at that time, until the run's context ends or
// MaxRequests arrivals came due. arrive must not block. Arrival i is due at
// start + i/RPS (with Burst, wave k's arrivals at start + k*Burst/RPS); an
// arrival whose time has passed, because the scheduler was held up (a GC
// pause, a busy machine), arrives at once.
func (g *Generator) schedule(ctx context.Context, start time.Time, arrive func(c call, due time.Time)) {
	rnd := rand.New(rand.NewPCG(g.cfg.Seed, g.cfg.Seed+1))
	weights := g.cfg.mix().weights()
	total := 0
	for _, w := range weights {
		total += w
	}
	// Pre-build a few hundred bodies so that the generator's own work stays
	// small next to the service's.
	bodies := make([][]byte, 256)
	for i := range bodies {
		size := 200 + rnd.IntN(1801)
		if g.cfg.LargeBodyBytes > 0 && i%LargeBodyShare == 0 {
			size = g.cfg.LargeBodyBytes
		}
		bodies[i] = makeBody(rnd, size)
	}

	// Due times are computed from start, never from the previous arrival,
	// so that a late wake-up does not shift the arrivals after it.
	wave := max(g.cfg.Burst, 1)
	period := float64(wave) / g.cfg.RPS * float64(time.Second) // between waves
	timer := time.NewTimer(time.Hour)
	timer.Stop() // armed for each wait below
	defer timer.Stop()
	for i := range g.cfg.MaxRequests {
		due := start.Add(time.Duration(float64(i/wave) * period))
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
		if ctx.Err() != nil {
			return
		}
		// The call is drawn for a dropped arrival too, so that arrival i
		// makes the same call whatever became of the others.
		var c call
		if len(g.cfg.Targets) > 0 {
			c = g.nextTarget(i, rnd)
		} else {
			c = g.next(rnd, weights, total, bodies)
		}
		g.arrivals.Add(1)
		arrive(c, due)
	}
}

// nextTarget returns arrival i's call of Config.Targets.
func (g *Generator) nextTarget(i int, rnd *rand.Rand) call {
	n := len(g.cfg.Targets)
	if g.cfg.Order == Random {
		return call{target: 1 + rnd.IntN(n)}
	}
	return call{target: 1 + i%n}
}

func (g *Generator) next(rnd *rand.Rand, weights [numOps]int, total int, bodies [][]byte) call {
	n := rnd.IntN(total)
	op := Op(0)
	for i, w := range weights {
		if n < w {
			op = Op(i)
			break
		}
		n -= w
	}
	if g.cfg.Path != nil {
		return call{op: OpGet, path: g.cfg.Path(rnd.IntN(g.cfg.Keys), rnd)}
	}
	c := call{op: op, id: fmt.Sprintf("item-%05d", rnd.IntN(g.cfg.Keys))}
	switch op {
	case OpPut:
		c.body = bodies[rnd.IntN(len(bodies))]
	case OpList:
		c.n = 20 + rnd.IntN(41) // 20..60
	case OpReport:
		c.n = 20 + rnd.IntN(41) // 20..60
	}
	return c
}

// do sends c and counts its outcome; the latency of an answer is counted
// from due, the arrival's scheduled time.
func (g *Generator) do(ctx context.Context, c call, due time.Time) {
	req, err := g.request(ctx, c)
	if err != nil {
		g.failed(c)
		g.sampled(c, Sample{Err: err})
		return
	}
	if g.cfg.Host != "" {
		req.Host = g.cfg.Host
	}
	var (
		smp       Sample
		malformed bool
	)
	resp, err := g.client.Do(req)
	switch {
	case err == nil && c.sample:
		smp, err = g.smp.read(resp)
		malformed = err == nil && g.cfg.CheckJSON && !smp.Truncated && checked(req.Method, resp) && malformedBody(smp.Body)
	case err == nil && g.cfg.CheckJSON && checked(req.Method, resp):
		malformed, err = g.readChecked(resp)
	case err == nil:
		_, err = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	if err != nil {
		if ctx.Err() != nil {
			return // the run ended while this request was in flight: not the service's fault
		}
		g.failed(c)
		g.sampled(c, Sample{Err: err})
		return
	}
	g.answered(c, resp.StatusCode, time.Since(due))
	if malformed {
		g.malformed.Add(1)
	}
	g.sampled(c, smp)
}

// sampled hands c's sample to the sink when c was sampled.
func (g *Generator) sampled(c call, s Sample) {
	if !c.sample {
		return
	}
	s.Target = c.target - 1
	g.smp.sink(s)
}

// request builds c's request.
func (g *Generator) request(ctx context.Context, c call) (*http.Request, error) {
	if c.target > 0 {
		return g.targetRequest(ctx, c.target-1)
	}
	var (
		method = http.MethodGet
		path   string
		body   io.Reader
	)
	switch {
	case c.path != "":
		path = c.path
	case c.op == OpPut:
		method, path, body = http.MethodPut, "/api/v1/items/"+c.id, bytes.NewReader(c.body)
	case c.op == OpGet:
		path = "/api/v1/items/" + c.id
	case c.op == OpList:
		path = fmt.Sprintf("/api/v1/items?limit=%d", c.n)
	case c.op == OpReport:
		path = fmt.Sprintf("/api/v1/report?n=%d", c.n)
	case c.op == OpDelete:
		method, path = http.MethodDelete, "/api/v1/items/"+c.id
	}
	req, err := http.NewRequestWithContext(ctx, method, g.base+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// targetRequest builds the request of Config.Targets[i].
func (g *Generator) targetRequest(ctx context.Context, i int) (*http.Request, error) {
	t := &g.cfg.Targets[i]
	var body io.Reader
	if len(t.Body) > 0 {
		body = bytes.NewReader(t.Body)
	}
	req, err := http.NewRequestWithContext(ctx, t.Method, g.urls[i], body)
	if err != nil {
		return nil, err
	}
	if t.Header != nil {
		req.Header = t.Header.Clone()
		req.Host = t.Header.Get("Host")
	}
	return req, nil
}

// answered counts an answer with its status code and client-side latency.
func (g *Generator) answered(c call, code int, latency time.Duration) {
	g.latency.Record(latency)
	g.requests.Add(1)
	serverErr, clientErr := code >= 500, code >= 400 && code < 500
	if serverErr {
		g.errs.Add(1)
	} else if clientErr {
		g.clientErrs.Add(1)
	}
	if c.target > 0 {
		k := &g.byTarget[g.keyOf[c.target-1]]
		k.latency.Record(latency)
		k.requests.Add(1)
		if serverErr {
			k.errs.Add(1)
		} else if clientErr {
			k.clientErrs.Add(1)
		}
		return
	}
	g.byOpLatency[c.op].Record(latency)
	g.byOp[c.op].Add(1)
}

// failed counts a request that got no answer: an error, without a latency.
func (g *Generator) failed(c call) {
	g.requests.Add(1)
	g.errs.Add(1)
	if c.target > 0 {
		k := &g.byTarget[g.keyOf[c.target-1]]
		k.requests.Add(1)
		k.errs.Add(1)
		return
	}
	g.byOp[c.op].Add(1)
}

var words = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet
kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray
yankee zulu pool parity gray stable canary buffer scratch report latency`)

// makeBody returns an item's JSON: a name, up to 8 tags and a payload of
// about target bytes.
func makeBody(rnd *rand.Rand, target int) []byte {
	type item struct {
		Name    string   `json:"name"`
		Tags    []string `json:"tags"`
		Payload string   `json:"payload"`
	}
	it := item{Name: words[rnd.IntN(len(words))] + "-" + words[rnd.IntN(len(words))], Tags: []string{}}
	for range rnd.IntN(9) {
		it.Tags = append(it.Tags, words[rnd.IntN(len(words))])
	}
	var p strings.Builder
	for p.Len() < target {
		p.WriteString(words[rnd.IntN(len(words))])
		p.WriteByte(' ')
	}
	it.Payload = p.String()
	b, err := json.Marshal(it)
	if err != nil { // a struct of strings always marshals; keep a valid body anyway
		return []byte(`{"name":"fallback","tags":[],"payload":""}`)
	}
	return b
}

// MaxPathTemplate bounds a path template's length.
const MaxPathTemplate = 512

// ParsePath parses a path template into a Config.Path: the path (with its
// query) of every request, where {key} becomes the call's key and
// {a|b|c} one of the choices, drawn at random (repeat a choice to weigh
// it). For example "/thumbnail/img-{key}?w={64|64|128}". The template must
// start with /, hold no space, control character or '#', and close every
// brace; a choice list holds 1 to 64 non-empty choices without braces.
func ParsePath(tmpl string) (func(key int, rnd *rand.Rand) string, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("path template %q: %s", tmpl, fmt.Sprintf(format, a...))
	}
	if !strings.HasPrefix(tmpl, "/") {
		return nil, bad("want a path starting with /")
	}
	if len(tmpl) > MaxPathTemplate {
		return nil, bad("longer than %d bytes", MaxPathTemplate)
	}
	if i := strings.IndexFunc(tmpl, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '#' || r == utf8.RuneError }); i >= 0 {
		return nil, bad("byte %d: no spaces, control characters or '#'", i)
	}
	// parts are literal text, {key} or a choice list, in order.
	type part struct {
		lit     string
		choices []string
		key     bool
	}
	var parts []part
	rest := tmpl
	for rest != "" {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			parts = append(parts, part{lit: rest})
			break
		}
		if rest[open] == '}' {
			return nil, bad("'}' without '{'")
		}
		if open > 0 {
			parts = append(parts, part{lit: rest[:open]})
		}
		end := strings.IndexAny(rest[open+1:], "{}")
		if end < 0 || rest[open+1+end] != '}' {
			return nil, bad("'{' without its '}'")
		}
		inner := rest[open+1 : open+1+end]
		rest = rest[open+2+end:]
		if inner == "key" {
			parts = append(parts, part{key: true})
			continue
		}
		choices := strings.Split(inner, "|")
		if len(choices) > 64 || slices.Contains(choices, "") {
			return nil, bad("{%s}: want {key} or 1 to 64 non-empty choices separated by |", inner)
		}
		parts = append(parts, part{choices: choices})
	}
	return func(key int, rnd *rand.Rand) string {
		var b strings.Builder
		for _, p := range parts {
			switch {
			case p.key:
				b.WriteString(strconv.Itoa(key))
			case p.choices != nil:
				b.WriteString(p.choices[rnd.IntN(len(p.choices))])
			default:
				b.WriteString(p.lit)
			}
		}
		return b.String()
	}, nil
}

// validHost reports whether h is a host name (letters, digits, '-' and '.'
// in labels of 1-63 characters) with an optional :port, as a Host header
// carries it.
func validHost(h string) bool {
	name, port, err := net.SplitHostPort(h)
	if err != nil {
		name, port = h, ""
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return false
		}
	}
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

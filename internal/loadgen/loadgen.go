// Package loadgen sends a bounded, reproducible mix of API calls to a
// poolparity endpoint on the local machine: item writes, reads, listings,
// reports and deletes, in proportions that resemble a read-mostly JSON API.
//
// Every run is bounded three ways: by its context, by Config.Duration and by
// Config.MaxRequests. The target must be a loopback address, or a host name
// the caller lists in Config.AllowHosts (the in-cluster load generator lists
// the Service it was pointed at, and only when it runs in a pod); New refuses
// any other, and never an IP address outside loopback.
//
// # Concurrency
//
// Run may be called once per Generator. Stats may be called concurrently
// with Run, from any goroutine.
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
	// MaxRequests bounds the number of requests. Required.
	MaxRequests int
	// RPS is the target rate of requests per second, over all workers.
	RPS float64
	// Concurrency is the number of workers (in-flight requests at most).
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
	// Burst, when > 1, makes calls arrive in waves of Burst at once, the
	// waves paced so that the average rate stays RPS: the bursty arrivals
	// of real traffic, under which Concurrency requests are in flight at
	// once and a pool must hold that many objects. 0 or 1 spreads the calls
	// evenly. At most Concurrency, so that a wave is in flight at once.
	Burst int
	// Path, when set, replaces the item API's mix: every call is a GET of
	// the path (with its query) that Path returns for the key it is given
	// (0 to Keys-1) and the run's random source, counted as OpGet. It is
	// how the load drives a service of another shape (the example
	// service's thumbnails). Mix and LargeBodyBytes are then unused. Path
	// is called from one goroutine and must return a path starting with /.
	Path func(key int, rnd *rand.Rand) string
	// AllowHosts lists host names (never IP addresses) that BaseURL may name
	// besides loopback: for example the Kubernetes Service an in-cluster load
	// generator targets. Empty allows loopback only.
	AllowHosts []string
}

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
	if c.LargeBodyBytes < 0 || c.LargeBodyBytes > MaxLargeBodyBytes {
		errs = append(errs, fmt.Errorf("%w: large body bytes must be in [0, %d], got %d", ErrBounds, MaxLargeBodyBytes, c.LargeBodyBytes))
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

// Stats are cumulative counts of a run. Errors counts 5xx responses and
// transport failures; ClientErrors counts 4xx responses (a read of an id
// that was deleted is a normal 404).
type Stats struct {
	Requests     uint64            `json:"requests"`
	Errors       uint64            `json:"errors"`
	ClientErrors uint64            `json:"client_errors"`
	ByOp         map[string]uint64 `json:"by_op"`
	Elapsed      time.Duration     `json:"elapsed_ns"`
}

// Generator runs one bounded load.
type Generator struct {
	cfg    Config
	client *http.Client
	base   string
	start  atomic.Int64 // unix nanos, 0 until Run starts
	end    atomic.Int64

	requests, errs, clientErrs atomic.Uint64
	byOp                       [numOps]atomic.Uint64
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
	return &Generator{cfg: cfg, client: client, base: strings.TrimRight(cfg.BaseURL, "/")}, nil
}

// Stats returns the counts so far.
func (g *Generator) Stats() Stats {
	s := Stats{
		Requests:     g.requests.Load(),
		Errors:       g.errs.Load(),
		ClientErrors: g.clientErrs.Load(),
		ByOp:         make(map[string]uint64, numOps),
	}
	for i := range g.byOp {
		s.ByOp[Op(i).String()] = g.byOp[i].Load()
	}
	if start := g.start.Load(); start != 0 {
		end := g.end.Load()
		if end == 0 {
			end = time.Now().UnixNano()
		}
		s.Elapsed = time.Duration(end - start)
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
}

// Run sends load until ctx is done, Duration has passed or MaxRequests have
// been sent, and returns the final counts. It returns ctx's error only when
// ctx ended the run early.
func (g *Generator) Run(ctx context.Context) (Stats, error) {
	if !g.start.CompareAndSwap(0, time.Now().UnixNano()) {
		return g.Stats(), errors.New("loadgen: Run called twice")
	}
	runCtx, cancel := context.WithTimeout(ctx, g.cfg.Duration)
	defer cancel()

	calls := make(chan call)
	var wg sync.WaitGroup
	for range g.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range calls {
				g.do(runCtx, c)
			}
		}()
	}

	g.plan(runCtx, calls)
	close(calls)
	wg.Wait()
	g.end.Store(time.Now().UnixNano())
	if err := ctx.Err(); err != nil {
		return g.Stats(), err
	}
	return g.Stats(), nil
}

// plan paces calls at RPS, drawing each from the seeded sequence, until the
// run's context ends or MaxRequests calls were handed out.
func (g *Generator) plan(ctx context.Context, calls chan<- call) {
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

	// Credit grows with the time that really passed, so that late ticks on
	// a busy machine do not lower the rate; it is capped at 100ms worth of
	// requests (or one wave) so that a stalled service is not then hit by
	// a burst. With Burst, calls are released only once a wave's worth of
	// credit is there, and then the whole wave at once.
	const tick = 10 * time.Millisecond
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	wave := float64(max(g.cfg.Burst, 1))
	maxCredit := max(g.cfg.RPS*0.1+1, wave)
	credit, last := 0.0, time.Now()
	sent := 0
	for sent < g.cfg.MaxRequests {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			credit = min(credit+g.cfg.RPS*now.Sub(last).Seconds(), maxCredit)
			last = now
		}
		if credit < wave {
			continue
		}
		for credit >= 1 && sent < g.cfg.MaxRequests {
			credit--
			c := g.next(rnd, weights, total, bodies)
			select {
			case calls <- c:
				sent++
			case <-ctx.Done():
				return
			}
		}
	}
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

func (g *Generator) do(ctx context.Context, c call) {
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
		g.count(c.op, 0, err)
		return
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := g.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return // the run ended while this request was in flight: not the service's fault
		}
		g.count(c.op, 0, err)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	g.count(c.op, resp.StatusCode, nil)
}

func (g *Generator) count(op Op, code int, err error) {
	g.requests.Add(1)
	g.byOp[op].Add(1)
	switch {
	case err != nil || code >= 500:
		g.errs.Add(1)
	case code >= 400:
		g.clientErrs.Add(1)
	}
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

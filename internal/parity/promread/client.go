package promread

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// Defaults of ClientConfig.
const (
	// DefaultMaxResponseBytes bounds one answer: 8 MiB holds the range
	// query of a day of 20 s samples of every SLI several times over.
	DefaultMaxResponseBytes = 8 << 20
	// DefaultTimeout bounds one request from dial to the last byte.
	DefaultTimeout = 20 * time.Second
	// errorBodyBytes is how much of an error answer is read to find
	// Prometheus' own error field; the rest is dropped unread.
	errorBodyBytes = 64 << 10
	// maxErrorText bounds the error text of an answer kept in a message.
	maxErrorText = 256
)

// ErrResponseTooLarge is returned (wrapped) when an answer is larger than
// the client's MaxResponseBytes: nothing of it is used.
var ErrResponseTooLarge = errors.New("the answer is larger than the response-size cap")

// ErrEndpointNotAllowed is returned (wrapped) by Clients.For for a URL that
// is not one of the allowed endpoints: no request is sent to it.
var ErrEndpointNotAllowed = errors.New("not an allowed Prometheus endpoint")

// ClientConfig bounds the HTTP client that New builds. The zero value takes
// the defaults.
type ClientConfig struct {
	// MaxResponseBytes caps one answer's body; a larger one is an error
	// (ErrResponseTooLarge) and is never held in memory whole. 0 means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Timeout bounds one request, from dial to the last byte of the body;
	// 0 means DefaultTimeout. The caller's context bounds it further.
	Timeout time.Duration
	// RoundTripper sends the requests; nil means a transport without a
	// proxy, with dial, TLS handshake and response-header timeouts. Tests
	// pass their own; the caps above apply to it too.
	RoundTripper http.RoundTripper

	// The endpoint guard of the Queriers that Clients hands out (one per
	// endpoint, shared by all its canaries; New's Querier has none).
	//
	// StallAfter is how long a request may wait with no answer from its
	// endpoint before the endpoint counts as stalled: the requests begun
	// after it are cut short and new ones fail at once until it ends. 0
	// means DefaultStallAfter.
	StallAfter time.Duration
	// Backoff is how long an endpoint is backed off (requests fail at
	// once) after a failure; it doubles per failure in a row up to
	// MaxBackoff. 0 means DefaultBackoff and DefaultMaxBackoff.
	Backoff, MaxBackoff time.Duration
	// MaxInFlight bounds the requests in flight to one endpoint; 0 means
	// DefaultMaxInFlight.
	MaxInFlight int
	// RulesTTL is how long Clients keep an endpoint's RuleSet (the rule
	// list read with exclude_alerts, once for every canary of the
	// endpoint); 0 means DefaultRulesTTL. A rule loaded since is seen
	// within it.
	RulesTTL time.Duration
	// MaxRulesBytes caps the rule list answer Clients read for the
	// RuleSet, streamed group by group; 0 means DefaultMaxRulesBytes.
	MaxRulesBytes int64
	// Observer, when set, is told of every request of Clients' endpoints.
	Observer Observer
}

func (c ClientConfig) withDefaults() ClientConfig {
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.RoundTripper == nil {
		c.RoundTripper = newTransport(c.Timeout)
	}
	if c.StallAfter <= 0 {
		c.StallAfter = DefaultStallAfter
	}
	if c.Backoff <= 0 {
		c.Backoff = DefaultBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	c.MaxBackoff = max(c.MaxBackoff, c.Backoff)
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.RulesTTL <= 0 {
		c.RulesTTL = DefaultRulesTTL
	}
	if c.MaxRulesBytes <= 0 {
		c.MaxRulesBytes = max(DefaultMaxRulesBytes, c.MaxResponseBytes)
	}
	return c
}

// newTransport is an HTTP transport whose every phase has a deadline: a
// Prometheus that accepts the connection and never answers costs at most
// timeout.
func newTransport(timeout time.Duration) *http.Transport {
	dial := min(5*time.Second, timeout)
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            (&net.Dialer{Timeout: dial, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:    dial,
		ResponseHeaderTimeout:  timeout,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConnsPerHost:    4,
		MaxResponseHeaderBytes: 64 << 10,
	}
}

// New returns a Querier for the Prometheus HTTP API at address (a base URL,
// http or https) through the one client every reader of this project uses:
// its requests are bounded in time and its answers in size, and an error
// answer is never copied into an error message beyond the status code and
// Prometheus' own JSON error field, bounded and stripped of control
// characters (see ClientConfig).
func New(address string, cfg ClientConfig) (Querier, error) {
	base, err := CheckURL(address)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c, err := api.NewClient(api.Config{Address: base, Client: httpClient(cfg, cfg.MaxResponseBytes)})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %s: %w", base, err)
	}
	return v1.NewAPI(c), nil
}

// httpClient is the HTTP client of New's Querier and of the rule cache: cfg's transport and
// timeout, answers capped at max bytes, no redirects.
func httpClient(cfg ClientConfig, max int64) *http.Client {
	return &http.Client{
		Timeout:   cfg.Timeout,
		Transport: bounded{rt: cfg.RoundTripper, max: max},
		// A redirect could lead the request anywhere: an allowed endpoint answers itself.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// CheckURL returns address as a base URL (no trailing slash) or an error
// saying why it is not one: an absolute http or https URL with a host, no
// user information, query or fragment.
func CheckURL(address string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(address))
	switch {
	case err != nil:
		return "", fmt.Errorf("prometheus URL %q: %w", address, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("prometheus URL %q: want an http or https URL", address)
	case u.Host == "":
		return "", fmt.Errorf("prometheus URL %q: no host", address)
	case u.User != nil:
		return "", fmt.Errorf("prometheus URL %q: user information is not allowed in the URL", address)
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("prometheus URL %q: a base URL has no query or fragment", address)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// bounded caps the answers of rt at max bytes and strips error answers to
// what Prometheus' API says in its JSON error field.
type bounded struct {
	rt  http.RoundTripper
	max int64
}

func (b bounded) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > b.max {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %d bytes announced, cap %d", ErrResponseTooLarge, resp.ContentLength, b.max)
	}
	if resp.StatusCode/100 != 2 {
		body := apiErrorBody(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(strings.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Del("Content-Length")
		return resp, nil
	}
	resp.Body = &capped{rc: resp.Body, left: b.max, max: b.max}
	return resp, nil
}

// apiErrorBody reads at most errorBodyBytes of an error answer and returns
// Prometheus' error envelope with only its errorType and error fields,
// bounded and sanitised; "" when the answer is no such envelope (a proxy's
// page, another service's answer), so that none of it reaches a message.
func apiErrorBody(r io.Reader) string {
	raw, _ := io.ReadAll(io.LimitReader(r, errorBodyBytes))
	var env struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
	}
	if json.Unmarshal(raw, &env) != nil || env.Status != "error" || env.Error == "" {
		return ""
	}
	out, _ := json.Marshal(map[string]string{
		"status":    "error",
		"errorType": Sanitize(env.ErrorType, 32),
		"error":     Sanitize(env.Error, maxErrorText),
	})
	return string(out)
}

// capped reads at most max bytes of rc and fails past them.
type capped struct {
	rc        io.ReadCloser
	left, max int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One byte more tells a body of exactly max bytes from a longer one.
		var one [1]byte
		_, err := io.ReadFull(c.rc, one[:])
		switch {
		case err == nil:
			return 0, fmt.Errorf("%w (%d bytes)", ErrResponseTooLarge, c.max)
		case errors.Is(err, io.ErrUnexpectedEOF):
			err = io.EOF
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *capped) Close() error { return c.rc.Close() }

// Sanitize returns s with every control or non-printable character a space,
// runs of spaces folded, cut to at most n runes (with "..." when cut): text
// from an outside answer that is safe to put in a message.
func Sanitize(s string, n int) string {
	var b strings.Builder
	runes, space := 0, false
	for _, r := range s {
		if !unicode.IsPrint(r) {
			r = ' '
		}
		if r == ' ' {
			if space {
				continue
			}
			space = true
		} else {
			space = false
		}
		if runes == n {
			return strings.TrimSpace(b.String()) + "..."
		}
		b.WriteRune(r)
		runes++
	}
	return strings.TrimSpace(b.String())
}

// Clients hands out one Querier per allowed endpoint, built by New with one
// ClientConfig: the Prometheus endpoints a cluster admin lists are the only
// ones a tenant's PoolCanary can make the controller call. Each endpoint's
// requests go through its own guard (a circuit breaker, see ClientConfig's
// StallAfter and Backoff): a tenant's stalled or failing endpoint fails its
// own canaries' requests at once instead of holding the controller's
// workers, and never slows another endpoint's. Safe for concurrent use.
type Clients struct {
	allowed []string
	any     bool
	cfg     ClientConfig

	mu sync.Mutex
	m  map[string]Querier
}

// NewClients returns the clients of the allowed endpoints (base URLs, as
// CheckURL accepts them; the first is the default). With allowAny every
// http(s) URL is allowed: for tests and single-tenant tools only.
func NewClients(allowed []string, allowAny bool, cfg ClientConfig) (*Clients, error) {
	c := &Clients{any: allowAny, cfg: cfg.withDefaults(), m: map[string]Querier{}}
	for _, a := range allowed {
		u, err := CheckURL(a)
		if err != nil {
			return nil, fmt.Errorf("allowed endpoints: %w", err)
		}
		if !slices.Contains(c.allowed, u) {
			c.allowed = append(c.allowed, u)
		}
	}
	if len(c.allowed) == 0 && !allowAny {
		return nil, errors.New("allowed endpoints: none listed")
	}
	return c, nil
}

// Allowed returns the allowed endpoints, the default first.
func (c *Clients) Allowed() []string { return slices.Clone(c.allowed) }

// Resolve returns the endpoint a spec names: the default for "", address
// itself when it is allowed, else an error wrapping ErrEndpointNotAllowed
// that lists the allowed ones.
func (c *Clients) Resolve(address string) (string, error) {
	if strings.TrimSpace(address) == "" {
		if len(c.allowed) == 0 {
			return "", fmt.Errorf("no Prometheus URL given and no default endpoint: %w", ErrEndpointNotAllowed)
		}
		return c.allowed[0], nil
	}
	u, err := CheckURL(address)
	if err != nil {
		return "", err
	}
	if c.any || slices.Contains(c.allowed, u) {
		return u, nil
	}
	return "", fmt.Errorf("%q is %w (allowed: %s)", u, ErrEndpointNotAllowed, strings.Join(c.allowed, ", "))
}

// For returns the Querier of the endpoint address names (see Resolve), and
// the endpoint.
func (c *Clients) For(address string) (Querier, string, error) {
	u, err := c.Resolve(address)
	if err != nil {
		return nil, "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if q, ok := c.m[u]; ok {
		return q, u, nil
	}
	q, err := New(u, c.cfg)
	if err != nil {
		return nil, "", err
	}
	g := newGuard(u, c.cfg)
	q = guarded{q: q, g: g, rules: newRuleCache(u, httpClient(c.cfg, c.cfg.MaxRulesBytes), c.cfg.RulesTTL, g)}
	if len(c.m) < 64 { // allowAny clients are not kept without bound
		c.m[u] = q
	}
	return q, u, nil
}

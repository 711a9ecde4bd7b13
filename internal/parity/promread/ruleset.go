package promread

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// Defaults of ClientConfig's rule list settings.
const (
	// DefaultRulesTTL is how long Clients keep an endpoint's rule set.
	DefaultRulesTTL = 30 * time.Second
	// DefaultMaxRulesBytes caps one rule list answer. It is read as it streams, one group at
	// a time, and only the names, intervals and read metric names are kept, so the cap
	// bounds the time spent more than the memory: without its alert instances the chart's
	// rules list about 37 KB per install, 11 MB for 300 installs on one Prometheus.
	DefaultMaxRulesBytes = 32 << 20
)

// RuleSet is what the judge reads of the loaded rules: each recording rule's group
// evaluation interval (0 when Prometheus does not say), and what every rule reads. A
// RuleSet handed out by a Querier may be shared: it is read-only.
type RuleSet struct {
	// Intervals holds the recording rules by name.
	Intervals map[string]time.Duration
	// Reads is what each recording and alerting rule reads.
	Reads RuleReads
	// unreadable is the first query Prometheus loaded that this parser cannot read, naming
	// its rule: Reads is then incomplete, and ReadRuleReads says so; Intervals is whole.
	unreadable error
}

// RuleSetReader is a Querier that serves its endpoint's RuleSet itself, from a cache shared
// by every Querier of the endpoint (Clients' Queriers do). RuleSet must be safe for
// concurrent use.
type RuleSetReader interface {
	RuleSet(ctx context.Context) (RuleSet, error)
}

// ReadRuleSet returns the RuleSet of the rules q's endpoint has loaded: q's own when it is a
// RuleSetReader, else built from q.Rules.
func ReadRuleSet(ctx context.Context, q Querier) (RuleSet, error) {
	if r, ok := q.(RuleSetReader); ok {
		return r.RuleSet(ctx)
	}
	res, err := q.Rules(ctx, nil)
	if err != nil {
		return RuleSet{}, DescribeError(err)
	}
	b := newRuleSetBuilder()
	for _, g := range res.Groups {
		for _, rule := range g.Rules {
			switch r := rule.(type) {
			case v1.RecordingRule:
				b.add(g.Interval, "recording", r.Name, r.Query)
			case v1.AlertingRule:
				b.add(g.Interval, "alerting", r.Name, r.Query)
			}
		}
	}
	return b.set, nil
}

// ruleSetBuilder builds a RuleSet rule by rule, parsing each distinct query once.
type ruleSetBuilder struct {
	set    RuleSet
	parsed map[string][]string
}

func newRuleSetBuilder() *ruleSetBuilder {
	return &ruleSetBuilder{
		set:    RuleSet{Intervals: map[string]time.Duration{}, Reads: RuleReads{Records: map[string][]string{}, Alerts: map[string][]string{}}},
		parsed: map[string][]string{},
	}
}

// add adds one rule of type typ ("recording" or "alerting"; others are skipped) of a group
// evaluated every interval seconds. A query this parser cannot read is kept as the set's
// unreadable error (the first), the rule's reads left out.
func (b *ruleSetBuilder) add(interval float64, typ, name, query string) {
	var dst map[string][]string
	switch typ {
	case "recording":
		dst = b.set.Reads.Records
		b.set.Intervals[name] = time.Duration(interval * float64(time.Second))
	case "alerting":
		dst = b.set.Reads.Alerts
	default:
		return
	}
	names, ok := b.parsed[query]
	if !ok {
		var err error
		if names, err = selectorNames(query); err != nil {
			if b.set.unreadable == nil {
				b.set.unreadable = fmt.Errorf("parsing the query of %s: %w", name, err)
			}
			return
		}
		b.parsed[query] = names
	}
	cur := dst[name]
	for _, n := range names {
		if !slices.Contains(cur, n) {
			cur = append(cur, n)
		}
	}
	slices.Sort(cur)
	if cur == nil {
		cur = []string{}
	}
	dst[name] = cur
}

// ruleCache is one endpoint's RuleSet, read at most once per ttl however many canaries ask
// (the callers of a read in progress wait for it), through the endpoint's guard. Safe for
// concurrent use.
type ruleCache struct {
	url string // the rules API's URL, with exclude_alerts=true
	hc  *http.Client
	ttl time.Duration
	g   *guard

	mu      sync.Mutex
	set     RuleSet
	err     error     // the last read's, when the endpoint answered but not with a rule list
	read    time.Time // when set (or err) was read; zero before the first read
	reading chan struct{}
	since   time.Time // when the read in progress began
}

func newRuleCache(base string, hc *http.Client, ttl time.Duration, g *guard) *ruleCache {
	// exclude_alerts drops every alert instance of the answer (Prometheus 2.54 and later; an
	// older one ignores it): the judge reads the rules' definitions only, and a shared
	// Prometheus' pending alerts can be most of the list.
	return &ruleCache{url: base + "/api/v1/rules?exclude_alerts=true", hc: hc, ttl: ttl, g: g}
}

// get returns the endpoint's RuleSet, read anew when older than the ttl.
func (c *ruleCache) get(ctx context.Context) (RuleSet, error) {
	for {
		c.mu.Lock()
		if !c.read.IsZero() && time.Since(c.read) < c.ttl {
			set, err := c.set, c.err
			c.mu.Unlock()
			if err != nil {
				return RuleSet{}, fmt.Errorf("reading the rules (kept from %s ago): %w", time.Since(c.read).Round(time.Second), err)
			}
			return set, nil
		}
		if wait := c.reading; wait != nil {
			if !c.read.IsZero() && c.err == nil {
				// A newer list is on its way: the last one serves meanwhile (a shared
				// Prometheus' list can take seconds to send).
				set := c.set
				c.mu.Unlock()
				return set, nil
			}
			// The first read: wait for it, but not on a stalled endpoint (the guard's
			// judgement, checked once the read has had the stall time): a waiter holds a
			// worker as the read does.
			check := time.NewTimer(max(time.Until(c.since.Add(c.g.stallAfter)), 0))
			c.mu.Unlock()
			if err := c.waitFor(ctx, wait, check); err != nil {
				return RuleSet{}, err
			}
			continue // read, or failed: then this caller tries (through the guard)
		}
		done := make(chan struct{})
		c.reading, c.since = done, time.Now()
		c.mu.Unlock()

		var set RuleSet
		err := c.g.do(ctx, "rule_list", func(ctx context.Context) error {
			var err error
			set, err = c.fetch(ctx)
			return err
		})
		if err != nil {
			err = DescribeError(err)
		}
		c.mu.Lock()
		c.reading = nil
		switch {
		case err == nil:
			c.set, c.err, c.read = set, nil, time.Now()
		case !errors.Is(err, ErrEndpointUnavailable) && !endpointFailed(ctx, err) && ctx.Err() == nil:
			// The endpoint answered, with no rule list (too large, not one): that will not
			// change within the TTL, and reading it again for every canary is what a hostile
			// answer wants. The endpoint's own failures are the guard's to back off.
			c.set, c.err, c.read = RuleSet{}, err, time.Now()
		}
		c.mu.Unlock()
		close(done)
		if err != nil {
			return RuleSet{}, fmt.Errorf("reading the rules: %w", err)
		}
		return set, nil
	}
}

// waitFor waits until wait is closed; at check, and every second after, it gives up if the
// guard holds the endpoint stalled or backed off.
func (c *ruleCache) waitFor(ctx context.Context, wait <-chan struct{}, check *time.Timer) error {
	defer check.Stop()
	for {
		select {
		case <-wait:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("waiting for the rule list: %w", ctx.Err())
		case <-check.C:
			if why := c.g.unavailable(time.Now()); why != "" {
				return fmt.Errorf("reading the rules: %w: %s", ErrEndpointUnavailable, why)
			}
			check.Reset(time.Second)
		}
	}
}

// fetch reads the rule list as it streams: one group at a time is decoded, and only what
// the RuleSet keeps stays in memory.
func (c *ruleCache) fetch(ctx context.Context) (RuleSet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return RuleSet{}, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return RuleSet{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		// bounded has cut an error answer to Prometheus' own envelope, or to nothing.
		var env struct{ ErrorType, Error string }
		_ = json.NewDecoder(resp.Body).Decode(&env)
		typ := v1.ErrClient
		if resp.StatusCode/100 == 5 {
			typ = v1.ErrServer
		}
		if env.ErrorType != "" {
			typ = v1.ErrorType(env.ErrorType)
		}
		return RuleSet{}, &v1.Error{Type: typ, Msg: fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode)), Detail: env.Error}
	}
	return decodeRuleList(resp.Body)
}

// decodeRuleList decodes a rules API answer group by group into a RuleSet.
func decodeRuleList(r io.Reader) (RuleSet, error) {
	dec := json.NewDecoder(r)
	b := newRuleSetBuilder()
	status, groups := "", false
	var apiErr struct{ typ, msg string }
	err := object(dec, func(key string) error {
		switch key {
		case "status":
			return dec.Decode(&status)
		case "errorType":
			return dec.Decode(&apiErr.typ)
		case "error":
			return dec.Decode(&apiErr.msg)
		case "data":
			return object(dec, func(key string) error {
				switch key {
				case "groups":
				case "groupNextToken":
					return skip(dec)
				default:
					// A rules answer's data holds its groups only: anything else (a query's
					// result, a hostile answer's bulk) is refused here, not read.
					return fmt.Errorf("not a rule list: data.%s", Sanitize(key, 64))
				}
				groups = true
				return array(dec, func() error {
					var g struct {
						Interval float64 `json:"interval"`
						Rules    []struct {
							Type, Name, Query string
						} `json:"rules"`
					}
					if err := dec.Decode(&g); err != nil {
						return err
					}
					for _, r := range g.Rules {
						b.add(g.Interval, r.Type, r.Name, r.Query)
					}
					return nil
				})
			})
		}
		return skip(dec)
	})
	switch {
	case err != nil:
		return RuleSet{}, fmt.Errorf("decoding the rule list: %w", err)
	case status != "success":
		return RuleSet{}, &v1.Error{Type: v1.ErrorType(Sanitize(apiErr.typ, 32)), Msg: fmt.Sprintf("rule list status %q", Sanitize(status, 32)), Detail: Sanitize(apiErr.msg, maxErrorText)}
	case !groups:
		return RuleSet{}, errors.New("decoding the rule list: no data.groups in the answer")
	}
	return b.set, nil
}

// object reads a JSON object from dec, calling field for each key with dec at its value;
// field must consume the value.
func object(dec *json.Decoder, field func(key string) error) error {
	if err := delim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("want an object key, got %v", tok)
		}
		if err := field(key); err != nil {
			return err
		}
	}
	return delim(dec, '}')
}

// array reads a JSON array from dec, calling elem with dec at each element; elem must
// consume it.
func array(dec *json.Decoder, elem func() error) error {
	if err := delim(dec, '['); err != nil {
		return err
	}
	for dec.More() {
		if err := elem(); err != nil {
			return err
		}
	}
	return delim(dec, ']')
}

// delim reads the delimiter want from dec.
func delim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, got %v", want, tok)
	}
	return nil
}

// maxSkipTokens bounds the tokens of one value skip reads: a field the RuleSet does not read
// is small in a rule list (warnings, a page token), and reading a large one token by token is
// slow.
const maxSkipTokens = 100_000

// skip reads and drops the next JSON value of dec token by token, never holding more of it
// than one token, and refuses one of more than maxSkipTokens tokens: a field the RuleSet does
// not read may be most of a hostile answer.
func skip(dec *json.Decoder) error {
	depth := 0
	for n := 0; ; n++ {
		if n == maxSkipTokens {
			return fmt.Errorf("not a rule list: a field of more than %d tokens", maxSkipTokens)
		}
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

// cloneIntervals returns a copy of a shared RuleSet's intervals, for a caller that keeps them.
func cloneIntervals(s RuleSet) map[string]time.Duration { return maps.Clone(s.Intervals) }

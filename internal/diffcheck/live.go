package diffcheck

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/targets"
)

// ErrFull is returned by Live.Compare once Options.Requests comparisons
// were made or are under way.
var ErrFull = errors.New("diffcheck: the comparisons are complete")

// Live compares gray's answers taken elsewhere, the responses a load got at
// its concurrency (loadgen.Sampling), with stable's answers to the same
// requests, asked as each comparison is made: stable A and stable B at once
// (stable A twice when there is one stable), whose differences teach Learn
// the noise as Check's do. It judges as Check does (Report).
//
// Responses that only concurrency corrupts (a buffer put back to its pool
// before the response is written from it, one buffer shared by every
// request) are seen this way and not by Check, which sends one request at a
// time. A request that changes what a later one reads does not suit it:
// stable is asked after gray answered, while the load goes on.
//
// A Live is safe for concurrent use: Compare may be called from many
// goroutines at once (each call waits for stable's answers), and Report at
// any time.
type Live struct {
	c         checker
	ts        []targets.Target
	n         int
	oneStable bool

	mu      sync.Mutex
	started int // comparisons begun, at most n
	results []result
}

// NewLive returns a Live asking stableA and stableB (base URLs; "" for
// stableA twice) the requests of ts, by their index, for at most
// Options.Requests comparisons (0: MaxRequests). client may be nil for a
// dedicated one that never uses a proxy. It returns an error for bad
// options, no targets, or a URL outside loopback (or AllowHosts).
func NewLive(client *http.Client, stableA, stableB string, ts []targets.Target, opt Options) (*Live, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("%w: no requests", ErrOptions)
	}
	oneStable := stableB == ""
	if oneStable {
		stableB = stableA
	}
	for _, u := range []string{stableA, stableB} {
		if err := loadgen.CheckTarget(u, opt.AllowHosts); err != nil {
			return nil, fmt.Errorf("diffcheck: %w", err)
		}
	}
	if err := loadgen.CheckTargets(ts, opt.AllowHosts); err != nil {
		return nil, fmt.Errorf("diffcheck: %w", err)
	}
	if client == nil {
		client = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}}
	}
	return &Live{
		c:  checker{client: client, opt: opt, bases: [3]string{stableA, stableB, ""}},
		ts: ts, n: cmp.Or(opt.Requests, MaxRequests), oneStable: oneStable,
	}, nil
}

// Compare compares gray, gray's answer to the request ts[target], with
// stable's answers to it, asked now, and keeps the result for Report. gray's
// body must have been read up to Options.MaxBodyBytes at least (a longer
// one is cut there). A request that a stable did not answer is skipped,
// unless gray's answer is itself malformed (a JSON Content-Type whose body
// does not parse), which is a mismatch whatever stable says. Compare returns
// an error, and keeps nothing, for a target out of range, once
// Options.Requests comparisons were begun (ErrFull), or when ctx ended
// before stable answered.
func (l *Live) Compare(ctx context.Context, target int, gray Response) error {
	if target < 0 || target >= len(l.ts) {
		return fmt.Errorf("%w: target %d of %d", ErrOptions, target, len(l.ts))
	}
	l.mu.Lock()
	if l.started >= l.n {
		l.mu.Unlock()
		return ErrFull
	}
	l.started++
	l.mu.Unlock()

	t := &l.ts[target]
	var a, b Response
	var wg sync.WaitGroup
	wg.Go(func() { a = l.c.fetch(ctx, l.c.bases[0], t) })
	wg.Go(func() { b = l.c.fetch(ctx, l.c.bases[1], t) })
	wg.Wait()
	if err := ctx.Err(); err != nil {
		l.mu.Lock()
		l.started--
		l.mu.Unlock()
		return fmt.Errorf("diffcheck: asking stable %s %s: %w", t.Method, t.URL, err)
	}
	gray = capBody(gray, l.c.opt.MaxBodyBytes)
	r := result{endpoint: t.Key(), request: fmt.Sprintf("%s %s, line %d", t.Method, t.URL, t.Line)}
	switch {
	case a.Err == nil && b.Err == nil:
		r.stables, _ = diffResponses(a, b)
		r.gray, r.asBytes = diffResponses(a, gray)
	case malformed(gray):
		// Whatever stable says, gray's own answer says it is JSON and is not.
		_, err := decode(gray.Body)
		r.gray = []Diff{{Path: "$", Kind: KindInvalidJSON, A: "no answer from stable", B: "invalid JSON: " + show(err.Error())}}
	default:
		r.skipped = true
	}
	l.mu.Lock()
	l.results = append(l.results, r)
	l.mu.Unlock()
	return nil
}

// malformed reports whether r is an answer whose Content-Type says JSON
// and whose whole body does not parse as one JSON value.
func malformed(r Response) bool {
	if r.Err != nil || r.Truncated || r.ContentType == "" || !isJSON(r.ContentType, nil) {
		return false
	}
	_, err := decode(r.Body)
	return err != nil
}

// Report judges the comparisons kept so far, as Check's: the noise learned
// from the stables' answers, the mismatch rate with its interval and the
// outcome.
func (l *Live) Report() Report {
	l.mu.Lock()
	results := append([]result(nil), l.results...)
	l.mu.Unlock()
	r := judge(results, l.c.opt)
	r.OneStable = l.oneStable
	return r
}

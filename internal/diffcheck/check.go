package diffcheck

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/targets"
)

// Bounds and defaults of a Check.
const (
	// MaxRequests bounds Options.Requests.
	MaxRequests = 5000
	// DefaultTimeout bounds one request to one track unless
	// Options.Timeout says otherwise; MaxTimeout bounds Options.Timeout.
	DefaultTimeout = 5 * time.Second
	MaxTimeout     = time.Minute
	// DefaultMaxBodyBytes is how much of a response body is read unless
	// Options.MaxBodyBytes says otherwise; MaxBodyBytesLimit bounds it.
	DefaultMaxBodyBytes = 1 << 20
	MaxBodyBytesLimit   = 16 << 20
	// DefaultMaxMismatchRate is the mismatch rate a gray may have unless
	// Options.MaxMismatchRate says otherwise.
	DefaultMaxMismatchRate = 0.01
	// DefaultTopPaths is how many mismatching paths a Report lists unless
	// Options.TopPaths says otherwise; MaxTopPaths bounds it.
	DefaultTopPaths = 10
	MaxTopPaths     = 100
)

// ErrOptions is wrapped by the errors Check returns for bad arguments.
var ErrOptions = errors.New("diffcheck: invalid options")

// Options bound and tune a Check. The zero Options are the defaults.
type Options struct {
	// Requests is how many requests to compare: the targets in order,
	// from the first again after the last. 0 means len(targets); at most
	// MaxRequests.
	Requests int
	// Timeout bounds one request to one track, body included. 0 means
	// DefaultTimeout; at most MaxTimeout.
	Timeout time.Duration
	// MaxBodyBytes is how much of each response body is read and
	// compared. 0 means DefaultMaxBodyBytes; at most MaxBodyBytesLimit.
	MaxBodyBytes int
	// NoiseThreshold is Learn's threshold: 0 means DefaultNoiseThreshold.
	NoiseThreshold float64
	// MaxMismatchRate is the share of requests whose responses from gray
	// may differ from stable's. 0 means DefaultMaxMismatchRate.
	MaxMismatchRate float64
	// TopPaths is how many mismatching paths (and noise paths) the Report
	// lists. 0 means DefaultTopPaths; at most MaxTopPaths.
	TopPaths int
	// AllowHosts lists the host names the tracks' URLs and the targets may
	// name besides loopback, as loadgen.Config.AllowHosts.
	AllowHosts []string
	// Ignore lists the paths where gray may legitimately differ from
	// stable whatever Learn learns: a JSON path (".id", "$.created_at",
	// ".items[*].ts", ".meta" and everything under it), "status" or
	// "content-type". A diff at one of them, or under one, is no mismatch.
	// At most MaxIgnore; ParseIgnore checks and normalises them.
	Ignore []string
}

// MaxIgnore bounds Options.Ignore.
const MaxIgnore = 64

func (o Options) withDefaults() (Options, error) {
	var errs []error
	check := func(bad bool, format string, a ...any) {
		if bad {
			errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrOptions}, a...)...))
		}
	}
	check(o.Requests < 0 || o.Requests > MaxRequests, "requests must be in [0, %d], got %d", MaxRequests, o.Requests)
	check(o.Timeout < 0 || o.Timeout > MaxTimeout, "timeout must be in [0, %v], got %v", MaxTimeout, o.Timeout)
	check(o.MaxBodyBytes < 0 || o.MaxBodyBytes > MaxBodyBytesLimit, "max body bytes must be in [0, %d], got %d", MaxBodyBytesLimit, o.MaxBodyBytes)
	check(!(o.NoiseThreshold >= 0 && o.NoiseThreshold <= 1), "noise threshold must be in [0, 1], got %g", o.NoiseThreshold)
	check(!(o.MaxMismatchRate >= 0 && o.MaxMismatchRate < 1), "max mismatch rate must be in [0, 1), got %g", o.MaxMismatchRate)
	check(o.TopPaths < 0 || o.TopPaths > MaxTopPaths, "top paths must be in [0, %d], got %d", MaxTopPaths, o.TopPaths)
	ignore, err := ParseIgnore(o.Ignore)
	if err != nil {
		errs = append(errs, err)
	}
	o.Ignore = ignore
	o.Timeout = cmp.Or(o.Timeout, DefaultTimeout)
	o.MaxBodyBytes = cmp.Or(o.MaxBodyBytes, DefaultMaxBodyBytes)
	o.NoiseThreshold = cmp.Or(o.NoiseThreshold, DefaultNoiseThreshold)
	o.MaxMismatchRate = cmp.Or(o.MaxMismatchRate, DefaultMaxMismatchRate)
	o.TopPaths = cmp.Or(o.TopPaths, DefaultTopPaths)
	return o, errors.Join(errs...)
}

// Outcome is a Check's verdict.
type Outcome string

// The outcomes of a Check.
const (
	// Pass: the mismatch rate's 95% upper bound is at most the maximum.
	Pass Outcome = "PASS"
	// Fail: its 95% lower bound is above the maximum.
	Fail Outcome = "FAIL"
	// Inconclusive: the interval straddles the maximum; compare more
	// requests (with no mismatch at all, about 3.8/MaxMismatchRate of
	// them: 381 for 1%).
	Inconclusive Outcome = "INCONCLUSIVE"
	// NoData: no request could be compared.
	NoData Outcome = "NO DATA"
)

// PathReport is one mismatching path of a Report.
type PathReport struct {
	// Endpoint is the requests' endpoint (targets.Target.Key).
	Endpoint string `json:"endpoint"`
	// Pattern is the path, array indices written [*]; Kind how it differed.
	Pattern string `json:"pattern"`
	Kind    Kind   `json:"kind"`
	// Requests counts the mismatching requests with this diff.
	Requests int `json:"requests"`
	// Example is the first such diff, A the stable's side and B gray's,
	// and Request the request it came from ("PUT /api/v1/items/7, line 9").
	Example Diff   `json:"example"`
	Request string `json:"request"`
}

// Report is the outcome of a Check.
type Report struct {
	// Compared counts the requests whose three responses were compared;
	// Skipped those left out because a stable gave no response.
	Compared int `json:"compared"`
	Skipped  int `json:"skipped"`
	// Mismatches counts the compared requests whose gray response differs
	// from stable's outside the noise; Rate is Mismatches/Compared, with
	// its 95% Wilson interval [Low, High].
	Mismatches int     `json:"mismatches"`
	Rate       float64 `json:"rate"`
	Low        float64 `json:"low"`
	High       float64 `json:"high"`
	// MaxMismatchRate is the threshold; Outcome the verdict against it.
	MaxMismatchRate float64 `json:"max_mismatch_rate"`
	Outcome         Outcome `json:"outcome"`
	// OneStable says the noise was learned from one stable asked twice.
	OneStable bool `json:"one_stable"`
	// Paths are the most frequent mismatching paths, at most
	// Options.TopPaths; Noise the paths learned as noise, as many.
	Paths []PathReport `json:"paths"`
	Noise []NoisePath  `json:"noise"`
	// Notes say what the figures alone do not: invalid JSON from gray,
	// bodies compared as bytes, gray's transport errors, the diffs ignored
	// as Options.Ignore told.
	Notes []string `json:"notes"`
	// Method says how the responses compared were taken, as the caller
	// describes it ("under load, at concurrency 32"); empty when it did not
	// say. A Check sends one request at a time; a Live compares responses
	// taken elsewhere, a load's own.
	Method string `json:"method,omitempty"`
}

// String returns the report as a few lines of text.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d requests mismatch, %.2f%% [%.2f%%, %.2f%%] (95%% Wilson), threshold %.2f%%; %d skipped\n",
		r.Outcome, r.Mismatches, r.Compared, 100*r.Rate, 100*r.Low, 100*r.High, 100*r.MaxMismatchRate, r.Skipped)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, p := range r.Paths {
		fmt.Fprintf(&b, "mismatch: %s %s %s in %d requests, e.g. %s: stable %s, gray %s\n",
			p.Endpoint, p.Pattern, p.Kind, p.Requests, p.Request, p.Example.A, p.Example.B)
	}
	for _, n := range r.Noise {
		fmt.Fprintf(&b, "noise: %s %s (differs in %.0f%% of %d stable-vs-stable pairs)\n", n.Endpoint, n.Pattern, 100*n.Share, n.Samples)
	}
	return b.String()
}

// Check sends requests to the stables and gray, compares their responses and
// judges gray. Each request (the targets in order, Options.Requests of
// them) goes to stableA, stableB and gray at once (base URLs, as
// targets.Target.Resolve takes them), and the next only after the three
// answered, so that a sequence of writes and reads keeps its order on every
// track. When stableB is "", the request goes to stableA twice instead: the
// noise learned then is what changes from one request to the next
// (timestamps, ids), not what differs between two instances (a host name).
//
// The stables' diffs teach Learn the noise; a request mismatches when a diff
// between stableA's and gray's responses remains outside it. A request that
// a stable did not answer is skipped. client may be nil for a dedicated one
// that never uses a proxy. Check returns an error for bad arguments, a URL
// outside loopback (or AllowHosts), or ctx's end.
func Check(ctx context.Context, client *http.Client, stableA, stableB, gray string, ts []targets.Target, opt Options) (Report, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return Report{}, err
	}
	if len(ts) == 0 {
		return Report{}, fmt.Errorf("%w: no requests", ErrOptions)
	}
	oneStable := stableB == ""
	if oneStable {
		stableB = stableA
	}
	for _, u := range []string{stableA, stableB, gray} {
		if err := loadgen.CheckTarget(u, opt.AllowHosts); err != nil {
			return Report{}, fmt.Errorf("diffcheck: %w", err)
		}
	}
	if err := loadgen.CheckTargets(ts, opt.AllowHosts); err != nil {
		return Report{}, fmt.Errorf("diffcheck: %w", err)
	}
	if client == nil {
		client = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	}
	c := checker{client: client, opt: opt, bases: [3]string{stableA, stableB, gray}}
	n := cmp.Or(opt.Requests, min(len(ts), MaxRequests))
	results := make([]result, 0, n)
	for i := range n {
		if err := ctx.Err(); err != nil {
			return Report{}, fmt.Errorf("diffcheck: after %d of %d requests: %w", i, n, err)
		}
		results = append(results, c.one(ctx, &ts[i%len(ts)]))
	}
	r := judge(results, opt)
	r.OneStable = oneStable
	return r, nil
}

// checker sends the requests of a Check.
type checker struct {
	client *http.Client
	opt    Options
	bases  [3]string // stable A, stable B, gray
}

// Response is one track's answer to a request, as compared: a Check's own,
// or one taken elsewhere and handed to Live.Compare (a load's).
type Response struct {
	// Status is the status code; ContentType the Content-Type header.
	Status      int
	ContentType string
	// Body is the body, at most Options.MaxBodyBytes of it (a longer one
	// is cut there); Truncated says the body was longer than the bytes
	// kept.
	Body      []byte
	Truncated bool
	// Err is set when no response came (a transport error, a timeout);
	// the other fields are then unused.
	Err error
}

// result is one request's comparisons.
type result struct {
	endpoint, request string
	skipped           bool
	stables, gray     []Diff // A vs B, A vs gray
	asBytes           bool   // the bodies were compared as bytes
}

func (c *checker) one(ctx context.Context, t *targets.Target) result {
	var rs [3]Response
	var wg sync.WaitGroup
	for i, base := range c.bases {
		wg.Go(func() { rs[i] = c.fetch(ctx, base, t) })
	}
	wg.Wait()
	r := result{endpoint: t.Key(), request: fmt.Sprintf("%s %s, line %d", t.Method, t.URL, t.Line)}
	if rs[0].Err != nil || rs[1].Err != nil {
		r.skipped = true
		return r
	}
	r.stables, _ = diffResponses(rs[0], rs[1])
	r.gray, r.asBytes = diffResponses(rs[0], rs[2])
	return r
}

func (c *checker) fetch(ctx context.Context, base string, t *targets.Target) Response {
	u, err := t.Resolve(base)
	if err != nil {
		return Response{Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, c.opt.Timeout)
	defer cancel()
	var body io.Reader
	if len(t.Body) > 0 {
		body = bytes.NewReader(t.Body)
	}
	req, err := http.NewRequestWithContext(ctx, t.Method, u, body)
	if err != nil {
		return Response{Err: err}
	}
	if t.Header != nil {
		req.Header = t.Header.Clone()
		req.Host = t.Header.Get("Host")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return Response{Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.opt.MaxBodyBytes)+1))
	if err != nil {
		return Response{Err: fmt.Errorf("reading the body: %w", err)}
	}
	return capBody(Response{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: b}, c.opt.MaxBodyBytes)
}

// capBody cuts r's body at max bytes, setting Truncated when it was
// longer.
func capBody(r Response, max int) Response {
	if len(r.Body) > max {
		r.Body, r.Truncated = r.Body[:max], true
	}
	return r
}

// diffResponses compares b with a, which answered, keeping the first diff
// of each Pattern; asBytes says the bodies were compared as bytes.
func diffResponses(a, b Response) (diffs []Diff, asBytes bool) {
	if b.Err != nil {
		return []Diff{{Path: "$", Kind: KindError, A: "answered", B: "no response: " + show(b.Err.Error())}}, false
	}
	if a.Status != b.Status {
		diffs = append(diffs, Diff{Path: "status", Kind: KindStatus, A: fmt.Sprint(a.Status), B: fmt.Sprint(b.Status)})
	}
	if !sameContentType(a.ContentType, b.ContentType) {
		diffs = append(diffs, Diff{Path: "content-type", Kind: KindContentType, A: show(a.ContentType), B: show(b.ContentType)})
	}
	switch {
	case a.Truncated != b.Truncated:
		diffs = append(diffs, Diff{Path: "$", Kind: KindBodySize, A: sizeNote(a), B: sizeNote(b)})
	case a.Truncated:
		asBytes = true
		diffs = append(diffs, compareBytes(a.Body, b.Body)...)
	default:
		var body []Diff
		body, asBytes = compare(a.Body, b.Body, a.ContentType)
		diffs = append(diffs, body...)
	}
	seen := map[string]bool{}
	return slices.DeleteFunc(diffs, func(d Diff) bool {
		p := Pattern(d.Path)
		dup := seen[p]
		seen[p] = true
		return dup
	}), asBytes
}

func sizeNote(r Response) string {
	if r.Truncated {
		return fmt.Sprintf("over the read cap of %d bytes", len(r.Body))
	}
	return fmt.Sprintf("%d bytes", len(r.Body))
}

// judge learns the noise from the stables' diffs and counts gray's
// mismatches outside it.
func judge(results []result, opt Options) Report {
	var samples []Sample
	for _, r := range results {
		if !r.skipped {
			samples = append(samples, Sample{Endpoint: r.endpoint, Diffs: r.stables})
		}
	}
	noise := Learn(samples, opt.NoiseThreshold)
	rep := Report{MaxMismatchRate: opt.MaxMismatchRate}
	var t tally
	for _, r := range results {
		if r.skipped {
			rep.Skipped++
			continue
		}
		rep.Compared++
		ignored := false
		left := slices.DeleteFunc(slices.Clone(r.gray), func(d Diff) bool {
			if noise.Ignores(r.endpoint, d) {
				return true
			}
			if ignoredPath(opt.Ignore, d) {
				ignored = true
				return true
			}
			return false
		})
		if ignored {
			t.ignored++
		}
		t.add(r, left)
		if len(left) > 0 {
			rep.Mismatches++
		}
	}
	rep.Rate = rate(rep.Mismatches, rep.Compared)
	rep.Low, rep.High = Wilson(rep.Mismatches, rep.Compared)
	rep.Outcome = outcome(rep)
	rep.Paths = t.top(opt.TopPaths)
	rep.Noise = noise.Paths()
	rep.Noise = rep.Noise[:min(len(rep.Noise), opt.TopPaths)]
	rep.Notes = t.notes(rep.Compared, opt.Ignore)
	return rep
}

func rate(k, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(k) / float64(n)
}

func outcome(r Report) Outcome {
	switch {
	case r.Compared == 0:
		return NoData
	case r.High <= r.MaxMismatchRate:
		return Pass
	case r.Low > r.MaxMismatchRate:
		return Fail
	}
	return Inconclusive
}

// tally counts the mismatching paths and the notes' figures.
type tally struct {
	paths                      map[[3]string]*PathReport
	invalidGray, invalidStable int
	asBytes, grayErrors        int
	// ignored counts the requests with a diff at a path Options.Ignore
	// names.
	ignored int
}

func (t *tally) add(r result, left []Diff) {
	if r.asBytes {
		t.asBytes++
	}
	if t.paths == nil {
		t.paths = map[[3]string]*PathReport{}
	}
	for _, d := range left {
		switch {
		case d.Kind == KindInvalidJSON && strings.HasPrefix(d.B, "invalid"):
			t.invalidGray++
		case d.Kind == KindInvalidJSON:
			t.invalidStable++
		case d.Kind == KindError:
			t.grayErrors++
		}
		k := [3]string{r.endpoint, Pattern(d.Path), string(d.Kind)}
		if p, ok := t.paths[k]; ok {
			p.Requests++
			continue
		}
		t.paths[k] = &PathReport{Endpoint: k[0], Pattern: k[1], Kind: d.Kind, Requests: 1, Example: d, Request: r.request}
	}
}

func (t *tally) top(n int) []PathReport {
	out := make([]PathReport, 0, len(t.paths))
	for _, p := range t.paths {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b PathReport) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.Endpoint, b.Endpoint),
			cmp.Compare(a.Pattern, b.Pattern), cmp.Compare(a.Kind, b.Kind))
	})
	return out[:min(len(out), n)]
}

func (t *tally) notes(compared int, ignore []string) []string {
	var notes []string
	if len(ignore) > 0 {
		notes = append(notes, fmt.Sprintf("differences at the paths given as legitimately different (%s) ignored, in %d of %d compared requests",
			strings.Join(ignore, ", "), t.ignored, compared))
	}
	if t.invalidGray > 0 {
		notes = append(notes, fmt.Sprintf("invalid JSON from gray in %d of %d compared requests (stable's was valid)", t.invalidGray, compared))
	}
	if t.invalidStable > 0 {
		notes = append(notes, fmt.Sprintf("invalid JSON from stable in %d of %d compared requests (gray's was valid)", t.invalidStable, compared))
	}
	if t.grayErrors > 0 {
		notes = append(notes, fmt.Sprintf("no response from gray in %d of %d compared requests", t.grayErrors, compared))
	}
	if t.asBytes > 0 {
		notes = append(notes, fmt.Sprintf("bodies compared as bytes, not as JSON, in %d of %d compared requests", t.asBytes, compared))
	}
	return notes
}

// Wilson returns the 95% Wilson score interval of a rate of k in n; [0, 1]
// when n is 0.
func Wilson(k, n int) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	const z = 1.959963984540054 // the normal distribution's 97.5% quantile
	z2, fn := z*z, float64(n)
	p := float64(k) / fn
	centre := (p + z2/(2*fn)) / (1 + z2/fn)
	half := z / (1 + z2/fn) * math.Sqrt(p*(1-p)/fn+z2/(4*fn*fn))
	return max(0, centre-half), min(1, centre+half)
}

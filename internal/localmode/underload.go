package localmode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/poolparity/poolparity/internal/diffcheck"
	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/targets"
)

// Bounds of the differential check under load.
const (
	// liveQueue bounds the samples waiting for their comparison: a sample
	// that finds it full is dropped (and counted), so that a slow stable
	// never holds up the load nor holds more than liveQueue+liveWorkers
	// bodies (of at most diffcheck.DefaultMaxBodyBytes each) in memory.
	liveQueue   = 32
	liveWorkers = 4
	// liveSpread is the share of the load's Duration the samples are spread
	// over, so that the last ones are compared before the report is read.
	liveSpread = 0.8
	// liveDrain bounds the wait for the comparisons under way once the load
	// ran Duration.
	liveDrain = 30 * time.Second
)

// underLoad reports whether the differential check compares gray's load
// responses (Config.DiffUnderLoad) rather than sending its own requests
// after the load.
func (c Config) underLoad() bool {
	return c.DiffSample > 0 && c.DiffUnderLoad && c.DiffRequestsFile == ""
}

// sampleEvery is the block of gray's arrivals one sample is taken from:
// DiffSample samples spread over liveSpread of the load's Duration.
func (c Config) sampleEvery() int {
	arrivals := c.RPS * c.GrayWeight * c.Duration.Seconds() * liveSpread
	return max(1, int(arrivals/float64(max(c.DiffSample, 1))))
}

// parseExclude checks the entries of Config.DiffExclude and returns a
// function reporting whether a target is excluded.
func parseExclude(entries []string) (func(targets.Target) bool, error) {
	var methods, endpoints []string
	var bad []string
	for _, raw := range entries {
		e := strings.TrimSpace(raw)
		if e == "" {
			continue
		}
		method, path, isEndpoint := strings.Cut(e, " ")
		path = strings.TrimSpace(path)
		switch {
		case !slices.Contains(targets.Methods, method):
			bad = append(bad, fmt.Sprintf("%q: want a method (%s) or METHOD /path", raw, strings.Join(targets.Methods, ", ")))
		case !isEndpoint:
			methods = append(methods, method)
		case !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t?#"):
			bad = append(bad, fmt.Sprintf("%q: want METHOD /path, the path without a query", raw))
		default:
			endpoints = append(endpoints, targets.Target{Method: method, URL: path}.Key())
		}
	}
	if len(bad) > 0 {
		return nil, errors.New(strings.Join(bad, "; "))
	}
	return func(t targets.Target) bool {
		return slices.Contains(methods, t.Method) || slices.Contains(endpoints, t.Key())
	}, nil
}

// liveDiff is the differential check under load: gray's load responses,
// sampled by its load (loadgen.Sampling), queued and compared by a few
// workers with stable's answers (diffcheck.Live) while the load goes on.
type liveDiff struct {
	live    *diffcheck.Live
	every   int
	samples chan loadgen.Sample
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu     sync.Mutex
	closed bool
	busy   int // samples dropped: the queue was full
	late   int // samples offered after finish
	failed []string
}

// newLiveDiff returns the check of gray's samples against stable, its
// workers started; finish ends it.
func (r *runner) newLiveDiff(ctx context.Context, stable *trackRun) (*liveDiff, error) {
	live, err := diffcheck.NewLive(nil, stable.url, "", r.targets, diffcheck.Options{Requests: r.cfg.DiffSample, Ignore: r.cfg.DiffIgnore})
	if err != nil {
		return nil, err
	}
	d := &liveDiff{live: live, every: r.cfg.sampleEvery(), samples: make(chan loadgen.Sample, liveQueue)}
	cctx, cancel := context.WithCancel(ctx)
	d.cancel = cancel
	for range liveWorkers {
		d.wg.Go(func() { d.work(cctx) })
	}
	return d, nil
}

// sampling is the gray load's Sampling: its samples go to offer. It takes
// up to twice max samples (bounded by loadgen.MaxSamples), so that the
// ones dropped while the queue is full are made up by later blocks: the
// check compares max of them (diffcheck.Options.Requests) and turns the
// rest away (diffcheck.ErrFull). On a loaded machine the comparisons fall
// behind the load, and a check that lost a tenth of its samples could no
// longer PASS a clean gray (0 of 370 has an upper bound above 1%).
func (d *liveDiff) sampling(max int, exclude func(int) bool) *loadgen.Sampling {
	return &loadgen.Sampling{Every: d.every, Max: min(2*max, loadgen.MaxSamples), MaxBodyBytes: diffcheck.DefaultMaxBodyBytes, Exclude: exclude, Sink: d.offer}
}

// offer queues a sample for its comparison, or drops it when the queue is
// full or the check finished: it never waits (loadgen.Sampling.Sink).
func (d *liveDiff) offer(s loadgen.Sample) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		d.late++
		return
	}
	select {
	case d.samples <- s:
	default:
		d.busy++
	}
}

// work compares the queued samples until the queue closes.
func (d *liveDiff) work(ctx context.Context) {
	for s := range d.samples {
		gray := diffcheck.Response{Status: s.Status, ContentType: s.ContentType, Body: s.Body, Truncated: s.Truncated, Err: s.Err}
		err := d.live.Compare(ctx, s.Target, gray)
		if err != nil && !errors.Is(err, diffcheck.ErrFull) && ctx.Err() == nil {
			d.mu.Lock()
			if len(d.failed) < 3 {
				d.failed = append(d.failed, err.Error())
			}
			d.mu.Unlock()
		}
	}
}

// finish stops taking samples, waits for the comparisons queued or under
// way (at most liveDrain, then cancels them) and judges them. method says
// how the responses were taken, for the report.
func (d *liveDiff) finish(method string, asked int) diffcheck.Report {
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		close(d.samples)
	}
	d.mu.Unlock()
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(liveDrain)
	defer timer.Stop()
	cut := false
	select {
	case <-done:
	case <-timer.C:
		cut = true
	}
	d.cancel()
	<-done
	rep := d.live.Report()
	rep.Method = method
	d.mu.Lock()
	defer d.mu.Unlock()
	note := fmt.Sprintf("gray's own load responses, one taken at random in each block of %d of its arrivals: %d of the %d asked, each compared with stable's answer to the same request, asked twice at once as the sample came, the load going on",
		d.every, rep.Compared+rep.Skipped, asked)
	if d.busy > 0 {
		note += fmt.Sprintf("; %d samples dropped while %d waited for their comparison", d.busy, liveQueue)
	}
	if cut {
		note += fmt.Sprintf("; the comparisons still under way %s after the load's end were cut off", liveDrain)
	}
	if len(d.failed) > 0 {
		note += "; comparisons not made: " + strings.Join(d.failed, "; ")
	}
	rep.Notes = append([]string{note}, rep.Notes...)
	return rep
}

// abort ends the check without judging it: the run is over.
func (d *liveDiff) abort() {
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		close(d.samples)
	}
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
}

// liveMethod describes how the load's responses are taken, for the report.
func (c Config) liveMethod() string {
	s := fmt.Sprintf("under load, at concurrency %d", c.Concurrency)
	if c.Burst > 1 {
		s += fmt.Sprintf(" in waves of %d", c.Burst)
	}
	return s
}

package loadgen

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
)

// Bounds of a Sampling.
const (
	// MaxSamples bounds Sampling.Max.
	MaxSamples = 100_000
	// DefaultSampleBodyBytes is how much of a sampled body is kept unless
	// Sampling.MaxBodyBytes says otherwise; MaxSampleBodyBytes bounds it.
	DefaultSampleBodyBytes = 1 << 20
	MaxSampleBodyBytes     = 16 << 20
)

// Sampling asks a run of Config.Targets to hand some of its own responses,
// the answers the load got at its concurrency, to Sink: a differential
// check compares them with another build's answers to the same requests
// (package diffcheck). It costs the run nothing when Config.Sample is nil,
// and nothing but a counter per arrival for the arrivals it does not take.
//
// The arrivals are taken one in each block of Every consecutive arrivals,
// at a position in the block drawn at random (from a source seeded with
// Config.Seed, apart from the one that draws the calls, so that the calls
// are the same with or without sampling): the samples spread over the run,
// and do not follow the targets' order even when Every and the number of
// targets share a factor. An arrival that is dropped, or whose target
// Exclude leaves out, passes its turn to the next arrival that is sent and
// not left out. A run takes at most Max samples; a request that the run's
// end cuts off gives none.
type Sampling struct {
	// Every is the length of a block of arrivals one sample is taken from:
	// at least 1 (every arrival).
	Every int
	// Max bounds the run's samples: 1 to MaxSamples.
	Max int
	// MaxBodyBytes is how much of a sampled body is kept (Sample.Truncated
	// says there was more; the rest is read and discarded). 0 means
	// DefaultSampleBodyBytes; at most MaxSampleBodyBytes.
	MaxBodyBytes int
	// Exclude, when set, says which targets (by their index in
	// Config.Targets) are never sampled: New calls it once per target.
	Exclude func(target int) bool
	// Sink receives every sample, from the goroutine that sent its request,
	// so concurrently with other calls, while that request still counts as
	// in flight: it must return quickly (hand the sample on, or drop it),
	// never wait. The sample's Body is its own.
	Sink func(Sample)
}

// Sample is one response of a run taken by its Sampling.
type Sample struct {
	// Target is the request's index in Config.Targets.
	Target int
	// Status and ContentType are the response's status code and
	// Content-Type header; Body its body, at most Sampling.MaxBodyBytes of
	// it, Truncated set when there was more.
	Status      int
	ContentType string
	Body        []byte
	Truncated   bool
	// Err is set when no response came: a transport error, a timeout, or
	// a body cut short. The other fields are then zero.
	Err error
}

// validate checks s for a run of n targets.
func (s *Sampling) validate(n int) []error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: sample: "+format, append([]any{ErrBounds}, a...)...))
	}
	if n == 0 {
		bad("samples are taken of a run of Targets only")
	}
	if s.Every < 1 {
		bad("every must be >= 1, got %d", s.Every)
	}
	if s.Max < 1 || s.Max > MaxSamples {
		bad("max must be in [1, %d], got %d", MaxSamples, s.Max)
	}
	if s.MaxBodyBytes < 0 || s.MaxBodyBytes > MaxSampleBodyBytes {
		bad("max body bytes must be in [0, %d], got %d", MaxSampleBodyBytes, s.MaxBodyBytes)
	}
	if s.Sink == nil {
		bad("a sink is required")
	}
	return errs
}

// sampler picks the arrivals of a run that are sampled. It is used by the
// scheduling goroutine only.
type sampler struct {
	every, max, bodyBytes int
	excluded              []bool // by target index
	sink                  func(Sample)
	rnd                   *rand.Rand

	seen    int  // arrivals so far
	at      int  // the arrival of the current block whose turn it is
	pending bool // a turn not yet taken
	taken   int  // arrivals sampled (sent with their sample asked)
}

// newSampler returns the sampler of s for targets, or nil when s is nil.
func newSampler(s *Sampling, seed uint64, targets int) *sampler {
	if s == nil {
		return nil
	}
	sm := &sampler{
		every: s.Every, max: s.Max, bodyBytes: s.MaxBodyBytes, sink: s.Sink,
		excluded: make([]bool, targets),
		// A source of its own: the calls drawn are the same with sampling or without.
		rnd: rand.New(rand.NewPCG(seed^0x5a4d_504c_4553, seed+0x9e37_79b9)),
	}
	if sm.bodyBytes == 0 {
		sm.bodyBytes = DefaultSampleBodyBytes
	}
	if s.Exclude != nil {
		for i := range sm.excluded {
			sm.excluded[i] = s.Exclude(i)
		}
	}
	return sm
}

// next is called for every arrival, in order, with its target's index: it
// reports whether the arrival is to be sampled if it is sent. An arrival
// taken and then dropped gives its turn back (missed).
func (s *sampler) next(target int) bool {
	i := s.seen
	s.seen++
	if i%s.every == 0 {
		s.at = i + s.rnd.IntN(s.every)
	}
	if i == s.at {
		s.pending = true
	}
	if !s.pending || s.taken >= s.max || s.excluded[target] {
		return false
	}
	s.pending = false
	s.taken++
	return true
}

// missed gives back the turn of an arrival next took that was not sent.
func (s *sampler) missed() {
	s.pending = true
	s.taken--
}

// read reads resp's body for a sample, keeping at most bodyBytes of it,
// and closes it.
func (s *sampler) read(resp *http.Response) (Sample, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(s.bodyBytes)+1))
	if err == nil && len(b) > s.bodyBytes {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	if err != nil {
		return Sample{}, err
	}
	smp := Sample{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: b}
	if len(b) > s.bodyBytes {
		smp.Body, smp.Truncated = b[:s.bodyBytes], true
	}
	return smp, nil
}

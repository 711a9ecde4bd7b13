// Package pools names the service's object pools and hands out their
// objects. In pooled mode each Source is an instrument.Pool registered for
// export; in unpooled mode it allocates a fresh object on every Get and
// lets Put drop it. The code that uses a Source is the same in both modes,
// which is what keeps the responses byte-identical: only where the memory
// comes from differs.
//
// The misuse modes (Mode) reproduce the ways pooling goes wrong in real
// services, for the gray track of a demo or a canary to show and the
// parity rules to catch by name: see docs/pool-misuse.md.
package pools

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/poolparity/poolparity/instrument"
)

// Pool names: the complete, fixed set of `pool` label values.
const (
	// JSONBuffer holds the buffer and encoder for item responses and the
	// re-encoded item stored in Redis.
	JSONBuffer = "json_buffer"
	// RequestScratch holds a request body buffer and the decoded item.
	RequestScratch = "request_scratch"
	// ReportBuffer holds the buffer and encoder for report responses.
	ReportBuffer = "report_buffer"
	// ReportScratch holds one report's working slices and maps.
	ReportScratch = "report_scratch"
	// TermScratch holds one item's term counter while a report analyses it.
	TermScratch = "term_scratch"
)

// Names lists every pool name, sorted.
var Names = []string{JSONBuffer, ReportBuffer, ReportScratch, RequestScratch, TermScratch}

// Source hands out objects of type T. Get returns a ready-to-use object;
// Put gives it back when the caller is done with it, after which the caller
// must not touch it. Implementations are safe for concurrent use.
type Source[T any] interface {
	Get() T
	Put(T)
}

// plain is the unpooled Source: every Get allocates, Put drops.
type plain[T any] struct{ newFn func() T }

func (p plain[T]) Get() T { return p.newFn() }
func (plain[T]) Put(T)    {}

// Config describes one pool: how to make, reset, keep and check an object,
// and how the misuse modes get it wrong.
type Config[T any] struct {
	Name  string
	New   func() T
	Reset func(T)
	// Keep reports whether an object is small enough to pool again.
	Keep func(T) bool
	// Clean reports an error when an object taken from the pool still
	// holds state that Reset should have cleared; the sanitizer
	// (instrument.WithCheck) runs it when Settings.CheckEvery > 0.
	Clean func(T) error
	// Presize grows a new object to the largest request it may serve
	// (ModeMisuseReset: "fixed buffers that never grow").
	Presize func(T)
	// Scrub zeroes an object's whole capacity (ModeMisuseReset: a reset
	// that clears every byte ever allocated, on every Put).
	Scrub func(T)
	// SloppyReset is Reset as a careless change leaves it, forgetting some
	// state (ModeMisuseDirty); nil keeps Reset in that mode.
	SloppyReset func(T)
	// Poison overwrites a reset object with a pattern no correct user
	// writes (its byte buffers' whole capacity with instrument.PoisonByte),
	// and Intact reports whether that pattern is still there; the pool
	// runs them when Settings.Poison is on (instrument.WithPoison). Nil:
	// the pool is not poisoned.
	Poison func(T)
	Intact func(T) bool
}

// Settings is what every Source of one process shares: the mode, the
// registry its pools are exported through, and the sanitizer's sampling.
type Settings struct {
	// Mode is the track's POOL_MODE. The zero value is ModeUnpooled.
	Mode Mode
	// Registry receives the pools when Mode is pooled. Nil: a private one.
	Registry *instrument.Registry
	// CheckEvery runs Config.Clean on one object in every CheckEvery taken
	// from each pool; 0 turns the sanitizer off.
	CheckEvery int
	// Poison turns on poisoned Puts (POOLPARITY_POISON) in every pool whose
	// Config has a Poison: a use of an object after its Put reads the
	// poison, and a write after Put is counted (syncpool_dirty_total) and
	// the object replaced. A debug mode.
	Poison bool
}

// NewSource returns a Source for cfg: a plain allocator in ModeUnpooled,
// otherwise an instrument.Pool registered in st.Registry and configured
// the way st.Mode says.
func NewSource[T any](st Settings, cfg Config[T]) (Source[T], error) {
	if !st.Mode.Pooled() {
		return plain[T]{newFn: cfg.New}, nil
	}
	if st.Registry == nil {
		st.Registry = instrument.NewRegistry()
	}
	newFn, reset, keep := cfg.New, cfg.Reset, cfg.Keep
	switch st.Mode {
	case ModeMisuseRetain:
		keep = nil // no size cap: the pool keeps the largest buffer it ever saw
	case ModeMisuseReset:
		if cfg.Presize != nil && cfg.Scrub != nil {
			newFn = func() T { x := cfg.New(); cfg.Presize(x); return x }
			reset = func(x T) { cfg.Reset(x); cfg.Scrub(x) }
			keep = nil // every object is the fixed large size
		}
	case ModeMisuseDirty:
		if cfg.SloppyReset != nil {
			reset = cfg.SloppyReset
		}
	}
	opts := []instrument.Option[T]{instrument.WithNew(newFn)}
	if reset != nil {
		opts = append(opts, instrument.WithReset(reset))
	}
	if keep != nil {
		opts = append(opts, instrument.WithKeep(keep))
	}
	if st.CheckEvery > 0 && cfg.Clean != nil {
		opts = append(opts, instrument.WithCheck(st.CheckEvery, cfg.Clean))
	}
	if st.Poison && cfg.Poison != nil {
		opts = append(opts, instrument.WithPoison(cfg.Poison, cfg.Intact))
	}
	p, err := instrument.New(cfg.Name, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating pool %s: %w", cfg.Name, err)
	}
	if err := st.Registry.Register(p); err != nil {
		return nil, fmt.Errorf("registering pool %s: %w", cfg.Name, err)
	}
	return p, nil
}

// MaxBufferCap is the largest buffer capacity kept by the buffer pools.
// A response or body that grew its buffer past it drops the buffer, so one
// huge request does not pin a huge buffer.
const MaxBufferCap = 256 << 10

// Encoder is a buffer with a JSON encoder bound to it, pooled together
// because the encoder holds a pointer to the buffer.
type Encoder struct {
	Buf bytes.Buffer
	Enc *json.Encoder
}

// NewEncoder returns an empty Encoder. Its encoder does not escape HTML,
// because responses are JSON, not HTML.
func NewEncoder() *Encoder {
	e := new(Encoder)
	e.Enc = json.NewEncoder(&e.Buf)
	e.Enc.SetEscapeHTML(false)
	return e
}

// Reset empties the buffer, keeping its capacity.
func (e *Encoder) Reset() { e.Buf.Reset() }

// Small reports whether the buffer is small enough to pool again.
func (e *Encoder) Small() bool { return e.Buf.Cap() <= MaxBufferCap }

// Poison fills the whole capacity of the (reset) buffer with
// instrument.PoisonByte: what a response written from the buffer after its
// Put carries.
func (e *Encoder) Poison() { instrument.PoisonBytes(e.Buf.AvailableBuffer()) }

// Intact reports whether the buffer is as Poison left it: empty, its whole
// capacity still instrument.PoisonByte.
func (e *Encoder) Intact() bool {
	return e.Buf.Len() == 0 && instrument.BytesPoisoned(e.Buf.AvailableBuffer())
}

// Clean reports an error when the buffer is not empty.
func (e *Encoder) Clean() error {
	if n := e.Buf.Len(); n != 0 {
		return fmt.Errorf("encoder buffer holds %d bytes", n)
	}
	return nil
}

// PresizeBytes is the capacity ModeMisuseReset gives every pooled buffer:
// eight times the largest body a request may carry (1 MiB), "so that
// buffers never grow, escaped or not". It was 2 MiB until 2026-11-25; on
// CI's machine a 2 MiB clear per Put cost about what pooling saves, and
// gray's CPU per request came out 1.00-1.05x stable's (docs/pool-misuse.md).
const PresizeBytes = 8 << 20

// ScrubBytes zeroes b's whole capacity, the costly reset of
// ModeMisuseReset.
func ScrubBytes(b []byte) { clear(b[:cap(b)]) }

// EncoderConfig is the pool configuration of an Encoder pool.
func EncoderConfig(name string) Config[*Encoder] {
	return Config[*Encoder]{
		Name: name, New: NewEncoder, Reset: (*Encoder).Reset, Keep: (*Encoder).Small, Clean: (*Encoder).Clean,
		Presize: func(e *Encoder) { e.Buf.Grow(PresizeBytes) },
		Scrub:   func(e *Encoder) { ScrubBytes(e.Buf.AvailableBuffer()) },
		Poison:  (*Encoder).Poison, Intact: (*Encoder).Intact,
	}
}

// Package pools names the service's object pools and hands out their
// objects. In pooled mode each Source is an instrument.Pool registered for
// export; in unpooled mode it allocates a fresh object on every Get and
// lets Put drop it. The code that uses a Source is the same in both modes,
// which is what keeps the responses byte-identical: only where the memory
// comes from differs.
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

// Config describes one pool: how to make, reset and keep an object.
type Config[T any] struct {
	Name  string
	New   func() T
	Reset func(T)
	// Keep reports whether an object is small enough to pool again.
	Keep func(T) bool
}

// NewSource returns a Source for cfg: an instrument.Pool registered in reg
// when pooled, a plain allocator otherwise.
func NewSource[T any](pooled bool, reg *instrument.Registry, cfg Config[T]) (Source[T], error) {
	if !pooled {
		return plain[T]{newFn: cfg.New}, nil
	}
	opts := []instrument.Option[T]{instrument.WithNew(cfg.New)}
	if cfg.Reset != nil {
		opts = append(opts, instrument.WithReset(cfg.Reset))
	}
	if cfg.Keep != nil {
		opts = append(opts, instrument.WithKeep(cfg.Keep))
	}
	p, err := instrument.New(cfg.Name, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating pool %s: %w", cfg.Name, err)
	}
	if err := reg.Register(p); err != nil {
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

// EncoderConfig is the pool configuration of an Encoder pool.
func EncoderConfig(name string) Config[*Encoder] {
	return Config[*Encoder]{Name: name, New: NewEncoder, Reset: (*Encoder).Reset, Keep: (*Encoder).Small}
}

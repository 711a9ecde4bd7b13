package instrument

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// BenchmarkOverhead takes the cost of counting apart: the same Get + Reset
// + Put cycle on a raw sync.Pool, with only the extra work of each
// counting scheme added. It explains where instrument.Pool's overhead over
// raw sync.Pool comes from (see docs/benchmarks-instrument.md):
//
//	raw:            sync.Pool, no counting
//	pin_only:       raw + two runtime procPin/procUnpin pairs, no counter
//	pinned_stripes: raw + two pinned plain increments on per-P stripes
//	                (what Pool does, minus its keep/reset function values)
//	shared_atomic:  raw + two atomic adds on one shared word (contended
//	                across cores on a real multi-core machine)
//	hashed_atomic:  raw + two atomic adds on a stripe picked by a hash of
//	                the goroutine's stack address (no runtime call, but two
//	                goroutines running at once may share a stripe)
//	slot_only:      a per-P slot and counters in one pin, no sync.Pool
//	                call on the steady path (Pool's fast path, inlined
//	                by hand, minus the buffer policy)
//	instrument:     Pool from NewBufferPool
//	generic:        Pool from New with WithNew, WithReset and WithKeep
//	                function values doing the buffer policy
//
// Variants other than raw and instrument are measurement aids, not code
// paths the package uses.
func BenchmarkOverhead(b *testing.B) {
	newBuf := func() any { return new(bytes.Buffer) }
	b.Run("impl=raw", CPUTimed(func(b *testing.B) {
		p := sync.Pool{New: newBuf}
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				buf := p.Get().(*bytes.Buffer)
				if buf.Cap() <= DefaultMaxBufferCap {
					buf.Reset()
					p.Put(buf)
				}
			}
		})
	}))
	b.Run("impl=pin_only", CPUTimed(func(b *testing.B) {
		p := sync.Pool{New: newBuf}
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				runtimeProcPin()
				runtimeProcUnpin()
				buf := p.Get().(*bytes.Buffer)
				if buf.Cap() <= DefaultMaxBufferCap {
					buf.Reset()
					runtimeProcPin()
					runtimeProcUnpin()
					p.Put(buf)
				}
			}
		})
	}))
	b.Run("impl=pinned_stripes", CPUTimed(func(b *testing.B) {
		p := sync.Pool{New: newBuf}
		var c counters
		c.init()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if pid := runtimeProcPin(); pid < len(c.stripes) {
					bump(&c.stripes[pid].n[idxGets])
				}
				runtimeProcUnpin()
				buf := p.Get().(*bytes.Buffer)
				if buf.Cap() <= DefaultMaxBufferCap {
					buf.Reset()
					if pid := runtimeProcPin(); pid < len(c.stripes) {
						bump(&c.stripes[pid].n[idxPuts])
					}
					runtimeProcUnpin()
					p.Put(buf)
				}
			}
		})
	}))
	b.Run("impl=shared_atomic", CPUTimed(func(b *testing.B) {
		p := sync.Pool{New: newBuf}
		var gets, puts atomic.Uint64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				gets.Add(1)
				buf := p.Get().(*bytes.Buffer)
				if buf.Cap() <= DefaultMaxBufferCap {
					buf.Reset()
					puts.Add(1)
					p.Put(buf)
				}
			}
		})
	}))
	b.Run("impl=hashed_atomic", CPUTimed(func(b *testing.B) {
		p := sync.Pool{New: newBuf}
		var h hashedStripes
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				h.add(idxGets)
				buf := p.Get().(*bytes.Buffer)
				if buf.Cap() <= DefaultMaxBufferCap {
					buf.Reset()
					h.add(idxPuts)
					p.Put(buf)
				}
			}
		})
	}))
	b.Run("impl=slot_only", CPUTimed(func(b *testing.B) {
		p := sync.Pool{New: newBuf}
		var c counters
		c.init()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				var buf *bytes.Buffer
				if pid := runtimeProcPin(); pid < len(c.stripes) {
					s := &c.stripes[pid]
					bump(&s.n[idxGets])
					buf = (*bytes.Buffer)(loadSlot(&s.slot))
					storeSlot(&s.slot, nil)
				}
				runtimeProcUnpin()
				if buf == nil {
					buf = p.Get().(*bytes.Buffer)
				}
				if buf.Cap() <= DefaultMaxBufferCap {
					buf.Reset()
					if pid := runtimeProcPin(); pid < len(c.stripes) {
						s := &c.stripes[pid]
						bump(&s.n[idxPuts])
						if loadSlot(&s.slot) == nil {
							storeSlot(&s.slot, unsafe.Pointer(buf))
							buf = nil
						}
					}
					runtimeProcUnpin()
					if buf != nil {
						p.Put(buf)
					}
				}
			}
		})
	}))
	b.Run("impl=instrument", CPUTimed(func(b *testing.B) {
		p, err := NewBufferPool("bench", 0)
		if err != nil {
			b.Fatal(err)
		}
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p.Put(p.Get())
			}
		})
	}))
}

// BenchmarkOverheadGeneric is the generic path's part of the decomposition:
// the buffer policy written as WithKeep and WithReset function values
// rather than NewBufferPool's inlined policy.
func BenchmarkOverheadGeneric(b *testing.B) {
	b.Run("impl=raw", CPUTimed(func(b *testing.B) {
		p := sync.Pool{New: func() any { return new(bytes.Buffer) }}
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				buf := p.Get().(*bytes.Buffer)
				if buf.Cap() <= DefaultMaxBufferCap {
					buf.Reset()
					p.Put(buf)
				}
			}
		})
	}))
	b.Run("impl=buffer_pool", CPUTimed(func(b *testing.B) {
		p, err := NewBufferPool("bench", 0)
		if err != nil {
			b.Fatal(err)
		}
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p.Put(p.Get())
			}
		})
	}))
	b.Run("impl=generic", CPUTimed(func(b *testing.B) {
		p, err := New("bench",
			WithNew(func() *bytes.Buffer { return new(bytes.Buffer) }),
			WithReset(func(b *bytes.Buffer) { b.Reset() }),
			WithKeep(func(b *bytes.Buffer) bool { return b != nil && b.Cap() <= DefaultMaxBufferCap }),
		)
		if err != nil {
			b.Fatal(err)
		}
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p.Put(p.Get())
			}
		})
	}))
}

// hashedStripes is the measurement aid for impl=hashed_atomic: 64 padded
// stripes, picked by a Fibonacci hash of the caller's stack address.
type hashedStripes struct {
	s [64]struct {
		n [numCounters]atomic.Uint64
		_ [stripeSize - numCounters*8]byte
	}
}

func (h *hashedStripes) add(i int) {
	var anchor byte
	sp := uint64(uintptr(unsafe.Pointer(&anchor)))
	h.s[(sp>>11)*0x9E3779B97F4A7C15>>58].n[i].Add(1)
}

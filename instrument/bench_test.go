package instrument_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/poolparity/poolparity/instrument"
)

// The benchmarks are sub-benchmarks named impl=<variant>, so that
// `benchstat -col /impl` puts the variants side by side with ratios. Each
// reports, besides wall-clock sec/op, cpu-ns/op (cpu-sec/op in benchstat): the process's CPU time
// (user+system, from getrusage) per op. On a machine shared with other
// work, wall-clock time includes time the benchmark spent waiting for a
// core; CPU time does not, so its ratios are the steadier measure.

// cpuTimed reports cpu-ns/op besides ns/op; see instrument.CPUTimed.
var cpuTimed = instrument.CPUTimed

const bufferCap = instrument.DefaultMaxBufferCap

// BenchmarkGetPut measures one Get + Reset + Put of a *bytes.Buffer, with
// the same 64 KiB keep policy in every variant:
//
//	raw:          sync.Pool, no counting
//	instrument:   instrument.Pool (per-P striped counters)
//	prom_counter: sync.Pool plus a Prometheus counter Inc per Get and per Put
//	otel_add:     sync.Pool plus an OTel SDK Int64Counter.Add per Get and per Put
func BenchmarkGetPut(b *testing.B) {
	b.Run("impl=raw", cpuTimed(func(b *testing.B) {
		p := sync.Pool{New: func() any { return new(bytes.Buffer) }}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				buf := p.Get().(*bytes.Buffer)
				if buf.Cap() <= bufferCap {
					buf.Reset()
					p.Put(buf)
				}
			}
		})
	}))
	b.Run("impl=instrument", cpuTimed(func(b *testing.B) {
		p, err := instrument.NewBufferPool("bench", bufferCap)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				buf := p.Get()
				p.Put(buf) // keep policy, Reset, Put
			}
		})
		if s := p.Stats(); s.Gets < uint64(b.N) {
			b.Fatalf("Gets = %d after %d ops", s.Gets, b.N)
		}
	}))
	b.Run("impl=prom_counter", cpuTimed(func(b *testing.B) {
		vec := func(name string) *prometheus.CounterVec {
			return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: name}, []string{"pool"})
		}
		gets := vec("syncpool_gets_total").WithLabelValues("bench")
		misses := vec("syncpool_misses_total").WithLabelValues("bench")
		puts := vec("syncpool_puts_total").WithLabelValues("bench")
		drops := vec("syncpool_drops_total").WithLabelValues("bench")
		p := sync.Pool{New: func() any { misses.Inc(); return new(bytes.Buffer) }}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				gets.Inc()
				buf := p.Get().(*bytes.Buffer)
				if buf.Cap() <= bufferCap {
					buf.Reset()
					puts.Inc()
					p.Put(buf)
				} else {
					drops.Inc()
				}
			}
		})
	}))
	b.Run("impl=otel_add", cpuTimed(func(b *testing.B) {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer mp.Shutdown(context.Background())
		meter := mp.Meter("bench")
		counter := func(name string) metric.Int64Counter {
			c, err := meter.Int64Counter(name)
			if err != nil {
				b.Fatal(err)
			}
			return c
		}
		gets, misses, puts, drops := counter("syncpool.gets"), counter("syncpool.misses"), counter("syncpool.puts"), counter("syncpool.drops")
		// The attribute set is built once: the cheapest way to call Add.
		attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("pool", "bench")))
		ctx := context.Background()
		p := sync.Pool{New: func() any { misses.Add(ctx, 1, attrs); return new(bytes.Buffer) }}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				gets.Add(ctx, 1, attrs)
				buf := p.Get().(*bytes.Buffer)
				if buf.Cap() <= bufferCap {
					buf.Reset()
					puts.Add(ctx, 1, attrs)
					p.Put(buf)
				} else {
					drops.Add(ctx, 1, attrs)
				}
			}
		})
	}))
}

// item is the generic benchmarks' pooled struct: a few fields and a
// reusable slice, reset field by field.
type item struct {
	id   int
	name string
	tags []string
}

// maxTags is the keep policy of the struct pools: an item whose tags slice
// grew past it is dropped rather than pooled.
const maxTags = 64

// BenchmarkGetPutStruct measures one Get + Reset + Put of a *item through
// the generic path (WithNew, WithReset and WithKeep function values), with
// the same keep policy and reset in both variants:
//
//	raw:        sync.Pool, no counting
//	instrument: instrument.Pool built with WithNew, WithReset and WithKeep
func BenchmarkGetPutStruct(b *testing.B) {
	reset := func(it *item) { it.id, it.name, it.tags = 0, "", it.tags[:0] }
	keep := func(it *item) bool { return it != nil && cap(it.tags) <= maxTags }
	b.Run("impl=raw", cpuTimed(func(b *testing.B) {
		p := sync.Pool{New: func() any { return new(item) }}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				it := p.Get().(*item)
				it.id = 1
				if keep(it) {
					reset(it)
					p.Put(it)
				}
			}
		})
	}))
	b.Run("impl=instrument", cpuTimed(func(b *testing.B) {
		p, err := instrument.New("bench",
			instrument.WithNew(func() *item { return new(item) }),
			instrument.WithReset(reset),
			instrument.WithKeep(keep),
		)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				it := p.Get()
				it.id = 1
				p.Put(it)
			}
		})
		if s := p.Stats(); s.Gets < uint64(b.N) {
			b.Fatalf("Gets = %d after %d ops", s.Gets, b.N)
		}
	}))
}

// BenchmarkGetPutCheck measures the WithCheck sanitizer on the struct
// pool of BenchmarkGetPutStruct: the same Get + Reset + Put with no check
// (the cost of the feature when off), and with a field-by-field check on
// every pooled Get, one in 16 and one in 64.
func BenchmarkGetPutCheck(b *testing.B) {
	reset := func(it *item) { it.id, it.name, it.tags = 0, "", it.tags[:0] }
	keep := func(it *item) bool { return it != nil && cap(it.tags) <= maxTags }
	check := func(it *item) error {
		if it.id != 0 || it.name != "" || len(it.tags) != 0 {
			return errors.New("item not reset")
		}
		return nil
	}
	for _, every := range []int{0, 1, 16, 64} {
		name := "check=off"
		if every > 0 {
			name = fmt.Sprintf("check=every%d", every)
		}
		b.Run(name, cpuTimed(func(b *testing.B) {
			opts := []instrument.Option[*item]{
				instrument.WithNew(func() *item { return new(item) }),
				instrument.WithReset(reset),
				instrument.WithKeep(keep),
			}
			if every > 0 {
				opts = append(opts, instrument.WithCheck(every, check))
			}
			p, err := instrument.New("bench", opts...)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					it := p.Get()
					it.id = 1
					p.Put(it)
				}
			})
			if s := p.Stats(); s.Dirty != 0 {
				b.Fatalf("Dirty = %d with a correct reset", s.Dirty)
			}
		}))
	}
}

// BenchmarkGetPutPoison measures poisoned Puts (WithBytePoison,
// WithPoison), off and on, on the three kinds of pool, each with a Get,
// a write and a Put per op, so that the buffers have a capacity to poison:
//
//	pool=buffer_1k:  NewBufferPool, 1 KiB written (a 1 KiB buffer)
//	pool=buffer_16k: NewBufferPool, 16 KiB written
//	pool=slice_1k:   NewByteSlicePool(1024), 1 KiB appended
//	pool=struct:     the struct pool of BenchmarkGetPutStruct; its poison
//	                 overwrites the fields and the tags' capacity (8)
//
// poison=off is the pool as built without the option, the code path every
// pool takes when poisoning is off; run the benchmark on the code before
// the option existed to compare (benchstat -col /poison for on vs off).
func BenchmarkGetPutPoison(b *testing.B) {
	chunk16k := bytes.Repeat(chunk, 16)
	for _, poison := range []bool{false, true} {
		suffix := "/poison=off"
		var bopts []instrument.BytesOption
		if poison {
			suffix = "/poison=on"
			bopts = append(bopts, instrument.WithBytePoison())
		}
		for _, data := range []struct {
			name  string
			chunk []byte
		}{{"buffer_1k", chunk}, {"buffer_16k", chunk16k}} {
			b.Run("pool="+data.name+suffix, cpuTimed(func(b *testing.B) {
				p, err := instrument.NewBufferPool("bench", bufferCap, bopts...)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						buf := p.Get()
						buf.Write(data.chunk)
						p.Put(buf)
					}
				})
				if s := p.Stats(); s.Dirty != 0 {
					b.Fatalf("Dirty = %d with correct use", s.Dirty)
				}
			}))
		}
		b.Run("pool=slice_1k"+suffix, cpuTimed(func(b *testing.B) {
			p, err := instrument.NewByteSlicePool("bench", 1024, 0, bopts...)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					bp := p.Get()
					*bp = append(*bp, chunk...)
					p.Put(bp)
				}
			})
			if s := p.Stats(); s.Dirty != 0 {
				b.Fatalf("Dirty = %d with correct use", s.Dirty)
			}
		}))
		b.Run("pool=struct"+suffix, cpuTimed(func(b *testing.B) {
			const poisonName = "\xdb"
			opts := []instrument.Option[*item]{
				instrument.WithNew(func() *item { return &item{tags: make([]string, 0, 8)} }),
				instrument.WithReset(func(it *item) { it.id, it.name, it.tags = 0, "", it.tags[:0] }),
				instrument.WithKeep(func(it *item) bool { return it != nil && cap(it.tags) <= maxTags }),
			}
			if poison {
				opts = append(opts, instrument.WithPoison(
					func(it *item) {
						it.id, it.name = -1, poisonName
						all := it.tags[:cap(it.tags)]
						for i := range all {
							all[i] = poisonName
						}
					},
					func(it *item) bool {
						for _, t := range it.tags[:cap(it.tags)] {
							if t != poisonName {
								return false
							}
						}
						return it.id == -1 && it.name == poisonName && len(it.tags) == 0
					}))
			}
			p, err := instrument.New("bench", opts...)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					it := p.Get()
					it.id = 1
					it.tags = append(it.tags, "a")
					p.Put(it)
				}
			})
			if s := p.Stats(); s.Dirty != 0 {
				b.Fatalf("Dirty = %d with correct use", s.Dirty)
			}
		}))
	}
}

// sink keeps the compiler from optimising the work away; each goroutine
// adds its local total once, at the end, so the sink is not contended.
var sink atomic.Int64

// sliceSize is a variable, not a constant, so that make([]byte, sliceSize)
// is a heap allocation, as it is in real code that keeps the slice.
var sliceSize = 1024

// BenchmarkAlloc1K compares make([]byte, 1024) with a pooled 1 KiB slice.
func BenchmarkAlloc1K(b *testing.B) {
	b.Run("impl=alloc", cpuTimed(func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var total int64
			for pb.Next() {
				s := make([]byte, sliceSize)
				s[0], s[len(s)-1] = 1, 2
				total += int64(len(s))
			}
			sink.Add(total)
		})
	}))
	b.Run("impl=raw", cpuTimed(func(b *testing.B) {
		p := sync.Pool{New: func() any { s := make([]byte, 0, 1024); return &s }}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				bp := p.Get().(*[]byte)
				s := (*bp)[:1024]
				s[0], s[1023] = 1, 2
				*bp = s[:0]
				p.Put(bp)
			}
		})
	}))
	b.Run("impl=instrument", cpuTimed(func(b *testing.B) {
		p, err := instrument.NewByteSlicePool("bench", 1024, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				bp := p.Get()
				s := (*bp)[:1024]
				s[0], s[1023] = 1, 2
				p.Put(bp)
			}
		})
	}))
}

// record is the JSON target: small fields plus a 1 KiB array, so that a
// fresh value costs a 1 KiB+ allocation.
type record struct {
	ID   int        `json:"id"`
	Name string     `json:"name"`
	Data [1024]byte `json:"data"`
}

var recordJSON = []byte(`{"id":42,"name":"poolparity"}`)

// BenchmarkJSONUnmarshal compares unmarshalling into a new record with
// unmarshalling into a pooled one (cleared before reuse).
func BenchmarkJSONUnmarshal(b *testing.B) {
	b.Run("impl=alloc", cpuTimed(func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var total int64
			defer func() { sink.Add(total) }()
			for pb.Next() {
				r := new(record)
				if err := json.Unmarshal(recordJSON, r); err != nil {
					b.Error(err)
					return
				}
				total += int64(r.ID)
			}
		})
	}))
	b.Run("impl=raw", cpuTimed(func(b *testing.B) {
		p := sync.Pool{New: func() any { return new(record) }}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var total int64
			defer func() { sink.Add(total) }()
			for pb.Next() {
				r := p.Get().(*record)
				if err := json.Unmarshal(recordJSON, r); err != nil {
					b.Error(err)
					return
				}
				total += int64(r.ID)
				*r = record{}
				p.Put(r)
			}
		})
	}))
	b.Run("impl=instrument", cpuTimed(func(b *testing.B) {
		p, err := instrument.New("bench",
			instrument.WithNew(func() *record { return new(record) }),
			instrument.WithReset(func(r *record) { *r = record{} }),
		)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var total int64
			defer func() { sink.Add(total) }()
			for pb.Next() {
				r := p.Get()
				if err := json.Unmarshal(recordJSON, r); err != nil {
					b.Error(err)
					return
				}
				total += int64(r.ID)
				p.Put(r)
			}
		})
	}))
}

var chunk = bytes.Repeat([]byte("0123456789abcdef"), 64) // 1 KiB

// BenchmarkBufferWrite10K compares writing 10 KiB into a new bytes.Buffer
// with writing it into a pooled one.
func BenchmarkBufferWrite10K(b *testing.B) {
	write := func(buf *bytes.Buffer) int64 {
		for i := 0; i < 10; i++ {
			buf.Write(chunk)
		}
		return int64(buf.Len())
	}
	b.Run("impl=alloc", cpuTimed(func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var total int64
			defer func() { sink.Add(total) }()
			for pb.Next() {
				total += write(new(bytes.Buffer))
			}
		})
	}))
	b.Run("impl=raw", cpuTimed(func(b *testing.B) {
		p := sync.Pool{New: func() any { return new(bytes.Buffer) }}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var total int64
			defer func() { sink.Add(total) }()
			for pb.Next() {
				buf := p.Get().(*bytes.Buffer)
				total += write(buf)
				if buf.Cap() <= bufferCap {
					buf.Reset()
					p.Put(buf)
				}
			}
		})
	}))
	b.Run("impl=instrument", cpuTimed(func(b *testing.B) {
		p, err := instrument.NewBufferPool("bench", bufferCap)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var total int64
			defer func() { sink.Add(total) }()
			for pb.Next() {
				buf := p.Get()
				total += write(buf)
				p.Put(buf)
			}
		})
	}))
}

// Package instrument counts what a sync.Pool does, at a cost close to zero.
//
// Go's sync.Pool has no statistics API, and the obvious ways to add one (a
// shared atomic, or a Prometheus or OpenTelemetry counter bumped on every
// operation) cost more than the pool operation itself and serialise the cores
// on one cache line. Pool[T] wraps a sync.Pool and keeps its counts in
// per-P stripes: the hot path increments a counter on a cache line that only
// the current P writes, and makes no allocation and no call into any
// metrics library. Exporters read the counts at scrape or collection time.
//
// The counting rides on the one pin (runtime.procPin, as sync.Pool uses)
// that the fast path needs anyway: each stripe also holds a private slot
// with one pooled object, so a Get that finds the slot full, and a Put that
// finds it empty, never reach the sync.Pool. Measured, that makes an
// instrumented pool a little cheaper than a raw sync.Pool. The slots are
// emptied after every garbage collection, so, as with sync.Pool, an object
// put once and never taken again becomes collectable after about two GC
// cycles.
//
// This package is a Go module of its own; it depends on nothing but the
// standard library, and its exporters on client_golang and OpenTelemetry.
//
// The counts are Gets (every Get), Misses (a Get that had to call New, or
// found the pool empty when there is no New), Puts (objects returned to the
// pool) and Drops (objects the keep policy refused, for example a buffer
// that grew past its size cap), and Dirty (objects the debug checks below
// refused). The hit ratio is 1 - Misses/Gets; compute it
// where the counters are aggregated (in PromQL), never in the process.
//
// This package imports no exporter. The Prometheus collector lives in
// instrument/promexport and the OpenTelemetry instruments in
// instrument/otelexport; both read pools through a Registry.
//
// # Poisoning and the sanitizer
//
// Two opt-in checks count, in Dirty, objects that come out of the pool
// not as Put left them; each is dropped and replaced by a fresh object
// from New. WithCheck samples objects for state their reset forgot.
// WithPoison (WithBytePoison for the byte pools) catches use after Put.
//
// A handler that Puts its buffer and then writes the response from
// buf.Bytes() is correct until another request takes the buffer first;
// under load a small share of its responses carry someone else's bytes,
// too few to see in a test. With poisoning on, Put overwrites every
// object it pools, after the reset, with a fixed pattern (the byte pools
// fill their whole capacity with PoisonByte, 0xDB), so that such a
// handler writes the pattern every time, with no race needed. Get checks
// every object it takes from the pool: one whose poison was overwritten,
// because something wrote into it after its Put, is counted in Dirty (the
// exporters' syncpool_dirty_total), as a dirty object WithCheck catches
// is. Poisoning costs a pass over each object on every Put and every
// pooled Get (about 25 ns per KiB of buffer, measured: see WithPoison), so
// it is for tests and canaries; a pool without either check pays one
// predictable branch for both. A service turns
// poisoning on from its own configuration (the poolparity services read
// POOLPARITY_POISON); this package reads no environment.
//
// # Concurrency
//
// A Pool is safe for concurrent use by any number of goroutines, as
// sync.Pool is. Stats may be called concurrently with Get and Put; each
// counter it returns is monotonic (never smaller than in an earlier call)
// but the counters are not read at one instant, so a caller must not
// expect, for example, Puts+Drops <= Gets at every moment. The functions
// given to WithReset, WithKeep, WithCheck and WithPoison run outside the
// pool's critical section, concurrently on different objects, and must
// not call Get or Put on the same pool. A Registry is safe for concurrent
// use.
package instrument

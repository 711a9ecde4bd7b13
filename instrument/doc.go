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
// that grew past its size cap). The hit ratio is 1 - Misses/Gets; compute
// it where the counters are aggregated (in PromQL), never in the process.
//
// This package imports no exporter. The Prometheus collector lives in
// instrument/promexport and the OpenTelemetry instruments in
// instrument/otelexport; both read pools through a Registry.
//
// # Concurrency
//
// A Pool is safe for concurrent use by any number of goroutines, as
// sync.Pool is. Stats may be called concurrently with Get and Put; each
// counter it returns is monotonic (never smaller than in an earlier call)
// but the four counters are not read at one instant, so a caller must not
// expect, for example, Puts+Drops <= Gets at every moment. A Registry is
// safe for concurrent use.
package instrument

package instrument

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// Counter indexes within a stripe.
const (
	idxGets = iota
	idxMisses
	idxPuts
	idxDrops
	idxDirty
	numCounters
)

// stripeSize is two cache lines: x86 prefetches lines in adjacent pairs, so
// padding to 128 bytes keeps two Ps from sharing a prefetch unit.
const stripeSize = 128

// stripe holds one P's counters and its private slot, written only by the
// goroutine running on that P while it is pinned there (and, for the slot,
// cleared by the pool's GC sentinel: see Pool.armSentinel).
type stripe struct {
	n [numCounters]uint64
	// slot holds one pooled object (a pointer-shaped T) in front of
	// sync.Pool, or nil. It is read and written only through loadSlot and
	// storeSlot.
	slot unsafe.Pointer
	// tick counts the pooled objects handed out on this P since the last
	// one WithCheck sampled.
	tick uint64
	_    [stripeSize - numCounters*8 - unsafe.Sizeof(unsafe.Pointer(nil)) - 8]byte
}

// sampled advances the stripe's countdown and reports whether this Get is
// the one in every `every` that WithCheck checks. The caller is pinned to
// the stripe's P.
func (s *stripe) sampled(every uint64) bool {
	return tick(&s.tick)%every == 0
}

// counters is a set of counters striped by P. A goroutine pins itself to its
// P (which disables preemption, as sync.Pool does internally), bumps the
// counter in that P's stripe and unpins; no other P writes that cache line,
// so the hot path never bounces a line between cores and needs no lock
// prefix. Ps numbered beyond the stripes made at construction (GOMAXPROCS
// raised later) share an atomic overflow stripe.
type counters struct {
	stripes  []stripe
	overflow [numCounters]atomic.Uint64
}

func (c *counters) init() {
	n := runtime.GOMAXPROCS(0)
	if cpus := runtime.NumCPU(); cpus > n {
		n = cpus
	}
	c.stripes = make([]stripe, n)
}

// add increments counter i for the current P.
func (c *counters) add(i int) {
	pid := runtimeProcPin()
	if pid < len(c.stripes) {
		bump(&c.stripes[pid].n[i])
	} else {
		c.overflow[i].Add(1)
	}
	runtimeProcUnpin()
}

// sampled is stripe.sampled for the current P, for callers not pinned.
// Ps beyond the stripes are always sampled.
func (c *counters) sampled(every uint64) bool {
	pid := runtimeProcPin()
	ok := true
	if pid < len(c.stripes) {
		ok = c.stripes[pid].sampled(every)
	}
	runtimeProcUnpin()
	return ok
}

// clearSlots empties every stripe's slot, dropping the objects in them.
// It runs on the cleanup goroutine after a GC, concurrently with the owners
// of the stripes; see Pool.armSentinel for why that is safe.
func (c *counters) clearSlots() {
	for k := range c.stripes {
		atomic.StorePointer(&c.stripes[k].slot, nil)
	}
}

// load sums the stripes. It reads drops, puts, misses, then gets, the
// reverse of the order in which one object's life bumps them, so that a
// snapshot rarely shows more misses than gets.
func (c *counters) load() Stats {
	var s Stats
	s.Dirty = c.sum(idxDirty)
	s.Drops = c.sum(idxDrops)
	s.Puts = c.sum(idxPuts)
	s.Misses = c.sum(idxMisses)
	s.Gets = c.sum(idxGets)
	return s
}

func (c *counters) sum(i int) uint64 {
	total := c.overflow[i].Load()
	for k := range c.stripes {
		total += atomic.LoadUint64(&c.stripes[k].n[i])
	}
	return total
}

// runtimeProcPin pins the calling goroutine to its P and returns the P's id.
// It is the runtime function sync.Pool itself uses; the runtime keeps it
// reachable by linkname for this purpose.
//
//go:linkname runtimeProcPin runtime.procPin
func runtimeProcPin() int

// runtimeProcUnpin undoes runtimeProcPin.
//
//go:linkname runtimeProcUnpin runtime.procUnpin
func runtimeProcUnpin()

package instrument

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"unsafe"
	"weak"
)

// ErrInvalidName is returned (wrapped) by New and Registry.Register when a
// pool name is empty, too long, or not made of [a-z0-9_].
var ErrInvalidName = errors.New("invalid pool name")

// MaxNameLen is the longest pool name accepted. Names become label values,
// so they are kept short and from a fixed set written in code.
const MaxNameLen = 64

// Stats is a snapshot of a pool's cumulative counters. Every field only
// grows for the life of the pool.
type Stats struct {
	// Gets counts calls to Get.
	Gets uint64
	// Misses counts Gets that were not served from the pool: New was called,
	// or the pool was empty and had no New.
	Misses uint64
	// Puts counts objects accepted back into the pool.
	Puts uint64
	// Drops counts objects passed to Put that the keep policy refused.
	Drops uint64
	// Dirty counts objects taken from the pool that were not as Put left
	// them: they failed the WithCheck check (state the reset forgot), or
	// their WithPoison poison was overwritten (a write after Put). Each
	// was dropped and replaced by a fresh object from New, which is
	// counted as a miss as well.
	Dirty uint64
}

// Option configures a Pool. Options are applied in order by New.
type Option[T any] func(*options[T])

type options[T any] struct {
	newFn      func() T
	reset      func(T)
	keep       func(T) bool
	check      func(T) error
	checkEvery int
	checkSet   bool
	poison     func(T)
	intact     func(T) bool
	poisonSet  bool
}

// WithNew sets the function that makes a fresh object when the pool has
// none. Each call is counted as a miss. Without it, Get on an empty pool
// returns the zero value of T and counts a miss.
func WithNew[T any](fn func() T) Option[T] {
	return func(o *options[T]) { o.newFn = fn }
}

// WithReset sets a function run on every object passed to Put, before it is
// pooled, so that no state leaks from one user to the next. It is not run on
// objects the keep policy drops.
func WithReset[T any](fn func(T)) Option[T] {
	return func(o *options[T]) { o.reset = fn }
}

// WithKeep sets the keep policy: Put pools an object only when keep returns
// true, and otherwise drops it and counts a drop. Use it to cap the size of
// pooled buffers, so that one huge request does not pin a huge buffer in
// memory for ever.
func WithKeep[T any](fn func(T) bool) Option[T] {
	return func(o *options[T]) { o.keep = fn }
}

// WithCheck turns on the pool sanitizer: Get runs check on one in every
// `every` objects it takes from the pool (1 checks them all; objects fresh
// from New are never checked). An object for which check returns an error
// is dirty, usually because the reset forgot some state: it is counted in
// Stats.Dirty, dropped, and replaced by a fresh object from New (counted as
// a miss), so the caller still gets a clean object. The error itself is not
// kept. WithCheck needs WithNew, every >= 1 and a non-nil check; New
// reports an error otherwise.
//
// The sampling is a countdown per P, so a busy pool checks about 1/every
// of its Gets. A pool without WithCheck pays one predictable branch for
// the feature (see docs/benchmarks-instrument.md). check runs outside the
// pool's critical section, concurrently on different objects, and must not
// call Get or Put on the same pool.
func WithCheck[T any](every int, check func(T) error) Option[T] {
	return func(o *options[T]) { o.check, o.checkEvery, o.checkSet = check, every, true }
}

// WithPoison turns on poisoned Puts, a debug mode that makes a use of an
// object after its Put visible. Put runs poison on every object it pools,
// after the reset (WithReset); poison overwrites the object with a
// pattern no correct user writes, for example a buffer's whole capacity
// with PoisonByte (see PoisonBytes). So a caller that still reads the
// object after Put reads the poison every time, not only when another
// goroutine happens to reuse the object first. Get runs intact on every
// object it takes from the pool (objects fresh from New are never
// checked): an object whose poison is no longer intact was written after
// its Put, and is counted in Stats.Dirty, as WithCheck counts a dirty
// object, dropped, and replaced by a fresh object from New (counted as a
// miss). An intact object goes through the reset again before Get returns
// it, so poison may overwrite any state the reset restores as well as
// state no correct user reads (a slice's capacity past its length).
// Objects the keep policy refuses are dropped unpoisoned, and a write
// into an object that never leaves the pool again (sync.Pool drops
// objects at garbage collections) is not counted. WithPoison needs
// WithNew and non-nil poison and intact; New reports an error otherwise.
//
// It is meant for tests and for a canary, not for production traffic:
// every Put pays poison and every pooled Get pays intact and a second
// reset, which for byte buffers is a pass over their whole capacity each.
// Measured (BenchmarkGetPutPoison, one core), a Get, write and Put went
// from 27 to 76 ns with a 1 KiB buffer, from 210 to 616 ns with a 16 KiB
// one (about 25 ns more per KiB), and from 15 to 33 ns for a small
// struct. A pool without WithPoison pays nothing for the feature beyond
// the one branch it shares with WithCheck, and allocates nothing more.
//
// poison runs in Put on the caller's goroutine before the object is
// pooled; intact and the second reset run in Get after the object has
// left the pool. All run outside the pool's critical section,
// concurrently on different objects, and must not call Get or Put on the
// same pool. A write after Put that races with them is a data race, which
// the race detector reports as well. With WithCheck too, Get runs the
// sampled check after intact and the reset.
func WithPoison[T any](poison func(T), intact func(T) bool) Option[T] {
	return func(o *options[T]) { o.poison, o.intact, o.poisonSet = poison, intact, true }
}

// Pool is a typed sync.Pool that counts its operations. Create one with New;
// the zero value is not usable. A Pool must not be copied after first use.
//
// Each P (each processor running Go code) has a stripe with the P's
// counters and, when T is a pointer type, a private slot holding one pooled
// object in front of the sync.Pool. Get and Put pin the goroutine to its P
// once, bump the P's counter and take from or fill the slot in the same
// pin; only an empty slot on Get, or a full one on Put, goes on to the
// sync.Pool. The slots are emptied after every garbage collection, so an
// object put once and never taken again is collectable after about two GC
// cycles, as with sync.Pool itself.
//
// T should be a pointer type (or another pointer-shaped type): like
// sync.Pool, storing a non-pointer value in the pool allocates on every Put,
// and only pointer types use the per-P slots.
type Pool[T any] struct {
	name  string
	pool  sync.Pool
	newFn func() T
	// reset is run by Put on every object it pools: WithReset's function,
	// followed by WithPoison's poison when poisoning is on.
	reset func(T)
	keep  func(T) bool
	// check is the WithCheck sanitizer, run on one pooled object in every
	// `every` Gets per P; nil when off.
	check func(T) error
	every uint64
	// builtin marks pools made by NewBufferPool (T is *bytes.Buffer) and
	// NewByteSlicePool (T is *[]byte): Put then applies their policy (drop
	// nil or over maxCap, else reset) inline. Measured, the two indirect
	// calls through keep and reset cost about as much as the counting.
	builtin builtinPolicy
	// slotted is true when T is a pointer type, whose value fits a stripe's
	// slot (an unsafe.Pointer) as it is.
	slotted bool
	// vets is true when Get runs a debug check on the objects it takes from
	// the pool (WithCheck or WithPoison); with both off, Get pays one
	// branch on it.
	vets   bool
	maxCap int
	ctr    counters
	// intact is WithPoison's check, run on every pooled object Get takes,
	// and getReset the WithReset function Get then runs on an intact one;
	// intact is nil when poisoning is off. They come last so that the
	// fields the fast paths read keep their offsets.
	intact   func(T) bool
	getReset func(T)
}

// builtinPolicy selects an inlined keep+reset policy in Put.
type builtinPolicy uint8

const (
	policyFuncs     builtinPolicy = iota // keep and reset function values
	policyBuffer                         // *bytes.Buffer: cap <= maxCap, Reset
	policyByteSlice                      // *[]byte: cap <= maxCap, truncate
)

// New returns a pool named name. The name must match [a-z0-9_]+ and be at
// most MaxNameLen bytes long; it is the value of the exporters' pool label.
func New[T any](name string, opts ...Option[T]) (*Pool[T], error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	var o options[T]
	for _, opt := range opts {
		opt(&o)
	}
	if o.checkSet {
		switch {
		case o.check == nil:
			return nil, fmt.Errorf("pool %s: WithCheck: nil check function", name)
		case o.checkEvery < 1:
			return nil, fmt.Errorf("pool %s: WithCheck: every must be >= 1, got %d", name, o.checkEvery)
		case o.newFn == nil:
			return nil, fmt.Errorf("pool %s: WithCheck needs WithNew, to replace a dirty object", name)
		}
	}
	if o.poisonSet {
		switch {
		case o.poison == nil:
			return nil, fmt.Errorf("pool %s: WithPoison: nil poison function", name)
		case o.intact == nil:
			return nil, fmt.Errorf("pool %s: WithPoison: nil intact function", name)
		case o.newFn == nil:
			return nil, fmt.Errorf("pool %s: WithPoison needs WithNew, to replace an object written after its Put", name)
		}
	}
	p := &Pool[T]{name: name, newFn: o.newFn, reset: o.reset, keep: o.keep, check: o.check, every: uint64(o.checkEvery)}
	if o.poisonSet {
		// Put runs the poison through the reset's function value, so that
		// its code path is the same whether poisoning is on or off.
		reset, poison := o.reset, o.poison
		p.reset = func(x T) {
			if reset != nil {
				reset(x)
			}
			poison(x)
		}
		p.intact, p.getReset = o.intact, reset
	}
	p.vets = p.check != nil || p.intact != nil
	p.ctr.init()
	if k := reflect.TypeFor[T]().Kind(); k == reflect.Pointer || k == reflect.UnsafePointer {
		p.slotted = true
		armSentinel(weak.Make(&p.ctr))
	}
	if p.newFn != nil && !p.vets {
		// The miss is counted inside New, so only the slow path pays for it.
		// With a check or poisoning, getShared calls newFn itself, to tell a
		// fresh object (never checked) from a pooled one.
		p.pool.New = func() any {
			p.ctr.add(idxMisses)
			return p.newFn()
		}
	}
	return p, nil
}

// ValidateName reports whether name is a valid pool name, returning an error
// wrapping ErrInvalidName when it is not.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty (want [a-z0-9_]+)", ErrInvalidName)
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("%w: %q is longer than %d bytes", ErrInvalidName, name, MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return fmt.Errorf("%w: %q has %q at byte %d (want [a-z0-9_]+)", ErrInvalidName, name, c, i)
		}
	}
	return nil
}

// Name returns the pool's name.
func (p *Pool[T]) Name() string { return p.name }

// gcSentinel is allocated and dropped at once, with a cleanup attached: the
// cleanup runs after the next garbage collection, which is how a pool
// learns that a GC happened. It holds a pointer so that it is never
// batched into a tiny-allocator block, whose cleanups may not run.
type gcSentinel struct{ _ *byte }

// armSentinel attaches a cleanup to a fresh, unreachable sentinel. After the
// next GC the cleanup empties the pool's slots and arms the next sentinel.
// It holds the pool's counters only through a weak pointer, so a pool that
// is no longer used is collected, and its chain of sentinels ends.
//
// The cleanup writes nil into slots that their owners read and write
// concurrently, without the pin: loadSlot explains why that is safe. It
// never takes an object out of a slot for use, so no object is ever handed
// out twice.
func armSentinel(w weak.Pointer[counters]) {
	runtime.AddCleanup(&gcSentinel{}, func(w weak.Pointer[counters]) {
		c := w.Value()
		if c == nil {
			return
		}
		c.clearSlots()
		armSentinel(w)
	}, w)
}

// Get returns an object from the pool, or a new one from New when the pool
// has none (a miss). With no New, a miss returns the zero value of T.
func (p *Pool[T]) Get() T {
	// One pin for the count and the slot. The stripe access is written out
	// here rather than in a helper: a helper with the pin in it cannot be
	// inlined, and the extra call level costs a measurable share of a pool
	// operation. The debug checks (the sampled WithCheck, WithPoison's on
	// every Get) run after the unpin, behind one branch on a bool field.
	c := &p.ctr
	if pid := runtimeProcPin(); pid < len(c.stripes) {
		s := &c.stripes[pid]
		bump(&s.n[idxGets])
		if x := loadSlot(&s.slot); x != nil {
			storeSlot(&s.slot, nil)
			if p.vets {
				if p.intact != nil { // poisoning: every pooled Get is checked
					runtimeProcUnpin()
					return p.vetted(*(*T)(unsafe.Pointer(&x)))
				}
				if s.sampled(p.every) { // WithCheck alone
					runtimeProcUnpin()
					return p.checked(*(*T)(unsafe.Pointer(&x)))
				}
			}
			runtimeProcUnpin()
			return *(*T)(unsafe.Pointer(&x))
		}
	} else {
		c.overflow[idxGets].Add(1)
	}
	runtimeProcUnpin()
	return p.getShared()
}

// getShared is Get's path through the sync.Pool, taken when the P's slot is
// empty (or T is not a pointer type).
func (p *Pool[T]) getShared() T {
	v := p.pool.Get()
	if v == nil {
		p.ctr.add(idxMisses)
		if p.vets { // pool.New is unset when checking or poisoning: see New
			return p.newFn()
		}
		var zero T
		return zero
	}
	if p.vets {
		if p.intact != nil {
			return p.vetted(v.(T))
		}
		if p.ctr.sampled(p.every) {
			return p.checked(v.(T))
		}
	}
	return v.(T)
}

// checked runs the WithCheck check on x, an object taken from the pool,
// and returns x when it is clean. A dirty x is counted and dropped, and a
// fresh object from New (a miss) is returned instead.
func (p *Pool[T]) checked(x T) T {
	if p.check(x) == nil {
		return x
	}
	p.ctr.add(idxDirty)
	p.ctr.add(idxMisses)
	return p.newFn()
}

// vetted is checked for a poisoned pool: it runs intact on x, an object
// taken from the pool, then the reset again, then, when WithCheck is on
// too and samples this Get, the check. It returns x when it passes them. A
// failing x is counted and dropped, and a fresh object from New (a miss)
// is returned instead.
func (p *Pool[T]) vetted(x T) T {
	if !p.intact(x) {
		p.ctr.add(idxDirty)
		p.ctr.add(idxMisses)
		return p.newFn()
	}
	if p.getReset != nil {
		p.getReset(x)
	}
	if p.check != nil && p.ctr.sampled(p.every) {
		return p.checked(x)
	}
	return x
}

// Put returns x to the pool. When the keep policy refuses x, it is dropped
// (left to the garbage collector) and counted as a drop; otherwise the reset
// function (and, with WithPoison, the poison) runs on it and it is pooled.
// x must not be used after Put.
func (p *Pool[T]) Put(x T) {
	switch p.builtin {
	case policyBuffer: // T is *bytes.Buffer; the assertion compares one type word
		b := any(x).(*bytes.Buffer)
		if b == nil || b.Cap() > p.maxCap {
			p.ctr.add(idxDrops)
			return
		}
		b.Reset()
	case policyByteSlice: // T is *[]byte
		b := any(x).(*[]byte)
		if b == nil || cap(*b) > p.maxCap {
			p.ctr.add(idxDrops)
			return
		}
		*b = (*b)[:0]
	default:
		if p.keep != nil && !p.keep(x) {
			p.ctr.add(idxDrops)
			return
		}
		if p.reset != nil {
			p.reset(x)
		}
	}
	c := &p.ctr // one pin for the count and the slot; see Get
	if pid := runtimeProcPin(); pid < len(c.stripes) {
		s := &c.stripes[pid]
		bump(&s.n[idxPuts])
		if p.slotted && loadSlot(&s.slot) == nil {
			storeSlot(&s.slot, *(*unsafe.Pointer)(unsafe.Pointer(&x)))
			runtimeProcUnpin()
			return
		}
	} else {
		c.overflow[idxPuts].Add(1)
	}
	runtimeProcUnpin()
	p.pool.Put(x)
}

// Stats returns the pool's counters. It is safe to call concurrently with
// Get and Put, and costs one pass over the pool's stripes.
func (p *Pool[T]) Stats() Stats { return p.ctr.load() }

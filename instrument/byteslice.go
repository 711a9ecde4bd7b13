package instrument

import "fmt"

// DefaultByteSliceSize is the capacity of the slices a byte-slice pool makes
// when NewByteSlicePool is given size <= 0.
const DefaultByteSliceSize = 1024

// NewByteSlicePool returns a pool of *[]byte. New makes a slice of length 0
// and capacity size (DefaultByteSliceSize when size <= 0); Put truncates the
// slice to length 0 and drops slices whose capacity exceeds maxCap
// (DefaultMaxBufferCap when maxCap <= 0). It fails when size > maxCap, since
// every fresh slice would then be dropped. WithBytePoison turns on
// poisoned Puts.
//
// The pool holds pointers to slices, not slices, so that Put does not
// allocate. Callers append through the pointer and Put the same pointer back:
//
//	bp := pool.Get()
//	*bp = append(*bp, data...)
//	...
//	pool.Put(bp)
func NewByteSlicePool(name string, size, maxCap int, opts ...BytesOption) (*Pool[*[]byte], error) {
	if size <= 0 {
		size = DefaultByteSliceSize
	}
	if maxCap <= 0 {
		maxCap = DefaultMaxBufferCap
	}
	if size > maxCap {
		return nil, fmt.Errorf("creating byte slice pool %q: size %d exceeds maxCap %d", name, size, maxCap)
	}
	newSlice := WithNew(func() *[]byte {
		b := make([]byte, 0, size)
		return &b
	})
	if applyBytesOptions(opts).poison {
		// A debug mode: the policy runs through function values rather
		// than inline, and the inline path stays as it is.
		return New(name, newSlice,
			WithKeep(func(b *[]byte) bool {
				if b == nil {
					return false
				}
				if cap(*b) > maxCap {
					PoisonBytes(*b)
					return false
				}
				return true
			}),
			WithReset(func(b *[]byte) { *b = (*b)[:0] }),
			WithPoison(func(b *[]byte) { PoisonBytes(*b) }, func(b *[]byte) bool { return len(*b) == 0 && BytesPoisoned(*b) }),
		)
	}
	p, err := New(name, newSlice)
	if err != nil {
		return nil, err
	}
	// The keep policy (drop nil and over maxCap) and the truncation run
	// inline in Put: see Pool.builtin.
	p.builtin, p.maxCap = policyByteSlice, maxCap
	return p, nil
}

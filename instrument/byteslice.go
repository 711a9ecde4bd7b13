package instrument

import "fmt"

// DefaultByteSliceSize is the capacity of the slices a byte-slice pool makes
// when NewByteSlicePool is given size <= 0.
const DefaultByteSliceSize = 1024

// NewByteSlicePool returns a pool of *[]byte. New makes a slice of length 0
// and capacity size (DefaultByteSliceSize when size <= 0); Put truncates the
// slice to length 0 and drops slices whose capacity exceeds maxCap
// (DefaultMaxBufferCap when maxCap <= 0). It fails when size > maxCap, since
// every fresh slice would then be dropped.
//
// The pool holds pointers to slices, not slices, so that Put does not
// allocate. Callers append through the pointer and Put the same pointer back:
//
//	bp := pool.Get()
//	*bp = append(*bp, data...)
//	...
//	pool.Put(bp)
func NewByteSlicePool(name string, size, maxCap int) (*Pool[*[]byte], error) {
	if size <= 0 {
		size = DefaultByteSliceSize
	}
	if maxCap <= 0 {
		maxCap = DefaultMaxBufferCap
	}
	if size > maxCap {
		return nil, fmt.Errorf("creating byte slice pool %q: size %d exceeds maxCap %d", name, size, maxCap)
	}
	p, err := New(name, WithNew(func() *[]byte {
		b := make([]byte, 0, size)
		return &b
	}))
	if err != nil {
		return nil, err
	}
	// The keep policy (drop nil and over maxCap) and the truncation run
	// inline in Put: see Pool.builtin.
	p.builtin, p.maxCap = policyByteSlice, maxCap
	return p, nil
}

package instrument

import "bytes"

// DefaultMaxBufferCap is the largest buffer capacity a buffer pool keeps by
// default: 64 KiB, the cap the fmt package uses for its own printer pool.
// Larger buffers are dropped at Put, so that one big response does not pin
// a big buffer for ever.
const DefaultMaxBufferCap = 64 << 10

// NewBufferPool returns a pool of *bytes.Buffer that resets each buffer on
// Put and drops nil buffers and buffers whose capacity exceeds maxCap
// (DefaultMaxBufferCap when maxCap <= 0).
func NewBufferPool(name string, maxCap int) (*Pool[*bytes.Buffer], error) {
	if maxCap <= 0 {
		maxCap = DefaultMaxBufferCap
	}
	p, err := New(name, WithNew(func() *bytes.Buffer { return new(bytes.Buffer) }))
	if err != nil {
		return nil, err
	}
	// The keep policy (drop nil buffers and buffers over maxCap) and the
	// Reset run inline in Put: see Pool.builtin.
	p.builtin, p.maxCap = policyBuffer, maxCap
	return p, nil
}

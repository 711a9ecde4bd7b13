package instrument

import "bytes"

// DefaultMaxBufferCap is the largest buffer capacity a buffer pool keeps by
// default: 64 KiB, the cap the fmt package uses for its own printer pool.
// Larger buffers are dropped at Put, so that one big response does not pin
// a big buffer for ever.
const DefaultMaxBufferCap = 64 << 10

// NewBufferPool returns a pool of *bytes.Buffer that resets each buffer on
// Put and drops nil buffers and buffers whose capacity exceeds maxCap
// (DefaultMaxBufferCap when maxCap <= 0). WithBytePoison turns on
// poisoned Puts.
func NewBufferPool(name string, maxCap int, opts ...BytesOption) (*Pool[*bytes.Buffer], error) {
	if maxCap <= 0 {
		maxCap = DefaultMaxBufferCap
	}
	newBuf := WithNew(func() *bytes.Buffer { return new(bytes.Buffer) })
	if applyBytesOptions(opts).poison {
		// A debug mode: the policy runs through function values rather
		// than inline, and the inline path stays as it is.
		return New(name, newBuf,
			WithKeep(func(b *bytes.Buffer) bool {
				if b == nil {
					return false
				}
				if b.Cap() > maxCap {
					b.Reset()
					PoisonBytes(b.AvailableBuffer())
					return false
				}
				return true
			}),
			WithReset((*bytes.Buffer).Reset),
			WithPoison(poisonBuffer, bufferPoisoned),
		)
	}
	p, err := New(name, newBuf)
	if err != nil {
		return nil, err
	}
	// The keep policy (drop nil buffers and buffers over maxCap) and the
	// Reset run inline in Put: see Pool.builtin.
	p.builtin, p.maxCap = policyBuffer, maxCap
	return p, nil
}

// poisonBuffer poisons a reset buffer: after Reset, AvailableBuffer spans
// the whole backing array.
func poisonBuffer(b *bytes.Buffer) { PoisonBytes(b.AvailableBuffer()) }

// bufferPoisoned reports whether b is as poisonBuffer left it: empty, with
// every byte of its backing array still PoisonByte. It resets b first, so
// that the bytes before a read offset are checked too.
func bufferPoisoned(b *bytes.Buffer) bool {
	n := b.Len()
	b.Reset()
	return n == 0 && BytesPoisoned(b.AvailableBuffer())
}

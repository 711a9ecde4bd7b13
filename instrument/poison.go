package instrument

import "bytes"

// PoisonByte is the pattern poisoned byte pools (WithBytePoison) and
// PoisonBytes write over a pooled buffer's whole capacity. 0xDB is not
// zero, not printable ASCII, and not valid UTF-8 on its own, so poisoned
// bytes that reach a response or a log stand out.
const PoisonByte byte = 0xDB

// PoisonBytes fills b's whole backing array, b[0:cap(b)], with PoisonByte,
// whatever len(b) is. It is the poison of WithBytePoison, for WithPoison
// functions of one's own: pass it a buffer after its reset (a slice
// truncated to length 0, or a bytes.Buffer's AvailableBuffer()).
func PoisonBytes(b []byte) {
	b = b[:cap(b)]
	n := copy(b, poison256)
	for n < len(b) { // doubling copies, at memmove speed
		n += copy(b[n:], b[:n])
	}
}

// poison256 is 256 PoisonBytes, the first block PoisonBytes copies: for
// small buffers, one copy instead of a doubling copy per power of two.
const (
	poison8   = "\xdb\xdb\xdb\xdb\xdb\xdb\xdb\xdb"
	poison64  = poison8 + poison8 + poison8 + poison8 + poison8 + poison8 + poison8 + poison8
	poison256 = poison64 + poison64 + poison64 + poison64
)

// BytesPoisoned reports whether every byte of b's backing array,
// b[0:cap(b)], is PoisonByte: whether the poison PoisonBytes wrote is
// intact. It is true for a buffer of capacity 0.
func BytesPoisoned(b []byte) bool {
	b = b[:cap(b)]
	if len(b) == 0 {
		return true
	}
	// Every byte equals the next and the first is the pattern: one
	// overlapping comparison, at memequal speed.
	return b[0] == PoisonByte && bytes.Equal(b[1:], b[:len(b)-1])
}

// BytesOption configures a byte pool made by NewBufferPool or
// NewByteSlicePool.
type BytesOption func(*bytesOptions)

type bytesOptions struct {
	poison bool
}

// WithBytePoison turns on poisoned Puts (see WithPoison) for a byte pool,
// with no function to write: after the reset, Put fills every buffer's
// whole backing array, up to its capacity, with PoisonByte (a buffer the
// size cap drops is filled too, so that every use after Put reads the
// poison), and Get checks that every byte of a pooled buffer's capacity
// still holds PoisonByte and its length is 0. A buffer that fails is
// counted in Stats.Dirty, dropped and replaced by a fresh one from New.
// Poisoning is a debug mode: each Put and each pooled Get costs a pass
// over the buffer's capacity (see WithPoison for the measured cost).
func WithBytePoison() BytesOption {
	return func(o *bytesOptions) { o.poison = true }
}

func applyBytesOptions(opts []BytesOption) bytesOptions {
	var o bytesOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

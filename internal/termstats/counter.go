package termstats

import "bytes"

// term is one distinct term of a counter: its text at text[off:off+n] and
// its count.
type term struct {
	off, n int32
	count  int32
}

// counter counts terms without allocating a string per term: the index maps
// a term's FNV-1a hash to its position in terms, and the text lives in one
// arena. Hash collisions are resolved by comparing the text and probing the
// next hash value. Reused (after reset) it allocates nothing until it
// outgrows its previous largest use.
type counter struct {
	index map[uint64]int32
	terms []term
	text  []byte
}

func newCounter() counter {
	return counter{index: make(map[uint64]int32)}
}

// reset empties the counter, keeping its capacity.
func (c *counter) reset() {
	clear(c.index)
	c.terms = c.terms[:0]
	c.text = c.text[:0]
}

// size is the counter's retained capacity, in bytes, for keep policies.
func (c *counter) size() int {
	return len(c.index)*16 + cap(c.terms)*12 + cap(c.text)
}

// add adds n to the count of word.
func (c *counter) add(word []byte, n int32) {
	h := fnv64a(word)
	for {
		i, ok := c.index[h]
		if !ok {
			c.index[h] = int32(len(c.terms))
			c.terms = append(c.terms, term{off: int32(len(c.text)), n: int32(len(word)), count: n})
			c.text = append(c.text, word...)
			return
		}
		t := &c.terms[i]
		if bytes.Equal(c.text[t.off:t.off+t.n], word) {
			t.count += n
			return
		}
		h++ // collision: probe the next slot
	}
}

// word returns the text of term t. It aliases the counter's arena.
func (c *counter) word(t term) []byte { return c.text[t.off : t.off+t.n] }

// top fills dst with the indices of the k most frequent terms, most
// frequent first, ties broken by text, and returns it.
func (c *counter) top(dst []int32, k int) []int32 {
	dst = dst[:0]
	for i := range c.terms {
		if len(dst) < k {
			dst = append(dst, int32(i))
		} else if c.less(int32(i), dst[len(dst)-1]) {
			dst[len(dst)-1] = int32(i)
		} else {
			continue
		}
		// Insertion step: bubble the new index up to its place.
		for j := len(dst) - 1; j > 0 && c.less(dst[j], dst[j-1]); j-- {
			dst[j], dst[j-1] = dst[j-1], dst[j]
		}
	}
	return dst
}

// less orders terms by count descending, then text ascending.
func (c *counter) less(a, b int32) bool {
	ta, tb := c.terms[a], c.terms[b]
	if ta.count != tb.count {
		return ta.count > tb.count
	}
	return bytes.Compare(c.word(ta), c.word(tb)) < 0
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnv64a(b []byte) uint64 {
	h := uint64(fnvOffset)
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// forEachWord lowercases ASCII letters in text in place and calls fn for
// each maximal run of letters and digits: ASCII ones, and any non-ASCII
// character (the bytes of a multi-byte UTF-8 sequence never split a word).
// ASCII punctuation, spaces and control characters separate words.
func forEachWord(text []byte, fn func([]byte)) {
	start := -1
	for i, c := range text {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
			text[i] = c
		}
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c >= 0x80 {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			fn(text[start:i])
			start = -1
		}
	}
	if start >= 0 {
		fn(text[start:])
	}
}

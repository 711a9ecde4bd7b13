// Package termstats builds the service's allocation-heavy endpoint: a report
// over many stored items, with per-item term statistics, a tag histogram
// and corpus-wide top terms. Its cost is dominated by the buffers, maps,
// arenas and the encoder that it needs for every request, which is what the
// pooled mode takes from instrumented pools and the unpooled mode allocates
// afresh; the code path, and so the output, is the same in both.
package termstats

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/internal/pools"
)

// Limits on the report size.
const (
	// DefaultItems is the number of items a report covers when n is absent.
	DefaultItems = 100
	// MaxItems is the largest n accepted.
	MaxItems = 1000
	// entryTopTerms is the number of top terms listed per item.
	entryTopTerms = 5
	// reportTopTerms is the number of corpus-wide top terms.
	reportTopTerms = 20
	// reportTopTags is the number of tags in the histogram.
	reportTopTags = 50
)

// ErrCorrupt is wrapped when a stored item cannot be decoded.
var ErrCorrupt = errors.New("stored item is corrupt")

// ErrOverBudget is wrapped when a heavy request (a report, a list) would
// read or hold more bytes than its Budget allows. The error is a
// *BudgetError, which says how far the request got.
var ErrOverBudget = errors.New("over the byte budget of a heavy request")

// Bound names one bound of a Budget.
type Bound string

// The bounds of a Budget.
const (
	// BoundReadBytes is Budget.MaxReadBytes.
	BoundReadBytes Bound = "read_bytes"
	// BoundHeldBytes is Budget.MaxHeldBytes.
	BoundHeldBytes Bound = "held_bytes"
)

// BudgetError is a request past a bound of its Budget. The same request
// fails the same way on any pod and at any time while the data stays the
// same: it is permanent, not a matter of load. errors.Is(err,
// ErrOverBudget) holds for it.
type BudgetError struct {
	// Bound is the bound passed.
	Bound Bound
	// Limit is the bound's value, in bytes.
	Limit int64
	// Needed is the bytes counted when the request stopped: more than
	// Limit, and a lower bound on what the whole request needs.
	Needed int64
	// Fit is the number of items the request took whole within the bound
	// before passing it: an estimate of the largest request that fits.
	Fit int
}

func (e *BudgetError) Error() string {
	what := "bytes of items to read"
	if e.Bound == BoundHeldBytes {
		what = "bytes of terms and entries to hold"
	}
	return fmt.Sprintf("%v: more than %d %s (%d counted after %d items)", ErrOverBudget, e.Limit, what, e.Needed, e.Fit)
}

// Is reports whether target is ErrOverBudget.
func (e *BudgetError) Is(target error) bool { return target == ErrOverBudget }

// Budget bounds what one report may cost. Zero fields mean no bound.
type Budget struct {
	// MaxReadBytes bounds the bytes of stored items one report reads.
	MaxReadBytes int64
	// MaxHeldBytes bounds the working state one report keeps across
	// items (its term counts and entries), which grows with the number of
	// distinct terms.
	MaxHeldBytes int64
}

// Store is what the report reads. *store.Store implements it.
type Store interface {
	ScanIDs(ctx context.Context, dst []string, limit int) ([]string, error)
	GetMany(ctx context.Context, ids []string, keys []string, fn func(i int, value string, found bool) error) ([]string, error)
}

// Report is the response body.
type Report struct {
	Items        int         `json:"items"`
	PayloadBytes int         `json:"payload_bytes"`
	Words        int         `json:"words"`
	Tags         []TagCount  `json:"tags"`
	TopTerms     []TermCount `json:"top_terms"`
	Entries      []Entry     `json:"entries"`
}

// Entry describes one item.
type Entry struct {
	ID           string      `json:"id"`
	Name         string      `json:"name"`
	Tags         []string    `json:"tags"`
	PayloadBytes int         `json:"payload_bytes"`
	Words        int         `json:"words"`
	UniqueTerms  int         `json:"unique_terms"`
	TopTerms     []TermCount `json:"top_terms"`
	Checksum     string      `json:"checksum"`
}

// TermCount is a term and how often it occurs.
type TermCount struct {
	Term  string `json:"term"`
	Count int    `json:"count"`
}

// TagCount is a tag and the number of items carrying it.
type TagCount struct {
	Tag   string `json:"tag"`
	Count int    `json:"count"`
}

// storedItem is the stored JSON with the payload left raw, so that it can
// be unescaped into a reused buffer.
type storedItem struct {
	Name    string          `json:"name"`
	Tags    []string        `json:"tags"`
	Payload json.RawMessage `json:"payload"`
}

// itemScratch is what analysing one item needs. It comes from the
// term_scratch source once per item.
type itemScratch struct {
	raw   []byte // the stored JSON, copied for json.Unmarshal
	item  storedItem
	text  []byte // the unescaped payload
	terms counter
	top   []int32
}

func newItemScratch() *itemScratch { return &itemScratch{terms: newCounter()} }

func (s *itemScratch) reset() {
	s.raw = s.raw[:0]
	clear(s.item.Tags)
	s.item = storedItem{Tags: s.item.Tags[:0], Payload: s.item.Payload[:0]}
	s.text = s.text[:0]
	s.terms.reset()
	s.top = s.top[:0]
}

func (s *itemScratch) small() bool {
	return cap(s.raw)+cap(s.text)+cap(s.item.Payload)+s.terms.size() <= maxScratchBytes
}

// scratch is one report's working state. It comes from the report_scratch
// source once per request.
type scratch struct {
	ids      []string
	keys     []string
	rep      Report
	entries  []Entry
	tagArena []string
	topArena []TermCount
	tagCount map[string]int
	tagList  []TagCount
	corpus   counter
	top      []int32
}

func newScratch() *scratch {
	return &scratch{tagCount: make(map[string]int), corpus: newCounter()}
}

func (s *scratch) reset() {
	clear(s.ids) // drop the strings so the pool pins no garbage
	s.ids = s.ids[:0]
	clear(s.keys)
	s.keys = s.keys[:0]
	s.rep = Report{}
	clear(s.entries)
	s.entries = s.entries[:0]
	clear(s.tagArena)
	s.tagArena = s.tagArena[:0]
	clear(s.topArena)
	s.topArena = s.topArena[:0]
	clear(s.tagCount)
	clear(s.tagList)
	s.tagList = s.tagList[:0]
	s.corpus.reset()
	s.top = s.top[:0]
}

func (s *scratch) small() bool { return s.held() <= maxScratchBytes }

// held estimates the bytes the report's working state holds.
func (s *scratch) held() int64 {
	return int64(s.corpus.size() + cap(s.entries)*160 + cap(s.tagArena)*16)
}

// maxScratchBytes caps the retained size of pooled scratch.
const maxScratchBytes = 4 << 20

// Builder builds reports. It is safe for concurrent use.
type Builder struct {
	store   Store
	budget  Budget
	scratch pools.Source[*scratch]
	items   pools.Source[*itemScratch]
	out     pools.Source[*pools.Encoder]
	// hold is pools.ModeMisuseHold: Build takes its objects up front and
	// keeps every item's scratch until the report is written.
	hold bool
}

// NewBuilder returns a Builder reading from st within budget. When ps.Mode
// is pooled, its pools are registered in ps.Registry (report_buffer,
// report_scratch, term_scratch).
func NewBuilder(st Store, ps pools.Settings, budget Budget) (*Builder, error) {
	b := &Builder{store: st, budget: budget, hold: ps.Mode == pools.ModeMisuseHold}
	var err error
	if b.scratch, err = pools.NewSource(ps, pools.Config[*scratch]{
		Name: pools.ReportScratch, New: newScratch, Reset: (*scratch).reset, Keep: (*scratch).small,
		Clean: (*scratch).clean, Poison: (*scratch).poison, Intact: (*scratch).intact,
	}); err != nil {
		return nil, err
	}
	if b.items, err = pools.NewSource(ps, pools.Config[*itemScratch]{
		Name: pools.TermScratch, New: newItemScratch, Reset: (*itemScratch).reset, Keep: (*itemScratch).small,
		Clean:   (*itemScratch).clean,
		Presize: func(s *itemScratch) { s.raw = make([]byte, 0, pools.PresizeBytes) },
		Scrub:   func(s *itemScratch) { pools.ScrubBytes(s.raw) },
		Poison:  (*itemScratch).poison, Intact: (*itemScratch).intact,
	}); err != nil {
		return nil, err
	}
	if b.out, err = pools.NewSource(ps, pools.EncoderConfig(pools.ReportBuffer)); err != nil {
		return nil, err
	}
	return b, nil
}

// clean is the sanitizer's check of a pooled report scratch.
func (s *scratch) clean() error {
	if len(s.ids)+len(s.keys)+len(s.entries)+len(s.tagArena)+len(s.topArena)+len(s.tagCount)+len(s.tagList)+len(s.top) != 0 ||
		s.rep.Items != 0 || len(s.corpus.terms) != 0 {
		return errors.New("report scratch not reset")
	}
	return nil
}

// poison fills the term arena's whole capacity with instrument.PoisonByte
// (pools.Settings.Poison): a term read after the Put of its scratch reads
// the poison.
func (s *scratch) poison() { instrument.PoisonBytes(s.corpus.text) }

// intact reports whether the term arena is as poison left it.
func (s *scratch) intact() bool {
	return len(s.corpus.text) == 0 && instrument.BytesPoisoned(s.corpus.text)
}

// poison fills the whole capacity of the item's byte buffers (the stored
// JSON, the payload, the unescaped text, the term arena) with
// instrument.PoisonByte (pools.Settings.Poison).
func (s *itemScratch) poison() {
	for _, b := range [...][]byte{s.raw, s.item.Payload, s.text, s.terms.text} {
		instrument.PoisonBytes(b)
	}
}

// intact reports whether the item's byte buffers are as poison left them.
func (s *itemScratch) intact() bool {
	for _, b := range [...][]byte{s.raw, s.item.Payload, s.text, s.terms.text} {
		if len(b) != 0 || !instrument.BytesPoisoned(b) {
			return false
		}
	}
	return true
}

// clean is the sanitizer's check of a pooled item scratch.
func (s *itemScratch) clean() error {
	if len(s.raw)+len(s.text)+len(s.top)+len(s.terms.terms)+len(s.item.Tags)+len(s.item.Payload) != 0 || s.item.Name != "" {
		return errors.New("item scratch not reset")
	}
	return nil
}

// Build builds the report over up to n items (the first n ids in sorted
// order among those SCAN returns) and calls write with the encoded JSON.
// The bytes are valid only during the call.
func (b *Builder) Build(ctx context.Context, n int, write func(body []byte) error) error {
	s := b.scratch.Get()
	defer b.scratch.Put(s)
	if b.hold {
		// The misuse: the output buffer is taken before the Redis round
		// trips, and every item's scratch is kept until the end.
		out := b.out.Get()
		defer b.out.Put(out)
		var held []*itemScratch
		defer func() {
			for _, is := range held {
				b.items.Put(is)
			}
		}()
		return b.build(ctx, s, n, func(is *itemScratch) { held = append(held, is) }, out, write)
	}
	return b.build(ctx, s, n, b.items.Put, nil, write)
}

// build is Build with the item scratch's release (done) and, when
// non-nil, the output buffer chosen by the caller.
func (b *Builder) build(ctx context.Context, s *scratch, n int, done func(*itemScratch), out *pools.Encoder, write func(body []byte) error) error {
	var err error
	if s.ids, err = b.store.ScanIDs(ctx, s.ids, n); err != nil {
		return fmt.Errorf("listing items for the report: %w", err)
	}
	slices.Sort(s.ids)
	s.ids = slices.Compact(s.ids) // SCAN may return a key more than once
	var read int64
	s.keys, err = b.store.GetMany(ctx, s.ids, s.keys, func(i int, value string, found bool) error {
		if !found {
			return nil // deleted since the scan
		}
		if read += int64(len(value)); b.budget.MaxReadBytes > 0 && read > b.budget.MaxReadBytes {
			return &BudgetError{Bound: BoundReadBytes, Limit: b.budget.MaxReadBytes, Needed: read, Fit: len(s.entries)}
		}
		if err := b.addItem(s, s.ids[i], value, done); err != nil {
			return err
		}
		if held := s.held(); b.budget.MaxHeldBytes > 0 && held > b.budget.MaxHeldBytes {
			return &BudgetError{Bound: BoundHeldBytes, Limit: b.budget.MaxHeldBytes, Needed: held, Fit: len(s.entries) - 1}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading items for the report: %w", err)
	}
	b.summarise(s)

	if out == nil {
		out = b.out.Get()
		defer b.out.Put(out)
	}
	if err := out.Enc.Encode(&s.rep); err != nil {
		return fmt.Errorf("encoding the report: %w", err)
	}
	return write(out.Buf.Bytes())
}

// addItem analyses one stored item and appends its entry.
func (b *Builder) addItem(s *scratch, id, value string, done func(*itemScratch)) error {
	is := b.items.Get()
	defer done(is)

	is.raw = append(is.raw, value...)
	if err := json.Unmarshal(is.raw, &is.item); err != nil {
		return fmt.Errorf("decoding item %q: %w: %w", id, ErrCorrupt, err)
	}
	var err error
	if is.text, err = appendUnquoted(is.text, is.item.Payload); err != nil {
		return fmt.Errorf("decoding payload of item %q: %w: %w", id, ErrCorrupt, err)
	}
	payloadBytes := len(is.text)
	checksum := fnv64a(is.text)
	words := 0
	forEachWord(is.text, func(w []byte) {
		words++
		is.terms.add(w, 1)
	})

	// Entry tags: sorted copies in the report's arena, so that nothing in
	// the entry points into the item scratch that is about to be reused.
	tagStart := len(s.tagArena)
	s.tagArena = append(s.tagArena, is.item.Tags...)
	tags := s.tagArena[tagStart:len(s.tagArena):len(s.tagArena)]
	slices.Sort(tags)
	tags = nonNil(slices.Compact(tags))
	for _, t := range tags {
		s.tagCount[t]++
	}

	is.top = is.terms.top(is.top, entryTopTerms)
	topStart := len(s.topArena)
	for _, i := range is.top {
		t := is.terms.terms[i]
		s.topArena = append(s.topArena, TermCount{Term: string(is.terms.word(t)), Count: int(t.count)})
	}
	for _, t := range is.terms.terms {
		s.corpus.add(is.terms.word(t), t.count)
	}

	var sum [16]byte
	s.entries = append(s.entries, Entry{
		ID:           id,
		Name:         is.item.Name,
		Tags:         tags,
		PayloadBytes: payloadBytes,
		Words:        words,
		UniqueTerms:  len(is.terms.terms),
		TopTerms:     nonNil(s.topArena[topStart:len(s.topArena):len(s.topArena)]),
		Checksum:     string(appendHex16(sum[:0], checksum)),
	})
	s.rep.PayloadBytes += payloadBytes
	s.rep.Words += words
	return nil
}

// summarise fills the report's totals, tag histogram and top terms.
func (b *Builder) summarise(s *scratch) {
	s.rep.Items = len(s.entries)
	s.rep.Entries = s.entries
	for t, c := range s.tagCount {
		s.tagList = append(s.tagList, TagCount{Tag: t, Count: c})
	}
	slices.SortFunc(s.tagList, func(a, b TagCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Tag, b.Tag)
	})
	s.rep.Tags = nonNil(s.tagList[:min(len(s.tagList), reportTopTags)])
	s.top = s.corpus.top(s.top, reportTopTerms)
	topStart := len(s.topArena)
	for _, i := range s.top {
		t := s.corpus.terms[i]
		s.topArena = append(s.topArena, TermCount{Term: string(s.corpus.word(t)), Count: int(t.count)})
	}
	s.rep.TopTerms = nonNil(s.topArena[topStart:])
	s.rep.Entries = nonNil(s.rep.Entries)
}

// nonNil makes a nil slice empty, so that it encodes as [] rather than
// null whether it came from fresh or recycled scratch.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// appendHex16 appends v as 16 lower-case hex digits.
func appendHex16(dst []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		dst = append(dst, digits[(v>>uint(shift))&0xf])
	}
	return dst
}

// ParseN parses the n query parameter: empty means DefaultItems.
func ParseN(v string) (int, error) {
	if v == "" {
		return DefaultItems, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxItems {
		return 0, fmt.Errorf("n must be an integer from 1 to %d", MaxItems)
	}
	return n, nil
}

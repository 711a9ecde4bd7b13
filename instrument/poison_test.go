package instrument_test

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/poolparity/poolparity/instrument"
)

// letter is a pooled struct whose poison overwrites a field and a buffer.
type letter struct {
	to   string
	body []byte
}

// poisonedTo is the value the letter poison writes into the to field.
const poisonedTo = "\xdb poisoned letter \xdb"

func resetLetter(l *letter) { l.to, l.body = "", l.body[:0] }

func poisonLetter(l *letter) {
	l.to = poisonedTo
	instrument.PoisonBytes(l.body)
}

func letterIntact(l *letter) bool {
	return l.to == poisonedTo && len(l.body) == 0 && instrument.BytesPoisoned(l.body)
}

func newLetterPool(t testing.TB, name string, extra ...instrument.Option[*letter]) *instrument.Pool[*letter] {
	t.Helper()
	opts := append([]instrument.Option[*letter]{
		instrument.WithNew(func() *letter { return &letter{body: make([]byte, 0, 64)} }),
		instrument.WithReset(resetLetter),
		instrument.WithKeep(func(l *letter) bool { return cap(l.body) <= 1024 }),
		instrument.WithPoison(poisonLetter, letterIntact),
	}, extra...)
	p, err := instrument.New(name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// oneP runs the rest of the test on one P with the garbage collector off,
// so that an object Put is the one the next Get takes (from the P's slot,
// which only a GC empties), under -race as well.
func oneP(t *testing.T) {
	t.Helper()
	procs := runtime.GOMAXPROCS(1)
	gc := debug.SetGCPercent(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(gc)
		runtime.GOMAXPROCS(procs)
	})
}

// poolCase is one kind of poisoned pool, driven through the same steps:
// take an object and write a message into it, keep a view of its bytes
// (what a handler that writes its response after Put would read), and
// write into it (what a late writer would do).
type poolCase struct {
	name string
	// take gets an object, writes msg into it and returns the view of its
	// bytes, the function that writes into it again, and its Put.
	take  func(msg string) (view []byte, write func(), put func())
	stats func() instrument.Stats
	// same reports whether the last take's Get returned the object of
	// the take before it.
	same func() bool
	// held returns what the last take's object held when Get returned
	// it: "" for a reset object.
	held func() string
}

// poisonedPools returns one poolCase per kind of poisoned pool; poison
// false builds the same pools without poisoning.
func poisonedPools(t *testing.T, poison bool) []poolCase {
	t.Helper()
	var bopts []instrument.BytesOption
	if poison {
		bopts = append(bopts, instrument.WithBytePoison())
	}
	bufs, err := instrument.NewBufferPool("poisoned_buffer", 1024, bopts...)
	if err != nil {
		t.Fatal(err)
	}
	slices, err := instrument.NewByteSlicePool("poisoned_slice", 64, 1024, bopts...)
	if err != nil {
		t.Fatal(err)
	}
	letterOpts := []instrument.Option[*letter]{
		instrument.WithNew(func() *letter { return &letter{body: make([]byte, 0, 64)} }),
		instrument.WithReset(resetLetter),
	}
	if poison {
		letterOpts = append(letterOpts, instrument.WithPoison(poisonLetter, letterIntact))
	}
	letters, err := instrument.New("poisoned_letter", letterOpts...)
	if err != nil {
		t.Fatal(err)
	}

	// prev* is the object the take before the last one returned, and
	// held what the last one's object held when Get returned it.
	var prevBuf, lastBuf *bytes.Buffer
	var prevSlice, lastSlice *[]byte
	var prevLetter, lastLetter *letter
	var held string
	return []poolCase{
		{
			name: "NewBufferPool",
			take: func(msg string) ([]byte, func(), func()) {
				prevBuf, lastBuf = lastBuf, bufs.Get()
				b := lastBuf
				held = b.String()
				b.WriteString(msg)
				return b.Bytes(), func() { b.WriteString("late") }, func() { bufs.Put(b) }
			},
			stats: bufs.Stats,
			same:  func() bool { return lastBuf == prevBuf },
			held:  func() string { return held },
		},
		{
			name: "NewByteSlicePool",
			take: func(msg string) ([]byte, func(), func()) {
				prevSlice, lastSlice = lastSlice, slices.Get()
				b := lastSlice
				held = string(*b)
				*b = append(*b, msg...)
				view := *b
				return view, func() { *b = append(*b, "late"...) }, func() { slices.Put(b) }
			},
			stats: slices.Stats,
			same:  func() bool { return lastSlice == prevSlice },
			held:  func() string { return held },
		},
		{
			name: "New with WithPoison",
			take: func(msg string) ([]byte, func(), func()) {
				prevLetter, lastLetter = lastLetter, letters.Get()
				l := lastLetter
				held = l.to + string(l.body)
				l.to, l.body = "alice", append(l.body, msg...)
				return l.body, func() { l.to = "late" }, func() { letters.Put(l) }
			},
			stats: letters.Stats,
			same:  func() bool { return lastLetter == prevLetter },
			held:  func() string { return held },
		},
	}
}

// TestUseAfterPutReadsThePoison: a caller that reads an object's bytes
// after its Put reads PoisonByte, every time and with no other goroutine;
// without poisoning it reads its own message, which is why the bug hides.
func TestUseAfterPutReadsThePoison(t *testing.T) {
	const msg = `{"user":"alice"}`
	for _, poison := range []bool{true, false} {
		for _, pc := range poisonedPools(t, poison) {
			name := pc.name + " poisoned"
			if !poison {
				name = pc.name + " not poisoned"
			}
			t.Run(name, func(t *testing.T) {
				for range 3 {
					view, _, put := pc.take(msg)
					if h := pc.held(); h != "" {
						t.Fatalf("Get returned an object holding %q", h)
					}
					put()
					want := msg
					if poison {
						want = string(bytes.Repeat([]byte{instrument.PoisonByte}, len(msg)))
					}
					if string(view) != want {
						t.Fatalf("after Put the caller's view reads %q, want %q", view, want)
					}
				}
				if st := pc.stats(); st.Dirty != 0 {
					t.Errorf("stats %+v: reads after Put must not count as writes", st)
				}
			})
		}
	}
}

// TestWriteAfterPutIsCountedAndReplaced: an object written after its Put
// is caught by the next Get that takes it, counted under its pool's name
// in Dirty, and replaced by a fresh object (a miss); without
// poisoning the next Get hands the written object out.
func TestWriteAfterPutIsCountedAndReplaced(t *testing.T) {
	for _, tt := range []struct {
		name   string
		poison bool
	}{
		{"poisoned: the write is caught on the next Get", true},
		{"not poisoned: the written object is handed out", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			oneP(t)
			for _, pc := range poisonedPools(t, tt.poison) {
				t.Run(pc.name, func(t *testing.T) {
					_, _, put := pc.take("first")
					put()
					_, write, put := pc.take("second") // from the pool: checked, intact
					if !pc.same() || pc.held() != "" {
						t.Fatalf("the second Get did not take the reset object the first Put pooled (it holds %q)", pc.held())
					}
					put()
					write() // the use after Put
					pc.take("third")
					st := pc.stats()
					want := instrument.Stats{Gets: 3, Misses: 1}
					if tt.poison {
						if pc.same() || pc.held() != "" {
							t.Errorf("Get handed out the object written after its Put (it holds %q)", pc.held())
						}
						want = instrument.Stats{Gets: 3, Misses: 2, Dirty: 1}
					} else if !pc.same() || pc.held() != "late" {
						t.Errorf("without poisoning, Get handed out an object holding %q, want the late write", pc.held())
					}
					want.Puts = 2
					if st != want {
						t.Errorf("stats %+v, want %+v", st, want)
					}
				})
			}
		})
	}
}

// TestPoisonedCountsByName registers two poisoned pools and writes after
// Put into one: the exporters' view (Registry.Snapshot) names it.
func TestPoisonedCountsByName(t *testing.T) {
	oneP(t)
	var reg instrument.Registry
	misused := newLetterPool(t, "misused")
	careful := newLetterPool(t, "careful")
	if err := reg.Register(misused, careful); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*instrument.Pool[*letter]{misused, careful} {
		for range 3 {
			l := p.Get()
			l.to = "alice"
			p.Put(l)
			if p == misused {
				l.body = append(l.body, "late"...)
			}
		}
	}
	want := map[string]uint64{"careful": 0, "misused": 2} // the third write is not taken yet
	for _, ps := range reg.Snapshot() {
		if ps.Dirty != want[ps.Name] {
			t.Errorf("pool %s: dirty = %d, want %d", ps.Name, ps.Dirty, want[ps.Name])
		}
	}
}

// TestPoisonedBufferOverTheCap: a buffer the size cap drops is poisoned
// too (a use after Put reads the poison whatever the buffer's size), and
// not pooled.
func TestPoisonedBufferOverTheCap(t *testing.T) {
	tests := []struct {
		name string
		put  func() []byte
	}{
		{"a bytes.Buffer", func() []byte {
			p, err := instrument.NewBufferPool("big_buffer", 64, instrument.WithBytePoison())
			if err != nil {
				t.Fatal(err)
			}
			b := p.Get()
			b.WriteString(strings.Repeat("x", 100))
			view := b.Bytes()
			p.Put(b)
			if st := p.Stats(); st.Drops != 1 {
				t.Errorf("stats %+v, want the buffer dropped", st)
			}
			return view
		}},
		{"a byte slice", func() []byte {
			p, err := instrument.NewByteSlicePool("big_slice", 16, 64, instrument.WithBytePoison())
			if err != nil {
				t.Fatal(err)
			}
			b := p.Get()
			*b = append(*b, strings.Repeat("x", 100)...)
			view := *b
			p.Put(b)
			if st := p.Stats(); st.Drops != 1 {
				t.Errorf("stats %+v, want the slice dropped", st)
			}
			return view
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if view := tt.put(); !instrument.BytesPoisoned(view[:0]) {
				t.Errorf("the dropped buffer reads %q after Put, want it poisoned", view)
			}
		})
	}
}

// TestPoisonThenResetOnGet: an intact object goes through the reset again,
// so a poison that overwrites fields still hands out reset objects; with
// WithCheck as well, the check runs on the reset object and a reset that
// forgets a field is still caught, as dirty but not poisoned.
func TestPoisonThenResetOnGet(t *testing.T) {
	tests := []struct {
		name      string
		reset     func(*letter)
		wantDirty uint64
	}{
		{"a full reset hands out clean objects", resetLetter, 0},
		{"a reset that forgets to is caught by WithCheck", func(l *letter) { l.body = l.body[:0] }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oneP(t)
			// A reset that forgets `to` leaves the poison in it, so that
			// intact passes and the check below sees the poison.
			p, err := instrument.New("letters",
				instrument.WithNew(func() *letter { return &letter{body: make([]byte, 0, 64)} }),
				instrument.WithReset(tt.reset),
				instrument.WithPoison(func(l *letter) { l.to = poisonedTo; instrument.PoisonBytes(l.body) }, letterIntact),
				instrument.WithCheck(1, func(l *letter) error {
					if l.to != "" {
						return errDirty
					}
					return nil
				}),
			)
			if err != nil {
				t.Fatal(err)
			}
			l := p.Get()
			l.to = "alice"
			p.Put(l)
			got := p.Get()
			if got.to != "" {
				t.Errorf("Get handed out a letter to %q, want a reset one", got.to)
			}
			if st := p.Stats(); st.Dirty != tt.wantDirty {
				t.Errorf("stats %+v, want dirty %d", st, tt.wantDirty)
			}
		})
	}
}

func TestWithPoisonRejectsBadOptions(t *testing.T) {
	newLetter := instrument.WithNew(func() *letter { return new(letter) })
	tests := []struct {
		name string
		opts []instrument.Option[*letter]
		want string
	}{
		{"a nil poison", []instrument.Option[*letter]{newLetter, instrument.WithPoison(nil, letterIntact)}, "nil poison function"},
		{"a nil intact", []instrument.Option[*letter]{newLetter, instrument.WithPoison(poisonLetter, nil)}, "nil intact function"},
		{"no New to replace a written object", []instrument.Option[*letter]{instrument.WithPoison(poisonLetter, letterIntact)}, "needs WithNew"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := instrument.New("letters", tt.opts...)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "letters") {
				t.Fatalf("New = %v, want an error naming the pool and containing %q", err, tt.want)
			}
		})
	}
}

// TestPoisonedPoolsConcurrently uses poisoned pools correctly from many
// goroutines: no object is ever counted as poisoned, every Get hands out
// an empty object, and the counts stay consistent. Run with -race: the
// poison and the check must not race with correct users.
func TestPoisonedPoolsConcurrently(t *testing.T) {
	bufs, err := instrument.NewBufferPool("buffers", 4096, instrument.WithBytePoison())
	if err != nil {
		t.Fatal(err)
	}
	letters := newLetterPool(t, "letters")
	const workers, rounds = 8, 300
	var wg sync.WaitGroup
	errs := make(chan string, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				b := bufs.Get()
				l := letters.Get()
				if b.Len() != 0 || l.to != "" || len(l.body) != 0 {
					errs <- "Get handed out a non-empty object"
					return
				}
				b.WriteString(strings.Repeat("x", i%2000))
				l.to, l.body = "worker", append(l.body, byte(w), byte(i))
				bufs.Put(b)
				letters.Put(l)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	for _, st := range []instrument.Stats{bufs.Stats(), letters.Stats()} {
		if st.Dirty != 0 {
			t.Errorf("stats %+v: correct use counted as dirty", st)
		}
		if st.Gets != workers*rounds || st.Misses > st.Gets {
			t.Errorf("stats %+v: want %d gets and misses <= gets", st, workers*rounds)
		}
	}
}

func TestPoisonBytes(t *testing.T) {
	tests := []struct {
		name     string
		len, cap int
	}{
		{"a nil slice", 0, 0},
		{"one byte", 0, 1},
		{"three bytes", 0, 3},
		{"256 bytes, one block", 0, 256},
		{"300 bytes, past the first block", 0, 300},
		{"a page and one byte", 0, 4097},
		{"a slice with a length: the whole capacity is poisoned", 10, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b []byte
			if tt.cap > 0 {
				b = make([]byte, tt.len, tt.cap)
			}
			if tt.cap > 0 && instrument.BytesPoisoned(b) {
				t.Fatal("a zeroed slice reads as poisoned")
			}
			instrument.PoisonBytes(b)
			full := b[:cap(b)]
			if bytes.Count(full, []byte{instrument.PoisonByte}) != len(full) {
				t.Fatalf("PoisonBytes left %q", full)
			}
			if !instrument.BytesPoisoned(b) || !instrument.BytesPoisoned(b[:0]) {
				t.Fatal("BytesPoisoned = false right after PoisonBytes")
			}
			for _, i := range []int{0, len(full) / 2, len(full) - 1} {
				if len(full) == 0 {
					break
				}
				full[i] = 'x'
				if instrument.BytesPoisoned(b) {
					t.Errorf("BytesPoisoned = true with byte %d of %d overwritten", i, len(full))
				}
				full[i] = instrument.PoisonByte
			}
		})
	}
}

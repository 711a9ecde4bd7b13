package instrument_test

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/poolparity/poolparity/instrument"
)

// tagged is a pooled object whose reset may forget its owner.
type tagged struct {
	owner string
	buf   []byte
}

var errDirty = errors.New("dirty")

func checkTagged(x *tagged) error {
	if x.owner != "" || len(x.buf) != 0 {
		return errDirty
	}
	return nil
}

func newTaggedPool(t testing.TB, every int, resetOwner bool) *instrument.Pool[*tagged] {
	t.Helper()
	p, err := instrument.New("items",
		instrument.WithNew(func() *tagged { return &tagged{buf: make([]byte, 0, 64)} }),
		instrument.WithReset(func(x *tagged) {
			x.buf = x.buf[:0]
			if resetOwner {
				x.owner = ""
			}
		}),
		instrument.WithCheck(every, checkTagged),
	)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWithCheckRejectsBadOptions(t *testing.T) {
	newItem := instrument.WithNew(func() *tagged { return new(tagged) })
	tests := []struct {
		name string
		opts []instrument.Option[*tagged]
		want string
	}{
		{"a nil check", []instrument.Option[*tagged]{newItem, instrument.WithCheck[*tagged](1, nil)}, "nil check"},
		{"every zero", []instrument.Option[*tagged]{newItem, instrument.WithCheck(0, checkTagged)}, "every must be >= 1, got 0"},
		{"every negative", []instrument.Option[*tagged]{newItem, instrument.WithCheck(-3, checkTagged)}, "every must be >= 1, got -3"},
		{"no New to replace a dirty object", []instrument.Option[*tagged]{instrument.WithCheck(1, checkTagged)}, "needs WithNew"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := instrument.New("items", tt.opts...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestWithCheckCounts runs n Get/Put rounds on one goroutine locked to its
// thread, each leaving state behind unless the reset clears it, and checks
// the exact counts: with a single goroutine the per-P countdown samples
// exactly one pooled Get in every `every` (a P change between rounds could
// shift the phase, so the bounds allow one sample either way).
func TestWithCheckCounts(t *testing.T) {
	const rounds = 64
	tests := []struct {
		name       string
		every      int
		resetOwner bool
		wantDirty  func(pooledGets int) (lo, hi int)
	}{
		{"a clean reset is never dirty", 1, true, func(int) (int, int) { return 0, 0 }},
		{"every=1 catches every dirty Get", 1, false, func(n int) (int, int) { return n, n }},
		{"every=4 checks one Get in four", 4, false, func(n int) (int, int) { return n/4 - 1, n/4 + 1 }},
		{"every=16 checks one Get in sixteen", 16, false, func(n int) (int, int) { return n/16 - 1, n/16 + 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			p := newTaggedPool(t, tt.every, tt.resetOwner)
			leaked := 0
			for i := range rounds {
				x := p.Get()
				if x.owner != "" {
					leaked++
				}
				x.owner = "user" + string(rune('a'+i%26))
				x.buf = append(x.buf, 1)
				p.Put(x)
			}
			st := p.Stats()
			pooled := int(st.Gets) - int(st.Misses-st.Dirty) // Gets served from the pool before any check
			lo, hi := tt.wantDirty(pooled)
			if int(st.Dirty) < lo || int(st.Dirty) > hi {
				t.Errorf("dirty = %d for %d pooled Gets (stats %+v), want %d..%d", st.Dirty, pooled, st, lo, hi)
			}
			if tt.every == 1 && leaked != 0 {
				t.Errorf("%d Gets handed out an object with another user's owner; every=1 must hand out none", leaked)
			}
			if !tt.resetOwner && tt.every > 1 && leaked == 0 {
				t.Errorf("no leak seen with every=%d: the broken reset should leak on unsampled Gets", tt.every)
			}
			if st.Misses < st.Dirty {
				t.Errorf("misses %d < dirty %d: every dirty object is replaced by New", st.Misses, st.Dirty)
			}
		})
	}
}

// TestWithCheckConcurrent hands out objects from many goroutines with a
// broken reset and every=1: no caller may ever see a dirty object, and the
// counters stay consistent. Run with -race.
func TestWithCheckConcurrent(t *testing.T) {
	p := newTaggedPool(t, 1, false)
	const workers, rounds = 8, 500
	var wg sync.WaitGroup
	var mu sync.Mutex
	var seen int
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				x := p.Get()
				if checkTagged(x) != nil {
					mu.Lock()
					seen++
					mu.Unlock()
				}
				x.owner = string(rune('a' + w))
				x.buf = append(x.buf, byte(i))
				p.Put(x)
			}
		}()
	}
	wg.Wait()
	st := p.Stats()
	if seen != 0 {
		t.Errorf("%d Gets returned a dirty object with every=1", seen)
	}
	if st.Gets != workers*rounds {
		t.Errorf("gets = %d, want %d", st.Gets, workers*rounds)
	}
	if st.Dirty == 0 || st.Dirty > st.Misses || st.Misses > st.Gets {
		t.Errorf("stats %+v: want 0 < dirty <= misses <= gets", st)
	}
}

// TestWithoutCheckNothingIsCounted: the sanitizer is opt-in.
func TestWithoutCheckNothingIsCounted(t *testing.T) {
	p, err := instrument.New("items", instrument.WithNew(func() *tagged { return new(tagged) }))
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		x := p.Get()
		x.owner = "left behind"
		p.Put(x)
	}
	if st := p.Stats(); st.Dirty != 0 {
		t.Errorf("dirty = %d without WithCheck, want 0", st.Dirty)
	}
}

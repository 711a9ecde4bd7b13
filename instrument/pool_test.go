package instrument_test

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/poolparity/poolparity/instrument"
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name    string
		pool    string
		wantErr bool
	}{
		{"a lower-case word is valid", "json_buffer", false},
		{"a single digit is valid", "0", false},
		{"a single underscore is valid", "_", false},
		{"a name of exactly MaxNameLen bytes is valid", strings.Repeat("a", instrument.MaxNameLen), false},
		{"an empty name is rejected", "", true},
		{"upper case is rejected", "JSONBuffer", true},
		{"a dash is rejected", "json-buffer", true},
		{"a dot is rejected", "json.buffer", true},
		{"a space is rejected", "json buffer", true},
		{"a non-ASCII letter is rejected", "caf\u00e9", true},
		{"a name longer than MaxNameLen is rejected", strings.Repeat("a", instrument.MaxNameLen+1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := instrument.ValidateName(tt.pool)
			if got := err != nil; got != tt.wantErr {
				t.Fatalf("ValidateName(%q) = %v, want error: %v", tt.pool, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, instrument.ErrInvalidName) {
				t.Errorf("ValidateName(%q) = %v, want it to wrap ErrInvalidName", tt.pool, err)
			}
			p, err := instrument.New[*bytes.Buffer](tt.pool)
			if got := err != nil; got != tt.wantErr {
				t.Fatalf("New(%q) error = %v, want error: %v", tt.pool, err, tt.wantErr)
			}
			if err != nil {
				if !errors.Is(err, instrument.ErrInvalidName) {
					t.Errorf("New(%q) = %v, want it to wrap ErrInvalidName", tt.pool, err)
				}
				if p != nil {
					t.Errorf("New(%q) returned a pool with an error", tt.pool)
				}
				return
			}
			if p.Name() != tt.pool {
				t.Errorf("Name() = %q, want %q", p.Name(), tt.pool)
			}
		})
	}
}

func TestNilNewReturnsZeroAndCountsMiss(t *testing.T) {
	p, err := instrument.New[*bytes.Buffer]("no_new")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Get(); got != nil {
		t.Fatalf("Get on an empty pool without New = %v, want nil", got)
	}
	want := instrument.Stats{Gets: 1, Misses: 1}
	if got := p.Stats(); got != want {
		t.Fatalf("Stats() = %+v, want %+v", got, want)
	}
	// A value put back may (outside race mode, will) be served as a hit.
	b := new(bytes.Buffer)
	p.Put(b)
	got := p.Get()
	s := p.Stats()
	if s.Gets != 2 || s.Puts != 1 || s.Drops != 0 {
		t.Fatalf("Stats() after Put and Get = %+v, want Gets 2, Puts 1, Drops 0", s)
	}
	switch {
	case got == b && s.Misses != 1:
		t.Errorf("Get served the pooled buffer but Misses = %d, want 1", s.Misses)
	case got == nil && s.Misses != 2:
		t.Errorf("Get returned the zero value but Misses = %d, want 2", s.Misses)
	case !raceEnabled && got != b:
		t.Errorf("Get = %p, want the buffer just put (%p)", got, b)
	}
}

func TestPutResetsKeptObjectsAndCountsDrops(t *testing.T) {
	type obj struct {
		size  int
		dirty bool
	}
	tests := []struct {
		name       string
		size       int
		wantKept   bool
		wantResets int
	}{
		{"an object within the cap is reset and pooled", 10, true, 1},
		{"an object at the cap is reset and pooled", 100, true, 1},
		{"an object over the cap is dropped without a reset", 101, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resets := 0
			p, err := instrument.New("objects",
				instrument.WithNew(func() *obj { return new(obj) }),
				instrument.WithReset(func(o *obj) { resets++; o.dirty = false }),
				instrument.WithKeep(func(o *obj) bool { return o.size <= 100 }),
			)
			if err != nil {
				t.Fatal(err)
			}
			o := p.Get()
			o.size, o.dirty = tt.size, true
			p.Put(o)
			if resets != tt.wantResets {
				t.Errorf("reset ran %d times, want %d", resets, tt.wantResets)
			}
			if tt.wantKept && o.dirty {
				t.Error("a pooled object is still dirty: reset did not run before pooling")
			}
			want := instrument.Stats{Gets: 1, Misses: 1}
			if tt.wantKept {
				want.Puts = 1
			} else {
				want.Drops = 1
			}
			if got := p.Stats(); got != want {
				t.Errorf("Stats() = %+v, want %+v", got, want)
			}
		})
	}
}

func TestBufferPool(t *testing.T) {
	tests := []struct {
		name     string
		maxCap   int
		grow     int
		wantDrop bool
	}{
		{"the default cap keeps a 64 KiB buffer", 0, instrument.DefaultMaxBufferCap, false},
		{"the default cap drops a buffer past 64 KiB", 0, instrument.DefaultMaxBufferCap + 1, true},
		{"a custom cap keeps a small buffer", 4096, 100, false},
		{"a custom cap drops a buffer past it", 4096, 4097, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := instrument.NewBufferPool("buffers", tt.maxCap)
			if err != nil {
				t.Fatal(err)
			}
			b := p.Get()
			b.Grow(tt.grow)
			b.WriteString("secret")
			p.Put(b)
			s := p.Stats()
			if gotDrop := s.Drops == 1; gotDrop != tt.wantDrop {
				t.Fatalf("Stats() = %+v (cap %d), want dropped: %v", s, b.Cap(), tt.wantDrop)
			}
			if !tt.wantDrop && b.Len() != 0 {
				t.Errorf("a pooled buffer has Len %d, want 0 (Reset)", b.Len())
			}
		})
	}
}

func TestByteSlicePool(t *testing.T) {
	if _, err := instrument.NewByteSlicePool("too_small", 2048, 1024); err == nil {
		t.Error("NewByteSlicePool with size > maxCap succeeded, want an error")
	}
	if _, err := instrument.NewByteSlicePool("Bad-Name", 0, 0); !errors.Is(err, instrument.ErrInvalidName) {
		t.Errorf("NewByteSlicePool with a bad name = %v, want ErrInvalidName", err)
	}
	p, err := instrument.NewByteSlicePool("scratch", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	bp := p.Get()
	if len(*bp) != 0 || cap(*bp) != instrument.DefaultByteSliceSize {
		t.Fatalf("fresh slice has len %d cap %d, want 0 and %d", len(*bp), cap(*bp), instrument.DefaultByteSliceSize)
	}
	*bp = append(*bp, "hello"...)
	p.Put(bp)
	if len(*bp) != 0 {
		t.Errorf("a pooled slice has len %d, want 0", len(*bp))
	}
	big := make([]byte, 0, instrument.DefaultMaxBufferCap+1)
	p.Put(&big)
	p.Put(nil)
	want := instrument.Stats{Gets: 1, Misses: 1, Puts: 1, Drops: 2}
	if got := p.Stats(); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

// TestCountsAreExactUnderConcurrency runs many goroutines through one pool
// while another goroutine forces garbage collections (which empty
// sync.Pool), and checks every count that does not depend on the pool's
// hit ratio.
func TestCountsAreExactUnderConcurrency(t *testing.T) {
	const opsPerG = 20000
	tests := []struct {
		name       string
		goroutines int
		dropEvery  int // every dropEvery-th Put grows the buffer past the cap
		gomaxprocs int // 0: leave as is
	}{
		{"one goroutine, no drops", 1, 0, 0},
		{"many goroutines with drops", 4 * runtime.GOMAXPROCS(0), 7, 0},
		{"GOMAXPROCS raised past the stripes made at construction", 16, 5, 2*runtime.NumCPU() + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := instrument.NewBufferPool("concurrent", 1024)
			if err != nil {
				t.Fatal(err)
			}
			if tt.gomaxprocs > 0 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(tt.gomaxprocs))
			}
			var (
				wg        sync.WaitGroup
				wantDrops atomic.Uint64
				stop      = make(chan struct{})
				gcDone    = make(chan struct{})
			)
			go func() {
				defer close(gcDone)
				for {
					select {
					case <-stop:
						return
					default:
						runtime.GC()
					}
				}
			}()
			for g := 0; g < tt.goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 1; i <= opsPerG; i++ {
						b := p.Get()
						if b.Len() != 0 {
							t.Errorf("Get returned a buffer with %d bytes left from a previous user", b.Len())
							return
						}
						b.WriteString("payload")
						if tt.dropEvery > 0 && i%tt.dropEvery == 0 {
							b.Grow(2048)
							wantDrops.Add(1)
						}
						p.Put(b)
					}
				}()
			}
			wg.Wait()
			close(stop)
			<-gcDone

			ops := uint64(tt.goroutines * opsPerG)
			s := p.Stats()
			if s.Gets != ops {
				t.Errorf("Gets = %d, want %d", s.Gets, ops)
			}
			if s.Puts+s.Drops != ops {
				t.Errorf("Puts+Drops = %d+%d = %d, want %d", s.Puts, s.Drops, s.Puts+s.Drops, ops)
			}
			if s.Drops != wantDrops.Load() {
				t.Errorf("Drops = %d, want %d", s.Drops, wantDrops.Load())
			}
			if s.Misses < 1 || s.Misses > s.Gets {
				t.Errorf("Misses = %d, want between 1 and Gets (%d)", s.Misses, s.Gets)
			}
			if !raceEnabled && s.Misses == s.Gets {
				t.Errorf("every Get missed (%d): the pool never served an object", s.Misses)
			}
		})
	}
}

// TestStatsAreMonotonicDuringConcurrentUse reads Stats in a tight loop from
// several goroutines while others Get and Put, and fails if any counter is
// ever seen to go down, or if a reader sees more than the final totals.
func TestStatsAreMonotonicDuringConcurrentUse(t *testing.T) {
	const (
		writers = 8
		readers = 3
		ops     = 20000
	)
	p, err := instrument.NewBufferPool("monotonic", 512)
	if err != nil {
		t.Fatal(err)
	}
	var (
		writersWG, readersWG sync.WaitGroup
		done                 atomic.Bool
		reads                atomic.Uint64
		maxSeen              [readers]instrument.Stats
	)
	for r := 0; r < readers; r++ {
		readersWG.Add(1)
		go func() {
			defer readersWG.Done()
			var prev instrument.Stats
			for n := 0; ; n++ {
				last := done.Load()
				s := p.Stats()
				reads.Add(1)
				if s.Gets < prev.Gets || s.Misses < prev.Misses || s.Puts < prev.Puts || s.Drops < prev.Drops {
					t.Errorf("reader %d: Stats went down: %+v after %+v", r, s, prev)
					return
				}
				prev = s
				if n%1024 == 0 {
					runtime.GC()
				}
				if last {
					maxSeen[r] = s
					return
				}
			}
		}()
	}
	for w := 0; w < writers; w++ {
		writersWG.Add(1)
		go func() {
			defer writersWG.Done()
			for i := 0; i < ops; i++ {
				b := p.Get()
				if i%3 == 0 {
					b.Grow(1024) // over the 512-byte cap: dropped
				}
				p.Put(b)
			}
		}()
	}
	writersWG.Wait()
	done.Store(true)
	readersWG.Wait()

	final := p.Stats()
	want := uint64(writers * ops)
	if final.Gets != want || final.Puts+final.Drops != want {
		t.Fatalf("final Stats = %+v, want Gets and Puts+Drops = %d", final, want)
	}
	for r, s := range maxSeen {
		// Each reader's last read started after every writer finished.
		if s != final {
			t.Errorf("reader %d last saw %+v, want the final %+v", r, s, final)
		}
	}
	if reads.Load() < readers {
		t.Errorf("readers made %d reads, want at least %d", reads.Load(), readers)
	}
}

func TestOverflowStripeUnderRaisedGOMAXPROCS(t *testing.T) {
	p, err := instrument.New("overflow", instrument.WithNew(func() *int { return new(int) }))
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4*runtime.NumCPU() + 4))
	var wg sync.WaitGroup
	const goroutines, ops = 64, 2000
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < ops; i++ {
				p.Put(p.Get())
			}
		}()
	}
	wg.Wait()
	if s := p.Stats(); s.Gets != goroutines*ops || s.Puts != goroutines*ops || s.Drops != 0 {
		t.Fatalf("Stats() = %+v, want Gets = Puts = %d, Drops 0", s, goroutines*ops)
	}
}

func TestBufferPoolDropsNil(t *testing.T) {
	p, err := instrument.NewBufferPool("buffers", 0)
	if err != nil {
		t.Fatal(err)
	}
	p.Put(nil)
	if got, want := p.Stats(), (instrument.Stats{Drops: 1}); got != want {
		t.Fatalf("Stats() after Put(nil) = %+v, want %+v", got, want)
	}
}

// TestPutOnceIsCollectable checks sync.Pool's memory contract: an object
// put once and never taken again does not stay pinned by the pool (in a
// per-P slot or the sync.Pool) but becomes collectable after a few GC
// cycles, while the pool itself stays alive and usable.
func TestPutOnceIsCollectable(t *testing.T) {
	type payload struct{ _ [4096]byte }
	tests := []struct {
		name string
		put  func() (weak.Pointer[payload], func() instrument.Stats)
	}{
		{"generic pool", func() (weak.Pointer[payload], func() instrument.Stats) {
			p, err := instrument.New("retention", instrument.WithNew(func() *payload { return new(payload) }))
			if err != nil {
				t.Fatal(err)
			}
			x := new(payload)
			w := weak.Make(x)
			p.Put(x)
			return w, p.Stats
		}},
		{"object in the slot and one in the sync.Pool", func() (weak.Pointer[payload], func() instrument.Stats) {
			p, err := instrument.New[*payload]("retention")
			if err != nil {
				t.Fatal(err)
			}
			p.Put(new(payload)) // fills this P's slot (or goes to the sync.Pool)
			x := new(payload)
			w := weak.Make(x)
			p.Put(x)
			return w, p.Stats
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, stats := tt.put()
			// Cleanups run on their own goroutine after a GC, so give each
			// cycle a moment; a pool that keeps the object for ever fails
			// after all the rounds.
			const rounds = 50
			gcs := 0
			for ; gcs < rounds && w.Value() != nil; gcs++ {
				runtime.GC()
				time.Sleep(10 * time.Millisecond)
			}
			if w.Value() != nil {
				t.Fatalf("object still reachable after %d GC cycles", rounds)
			}
			t.Logf("collected after %d GC cycles", gcs)
			if s := stats(); s.Puts < 1 {
				t.Errorf("Stats() = %+v, want the Puts counted", s)
			}
		})
	}
}

// TestNoObjectIsHandedOutTwice has goroutines stamp each object they Get
// with their own id and check it is still theirs before the Put, while
// GCs (which clear the per-P slots from another goroutine) run throughout.
// An object served to two holders at once would be overwritten.
func TestNoObjectIsHandedOutTwice(t *testing.T) {
	type owned struct{ owner atomic.Int64 }
	p, err := instrument.New("exclusive",
		instrument.WithNew(func() *owned { return new(owned) }),
		instrument.WithReset(func(o *owned) { o.owner.Store(0) }),
	)
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, ops = 8, 20000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	gcDone := make(chan struct{})
	go func() {
		defer close(gcDone)
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	for g := 1; g <= goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < ops; i++ {
				o := p.Get()
				if prev := o.owner.Swap(int64(g)); prev != 0 {
					t.Errorf("Get returned an object held by goroutine %d", prev)
					return
				}
				runtime.Gosched()
				if now := o.owner.Load(); now != int64(g) {
					t.Errorf("object taken over by goroutine %d while goroutine %d held it", now, g)
					return
				}
				p.Put(o)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-gcDone
	if s := p.Stats(); s.Gets != goroutines*ops || s.Puts != goroutines*ops {
		t.Fatalf("Stats() = %+v, want Gets = Puts = %d", s, goroutines*ops)
	}
}

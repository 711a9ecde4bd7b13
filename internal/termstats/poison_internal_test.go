package termstats

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/internal/pools"
)

// TestPoisonReachesTheReportPools builds reports with poisoning on: they
// are the reports built without it, and no pool counts a poisoned object.
// Then it misuses the report's scratch pools as code that Puts too early
// would: the bytes read after the Put are the poison, and a write after
// the Put is counted under the pool's name on the next Get.
func TestPoisonReachesTheReportPools(t *testing.T) {
	st := dupStore{
		scan: []string{"a", "b"},
		items: map[string]string{
			"a": `{"name":"a","tags":["x"],"payload":"one two \u00e9"}`,
			"b": `{"name":"b","tags":[],"payload":"three"}`,
		},
	}
	build := func(t *testing.T, b *Builder) []byte {
		t.Helper()
		var out []byte
		if err := b.Build(context.Background(), 10, func(body []byte) error { out = bytes.Clone(body); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	plain, err := NewBuilder(st, pools.Settings{Mode: pools.ModePooled}, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	want := build(t, plain)

	tests := []struct {
		pool string
		// misuse takes an object, fills a buffer of it, Puts it, and
		// returns the bytes it read after the Put and its write after the
		// Put; again takes an object from the same pool.
		misuse func(b *Builder) (read []byte, write func())
		again  func(b *Builder)
	}{
		{pools.TermScratch, func(b *Builder) ([]byte, func()) {
			s := b.items.Get()
			s.raw = append(s.raw, `{"name":"a"}`...)
			raw := s.raw
			b.items.Put(s)
			return raw, func() { s.raw = append(s.raw, 'x') }
		}, func(b *Builder) { b.items.Get() }},
		{pools.ReportScratch, func(b *Builder) ([]byte, func()) {
			s := b.scratch.Get()
			s.corpus.add([]byte("term"), 1)
			text := s.corpus.text
			b.scratch.Put(s)
			return text, func() { s.corpus.add([]byte("late"), 1) }
		}, func(b *Builder) { b.scratch.Get() }},
	}
	for _, tt := range tests {
		t.Run(tt.pool, func(t *testing.T) {
			// One P and no GC: the next Get takes the object the Put pooled.
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			reg := instrument.NewRegistry()
			b, err := NewBuilder(st, pools.Settings{Mode: pools.ModePooled, Registry: reg, CheckEvery: 1, Poison: true}, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // the second build reuses the pooled objects
				if got := build(t, b); !bytes.Equal(got, want) {
					t.Fatalf("report %s with poisoning, want %s", got, want)
				}
			}
			for _, ps := range reg.Snapshot() {
				if ps.Dirty != 0 {
					t.Fatalf("pool %s: %+v after correct builds, want nothing poisoned", ps.Name, ps.Stats)
				}
			}
			read, write := tt.misuse(b)
			if len(read) == 0 || !instrument.BytesPoisoned(read[:0:len(read)]) {
				t.Errorf("the bytes read after Put are %q, want the poison", read)
			}
			write()
			tt.again(b)
			for _, ps := range reg.Snapshot() {
				want := uint64(0)
				if ps.Name == tt.pool {
					want = 1
				}
				if ps.Dirty != want {
					t.Errorf("pool %s: dirty %d, want %d", ps.Name, ps.Dirty, want)
				}
			}
		})
	}
}

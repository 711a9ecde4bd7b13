package server

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/internal/pools"
)

// noStore is a Store that is never called: the test below uses the
// server's pools, not its handlers.
type noStore struct{ Store }

// TestPoisonReachesTheServersPools misuses the server's own pools as a
// handler that Puts too early would: with Options.Poison, the bytes it
// still reads after the Put are the poison, and its write after the Put
// is counted under the pool's name on the next Get.
func TestPoisonReachesTheServersPools(t *testing.T) {
	tests := []struct {
		pool string
		// misuse takes an object, fills it, Puts it, and returns the bytes
		// it read after the Put and the write it makes after the Put.
		misuse func(t *testing.T, s *Server) (read []byte, write func())
		// again takes an object from the same pool.
		again func(s *Server)
	}{
		{pools.JSONBuffer, func(t *testing.T, s *Server) ([]byte, func()) {
			e := s.enc.Get()
			if err := e.Enc.Encode(map[string]string{"id": "a"}); err != nil {
				t.Fatal(err)
			}
			body := e.Buf.Bytes()
			s.enc.Put(e) // too early: the response is written from body
			return body, func() { e.Buf.WriteString("late") }
		}, func(s *Server) { s.enc.Get() }},
		{pools.RequestScratch, func(t *testing.T, s *Server) ([]byte, func()) {
			rs := s.scratch.Get()
			rs.body = append(rs.body, `{"name":"a"}`...)
			body := rs.body
			s.scratch.Put(rs) // too early: the body is stored from body
			return body, func() { rs.body = append(rs.body, 'x') }
		}, func(s *Server) { s.scratch.Get() }},
	}
	for _, tt := range tests {
		t.Run(tt.pool, func(t *testing.T) {
			// One P and no GC: the next Get takes the object the Put pooled.
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			reg := instrument.NewRegistry()
			s, err := New(Options{Store: noStore{}, Mode: pools.ModePooled, Pools: reg, Poison: true})
			if err != nil {
				t.Fatal(err)
			}
			read, write := tt.misuse(t, s)
			if len(read) == 0 || !instrument.BytesPoisoned(read[:0:len(read)]) {
				t.Errorf("the bytes read after Put are %q, want the poison", read)
			}
			write()
			tt.again(s)
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

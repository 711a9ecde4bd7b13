// Package profdifftest makes pprof profiles and serves them as a service's pprof port does,
// for the tests of the code that fetches and compares them (internal/profdiff's callers).
package profdifftest

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/pprof/profile"
)

// Encode returns the bytes of a profile (gzipped protobuf, as /debug/pprof/ serves it) with
// the sample types samples/count and typ/unit, for example cpu/nanoseconds or
// alloc_space/bytes. Each key of stacks is a stack of function names from the leaf up,
// separated by ";", and its value the sample's typ value.
func Encode(t testing.TB, typ, unit string, stacks map[string]int64) []byte {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: typ, Unit: unit}},
		PeriodType: &profile.ValueType{Type: typ, Unit: unit},
		Period:     1,
	}
	funcs := map[string]*profile.Function{}
	for frames, v := range stacks {
		smp := &profile.Sample{Value: []int64{1, v}}
		for name := range strings.SplitSeq(frames, ";") {
			f := funcs[name]
			if f == nil {
				f = &profile.Function{ID: uint64(len(p.Function) + 1), Name: name}
				funcs[name] = f
				p.Function = append(p.Function, f)
			}
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f}}}
			p.Location = append(p.Location, loc)
			smp.Location = append(smp.Location, loc)
		}
		p.Sample = append(p.Sample, smp)
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Server serves a CPU profile at /debug/pprof/profile and an allocation profile at
// /debug/pprof/allocs, at once whatever their seconds, and records the requests. Safe for
// concurrent use.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	requests []string
}

// NewServer starts a Server of cpu and allocs (Encode's bytes) and closes it when the test
// ends.
func NewServer(t testing.TB, cpu, allocs []byte) *Server {
	t.Helper()
	s := &Server{}
	mux := http.NewServeMux()
	for path, b := range map[string][]byte{"/debug/pprof/profile": cpu, "/debug/pprof/allocs": allocs} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.requests = append(s.requests, r.URL.RequestURI())
			s.mu.Unlock()
			_, _ = w.Write(b)
		})
	}
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Requests returns the request URIs served so far, in order.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// The functions of Misuse's profiles.
const (
	Scrub   = "github.com/poolparity/poolparity/internal/pools.ScrubBytes"
	Handler = "github.com/poolparity/poolparity/internal/server.(*Server).item"
)

// Misuse starts a gray and a stable Server whose profiles look like the misuse-reset
// scenario's: gray spends 9 ms of CPU in Scrub (in runtime.memclrNoHeapPointers) and 3 ms in
// Handler, stable 3 ms in Handler; gray allocates 1 MiB in Handler (in runtime.mallocgc),
// stable 2 MiB.
func Misuse(t testing.TB) (gray, stable *Server) {
	t.Helper()
	gray = NewServer(t,
		Encode(t, "cpu", "nanoseconds", map[string]int64{"runtime.memclrNoHeapPointers;" + Scrub: 9e6, Handler: 3e6}),
		Encode(t, "alloc_space", "bytes", map[string]int64{"runtime.mallocgc;" + Handler: 1 << 20}))
	stable = NewServer(t,
		Encode(t, "cpu", "nanoseconds", map[string]int64{Handler: 3e6}),
		Encode(t, "alloc_space", "bytes", map[string]int64{"runtime.mallocgc;" + Handler: 2 << 20}))
	return gray, stable
}

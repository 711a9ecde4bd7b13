package profdiff_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/poolparity/poolparity/instrument/pprofhttp"
	"github.com/poolparity/poolparity/internal/profdiff"
)

const mod = "github.com/x/svc/"

// stack is a sample: its value and its frames from the leaf up; a frame
// "a+b" is one location where a is inlined into b.
type stack struct {
	value  int64
	frames []string
}

// cpuProfile builds a CPU profile (samples/count, cpu/nanoseconds) of stacks.
func cpuProfile(stacks ...stack) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}
	funcs := map[string]*profile.Function{}
	fn := func(name string) *profile.Function {
		if f, ok := funcs[name]; ok {
			return f
		}
		f := &profile.Function{ID: uint64(len(funcs) + 1), Name: name}
		funcs[name] = f
		p.Function = append(p.Function, f)
		return f
	}
	for _, s := range stacks {
		smp := &profile.Sample{Value: []int64{s.value / 10_000_000, s.value}}
		for _, fr := range s.frames {
			loc := &profile.Location{ID: uint64(len(p.Location) + 1)}
			for _, name := range strings.Split(fr, "+") {
				loc.Line = append(loc.Line, profile.Line{Function: fn(name)})
			}
			p.Location = append(p.Location, loc)
			smp.Location = append(smp.Location, loc)
		}
		p.Sample = append(p.Sample, smp)
	}
	return p
}

func TestCompareCharges(t *testing.T) {
	scrub := mod + "internal/pools.ScrubBytes"
	handler := mod + "internal/server.(*Server).item"
	gray := cpuProfile(
		// the scrub's clear, inlined into the reset closure
		stack{600e6, []string{"runtime.memclrNoHeapPointers", scrub + "+" + mod + "internal/pools.NewSource.func2", "net/http.(*conn).serve"}},
		stack{200e6, []string{"encoding/json.Marshal", handler, "net/http.(*conn).serve"}},
		stack{100e6, []string{"runtime.gcBgMarkWorker"}},
	)
	stable := cpuProfile(
		stack{400e6, []string{"encoding/json.Marshal", handler, "net/http.(*conn).serve"}},
		stack{100e6, []string{"runtime.gcBgMarkWorker"}},
	)
	for _, tc := range []struct {
		name                  string
		grayReq, stableReq    float64
		wantFirst, wantLeaf   string
		wantDelta             float64 // of the first row, CPU seconds per request
		wantGrayTotal, wantST float64
	}{
		{"equal traffic", 100, 100, scrub, "runtime.memclrNoHeapPointers", 0.006, 0.009, 0.005},
		// Stable served twice the requests: its handler costs the same per
		// request as gray's, and the scrub still leads.
		{"stable served twice the requests", 100, 200, scrub, "runtime.memclrNoHeapPointers", 0.006, 0.009, 0.0025},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := profdiff.Compare(profdiff.KindCPU, gray, stable, tc.grayReq, tc.stableReq, profdiff.Options{Own: []string{mod}})
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Rows) == 0 || d.Rows[0].Function != tc.wantFirst || d.Rows[0].Leaf != tc.wantLeaf {
				t.Fatalf("first row %+v, want %s in %s", d.Rows, tc.wantFirst, tc.wantLeaf)
			}
			if math.Abs(d.Rows[0].Delta-tc.wantDelta) > 1e-12 {
				t.Errorf("first row's delta %v s/request, want %v", d.Rows[0].Delta, tc.wantDelta)
			}
			if math.Abs(d.GrayTotal-tc.wantGrayTotal) > 1e-12 || math.Abs(d.StableTotal-tc.wantST) > 1e-12 {
				t.Errorf("totals gray %v, stable %v; want %v, %v", d.GrayTotal, d.StableTotal, tc.wantGrayTotal, tc.wantST)
			}
			byFn := map[string]profdiff.Row{}
			for _, r := range d.Rows {
				byFn[r.Function] = r
			}
			if r := byFn["runtime.gcBgMarkWorker"]; r.Leaf != "" {
				t.Errorf("a stack without own frames is charged to its leaf, with no separate leaf: %+v", r)
			}
			if _, ok := byFn["net/http.(*conn).serve"]; ok {
				t.Errorf("a frame above the first own one was charged: %+v", d.Rows)
			}
		})
	}
}

func TestCompareTopAndOrder(t *testing.T) {
	var gs, ss []stack
	for i, name := range []string{"a", "b", "c", "d", "e"} {
		gs = append(gs, stack{int64(i+1) * 10e6, []string{"pkg." + name}})
		ss = append(ss, stack{10e6, []string{"pkg." + name}})
	}
	d, err := profdiff.Compare(profdiff.KindCPU, cpuProfile(gs...), cpuProfile(ss...), 1, 1, profdiff.Options{Top: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Rows) != 2 || d.Rows[0].Function != "pkg.e" || d.Rows[1].Function != "pkg.d" {
		t.Fatalf("rows %+v, want pkg.e then pkg.d", d.Rows)
	}
}

func TestCompareRefuses(t *testing.T) {
	p := cpuProfile(stack{10e6, []string{"f"}})
	empty := cpuProfile()
	for _, tc := range []struct {
		name               string
		kind               profdiff.Kind
		gray, stable       *profile.Profile
		grayReq, stableReq float64
		want               string
	}{
		{"zero requests", profdiff.KindCPU, p, p, 0, 1, "requests per track"},
		{"NaN requests", profdiff.KindCPU, p, p, 1, math.NaN(), "requests per track"},
		{"a missing profile", profdiff.KindCPU, nil, p, 1, 1, "missing"},
		{"an unknown kind", "wall", p, p, 1, 1, "unknown profile kind"},
		{"a CPU profile compared as allocations", profdiff.KindAllocSpace, p, p, 1, 1, "no alloc_space/bytes samples"},
		{"no samples at all", profdiff.KindCPU, empty, empty, 1, 1, "no samples"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := profdiff.Compare(tc.kind, tc.gray, tc.stable, tc.grayReq, tc.stableReq, profdiff.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
		})
	}
	if _, err := profdiff.Compare(profdiff.KindCPU, empty, empty, 1, 1, profdiff.Options{}); !errors.Is(err, profdiff.ErrNoSamples) {
		t.Errorf("empty profiles: %v, want ErrNoSamples", err)
	}
}

func TestURL(t *testing.T) {
	for _, tc := range []struct {
		base    string
		kind    profdiff.Kind
		seconds int
		want    string // "" wants an error
	}{
		{"http://127.0.0.1:6060/debug/pprof/", profdiff.KindCPU, 5, "http://127.0.0.1:6060/debug/pprof/profile?seconds=5"},
		{"http://127.0.0.1:6060/debug/pprof", profdiff.KindAllocSpace, 0, "http://127.0.0.1:6060/debug/pprof/allocs"},
		{"http://10.0.0.5:6060", profdiff.KindAllocSpace, 5, "http://10.0.0.5:6060/debug/pprof/allocs?seconds=5"},
		{"http://10.0.0.5:6060/", profdiff.KindCPU, 5, "http://10.0.0.5:6060/debug/pprof/profile?seconds=5"},
		{"http://10.0.0.5:6060/", profdiff.KindAllocSpace, -1, ""},
		{"http://127.0.0.1:6060/debug/pprof/", profdiff.KindCPU, 0, ""},
		{"127.0.0.1:6060", profdiff.KindCPU, 5, ""},
		{"http://h/debug/pprof/", "goroutine", 0, ""},
	} {
		got, err := profdiff.URL(tc.base, tc.kind, tc.seconds)
		if (err != nil) != (tc.want == "") || got != tc.want {
			t.Errorf("URL(%q, %s, %d) = %q, %v; want %q", tc.base, tc.kind, tc.seconds, got, err, tc.want)
		}
	}
}

func TestShortName(t *testing.T) {
	for in, want := range map[string]string{
		"github.com/x/svc/internal/pools.ScrubBytes":       "pools.ScrubBytes",
		"github.com/x/svc/internal/pools.(*Encoder).Reset": "pools.(*Encoder).Reset",
		"main.thumbnail.func1":                             "main.thumbnail.func1",
		"runtime.memclrNoHeapPointers":                     "runtime.memclrNoHeapPointers",
	} {
		if got := profdiff.ShortName(in); got != want {
			t.Errorf("ShortName(%q) = %q, want %q", in, got, want)
		}
	}
}

//go:noinline
func allocate(n int) []byte { return make([]byte, n) }

var sink []byte

// TestFetchRealProfiles fetches this process's own allocation and CPU
// profiles through instrument/pprofhttp, and compares them.
func TestFetchRealProfiles(t *testing.T) {
	srv := httptest.NewServer(pprofhttp.Handler())
	t.Cleanup(srv.Close)
	for range 2000 {
		sink = allocate(64 << 10)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	base := srv.URL + pprofhttp.Prefix
	allocs, raw, err := profdiff.Fetch(ctx, srv.Client(), base, profdiff.KindAllocSpace, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) == 0 {
		t.Fatal("no raw bytes kept")
	}
	// The same profile as both tracks, stable having served twice the
	// requests: every function costs gray twice what it costs stable.
	d, err := profdiff.Compare(profdiff.KindAllocSpace, allocs, allocs, 1000, 2000, profdiff.Options{Own: []string{"github.com/poolparity/poolparity/internal/profdiff_test."}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range d.Rows {
		if r.Function == "github.com/poolparity/poolparity/internal/profdiff_test.allocate" {
			found = true
			if r.Gray < 64<<10 || math.Abs(r.Gray-2*r.Stable) > 1e-6*r.Gray {
				t.Errorf("allocate: gray %v, stable %v bytes per request; want gray >= 64 KiB (2000 x 64 KiB over 1000 requests) and twice stable", r.Gray, r.Stable)
			}
		}
	}
	if !found {
		t.Fatalf("allocate is not among the rows: %+v", d.Rows)
	}

	cpu, _, err := profdiff.Fetch(ctx, srv.Client(), base, profdiff.KindCPU, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := profdiff.Compare(profdiff.KindCPU, cpu, cpu, 1, 1, profdiff.Options{}); err != nil && !errors.Is(err, profdiff.ErrNoSamples) {
		t.Fatalf("comparing a real CPU profile: %v", err)
	}

	// A delta allocation profile over a second parses and compares, as the CLI and the
	// controller fetch it.
	delta, _, err := profdiff.Fetch(ctx, srv.Client(), base, profdiff.KindAllocSpace, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := profdiff.Compare(profdiff.KindAllocSpace, delta, delta, 1, 1, profdiff.Options{}); err != nil && !errors.Is(err, profdiff.ErrNoSamples) {
		t.Fatalf("comparing a real delta allocation profile: %v", err)
	}

	// A refused request is an error naming the URL and the answer.
	if _, _, err := profdiff.Fetch(ctx, srv.Client(), base, profdiff.KindCPU, 500); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("a 500 s profile: %v, want a 400 error", err)
	}
	// A body that is not a profile.
	notProf := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hello")) }))
	t.Cleanup(notProf.Close)
	if _, _, err := profdiff.Fetch(ctx, notProf.Client(), notProf.URL+"/", profdiff.KindAllocSpace, 0); err == nil || !strings.Contains(err.Error(), "parsing") {
		t.Errorf("a non-profile body: %v, want a parse error", err)
	}
}

package profdiff_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/poolparity/poolparity/internal/profdiff"
)

// allocProfile builds an allocation profile (alloc_objects/count,
// alloc_space/bytes) of stacks, the value being bytes.
func allocProfile(stacks ...stack) *profile.Profile {
	p := cpuProfile(stacks...)
	p.SampleType = []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}}
	p.PeriodType = &profile.ValueType{Type: "space", Unit: "bytes"}
	p.Period = 512 * 1024
	return p
}

func encode(t *testing.T, p *profile.Profile) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pprofServer serves cpu as /debug/pprof/profile and allocs as
// /debug/pprof/allocs, and counts the requests that asked for a window.
func pprofServer(t *testing.T, cpu, allocs []byte, windowed *atomic.Int32) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	serve := func(b []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("seconds") != "" && windowed != nil {
				windowed.Add(1)
			}
			_, _ = w.Write(b)
		}
	}
	mux.Handle("/debug/pprof/profile", serve(cpu))
	mux.Handle("/debug/pprof/allocs", serve(allocs))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestCapture(t *testing.T) {
	scrub := mod + "internal/pools.ScrubBytes"
	handler := mod + "internal/server.item"
	grayCPU := encode(t, cpuProfile(stack{600e6, []string{"runtime.memclrNoHeapPointers", scrub}}, stack{200e6, []string{handler}}))
	stableCPU := encode(t, cpuProfile(stack{200e6, []string{handler}}))
	grayAllocs := encode(t, allocProfile(stack{1 << 20, []string{"runtime.mallocgc", handler}}))
	stableAllocs := encode(t, allocProfile(stack{4 << 20, []string{"runtime.mallocgc", handler}}))
	var windowed atomic.Int32
	gray := pprofServer(t, grayCPU, grayAllocs, &windowed)
	stable := pprofServer(t, stableCPU, stableAllocs, &windowed)
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	notProf := pprofServer(t, []byte("hello"), grayAllocs, nil)
	reqs := func(context.Context) (float64, float64, error) { return 100, 100, nil }

	for _, tc := range []struct {
		name      string
		gray      string
		requests  profdiff.Requests
		wantKinds string // the kinds compared, in order
		wantErr   string // a substring of the error; empty: none
	}{
		{"both tracks answer: CPU and allocations over the window", gray.URL, reqs, "cpu,alloc_space", ""},
		{"a track that does not answer fails both kinds", downURL, reqs, "", "gray track: fetching " + downURL},
		{"a CPU profile that is no profile leaves the allocations", notProf.URL, reqs, "alloc_space", "parsing the profile"},
		{"requests that cannot be counted fail the capture", gray.URL,
			func(context.Context) (float64, float64, error) { return 0, 0, errors.New("prometheus down") }, "", "prometheus down"},
		{"no requests leave nothing to divide by", gray.URL,
			func(context.Context) (float64, float64, error) { return 0, 100, nil }, "", "requests per track must be > 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			diffs, err := profdiff.Capture(ctx, http.DefaultClient, tc.gray, stable.URL, 5, tc.requests, profdiff.Options{Own: []string{mod}, Top: 3})
			var kinds []string
			for _, d := range diffs {
				kinds = append(kinds, string(d.Kind))
				if d.Seconds != 5 {
					t.Errorf("%s: seconds %d, want 5", d.Kind, d.Seconds)
				}
			}
			if got := strings.Join(kinds, ","); got != tc.wantKinds {
				t.Errorf("compared %q, want %q", got, tc.wantKinds)
			}
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want one saying %q", err, tc.wantErr)
			}
			if len(diffs) == 2 {
				if r := diffs[0].Rows[0]; r.Function != scrub || math.Abs(r.Delta-0.006) > 1e-12 {
					t.Errorf("first CPU row %+v, want %s at +6ms per request", r, scrub)
				}
				if r := diffs[1].Rows[0]; r.Function != handler || math.Abs(r.Delta+3*(1<<20)/100.0) > 1e-9 {
					t.Errorf("first allocation row %+v, want %s at -3 MiB/100 per request", r, handler)
				}
			}
		})
	}
	if windowed.Load() == 0 {
		t.Error("no profile was asked for a window")
	}
}

func TestFetchPairNamesTheTrack(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(down.Close)
	ok := pprofServer(t, nil, encode(t, allocProfile(stack{1, []string{"f"}})), nil)
	_, err := profdiff.FetchPair(context.Background(), http.DefaultClient, ok.URL, down.URL, profdiff.KindAllocSpace, 0)
	if err == nil || !strings.HasPrefix(err.Error(), "stable track: ") || !strings.Contains(err.Error(), "404") {
		t.Errorf("a stable track answering 404: %v, want an error naming the stable track and the 404", err)
	}
}

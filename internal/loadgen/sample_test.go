package loadgen_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/targets"
)

// sink collects samples, as a Sampling.Sink is called: concurrently.
type sink struct {
	mu      sync.Mutex
	samples []loadgen.Sample
}

func (s *sink) add(smp loadgen.Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, smp)
}

func (s *sink) all() []loadgen.Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples)
}

// named answers each request with its path as a JSON string, and 503 for
// /down.
func named(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/down" {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "%q", r.URL.Path+strings.Repeat(".", 40))
}

func fiveTargets() []targets.Target {
	var ts []targets.Target
	for _, p := range []string{"/a", "/b", "/c", "/d", "/down"} {
		ts = append(ts, targets.Target{Method: http.MethodGet, URL: p})
	}
	return ts
}

func TestSampling(t *testing.T) {
	tests := []struct {
		name     string
		sampling loadgen.Sampling
		requests int
		check    func(t *testing.T, got []loadgen.Sample)
	}{
		{"every arrival is sampled with Every 1", loadgen.Sampling{Every: 1, Max: 100}, 30, func(t *testing.T, got []loadgen.Sample) {
			if len(got) != 30 {
				t.Fatalf("%d samples, want 30", len(got))
			}
			for _, s := range got {
				want := fiveTargets()[s.Target].URL
				switch {
				case want == "/down" && s.Status != http.StatusServiceUnavailable:
					t.Errorf("sample of %s has status %d, want 503", want, s.Status)
				case want != "/down" && (s.Status != http.StatusOK || s.ContentType != "application/json" || !strings.HasPrefix(string(s.Body), `"`+want+".")):
					t.Errorf("sample of target %d (%s) = %d %q %q, want its own answer", s.Target, want, s.Status, s.ContentType, s.Body)
				}
			}
		}},
		{"one arrival in each block of Every, Max at most", loadgen.Sampling{Every: 10, Max: 2}, 100, func(t *testing.T, got []loadgen.Sample) {
			if len(got) != 2 {
				t.Fatalf("%d samples, want Max's 2", len(got))
			}
		}},
		{"a block's sample is of any target, though Every is a multiple of the targets' number", loadgen.Sampling{Every: 5, Max: 1000}, 400, func(t *testing.T, got []loadgen.Sample) {
			if len(got) != 80 {
				t.Fatalf("%d samples, want one in each of 80 blocks", len(got))
			}
			seen := map[int]int{}
			for _, s := range got {
				seen[s.Target]++
			}
			if len(seen) != 5 {
				t.Errorf("samples by target %v, want all 5 targets sampled", seen)
			}
		}},
		{"an excluded target passes its turn on", loadgen.Sampling{Every: 1, Max: 100, Exclude: func(i int) bool { return i >= 2 }}, 30, func(t *testing.T, got []loadgen.Sample) {
			if len(got) != 12 {
				t.Fatalf("%d samples, want the 12 arrivals of targets 0 and 1", len(got))
			}
			for _, s := range got {
				if s.Target >= 2 {
					t.Errorf("target %d sampled, want it excluded", s.Target)
				}
			}
		}},
		{"a body over the cap is cut and said to be", loadgen.Sampling{Every: 1, Max: 100, MaxBodyBytes: 8}, 10, func(t *testing.T, got []loadgen.Sample) {
			for _, s := range got {
				if s.Status == http.StatusOK && (len(s.Body) != 8 || !s.Truncated) {
					t.Errorf("body %q (truncated %v), want its first 8 bytes, truncated", s.Body, s.Truncated)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got sink
			s := tt.sampling
			s.Sink = got.add
			replaySampled(t, http.HandlerFunc(named), fiveTargets(), tt.requests, &s)
			tt.check(t, got.all())
		})
	}
}

// replaySampled sends n requests of ts to h, every one of them, sampled as
// s says.
func replaySampled(t *testing.T, h http.Handler, ts []targets.Target, n int, s *loadgen.Sampling) loadgen.Stats {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := cfg(srv.URL)
	c.Targets, c.MaxRequests, c.Sample = ts, n, s
	g, err := loadgen.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := g.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Dropped != 0 || st.Requests != uint64(n) {
		t.Fatalf("%d requests, %d dropped; want all %d sent", st.Requests, st.Dropped, n)
	}
	return st
}

func TestSamplingSpreadsOverTheRun(t *testing.T) {
	// 200 arrivals at 1000/s, one sample in each block of 20: ten samples,
	// the last from the run's last 40 ms, not the first ten arrivals.
	var mu sync.Mutex
	var at []time.Time
	s := &loadgen.Sampling{Every: 20, Max: 10, Sink: func(loadgen.Sample) {
		mu.Lock()
		defer mu.Unlock()
		at = append(at, time.Now())
	}}
	start := time.Now()
	replaySampled(t, http.HandlerFunc(named), fiveTargets(), 200, s)
	elapsed := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	if len(at) != 10 {
		t.Fatalf("%d samples, want 10", len(at))
	}
	if last := slices.MaxFunc(at, time.Time.Compare).Sub(start); last < elapsed/2 {
		t.Errorf("the last sample came %s into a run of %s, want them spread over it", last, elapsed)
	}
}

func TestSamplingTheSameSeedGivesTheSameCalls(t *testing.T) {
	// Sampling draws from a source of its own: the calls do not change.
	run := func(s *loadgen.Sampling) string {
		var mu sync.Mutex
		calls := map[string]int{}
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			calls[r.URL.Path]++
		})
		replaySampledOrder(t, h, fiveTargets(), s)
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprint(calls) // printed in key order
	}
	without := run(nil)
	with := run(&loadgen.Sampling{Every: 3, Max: 100, Sink: func(loadgen.Sample) {}})
	if with != without {
		t.Errorf("calls with sampling %s, without %s: want the same", with, without)
	}
}

func replaySampledOrder(t *testing.T, h http.Handler, ts []targets.Target, s *loadgen.Sampling) {
	t.Helper()
	replay(t, h, ts, func(c *loadgen.Config) {
		c.Order, c.Seed, c.Sample = loadgen.Random, 42, s
	})
}

func TestSamplingOfATransportFailure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(named))
	url := srv.URL
	srv.Close() // nothing listens there now
	var got sink
	c := cfg(url)
	c.Targets, c.MaxRequests = fiveTargets()[:1], 3
	c.Sample = &loadgen.Sampling{Every: 1, Max: 10, Sink: got.add}
	g, err := loadgen.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := g.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	samples := got.all()
	if st.Errors != 3 || len(samples) != 3 {
		t.Fatalf("%d errors, %d samples; want 3 of each", st.Errors, len(samples))
	}
	for _, s := range samples {
		if s.Err == nil || s.Status != 0 {
			t.Errorf("sample %+v, want a transport error and no status", s)
		}
	}
}

func TestSamplingConfigIsChecked(t *testing.T) {
	sinkFn := func(loadgen.Sample) {}
	tests := []struct {
		name   string
		mutate func(*loadgen.Config)
		want   string
	}{
		{"a run of the item mix is refused", func(c *loadgen.Config) { c.Targets = nil }, "a run of Targets only"},
		{"a block of 0 arrivals is refused", func(c *loadgen.Config) { c.Sample.Every = 0 }, "every must be >= 1"},
		{"no bound on the samples is refused", func(c *loadgen.Config) { c.Sample.Max = 0 }, "max must be in"},
		{"a huge body cap is refused", func(c *loadgen.Config) { c.Sample.MaxBodyBytes = 1 << 30 }, "max body bytes"},
		{"no sink is refused", func(c *loadgen.Config) { c.Sample.Sink = nil }, "a sink is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg("http://127.0.0.1:1")
			c.Targets = fiveTargets()
			c.Sample = &loadgen.Sampling{Every: 1, Max: 1, Sink: sinkFn}
			if err := c.Validate(); err != nil {
				t.Fatalf("the valid config: %v", err)
			}
			tt.mutate(&c)
			err := c.Validate()
			if err == nil || !errors.Is(err, loadgen.ErrBounds) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want ErrBounds naming %q", err, tt.want)
			}
		})
	}
}

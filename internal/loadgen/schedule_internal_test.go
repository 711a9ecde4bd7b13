package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestOverdueArrivalsAreSentAtOnceWithinTheBound: a scheduler held up for a
// second finds a second's arrivals overdue. It sends them at once, but no
// more than the in-flight bound allows, and drops the others; the latency
// of those sent counts from when they were due.
func TestOverdueArrivalsAreSentAtOnceWithinTheBound(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	g, err := New(Config{BaseURL: srv.URL, Duration: 10 * time.Second, MaxRequests: 100, RPS: 100, Concurrency: 4, Keys: 10, Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		st  Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		// Arrivals 0 to 99 were due 1 s to 10 ms ago.
		st, err := g.run(context.Background(), time.Now().Add(-time.Second))
		done <- result{st, err}
	}()
	// The requests sent block until released: wait for all arrivals first.
	for deadline := time.Now().Add(5 * time.Second); g.arrivals.Load() < 100; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("%d of 100 overdue arrivals came after 5s", g.arrivals.Load())
		}
	}
	close(release)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if st := r.st; st.Arrivals != 100 || st.Requests != 4 || st.Dropped != 96 {
		t.Errorf("%d arrivals, %d sent and %d dropped; want 100, the bound of 4 and 96", st.Arrivals, st.Requests, st.Dropped)
	}
	if l := r.st.Latency; l.Count != 4 || l.P50 < 900*time.Millisecond {
		t.Errorf("latency %v, want 4 answers of about 1s (counted from when they were due)", l)
	}
}

package diffcheck_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/diffcheck"
	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/targets"
)

// sharedAPI answers itemAPI's item through one buffer that every request
// shares: it writes its item there, waits a moment (the rest of its work),
// then writes out what the buffer holds. One request at a time, the answer
// is right; under concurrency another request's item overwrites it. (A
// mutex keeps it free of data races, so that it runs under -race: the
// overwriting is the point, not the race.)
type sharedAPI struct {
	mu  sync.Mutex
	buf []byte
}

func (s *sharedAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/items/")
	b, _ := json.Marshal(map[string]any{"id": id, "name": "item-" + id, "tags": []string{"a", "b"}})
	s.mu.Lock()
	s.buf = append(s.buf[:0], b...)
	s.mu.Unlock()
	time.Sleep(2 * time.Millisecond)
	s.mu.Lock()
	out := append([]byte(nil), s.buf...)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// loadAndCompare runs a load of ts on gray in waves of 8 requests at once,
// samples up to max of its responses, one in every two arrivals (twice as
// many arrivals as needed: an arrival dropped gives its turn on), and
// compares each with stable's answers through a Live, as
// `poolparity-parity local` does.
func loadAndCompare(t *testing.T, stable, gray string, ts []targets.Target, max int, opt diffcheck.Options) diffcheck.Report {
	t.Helper()
	live, err := diffcheck.NewLive(nil, stable, "", ts, opt)
	if err != nil {
		t.Fatal(err)
	}
	samples := make(chan loadgen.Sample, max)
	g, err := loadgen.New(loadgen.Config{
		BaseURL: gray, Duration: 30 * time.Second, MaxRequests: 4 * max, RPS: 1000, Concurrency: 512, Burst: 8, Keys: 1, Seed: 1,
		Targets: ts, Sample: &loadgen.Sampling{Every: 2, Max: max, Sink: func(s loadgen.Sample) { samples <- s }},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for s := range samples {
				gr := diffcheck.Response{Status: s.Status, ContentType: s.ContentType, Body: s.Body, Truncated: s.Truncated, Err: s.Err}
				if err := live.Compare(context.Background(), s.Target, gr); err != nil {
					t.Error(err)
				}
			}
		})
	}
	if _, err := g.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(samples)
	wg.Wait()
	return live.Report()
}

func TestLiveSeesWhatOnlyConcurrencyCorrupts(t *testing.T) {
	stable, shared := serve(t, &itemAPI{}), serve(t, &sharedAPI{})
	// One request at a time, the shared buffer answers right.
	if r := check(t, stable, "", shared, items(40), diffcheck.Options{Requests: 40}); r.Mismatches != 0 {
		t.Fatalf("Check, one request at a time:\n%s", r)
	}
	r := loadAndCompare(t, stable, shared, items(40), 400, diffcheck.Options{})
	if r.Outcome != diffcheck.Fail || r.Compared+r.Skipped != 400 || r.Skipped != 0 || len(r.Paths) == 0 {
		t.Fatalf("Live, under load:\n%s", r)
	}
	if p := r.Paths[0]; p.Kind != diffcheck.KindValue || p.Endpoint != "GET /items/{n}" {
		t.Errorf("top path %+v, want a value that differs at GET /items/{n}", p)
	}
	t.Logf("under load: %s", r)
}

func TestLivePassesTheSameAnswers(t *testing.T) {
	stable, gray := serve(t, &itemAPI{stamped: true}), serve(t, &itemAPI{stamped: true})
	r := loadAndCompare(t, stable, gray, items(40), 400, diffcheck.Options{})
	if r.Outcome != diffcheck.Pass || r.Compared != 400 || !r.OneStable {
		t.Fatalf("Live of two alike services:\n%s", r)
	}
	found := false
	for _, n := range r.Noise {
		found = found || n.Pattern == "$.ts"
	}
	if !found {
		t.Errorf("noise %+v, want $.ts learned from stable asked twice", r.Noise)
	}
}

func TestLiveCompare(t *testing.T) {
	stable := serve(t, &itemAPI{})
	down := serve(t, http.NotFoundHandler())
	ok := diffcheck.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"id":"1","name":"item-1","tags":["a","b"]}`)}
	bad := diffcheck.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"id":"1"}{"id":"2"}`)}
	tests := []struct {
		name     string
		stable   string
		gray     diffcheck.Response
		outcome  diffcheck.Outcome
		mismatch int
		skipped  int
		kind     diffcheck.Kind
	}{
		{"an answer like stable's is no mismatch", stable, ok, diffcheck.Inconclusive, 0, 0, ""},
		{"no answer from gray is a mismatch", stable, diffcheck.Response{Err: errors.New("connection reset")}, diffcheck.Fail, 1, 0, diffcheck.KindError},
		{"JSON with trailing data is a mismatch", stable, bad, diffcheck.Fail, 1, 0, diffcheck.KindInvalidJSON},
		{"malformed JSON is a mismatch even when stable does not answer", "http://127.0.0.1:1", bad, diffcheck.Fail, 1, 0, diffcheck.KindInvalidJSON},
		{"a good answer is skipped when stable does not answer", "http://127.0.0.1:1", ok, diffcheck.NoData, 0, 1, ""},
		{"a stable's 404 is an answer", down, ok, diffcheck.Fail, 1, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live, err := diffcheck.NewLive(nil, tt.stable, "", items(2), diffcheck.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := live.Compare(context.Background(), 1, tt.gray); err != nil {
				t.Fatal(err)
			}
			r := live.Report()
			if r.Outcome != tt.outcome || r.Mismatches != tt.mismatch || r.Skipped != tt.skipped {
				t.Errorf("report:\n%s\nwant %s with %d mismatches, %d skipped", r, tt.outcome, tt.mismatch, tt.skipped)
			}
			if tt.kind != "" && (len(r.Paths) == 0 || r.Paths[0].Kind != tt.kind) {
				t.Errorf("paths %+v, want %s first", r.Paths, tt.kind)
			}
		})
	}
}

func TestLiveBounds(t *testing.T) {
	stable := serve(t, &itemAPI{})
	ok := diffcheck.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"id":"0","name":"item-0","tags":["a","b"]}`)}
	live, err := diffcheck.NewLive(nil, stable, "", items(1), diffcheck.Options{Requests: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := live.Compare(context.Background(), 0, ok); err != nil {
			t.Fatalf("comparison %d: %v", i+1, err)
		}
	}
	if err := live.Compare(context.Background(), 0, ok); !errors.Is(err, diffcheck.ErrFull) {
		t.Errorf("a third comparison of 2: %v, want ErrFull", err)
	}
	if err := live.Compare(context.Background(), 1, ok); !errors.Is(err, diffcheck.ErrOptions) {
		t.Errorf("a target out of range: %v, want ErrOptions", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	other, err := diffcheck.NewLive(nil, stable, "", items(1), diffcheck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Compare(ctx, 0, ok); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: %v", err)
	}
	if r := other.Report(); r.Compared+r.Skipped != 0 {
		t.Errorf("a cancelled comparison was kept:\n%s", r)
	}
	for _, bad := range []struct {
		name string
		url  string
		ts   []targets.Target
		opt  diffcheck.Options
		want error
	}{
		{"no requests", stable, nil, diffcheck.Options{}, diffcheck.ErrOptions},
		{"a stable outside loopback", "http://192.0.2.1:80", items(1), diffcheck.Options{}, loadgen.ErrNotLoopback},
		{"a bad ignore path", stable, items(1), diffcheck.Options{Ignore: []string{".a[x]"}}, diffcheck.ErrOptions},
	} {
		t.Run(bad.name, func(t *testing.T) {
			if _, err := diffcheck.NewLive(nil, bad.url, "", bad.ts, bad.opt); !errors.Is(err, bad.want) {
				t.Errorf("NewLive: %v, want %v", err, bad.want)
			}
		})
	}
}

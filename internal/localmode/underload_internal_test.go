package localmode

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/diffcheck"
	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/targets"
)

// echoAPI answers POST /convert with its body as a JSON string, and GET
// /n with {"n": n}.
type echoAPI struct {
	// shared, when set, writes every answer through one buffer that the
	// requests share (a mutex keeps it free of data races, not of
	// overwriting): right one request at a time, wrong under concurrency.
	shared bool
	mu     sync.Mutex
	buf    []byte
}

func (s *echoAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	v := any(string(body))
	if r.Method == http.MethodGet {
		v = map[string]string{"n": strings.TrimPrefix(r.URL.Path, "/")}
	}
	out, _ := json.Marshal(v)
	if s.shared {
		s.mu.Lock()
		s.buf = append(s.buf[:0], out...)
		s.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		s.mu.Lock()
		out = append([]byte(nil), s.buf...)
		s.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

func requests(n int) []targets.Target {
	ts := make([]targets.Target, 0, n)
	for i := range n {
		if i%2 == 0 {
			ts = append(ts, targets.Target{Method: http.MethodPost, URL: "/convert", Body: []byte(strings.Repeat("a,b\n", i+1)), Line: 1 + 3*i})
		} else {
			ts = append(ts, targets.Target{Method: http.MethodGet, URL: "/" + strings.Repeat("7", i), Line: 1 + 3*i})
		}
	}
	return ts
}

// TestLiveDiffUnderLoad runs gray's load with the check's sampling, as a
// local run does, and finishes the check.
func TestLiveDiffUnderLoad(t *testing.T) {
	tests := []struct {
		name    string
		gray    *echoAPI
		exclude []string
		outcome diffcheck.Outcome
		check   func(t *testing.T, d diffcheck.Report)
	}{
		{"the same answers pass", &echoAPI{}, nil, diffcheck.Pass, nil},
		{"a buffer shared by all requests fails", &echoAPI{shared: true}, nil, diffcheck.Fail, nil},
		{"an excluded endpoint is never compared", &echoAPI{}, []string{"GET"}, diffcheck.Pass, func(t *testing.T, d diffcheck.Report) {
			for _, p := range d.Paths {
				if strings.HasPrefix(p.Endpoint, "GET") {
					t.Errorf("GET compared: %+v", p)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stable := httptest.NewServer(&echoAPI{})
			defer stable.Close()
			gray := httptest.NewServer(tt.gray)
			defer gray.Close()
			cfg := Default()
			cfg.RPS, cfg.Duration, cfg.Concurrency, cfg.Burst, cfg.DiffExclude = 1000, 20*time.Second, 512, 8, tt.exclude
			exclude, err := parseExclude(cfg.DiffExclude)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			r := &runner{cfg: cfg, stdout: &out, targets: requests(10), exclude: exclude}
			d, err := r.newLiveDiff(context.Background(), &trackRun{url: stable.URL})
			if err != nil {
				t.Fatal(err)
			}
			defer d.abort()
			if d.every != 20 { // 1000/s, half to gray, 80% of 20 s, over 400 samples
				t.Errorf("one sample in %d arrivals, want 20", d.every)
			}
			d.every = 2 // a short load: 2,400 arrivals in 6 s, 200 samples offered a second
			g, err := loadgen.New(loadgen.Config{
				BaseURL: gray.URL, Duration: time.Minute, MaxRequests: 2400, RPS: 400, Concurrency: cfg.Concurrency, Burst: cfg.Burst, Keys: 1,
				Targets: r.targets, Sample: d.sampling(cfg.DiffSample, func(i int) bool { return r.excluded(r.targets[i]) }),
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := g.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			rep := d.finish(cfg.liveMethod(), cfg.DiffSample)
			if tt.outcome == diffcheck.Pass && rep.Outcome == diffcheck.Inconclusive && rep.Mismatches == 0 && rep.Compared < 381 && strings.Contains(rep.Notes[0], "samples dropped") {
				// A machine so loaded that the comparisons fell behind by more than the
				// samples taken in reserve: no PASS is possible under 381 compared, and the
				// report says why. Nothing mismatched, which is what this case is about.
				t.Logf("the comparisons fell behind (%d compared): %s", rep.Compared, rep.Notes[0])
				tt.outcome = diffcheck.Inconclusive
			}
			if rep.Outcome != tt.outcome || rep.Method != "under load, at concurrency 512 in waves of 8" {
				t.Errorf("report %s:\n%s\nwant %s", rep.Method, rep, tt.outcome)
			}
			if len(rep.Notes) == 0 || !strings.HasPrefix(rep.Notes[0], "gray's own load responses, one taken at random in each block of 2 of its arrivals") {
				t.Errorf("notes %q, want the first to say how the responses were taken", rep.Notes)
			}
			if tt.check != nil {
				tt.check(t, rep)
			}
			d.offer(loadgen.Sample{}) // after finish: dropped, never a send on a closed queue
		})
	}
}

func TestParseExclude(t *testing.T) {
	ts := requests(4) // POST /convert, GET /7, POST /convert, GET /777
	tests := []struct {
		name    string
		entries []string
		want    string // the excluded requests' lines, or the error's substring
		err     bool
	}{
		{"nothing excludes nothing", nil, "", false},
		{"a method excludes its requests", []string{"POST"}, "1 7", false},
		{"an endpoint is matched as the report names it", []string{"GET /{n}"}, "4 10", false},
		{"digits in an endpoint stand for any", []string{" GET /12 "}, "4 10", false},
		{"a lower-case method is refused", []string{"get"}, `"get": want a method`, true},
		{"an endpoint with a query is refused", []string{"GET /a?b=1"}, "without a query", true},
		{"an endpoint without a path is refused", []string{"GET items"}, "want METHOD /path", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parseExclude(tt.entries)
			if tt.err {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("parseExclude(%q) = %v, want an error naming %q", tt.entries, err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tg := range ts {
				if f(tg) {
					got = append(got, strconv.Itoa(tg.Line))
				}
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("excluded lines %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWhereTheCheckRuns(t *testing.T) {
	ts := requests(4)
	tests := []struct {
		name      string
		mutate    func(*Config)
		underLoad bool
		err       string
	}{
		{"by default, under load", func(*Config) {}, true, ""},
		{"after the load when told", func(c *Config) { c.DiffUnderLoad = false }, false, ""},
		{"after the load with its own requests", func(c *Config) { c.DiffRequestsFile = "reads.txt" }, false, ""},
		{"nowhere without a sample", func(c *Config) { c.DiffSample = 0 }, false, ""},
		{"excluding every request is refused", func(c *Config) { c.DiffExclude = []string{"GET", "POST"} }, true, "leaves none of the requests of r.txt"},
		{"excluding every request of its own file is refused", func(c *Config) { c.DiffRequestsFile, c.DiffExclude = "reads.txt", []string{"GET", "POST"} }, false, "of reads.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.RequestsFile = "r.txt"
			tt.mutate(&c)
			if c.underLoad() != tt.underLoad {
				t.Errorf("under load %v, want %v", c.underLoad(), tt.underLoad)
			}
			exclude, err := parseExclude(c.DiffExclude)
			if err != nil {
				t.Fatal(err)
			}
			_, err = compared(c, ts, ts, exclude)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("compared: %v, want %q", err, tt.err)
			}
		})
	}
}

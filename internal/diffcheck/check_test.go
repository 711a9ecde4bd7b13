package diffcheck_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/diffcheck"
	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/targets"
)

// itemAPI is a fake JSON service: GET /items/{n} answers an item, with a
// timestamp and a request id when stamped is set, and, when rename is set,
// a different name for one item in four.
type itemAPI struct {
	stamped, rename bool
	n               atomic.Int64
}

func (s *itemAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/items/")
	v := map[string]any{"id": id, "name": "item-" + id, "tags": []string{"a", "b"}}
	if s.rename && strings.HasSuffix(id, "3") {
		v["name"] = "renamed"
	}
	if s.stamped {
		v["ts"] = time.Now().UnixNano()
		v["request_id"] = s.n.Add(1)
		v["tags"] = []any{"a", map[string]any{"at": time.Now().UnixNano()}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// leakyAPI is itemAPI's answer written from one buffer that is never reset:
// the pool misuse whose responses carry every earlier one.
type leakyAPI struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *leakyAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/items/")
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = json.NewEncoder(&s.buf).Encode(map[string]any{"id": id, "name": "item-" + id, "tags": []string{"a", "b"}})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(s.buf.Bytes())
}

// items returns GETs of /items/0 to /items/{n-1}.
func items(n int) []targets.Target {
	ts := make([]targets.Target, n)
	for i := range ts {
		ts[i] = targets.Target{Method: "GET", URL: fmt.Sprintf("/items/%d", i), Line: 1 + 2*i}
	}
	return ts
}

func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func check(t *testing.T, a, b, gray string, ts []targets.Target, opt diffcheck.Options) diffcheck.Report {
	t.Helper()
	r, err := diffcheck.Check(context.Background(), nil, a, b, gray, ts, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCheckJudgesGray(t *testing.T) {
	tests := []struct {
		name         string
		stable, gray func() http.Handler
		oneStable    bool
		requests     int
		outcome      diffcheck.Outcome
		minRate      float64
		maxRate      float64
		wantPath     string // the top mismatching path's pattern and kind
		wantNote     string
		wantNoise    string
	}{
		{"identical services give no mismatch", func() http.Handler { return &itemAPI{} }, func() http.Handler { return &itemAPI{} },
			false, 400, diffcheck.Pass, 0, 0, "", "", ""},
		{"identical services with one stable give no mismatch", func() http.Handler { return &itemAPI{} }, func() http.Handler { return &itemAPI{} },
			true, 400, diffcheck.Pass, 0, 0, "", "", ""},
		{"timestamps and ids are learned as noise", func() http.Handler { return &itemAPI{stamped: true} }, func() http.Handler { return &itemAPI{stamped: true} },
			false, 400, diffcheck.Pass, 0, 0, "", "", "$.ts"},
		{"timestamps are noise with one stable asked twice", func() http.Handler { return &itemAPI{stamped: true} }, func() http.Handler { return &itemAPI{stamped: true} },
			true, 400, diffcheck.Pass, 0, 0, "", "", "$.tags[*].at"},
		{"noise does not hide a real difference", func() http.Handler { return &itemAPI{stamped: true} }, func() http.Handler { return &itemAPI{stamped: true, rename: true} },
			false, 400, diffcheck.Fail, 0.1, 0.1, "$.name value", "", "$.ts"},
		{"a buffer never reset gives invalid JSON from gray", func() http.Handler { return &itemAPI{} }, func() http.Handler { return &leakyAPI{} },
			false, 100, diffcheck.Fail, 0.99, 0.99, "$ invalid-json", "invalid JSON from gray in 99 of 100", ""},
		{"too few requests are inconclusive", func() http.Handler { return &itemAPI{} }, func() http.Handler { return &itemAPI{} },
			false, 50, diffcheck.Inconclusive, 0, 0, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, gray := serve(t, tt.stable()), serve(t, tt.gray())
			b := ""
			if !tt.oneStable {
				b = serve(t, tt.stable())
			}
			r := check(t, a, b, gray, items(40), diffcheck.Options{Requests: tt.requests})
			if r.Outcome != tt.outcome || r.Compared != tt.requests || r.Skipped != 0 || r.OneStable != tt.oneStable {
				t.Errorf("report:\n%s\nwant %s over %d requests", r, tt.outcome, tt.requests)
			}
			if r.Rate < tt.minRate || r.Rate > tt.maxRate+1e-9 || r.Low > r.Rate || r.High < r.Rate {
				t.Errorf("rate %.3f [%.3f, %.3f], want %.3f to %.3f in its interval", r.Rate, r.Low, r.High, tt.minRate, tt.maxRate)
			}
			checkText(t, r, tt.wantPath, tt.wantNote, tt.wantNoise)
		})
	}
}

func checkText(t *testing.T, r diffcheck.Report, path, note, noise string) {
	t.Helper()
	if path == "" && len(r.Paths) != 0 || path != "" && (len(r.Paths) == 0 || r.Paths[0].Pattern+" "+string(r.Paths[0].Kind) != path) {
		t.Errorf("mismatching paths %+v, want %q first", r.Paths, path)
	}
	if note != "" && !strings.Contains(strings.Join(r.Notes, "\n"), note) {
		t.Errorf("notes %q, want one saying %q", r.Notes, note)
	}
	found := noise == ""
	for _, n := range r.Noise {
		found = found || n.Pattern == noise
	}
	if !found {
		t.Errorf("noise %+v, want %s in it", r.Noise, noise)
	}
}

// csvAPI answers text/csv; when differ is set, every fourth item differs.
type csvAPI struct{ differ bool }

func (s csvAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/items/")
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	row := "id,name\n" + id + ",item-" + id + "\n"
	if n, _ := strconv.Atoi(id); s.differ && n%4 == 0 {
		row += "extra\n"
	}
	_, _ = w.Write([]byte(row))
}

func TestCheckComparesOtherBodiesAsBytes(t *testing.T) {
	a, b := serve(t, csvAPI{}), serve(t, csvAPI{})
	same := check(t, a, b, serve(t, csvAPI{}), items(20), diffcheck.Options{})
	if same.Mismatches != 0 || !strings.Contains(strings.Join(same.Notes, ""), "compared as bytes, not as JSON, in 20 of 20") {
		t.Errorf("identical CSV services:\n%s", same)
	}
	// Items 0, 4, 8, 12 and 16 of 20 differ.
	diff := check(t, a, b, serve(t, csvAPI{differ: true}), items(20), diffcheck.Options{})
	if diff.Mismatches != 5 || len(diff.Paths) == 0 || diff.Paths[0].Kind != diffcheck.KindBytes || diff.Paths[0].Pattern != "$" {
		t.Errorf("CSV services that differ in 5 of 20:\n%s", diff)
	}
}

func TestCheckBounds(t *testing.T) {
	slow := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	}))
	big := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"` + strings.Repeat("x", 2000) + `"}`))
	}))
	stable := serve(t, &itemAPI{})
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()

	start := time.Now()
	r := check(t, stable, "", slow, items(3), diffcheck.Options{Timeout: 100 * time.Millisecond})
	if took := time.Since(start); took > 3*time.Second || r.Mismatches != 3 || r.Paths[0].Kind != diffcheck.KindError {
		t.Errorf("a gray slower than the timeout, after %v:\n%s", took, r)
	}
	r = check(t, stable, "", big, items(3), diffcheck.Options{MaxBodyBytes: 1000})
	if r.Mismatches != 3 || r.Paths[0].Kind != diffcheck.KindBodySize {
		t.Errorf("a gray body over the cap:\n%s", r)
	}
	r = check(t, down.URL, "", stable, items(3), diffcheck.Options{})
	if r.Outcome != diffcheck.NoData || r.Skipped != 3 {
		t.Errorf("a stable that is down:\n%s", r)
	}
	r = check(t, stable, "", down.URL, items(3), diffcheck.Options{})
	if r.Mismatches != 3 || !strings.Contains(strings.Join(r.Notes, ""), "no response from gray in 3 of 3") {
		t.Errorf("a gray that is down:\n%s", r)
	}
}

func TestCheckRefusesBadArguments(t *testing.T) {
	ok := "http://127.0.0.1:1"
	tests := []struct {
		name    string
		gray    string
		ts      []targets.Target
		opt     diffcheck.Options
		wantErr error
	}{
		{"no requests", ok, nil, diffcheck.Options{}, diffcheck.ErrOptions},
		{"too many requests", ok, items(1), diffcheck.Options{Requests: diffcheck.MaxRequests + 1}, diffcheck.ErrOptions},
		{"a body cap over the limit", ok, items(1), diffcheck.Options{MaxBodyBytes: diffcheck.MaxBodyBytesLimit + 1}, diffcheck.ErrOptions},
		{"a negative timeout", ok, items(1), diffcheck.Options{Timeout: -1}, diffcheck.ErrOptions},
		{"a threshold of 1", ok, items(1), diffcheck.Options{MaxMismatchRate: 1}, diffcheck.ErrOptions},
		{"a gray outside loopback", "http://192.0.2.1:80", items(1), diffcheck.Options{}, loadgen.ErrNotLoopback},
		{"a target outside loopback", ok, []targets.Target{{Method: "GET", URL: "http://example.com/"}}, diffcheck.Options{}, loadgen.ErrNotLoopback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := diffcheck.Check(context.Background(), nil, ok, "", tt.gray, tt.ts, tt.opt)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := diffcheck.Check(ctx, nil, ok, "", ok, items(1), diffcheck.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: %v", err)
	}
}

// headerAPI is itemAPI with the given Content-Type, answering status 500
// for /items/1.
type headerAPI struct {
	contentType string
	fail        bool
}

func (s headerAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", s.contentType)
	if s.fail && r.URL.Path == "/items/1" {
		w.WriteHeader(http.StatusInternalServerError)
	}
	_, _ = w.Write([]byte(`{"ok":true}`))
}

func TestCheckComparesStatusAndContentType(t *testing.T) {
	stable := serve(t, headerAPI{contentType: "application/json; charset=utf-8"})
	tests := []struct {
		name string
		gray headerAPI
		want []string // "pattern kind requests"
	}{
		{"case and spacing of the media type do not count", headerAPI{contentType: "Application/JSON;charset=UTF-8"}, nil},
		{"a missing charset counts", headerAPI{contentType: "application/json"}, []string{"content-type content-type 4"}},
		{"a status code counts", headerAPI{contentType: "application/json; charset=utf-8", fail: true}, []string{"status status 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := check(t, stable, "", serve(t, tt.gray), items(4), diffcheck.Options{})
			var got []string
			for _, p := range r.Paths {
				got = append(got, fmt.Sprint(p.Pattern, " ", p.Kind, " ", p.Requests))
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("mismatching paths %q, want %q\n%s", got, tt.want, r)
			}
		})
	}
}

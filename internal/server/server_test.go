package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/internal/item"
	"github.com/poolparity/poolparity/internal/pools"
	"github.com/poolparity/poolparity/internal/redistest"
	"github.com/poolparity/poolparity/internal/server"
	"github.com/poolparity/poolparity/internal/store"
	"github.com/poolparity/poolparity/internal/testtool"
)

// testStore returns a store on a real Redis with a key prefix of its own,
// so that tests sharing REDIS_ADDR never see each other's items.
func testStore(t testing.TB, addr string) (*store.Store, *redis.Client) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{
		Addr: addr, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
		PoolTimeout: 500 * time.Millisecond, MaxRetries: 1,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	var b [6]byte
	_, _ = rand.Read(b[:])
	return store.New(rdb, store.WithKeyPrefix("test:"+hex.EncodeToString(b[:])+":item:")), rdb
}

type env struct {
	h     http.Handler
	reg   *prometheus.Registry
	pools *instrument.Registry
	st    *store.Store
}

func newServer(t testing.TB, st *store.Store, mode pools.Mode, mod ...func(*server.Options)) *env {
	t.Helper()
	reg := prometheus.NewRegistry()
	rec, err := server.NewPromRecorder(reg)
	if err != nil {
		t.Fatal(err)
	}
	preg := instrument.NewRegistry()
	o := server.Options{Store: st, Mode: mode, Pools: preg, Metrics: rec, CheckEvery: 1}
	for _, m := range mod {
		m(&o)
	}
	s, err := server.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return &env{h: s, reg: reg, pools: preg, st: st}
}

func newEnv(t testing.TB, mode pools.Mode, mod ...func(*server.Options)) *env {
	t.Helper()
	st, _ := testStore(t, redistest.Addr(t))
	return newServer(t, st, mode, mod...)
}

// do sends one request through the handler.
func (e *env) do(t testing.TB, method, target string, body io.Reader) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, target, body)
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// modes lists the modes whose responses must be those of unpooled: all
// but misuse-dirty, whose leak TestMisuseDirty shows.
func modes() []struct {
	name string
	mode pools.Mode
} {
	var ms []struct {
		name string
		mode pools.Mode
	}
	for _, m := range pools.Modes {
		if m != pools.ModeMisuseDirty {
			ms = append(ms, struct {
				name string
				mode pools.Mode
			}{string(m), m})
		}
	}
	return ms
}

func TestItemsCRUD(t *testing.T) {
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			e := newEnv(t, m.mode)
			code, body := e.do(t, "PUT", "/api/v1/items/a-1", strings.NewReader(`{"name":"Alpha","tags":["x"],"payload":"hello"}`))
			if code != 200 || string(body) != `{"id":"a-1","name":"Alpha","tags":["x"],"payload":"hello"}`+"\n" {
				t.Fatalf("PUT = %d %s", code, body)
			}
			code, body = e.do(t, "GET", "/api/v1/items/a-1", nil)
			if code != 200 || string(body) != `{"id":"a-1","name":"Alpha","tags":["x"],"payload":"hello"}`+"\n" {
				t.Fatalf("GET = %d %s", code, body)
			}
			// Replacing the item drops fields the new body omits.
			e.do(t, "PUT", "/api/v1/items/a-1", strings.NewReader(`{"name":"Alpha2"}`))
			_, body = e.do(t, "GET", "/api/v1/items/a-1", nil)
			if string(body) != `{"id":"a-1","name":"Alpha2","tags":[],"payload":""}`+"\n" {
				t.Fatalf("GET after replace = %s", body)
			}
			e.do(t, "PUT", "/api/v1/items/b_2", strings.NewReader(`{"name":"Beta","tags":["y","x"],"payload":"p"}`))
			code, body = e.do(t, "GET", "/api/v1/items?limit=10", nil)
			want := `{"count":2,"items":[{"id":"a-1","name":"Alpha2","tags":[]},{"id":"b_2","name":"Beta","tags":["y","x"]}]}` + "\n"
			if code != 200 || string(body) != want {
				t.Fatalf("list = %d %s, want %s", code, body, want)
			}
			code, body = e.do(t, "GET", "/api/v1/items?limit=1", nil)
			if code != 200 || !strings.HasPrefix(string(body), `{"count":1,`) {
				t.Fatalf("list limit=1 = %d %s", code, body)
			}
			code, body = e.do(t, "GET", "/api/v1/report?n=10", nil)
			if code != 200 || !strings.HasPrefix(string(body), `{"items":2,`) {
				t.Fatalf("report = %d %s", code, body)
			}
			if code, _ = e.do(t, "DELETE", "/api/v1/items/a-1", nil); code != 204 {
				t.Fatalf("DELETE = %d", code)
			}
			if code, body = e.do(t, "GET", "/api/v1/items/a-1", nil); code != 404 || string(body) != `{"error":"item not found"}`+"\n" {
				t.Fatalf("GET deleted = %d %s", code, body)
			}
			if code, _ = e.do(t, "DELETE", "/api/v1/items/a-1", nil); code != 404 {
				t.Fatalf("DELETE deleted = %d", code)
			}
		})
	}
}

// seedItems stores a varied set of items: escapes, non-ASCII text, no
// tags, duplicate tags, long payloads.
func seedItems(t testing.TB, e *env, n int) {
	t.Helper()
	words := []string{"pool", "buffer", "Redis", "gray", "stable", "canary", "alloc", "GC", "latency", "héllo", "naïve", "quote\"d", "tab\tbed", "line\nfeed", "emoji😀", "<html>&"}
	for i := range n {
		var p strings.Builder
		for j := range 20 + i%50 {
			p.WriteString(words[(i*7+j*j)%len(words)])
			p.WriteByte(' ')
		}
		it := item.Item{Name: fmt.Sprintf("item %d", i), Payload: p.String()}
		for k := range i % 4 {
			it.Tags = append(it.Tags, words[(i+k)%5], words[i%3])
		}
		b, _ := json.Marshal(it)
		if code, body := e.do(t, "PUT", fmt.Sprintf("/api/v1/items/i%03d", i), bytes.NewReader(b)); code != 200 {
			t.Fatalf("seeding item %d: %d %s", i, code, body)
		}
	}
}

func TestPooledAndUnpooledResponsesAreByteIdentical(t *testing.T) {
	st, _ := testStore(t, redistest.Addr(t))
	pooled := newServer(t, st, pools.ModePooled)
	unpooled := newServer(t, st, pools.ModeUnpooled)
	seedItems(t, unpooled, 120)
	targets := []string{
		"/api/v1/report", "/api/v1/report?n=1", "/api/v1/report?n=7", "/api/v1/report?n=1000",
		"/api/v1/items", "/api/v1/items?limit=3", "/api/v1/items?limit=500",
		"/api/v1/items/i000", "/api/v1/items/i001", "/api/v1/items/i077", "/api/v1/items/missing",
	}
	// Twice, so that the second pooled round runs on recycled objects.
	for round := range 2 {
		for _, target := range targets {
			pc, pb := pooled.do(t, "GET", target, nil)
			uc, ub := unpooled.do(t, "GET", target, nil)
			if pc != uc || !bytes.Equal(pb, ub) {
				t.Fatalf("round %d %s: pooled %d %q\nunpooled %d %q", round, target, pc, pb, uc, ub)
			}
		}
	}
	// The same body stored through either mode reads back the same.
	body := `{"name":"n","tags":["b","a"],"payload":"x\u00e9\ny"}`
	pc, pb := pooled.do(t, "PUT", "/api/v1/items/same", strings.NewReader(body))
	uc, ub := unpooled.do(t, "PUT", "/api/v1/items/same", strings.NewReader(body))
	if pc != uc || !bytes.Equal(pb, ub) {
		t.Fatalf("PUT: pooled %d %q, unpooled %d %q", pc, pb, uc, ub)
	}
	for _, ps := range pooled.pools.Snapshot() {
		if ps.Gets == 0 {
			t.Errorf("pool %s was never used", ps.Name)
		}
		if ps.Dirty != 0 {
			t.Errorf("pool %s: %d dirty objects with the correct resets (every Get checked)", ps.Name, ps.Dirty)
		}
	}
	if got := unpooled.pools.Snapshot(); len(got) != 0 {
		t.Errorf("unpooled mode registered pools: %v", got)
	}
}

// maxErrorBody bounds an error response's size, whatever the input.
const maxErrorBody = 512

func TestBadInputs(t *testing.T) {
	e := newEnv(t, pools.ModePooled)
	big := `{"name":"n","payload":"` + strings.Repeat("a", item.MaxBodyBytes) + `"}`
	tests := []struct {
		name, method, target, body string
		code                       int
		errContains                string
	}{
		{"malformed JSON is rejected", "PUT", "/api/v1/items/x", `{"name":`, 400, "truncated"},
		{"garbage is rejected", "PUT", "/api/v1/items/x", `{name: 1}`, 400, "malformed"},
		{"truncated JSON is rejected", "PUT", "/api/v1/items/x", `{"name":"a","tags":["x"`, 400, "truncated"},
		{"an empty body is rejected", "PUT", "/api/v1/items/x", ``, 400, "empty body"},
		{"a JSON array is rejected", "PUT", "/api/v1/items/x", `[1,2]`, 400, "object"},
		{"JSON null is rejected", "PUT", "/api/v1/items/x", `null`, 400, "object"},
		{"a name of the wrong type is rejected", "PUT", "/api/v1/items/x", `{"name":5}`, 400, `"name"`},
		{"tags of the wrong type are rejected", "PUT", "/api/v1/items/x", `{"name":"a","tags":"x"}`, 400, `"tags"`},
		{"unknown fields are rejected", "PUT", "/api/v1/items/x", `{"name":"a","color":"red"}`, 400, "unknown field"},
		{"trailing data is rejected", "PUT", "/api/v1/items/x", `{"name":"a"} {"name":"b"}`, 400, "trailing"},
		{"trailing garbage is rejected", "PUT", "/api/v1/items/x", `{"name":"a"}xyz`, 400, "trailing"},
		{"a missing name is rejected", "PUT", "/api/v1/items/x", `{"payload":"p"}`, 400, "name is required"},
		{"an empty tag is rejected", "PUT", "/api/v1/items/x", `{"name":"a","tags":[""]}`, 400, "tag 0"},
		{"a body over 1 MiB gets 413", "PUT", "/api/v1/items/x", big, 413, "1 MiB"},
		{"a bad id is rejected", "PUT", "/api/v1/items/bad.id", `{"name":"a"}`, 400, "id must match"},
		{"a too long id is rejected", "GET", "/api/v1/items/" + strings.Repeat("a", 65), "", 400, "id must be"},
		{"a bad id is rejected on GET", "GET", "/api/v1/items/a%20b", "", 400, "id must match"},
		{"a bad list limit is rejected", "GET", "/api/v1/items?limit=0", "", 400, "limit"},
		{"a huge list limit is rejected", "GET", "/api/v1/items?limit=100000", "", 400, "limit"},
		{"a non-numeric report n is rejected", "GET", "/api/v1/report?n=abc", "", 400, "n must be"},
		{"a wrong method gets 405", "POST", "/api/v1/items/x", `{}`, 405, "method not allowed"},
		{"a wrong method on the list gets 405", "DELETE", "/api/v1/items", "", 405, "method not allowed"},
		{"a wrong method on the report gets 405", "PUT", "/api/v1/report", "", 405, "method not allowed"},
		{"an unknown route gets 404", "GET", "/api/v2/nothing", "", 404, "no such route"},
		{"an empty id is an unknown route", "GET", "/api/v1/items/", "", 404, "no such route"},
		{"a 900 KB unknown field name is not echoed", "PUT", "/api/v1/items/x", `{"` + strings.Repeat("f", 900_000) + `":1}`, 400, "unknown field"},
		{"invalid UTF-8 is rejected, not rewritten", "PUT", "/api/v1/items/x", "{\"name\":\"a\xff\xfeb\"}", 400, "UTF-8"},
		{"a lone surrogate is rejected, not rewritten", "PUT", "/api/v1/items/x", `{"name":"a\udc00"}`, 400, "surrogate"},
		{"a case variant of a field is rejected", "PUT", "/api/v1/items/x", `{"name":"a","NAME":"b","Tags":["z"]}`, 400, "unknown field"},
		{"a duplicate field is rejected", "PUT", "/api/v1/items/x", `{"name":"a","name":"b"}`, 400, "duplicate field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := e.do(t, tt.method, tt.target, strings.NewReader(tt.body))
			if code != tt.code {
				t.Fatalf("status %d, want %d (body %s)", code, tt.code, body)
			}
			var resp struct {
				Error string `json:"error"`
			}
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&resp); err != nil || resp.Error == "" {
				t.Fatalf("body %q is not a JSON error: %v", body, err)
			}
			if !strings.Contains(resp.Error, tt.errContains) {
				t.Errorf("error %q does not mention %q", resp.Error, tt.errContains)
			}
			if len(body) > maxErrorBody {
				t.Errorf("error body is %d bytes, want <= %d", len(body), maxErrorBody)
			}
		})
	}
	if got := counterValue(t, e.reg, "http_requests_total", map[string]string{"route": "other", "code": "404"}); got != 2 {
		t.Errorf(`http_requests_total{route="other",code="404"} = %v, want 2`, got)
	}
	if got := counterValue(t, e.reg, "http_requests_total", map[string]string{"route": "/api/v1/items/{id}", "code": "405", "method": "other"}); got != 1 {
		t.Errorf(`http_requests_total{route="/api/v1/items/{id}",code="405"} = %v, want 1`, got)
	}
	if code, _ := e.do(t, "GET", "/api/v1/items/x", nil); code != 404 {
		t.Errorf("a rejected PUT stored something: GET = %d", code)
	}
}

// counterValue sums the counter samples of name whose labels include want.
func counterValue(t testing.TB, g prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabels(m, want) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// TestPooledObjectsNeverLeakBetweenRequests runs many concurrent requests
// with distinct payloads (some omitting tags, the field a stale pooled
// item would carry over) and checks each sees only its own data.
func TestPooledObjectsNeverLeakBetweenRequests(t *testing.T) {
	e := newEnv(t, pools.ModePooled)
	const workers, perWorker = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				id := fmt.Sprintf("w%d-%d", w, i)
				payload := strings.Repeat(id+" ", 1+(w*perWorker+i)%300)
				var body string
				if i%2 == 0 {
					body = fmt.Sprintf(`{"name":%q,"tags":[%q,"t%d"],"payload":%q}`, id, id, i, payload)
				} else {
					body = fmt.Sprintf(`{"name":%q,"payload":%q}`, id, payload)
				}
				want := strings.Replace(body, "{", fmt.Sprintf(`{"id":%q,`, id), 1)
				if i%2 == 1 {
					want = strings.Replace(want, `,"payload"`, `,"tags":[],"payload"`, 1)
				}
				for _, method := range []string{"PUT", "GET"} {
					var r io.Reader
					if method == "PUT" {
						r = strings.NewReader(body)
					}
					req := httptest.NewRequest(method, "/api/v1/items/"+id, r)
					rec := httptest.NewRecorder()
					e.h.ServeHTTP(rec, req)
					if got := strings.TrimSuffix(rec.Body.String(), "\n"); rec.Code != 200 || got != want {
						errs <- fmt.Errorf("%s %s: %d\n got %.200s\nwant %.200s", method, id, rec.Code, got, want)
						return
					}
				}
				if i%10 == 0 { // reports share the scratch pools too
					req := httptest.NewRequest("GET", "/api/v1/report?n=50", nil)
					rec := httptest.NewRecorder()
					e.h.ServeHTTP(rec, req)
					if rec.Code != 200 || !json.Valid(rec.Body.Bytes()) {
						errs <- fmt.Errorf("report: %d %.200s", rec.Code, rec.Body.String())
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestFaultInjection(t *testing.T) {
	draws := []float64{0.1, 0.9, 0.1, 0.9}
	var mu sync.Mutex
	next := func() float64 {
		mu.Lock()
		defer mu.Unlock()
		v := draws[0]
		draws = draws[1:]
		return v
	}
	e := newEnv(t, pools.ModePooled, func(o *server.Options) {
		o.FaultErrorRate = 0.5
		o.FaultLatency = 20 * time.Millisecond
		o.Rand = next
	})
	start := time.Now()
	var codes []int
	for range 4 {
		code, body := e.do(t, "GET", "/api/v1/items/none", nil)
		if code == 500 && !strings.Contains(string(body), "injected fault") {
			t.Errorf("500 body = %s", body)
		}
		codes = append(codes, code)
	}
	if fmt.Sprint(codes) != "[500 404 500 404]" {
		t.Errorf("codes = %v, want [500 404 500 404]", codes)
	}
	if elapsed := time.Since(start); elapsed < 80*time.Millisecond {
		t.Errorf("4 requests took %v, want >= 80ms of injected latency", elapsed)
	}
	if code, _ := e.do(t, "GET", "/healthz", nil); code != 200 {
		t.Errorf("/healthz = %d: faults must not touch health checks", code)
	}
}

// TestARedisOutageGivesJSON503sWhileThePodStaysReady kills the Redis
// server: every request that needs it answers a JSON 503 within a bound,
// /readyz stays 200 (a shared Redis down must not take every pod out of
// the Service), the 503s are logged at a bounded rate, and the service
// serves again once Redis is back, without a restart.
func TestARedisOutageGivesJSON503sWhileThePodStaysReady(t *testing.T) {
	rs := redistest.Start(t)
	st, _ := testStore(t, rs.Addr())
	var logs testtool.LogBuffer
	e := newServer(t, st, pools.ModePooled, func(o *server.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		o.LogEvery = time.Hour
	})
	if code, body := e.do(t, "PUT", "/api/v1/items/k", strings.NewReader(`{"name":"k"}`)); code != 200 {
		t.Fatalf("PUT = %d %s", code, body)
	}
	if code, _ := e.do(t, "GET", "/readyz", nil); code != 200 {
		t.Fatalf("/readyz = %d before the outage", code)
	}

	rs.Stop()
	const bound = 3 * time.Second // dial 0.5s + read 0.5s, one retry, with slack
	for _, target := range []string{"/api/v1/items/k", "/api/v1/items", "/api/v1/report"} {
		start := time.Now()
		code, body := e.do(t, "GET", target, nil)
		if code != 503 || !strings.Contains(string(body), `"error"`) {
			t.Errorf("GET %s during the outage = %d %s, want a JSON 503", target, code, body)
		}
		if d := time.Since(start); d > bound {
			t.Errorf("GET %s took %v during the outage, want < %v", target, d, bound)
		}
		if code, body := e.do(t, "GET", "/readyz", nil); code != 200 {
			t.Errorf("/readyz during the outage = %d %s, want 200: readiness is this pod's, not Redis's", code, body)
		}
	}
	if n := logs.Count("storage unavailable"); n != 1 {
		t.Errorf("%d storage-unavailable lines for 3 failed requests within LogEvery, want 1:\n%s", n, logs.String())
	}

	rs.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _ := e.do(t, "PUT", "/api/v1/items/k", strings.NewReader(`{"name":"k"}`))
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PUT still %d 10s after Redis came back", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, _ := e.do(t, "GET", "/api/v1/items/k", nil); code != 200 {
		t.Errorf("GET after recovery = %d, want 200", code)
	}
}

// downStore is a server.Store whose every call fails, as with Redis gone.
type downStore struct{ repeatingScanStore }

var errDown = errors.New("dial tcp 10.0.0.1:6379: connect: connection refused")

func (downStore) Get(context.Context, string) (string, error)              { return "", errDown }
func (downStore) Put(context.Context, string, []byte, []byte) error        { return errDown }
func (downStore) ScanIDs(context.Context, []string, int) ([]string, error) { return nil, errDown }

// TestReadyzIsThisPodsOwn checks what /readyz answers: 200 while the pod
// serves, whatever its store says, and 503 from StartShutdown on, while
// /healthz stays 200 and every answer carries Connection: close.
func TestReadyzIsThisPodsOwn(t *testing.T) {
	tests := []struct {
		name     string
		store    server.Store
		shutdown bool
		want     int
	}{
		{"a pod with a working store is ready", repeatingScanStore{}, false, 200},
		{"a pod whose store fails is still ready", downStore{}, false, 200},
		{"a draining pod is not ready", repeatingScanStore{}, true, 503},
		{"a draining pod whose store fails is not ready", downStore{}, true, 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := server.New(server.Options{Store: tt.store})
			if err != nil {
				t.Fatal(err)
			}
			if tt.shutdown {
				s.StartShutdown()
			}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
			if rec.Code != tt.want || rec.Header().Get("Content-Type") != "application/json" {
				t.Errorf("/readyz = %d %s (%s), want %d JSON", rec.Code, rec.Body, rec.Header().Get("Content-Type"), tt.want)
			}
			rec = httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
			if rec.Code != 200 {
				t.Errorf("/healthz = %d, want 200", rec.Code)
			}
			if got, want := rec.Header().Get("Connection"), map[bool]string{true: "close"}[tt.shutdown]; got != want {
				t.Errorf("Connection header = %q, want %q", got, want)
			}
		})
	}
}

// TestPoisonedPoolsAnswerTheUnpooledBytes runs the pooled server with
// poisoning on (POOLPARITY_POISON): its handlers use no object after its
// Put, so every response is still the unpooled one, no pool counts a
// poisoned object, and every pool served Gets from the pool, each checked.
func TestPoisonedPoolsAnswerTheUnpooledBytes(t *testing.T) {
	st, _ := testStore(t, redistest.Addr(t))
	poisoned := newServer(t, st, pools.ModePooled, func(o *server.Options) { o.Poison = true })
	unpooled := newServer(t, st, pools.ModeUnpooled)
	seedItems(t, poisoned, 60)
	targets := []string{
		"/api/v1/report", "/api/v1/report?n=7", "/api/v1/items", "/api/v1/items?limit=3",
		"/api/v1/items/i000", "/api/v1/items/i041", "/api/v1/items/missing",
	}
	for round := range 3 {
		for _, target := range targets {
			pc, pb := poisoned.do(t, "GET", target, nil)
			uc, ub := unpooled.do(t, "GET", target, nil)
			if pc != uc || !bytes.Equal(pb, ub) {
				t.Fatalf("round %d %s: poisoned %d %q\nunpooled %d %q", round, target, pc, pb, uc, ub)
			}
		}
	}
	snap := poisoned.pools.Snapshot()
	if len(snap) != len(pools.Names) {
		t.Fatalf("pools %v, want %v", snap, pools.Names)
	}
	for _, ps := range snap {
		if ps.Dirty != 0 {
			t.Errorf("pool %s: %+v, want no poisoned or dirty object with correct handlers", ps.Name, ps.Stats)
		}
		if ps.Gets <= ps.Misses {
			t.Errorf("pool %s: %+v, want Gets served from the pool (and checked)", ps.Name, ps.Stats)
		}
	}
}

// TestMisuseDirty shows the leak of pools.ModeMisuseDirty (a reset that
// forgets the decoded item) and the sanitizer stopping it: with the check
// off, a PUT without tags answers (and stores) the previous request's
// tags; with every Get checked, the dirty scratch is counted, dropped and
// replaced, and no response leaks.
func TestMisuseDirty(t *testing.T) {
	const secret = `{"name":"first","tags":["secret-tag"],"payload":"private"}`
	const plain = `{"name":"second","payload":"p"}`
	for _, tc := range []struct {
		name       string
		checkEvery int
		wantLeak   bool
	}{
		{"sanitizer off: the state leaks into a response", 0, true},
		{"sanitizer on: no leak, the dirty object is counted", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, pools.ModeMisuseDirty, func(o *server.Options) { o.CheckEvery = tc.checkEvery })
			leaked := false
			// A few rounds: the pooled scratch may land on another P's slot.
			for i := range 20 {
				if code, b := e.do(t, "PUT", fmt.Sprintf("/api/v1/items/s%d", i), strings.NewReader(secret)); code != 200 {
					t.Fatalf("PUT = %d %s", code, b)
				}
				code, b := e.do(t, "PUT", fmt.Sprintf("/api/v1/items/p%d", i), strings.NewReader(plain))
				if code != 200 {
					t.Fatalf("PUT = %d %s", code, b)
				}
				if bytes.Contains(b, []byte("secret-tag")) {
					leaked = true
				}
			}
			if leaked != tc.wantLeak {
				t.Errorf("a response leaked the previous request's tags: %v, want %v", leaked, tc.wantLeak)
			}
			var dirty uint64
			for _, ps := range e.pools.Snapshot() {
				dirty += ps.Dirty
			}
			if tc.checkEvery > 0 && dirty == 0 {
				t.Error("the sanitizer counted no dirty object in misuse-dirty")
			}
			if tc.checkEvery == 0 && dirty != 0 {
				t.Errorf("dirty = %d with the sanitizer off", dirty)
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/poolparity/poolparity/hack/kindrun/probeapi"
	"github.com/poolparity/poolparity/internal/loadgen"
)

// maxErrorSamples bounds Counts.Errors (the harness reads the new ones of each fault).
const maxErrorSamples = 1000

// counter is a Counts safe for concurrent use.
type counter struct {
	mu sync.Mutex
	c  probeapi.Counts
}

func newCounter() *counter { return &counter{c: probeapi.Counts{ByCode: map[string]uint64{}}} }

func (k *counter) sample(s string) {
	if len(k.c.Errors) < maxErrorSamples {
		k.c.Errors = append(k.c.Errors, s)
	}
}

// answer counts one HTTP answer; body is read only for a 5xx.
func (k *counter) answer(code int, json5xx bool, odd string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.c.Requests++
	k.c.ByCode[strconv.Itoa(code)]++
	switch {
	case code >= 500 && json5xx:
		k.c.JSON5xx++
	case code >= 500:
		k.c.Other5xx++
		k.sample(odd)
	case code >= 400:
		k.c.ClientErrors++
	default:
		k.c.OK++
	}
}

// failure counts one request that got no answer.
func (k *counter) failure(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.c.Requests++
	k.c.Transport++
	k.sample(err.Error())
}

func (k *counter) snapshot() probeapi.Counts {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.c
	c.ByCode = make(map[string]uint64, len(k.c.ByCode))
	for code, n := range k.c.ByCode {
		c.ByCode[code] = n
	}
	c.Errors = append([]string(nil), k.c.Errors...)
	return c
}

// isJSONError reports whether body is the service's error answer: a JSON object with an error.
func isJSONError(contentType string, body []byte) bool {
	if !strings.HasPrefix(contentType, "application/json") {
		return false
	}
	var e struct {
		Error string `json:"error"`
	}
	return json.Unmarshal(body, &e) == nil && e.Error != ""
}

// countingTransport counts every round trip into k. A request whose context ended (the load
// stopped) is not counted: that is the client's doing.
type countingTransport struct {
	next http.RoundTripper
	k    *counter
}

// RoundTrip implements http.RoundTripper.
func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		if req.Context().Err() == nil {
			t.k.failure(err)
		}
		return nil, err
	}
	if resp.StatusCode < 500 {
		t.k.answer(resp.StatusCode, false, "")
		return resp, nil
	}
	// A 5xx body is small; read it to tell the service's JSON answer from anything else.
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if rerr != nil && req.Context().Err() == nil {
		t.k.failure(fmt.Errorf("reading a %d answer: %w", resp.StatusCode, rerr))
		return nil, rerr
	}
	t.k.answer(resp.StatusCode, isJSONError(resp.Header.Get("Content-Type"), body), fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(body)))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// probe is the chaos step's client: one load at a time, and the acknowledged items per set.
type probe struct {
	target string
	host   string
	http   *http.Client // items: keep-alive, as the load

	mu     sync.Mutex
	load   *loadRun
	acked  map[string]map[string][]byte // set -> id -> the PUT's answer
	serial int
}

// loadRun is one load in flight.
type loadRun struct {
	k      *counter
	cancel context.CancelFunc
	done   chan struct{}
}

// itemTimeout bounds one item request of the verifying client, and requestTimeout one request of
// the load: longer than the service's own Redis timeouts (dial 2 s, pool 2 s), so that a slow
// 503 is counted as the 503 it is.
const (
	itemTimeout    = 10 * time.Second
	requestTimeout = 10 * time.Second
)

func newProbe(target string, inCluster bool) (*probe, error) {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("-target must be a base URL such as http://poolparity:80, got %q", target)
	}
	if !inCluster {
		if err := loadgen.CheckLoopback(target); err != nil {
			return nil, fmt.Errorf("%w (a Service host name is allowed only in a Kubernetes pod)", err)
		}
	}
	return &probe{
		target: strings.TrimRight(target, "/"), host: u.Hostname(),
		http:  &http.Client{Timeout: itemTimeout, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}},
		acked: map[string]map[string][]byte{},
	}, nil
}

func (p *probe) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /load/start", p.startLoad)
	mux.HandleFunc("GET /load/counts", p.counts)
	mux.HandleFunc("POST /load/stop", func(w http.ResponseWriter, _ *http.Request) {
		c, err := p.stopLoad()
		if err != nil {
			writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, c)
	})
	mux.HandleFunc("POST /items/write", p.write)
	mux.HandleFunc("POST /items/verify", p.verify)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func badRequest(w http.ResponseWriter, err error) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
}

// loadParams reads rps, concurrency and duration, bounded.
func loadParams(q url.Values) (rps float64, conc int, d time.Duration, err error) {
	rps, err = strconv.ParseFloat(q.Get("rps"), 64)
	if err != nil || rps <= 0 || rps > 200 {
		return 0, 0, 0, fmt.Errorf("rps must be in (0, 200], got %q", q.Get("rps"))
	}
	conc, err = strconv.Atoi(q.Get("concurrency"))
	if err != nil || conc < 1 || conc > 64 {
		return 0, 0, 0, fmt.Errorf("concurrency must be in [1, 64], got %q", q.Get("concurrency"))
	}
	d, err = time.ParseDuration(q.Get("duration"))
	if err != nil || d <= 0 || d > 20*time.Minute {
		return 0, 0, 0, fmt.Errorf("duration must be in (0, 20m], got %q", q.Get("duration"))
	}
	return rps, conc, d, nil
}

func (p *probe) startLoad(w http.ResponseWriter, r *http.Request) {
	rps, conc, d, err := loadParams(r.URL.Query())
	if err != nil {
		badRequest(w, err)
		return
	}
	fresh, err := strconv.ParseFloat(r.URL.Query().Get("fresh"), 64)
	if err != nil || fresh < 0 || fresh > 50 {
		badRequest(w, fmt.Errorf("fresh must be in [0, 50], got %q", r.URL.Query().Get("fresh")))
		return
	}
	k := newCounter()
	// Keep-alive, as real clients: a pod that goes away must move its clients by closing their
	// connections (Connection: close while draining), not by being dialled no more.
	client := &http.Client{Timeout: requestTimeout, Transport: countingTransport{k: k, next: &http.Transport{
		Proxy: nil, MaxIdleConns: conc, MaxIdleConnsPerHost: conc, IdleConnTimeout: 30 * time.Second,
	}}}
	cfg := loadgen.Config{
		BaseURL: p.target, AllowHosts: []string{p.host}, Duration: d, MaxRequests: int(rps*d.Seconds()) + 1,
		RPS: rps, Concurrency: conc, Keys: 200, Seed: uint64(time.Now().UnixNano()), Timeout: requestTimeout,
	}
	gens := []*loadgen.Generator{}
	g, err := loadgen.New(cfg, client)
	if err != nil {
		badRequest(w, err)
		return
	}
	gens = append(gens, g)
	if fresh > 0 {
		// Item reads, each on a new connection: what a client that connects now meets. Kept-alive
		// connections stay with their pod whatever the Service's endpoints say; a new connection
		// is refused when the Service has none.
		cfg.RPS, cfg.Concurrency, cfg.Mix, cfg.MaxRequests = fresh, 2, loadgen.Mix{Get: 1}, int(fresh*d.Seconds())+1
		client := &http.Client{Timeout: requestTimeout, Transport: countingTransport{k: k, next: &http.Transport{Proxy: nil, DisableKeepAlives: true}}}
		g, err := loadgen.New(cfg, client)
		if err != nil {
			badRequest(w, err)
			return
		}
		gens = append(gens, g)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.load != nil {
		writeJSON(w, http.StatusConflict, map[string]string{"error": "a load is running"})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &loadRun{k: k, cancel: cancel, done: make(chan struct{})}
	p.load = l
	go func() {
		defer close(l.done)
		var wg sync.WaitGroup
		for _, g := range gens {
			wg.Go(func() { _, _ = g.Run(ctx) })
		}
		wg.Wait()
	}()
	writeJSON(w, http.StatusOK, map[string]any{"rps": rps, "concurrency": conc, "fresh": fresh, "duration": d.String()})
}

func (p *probe) counts(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	l := p.load
	p.mu.Unlock()
	if l == nil {
		writeJSON(w, http.StatusConflict, map[string]string{"error": "no load is running"})
		return
	}
	writeJSON(w, http.StatusOK, l.k.snapshot())
}

// stopLoad ends the load and returns its final counts.
func (p *probe) stopLoad() (probeapi.Counts, error) {
	p.mu.Lock()
	l := p.load
	p.load = nil
	p.mu.Unlock()
	if l == nil {
		return probeapi.Counts{}, errors.New("no load is running")
	}
	l.cancel()
	<-l.done
	return l.k.snapshot(), nil
}

// newItem is a body with a payload of random words, about size bytes.
func newItem(rnd *rand.Rand, name string, size int) []byte {
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"}
	var b strings.Builder
	for b.Len() < size {
		b.WriteString(words[rnd.IntN(len(words))])
		b.WriteByte(' ')
	}
	body, _ := json.Marshal(map[string]any{"name": name, "tags": []string{"chaos", words[rnd.IntN(len(words))]}, "payload": b.String()})
	return body
}

// write PUTs n new items of the set one after another and keeps the acknowledged ones (2xx)
// with the bytes of their answer, which a later read must repeat.
func (p *probe) write(w http.ResponseWriter, r *http.Request) {
	set := r.URL.Query().Get("set")
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if set == "" || strings.Trim(set, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" || err != nil || n < 1 || n > 1000 {
		badRequest(w, errors.New("want set=[a-z0-9-]+ and n in [1, 1000]"))
		return
	}
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var out probeapi.Written
	for range n {
		p.mu.Lock()
		p.serial++
		id := fmt.Sprintf("chaos-%s-%05d", set, p.serial)
		p.mu.Unlock()
		code, ans, err := p.do(r.Context(), http.MethodPut, id, newItem(rnd, id, 200+rnd.IntN(4000)))
		if err != nil || code != http.StatusOK {
			out.Failed++
			if len(out.Errors) < maxErrorSamples {
				out.Errors = append(out.Errors, fmt.Sprintf("PUT %s: %d %v %s", id, code, err, bytes.TrimSpace(ans)))
			}
			continue
		}
		out.Acked++
		p.mu.Lock()
		if p.acked[set] == nil {
			p.acked[set] = map[string][]byte{}
		}
		p.acked[set][id] = ans
		p.mu.Unlock()
	}
	p.mu.Lock()
	out.Total = len(p.acked[set])
	p.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// verify reads every acknowledged item of the set back and compares it byte for byte with the
// answer its PUT got (the service answers a PUT and a GET with the same encoding).
func (p *probe) verify(w http.ResponseWriter, r *http.Request) {
	set := r.URL.Query().Get("set")
	p.mu.Lock()
	items := make(map[string][]byte, len(p.acked[set]))
	for id, b := range p.acked[set] {
		items[id] = b
	}
	p.mu.Unlock()
	var out probeapi.Verified
	for id, want := range items {
		out.Checked++
		code, got, err := p.do(r.Context(), http.MethodGet, id, nil)
		switch {
		case err != nil || code >= 500:
			out.Unavailable++
		case code == http.StatusNotFound:
			out.Lost++
			note(&out, fmt.Sprintf("%s: acknowledged, now 404", id))
		case code != http.StatusOK:
			out.Mismatched++
			note(&out, fmt.Sprintf("%s: %d %s", id, code, bytes.TrimSpace(got)))
		case !bytes.Equal(got, want):
			out.Mismatched++
			note(&out, fmt.Sprintf("%s: %d bytes read, %d acknowledged; first difference at byte %d", id, len(got), len(want), firstDiff(got, want)))
		default:
			out.Matched++
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func note(v *probeapi.Verified, s string) {
	if len(v.Mismatches) < maxErrorSamples {
		v.Mismatches = append(v.Mismatches, s)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// do sends one item request and returns the status and body.
func (p *probe) do(ctx context.Context, method, id string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.target+"/api/v1/items/"+id, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

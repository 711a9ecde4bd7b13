package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poolparity/poolparity/hack/kindrun/probeapi"
)

// fakeService answers item PUTs and GETs as the service does (the same JSON for both), from a
// map; gone empties it (a Redis that lost its data), and down makes it answer JSON 503s.
type fakeService struct {
	mu    sync.Mutex
	items map[string][]byte
	down  bool
}

func (f *fakeService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := strings.TrimPrefix(r.URL.Path, "/api/v1/items/")
	w.Header().Set("Content-Type", "application/json")
	if f.down {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":"storage unavailable"}`)
		return
	}
	switch r.Method {
	case http.MethodPut:
		b, _ := io.ReadAll(r.Body)
		ans, _ := json.Marshal(map[string]any{"id": id, "item": json.RawMessage(b)})
		f.items[id] = ans
		_, _ = w.Write(ans)
	case http.MethodGet:
		b, ok := f.items[id]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":"item not found"}`)
			return
		}
		_, _ = w.Write(b)
	}
}

func TestWriteThenVerifyFindsWhatWasLostOrChanged(t *testing.T) {
	svc := &fakeService{items: map[string][]byte{}}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	p, err := newProbe(srv.URL, false)
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(p.routes())
	defer api.Close()
	c := probeapi.NewClient(api.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	w, err := c.Write(ctx, "s", 5)
	if err != nil || w.Acked != 5 || w.Failed != 0 {
		t.Fatalf("Write = %+v, %v: want 5 acknowledged", w, err)
	}
	v, err := c.Verify(ctx, "s")
	if err != nil || v.Checked != 5 || v.Matched != 5 {
		t.Fatalf("Verify = %+v, %v: want 5 matched", v, err)
	}

	svc.mu.Lock()
	svc.down = true
	svc.mu.Unlock()
	if v, _ := c.Verify(ctx, "s"); v.Unavailable != 5 {
		t.Errorf("Verify with the store down = %+v: want 5 unavailable", v)
	}

	svc.mu.Lock()
	svc.down = false
	n := 0
	for id := range svc.items {
		if n == 0 {
			delete(svc.items, id)
		} else if n == 1 {
			svc.items[id] = append([]byte(nil), svc.items[id]...)
			svc.items[id][len(svc.items[id])-2] ^= 1
		}
		n++
	}
	svc.mu.Unlock()
	v, err = c.Verify(ctx, "s")
	if err != nil || v.Lost != 1 || v.Mismatched != 1 || v.Matched != 3 || len(v.Mismatches) != 2 {
		t.Errorf("Verify after a loss and a change = %+v, %v: want 1 lost, 1 changed, 3 matched", v, err)
	}
}

func TestCountingTransportTellsTheServicesAnswerFromAConnectionError(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "{}") })
	mux.HandleFunc("/json503", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":"storage unavailable"}`)
	})
	mux.HandleFunc("/proxy502", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "upstream connect error")
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) })
	srv := httptest.NewServer(mux)
	k := newCounter()
	client := &http.Client{Transport: countingTransport{k: k, next: http.DefaultTransport}}
	for _, path := range []string{"/ok", "/json503", "/proxy502", "/missing"} {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
	}
	srv.Close()
	if _, err := client.Get(srv.URL + "/ok"); err == nil {
		t.Fatal("GET of a closed server succeeded")
	}
	got := k.snapshot()
	if got.Requests != 5 || got.OK != 1 || got.JSON5xx != 1 || got.Other5xx != 1 || got.ClientErrors != 1 || got.Transport != 1 {
		t.Errorf("counts = %+v: want 5 requests, 1 ok, 1 JSON 5xx, 1 other 5xx, 1 4xx, 1 transport error", got)
	}
	if got.ConnectionErrors() != 2 || got.Failed() != 3 {
		t.Errorf("connection errors %d, failed %d: want 2 and 3", got.ConnectionErrors(), got.Failed())
	}
}

func TestNewProbeWantsLoopbackOutsideAPod(t *testing.T) {
	if _, err := newProbe("http://poolparity:80", false); err == nil {
		t.Error("a Service name outside a pod was accepted")
	}
	if _, err := newProbe("http://poolparity:80", true); err != nil {
		t.Errorf("a Service name in a pod: %v", err)
	}
	if _, err := newProbe("not a url", true); err == nil {
		t.Error("a bad target was accepted")
	}
}

package probeapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/poolparity/poolparity/hack/kindrun/probeapi"
)

func TestSubCountsOnlyWhatCameSince(t *testing.T) {
	before := probeapi.Counts{Requests: 10, OK: 8, JSON5xx: 1, Transport: 1, ByCode: map[string]uint64{"200": 8, "503": 1}, Errors: []string{"a"}}
	now := probeapi.Counts{Requests: 25, OK: 18, ClientErrors: 2, JSON5xx: 2, Other5xx: 1, Transport: 2,
		ByCode: map[string]uint64{"200": 18, "503": 2, "502": 1, "404": 2}, Errors: []string{"a", "b", "c"}}
	d := now.Sub(before)
	if d.Requests != 15 || d.OK != 10 || d.ClientErrors != 2 || d.Failed() != 3 || d.ConnectionErrors() != 2 {
		t.Errorf("Sub = %+v: want 15 requests, 10 ok, 2 client errors, 3 failed of which 2 connection errors", d)
	}
	if d.ByCode["200"] != 10 || d.ByCode["503"] != 1 || d.ByCode["502"] != 1 || d.ByCode["404"] != 2 {
		t.Errorf("Sub's codes = %v", d.ByCode)
	}
	if len(d.Errors) != 2 || d.Errors[0] != "b" {
		t.Errorf("Sub's errors = %v, want the two new ones", d.Errors)
	}
}

func TestClientReportsTheProbesError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/load/counts" {
			t.Errorf("path %s", r.URL.Path)
		}
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"error":"no load is running"}`))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := probeapi.NewClient(srv.URL).Counts(ctx); err == nil {
		t.Fatal("Counts succeeded on a 409")
	}
}

package loadgen_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/targets"
)

// answers answers each path with its own status, Content-Type and body.
func answers(w http.ResponseWriter, r *http.Request) {
	type answer struct {
		code        int
		ctype, body string
	}
	a := map[string]answer{
		"/ok":       {200, "application/json", `{"a":[1,2]}`},
		"/problem":  {200, "application/problem+json; charset=utf-8", `{"title":"x"}`},
		"/trailing": {200, "application/json", `{"a":1}{"a":2}`},
		"/cut":      {200, "application/json", `[{"a":1},{"a"`},
		"/empty":    {200, "application/json", ``},
		"/error":    {500, "application/json", `{"err`},
		"/text":     {200, "text/plain", `{"not json`},
		"/nobody":   {204, "application/json", ``},
	}[r.URL.Path]
	w.Header().Set("Content-Type", a.ctype)
	w.WriteHeader(a.code)
	_, _ = w.Write([]byte(a.body))
}

func TestCheckJSONCountsMalformedAnswers(t *testing.T) {
	tests := []struct {
		name      string
		method    string
		path      string
		check     bool
		malformed uint64 // of 10 requests
	}{
		{"valid JSON is not malformed", http.MethodGet, "/ok", true, 0},
		{"a +json type is checked", http.MethodGet, "/problem", true, 0},
		{"trailing data after a value is malformed", http.MethodGet, "/trailing", true, 10},
		{"a value cut short is malformed", http.MethodGet, "/cut", true, 10},
		{"an empty JSON body is malformed", http.MethodGet, "/empty", true, 10},
		{"a 5xx's JSON is checked too", http.MethodGet, "/error", true, 10},
		{"a body that does not say JSON is not checked", http.MethodGet, "/text", true, 0},
		{"a 204 is not checked", http.MethodGet, "/nobody", true, 0},
		{"a HEAD is not checked", http.MethodHead, "/cut", true, 0},
		{"nothing is checked unless asked", http.MethodGet, "/cut", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, sampled := range []bool{false, true} {
				st := replayChecked(t, []targets.Target{{Method: tt.method, URL: tt.path}}, tt.check, sampled)
				if st.Malformed != tt.malformed || st.Requests != 10 {
					t.Errorf("sampled %v: %d malformed of %d requests, want %d of 10", sampled, st.Malformed, st.Requests, tt.malformed)
				}
			}
		})
	}
}

func replayChecked(t *testing.T, ts []targets.Target, check, sampled bool) loadgen.Stats {
	t.Helper()
	var s *loadgen.Sampling
	if sampled {
		s = &loadgen.Sampling{Every: 1, Max: 100, Sink: func(loadgen.Sample) {}}
	}
	srvURL := serveFunc(t, answers)
	c := cfg(srvURL)
	c.Targets, c.MaxRequests, c.CheckJSON, c.Sample = ts, 10, check, s
	g, err := loadgen.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := g.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func serveFunc(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

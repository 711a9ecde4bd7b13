package splitter_test

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/splitter"
)

func backend(t *testing.T, name string, code int) *url.URL {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		_, _ = io.WriteString(w, name)
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestPickFollowsTheWeight(t *testing.T) {
	stable, _ := url.Parse("http://127.0.0.1:1")
	gray, _ := url.Parse("http://127.0.0.1:2")
	const n = 20000
	for _, w := range []int{0, 10, 50, 90, 100} {
		s, err := splitter.New(stable, gray, w, 42)
		if err != nil {
			t.Fatal(err)
		}
		grays := 0
		for range n {
			if s.Pick() == splitter.Gray {
				grays++
			}
		}
		p := float64(w) / 100
		// Five standard deviations of a binomial(n, p): false failures are
		// practically impossible, and the seed is fixed anyway.
		tol := 5 * math.Sqrt(n*p*(1-p))
		if math.Abs(float64(grays)-n*p) > tol {
			t.Errorf("weight %d: %d of %d requests went to gray, want %.0f ± %.0f", w, grays, n, n*p, tol)
		}
	}
}

func TestServeHTTPForwardsAndCounts(t *testing.T) {
	stable := backend(t, "stable", http.StatusOK)
	gray := backend(t, "gray", http.StatusInternalServerError)
	s, err := splitter.New(stable, gray, 50, 7)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(s)
	defer front.Close()

	const n = 400
	bodies := map[string]int{}
	for range n {
		resp, err := http.Get(front.URL + "/api/v1/items/x")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		bodies[string(b)]++
	}
	st, gr := s.Stats(splitter.Stable), s.Stats(splitter.Gray)
	if st.Requests+gr.Requests != n {
		t.Fatalf("stats count %d requests, want %d", st.Requests+gr.Requests, n)
	}
	if int(st.Requests) != bodies["stable"] || int(gr.Requests) != bodies["gray"] {
		t.Errorf("stats %+v/%+v disagree with the responses %v", st, gr, bodies)
	}
	if st.Errors != 0 || gr.Errors != gr.Requests {
		t.Errorf("errors: stable %d (want 0), gray %d (want %d)", st.Errors, gr.Errors, gr.Requests)
	}
}

func TestUnreachableBackendIsA502(t *testing.T) {
	// A listener that is closed at once gives a port nobody listens on.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL, _ := url.Parse(dead.URL)
	dead.Close()
	s, err := splitter.New(deadURL, deadURL, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusBadGateway {
		t.Errorf("status %d, want 502", rec.Code)
	}
	var body struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || !strings.HasPrefix(body.Error, "splitter: stable backend: ") {
		t.Errorf("body %q: want a JSON error naming the stable backend (decode error: %v)", rec.Body.String(), err)
	}
	if got := s.Stats(splitter.Stable); got.Errors != 1 {
		t.Errorf("stable errors %d, want 1", got.Errors)
	}
}

func TestNewRejectsABadWeight(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1")
	for _, w := range []int{-1, 101} {
		if _, err := splitter.New(u, u, w, 1); !errors.Is(err, splitter.ErrWeight) {
			t.Errorf("weight %d: error %v, want ErrWeight", w, err)
		}
	}
}

package diffcheck_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/poolparity/poolparity/internal/diffcheck"
	"github.com/poolparity/poolparity/internal/targets"
)

// Two builds of a service are compared on the requests of a requests file:
// the field that changes with every answer is learned as noise, the one
// gray changed is reported.
func Example() {
	build := func(version string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"path":%q,"served_at":%d,"version":%q}`, r.URL.Path, time.Now().UnixNano(), version)
		})
	}
	stable, gray := httptest.NewServer(build("1")), httptest.NewServer(build("2"))
	defer stable.Close()
	defer gray.Close()

	ts, err := targets.Parse(strings.NewReader("GET /a\n\nGET /b\n"), "requests", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := diffcheck.Check(context.Background(), nil, stable.URL, "", gray.URL, ts, diffcheck.Options{Requests: 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %d of %d mismatch\n", r.Outcome, r.Mismatches, r.Compared)
	for _, p := range r.Paths {
		fmt.Printf("mismatch in %d requests at %s %s (%s): %s vs %s\n", p.Requests, p.Endpoint, p.Pattern, p.Kind, p.Example.A, p.Example.B)
	}
	for _, n := range r.Noise {
		fmt.Printf("noise at %s %s\n", n.Endpoint, n.Pattern)
	}
	// Output:
	// FAIL: 10 of 10 mismatch
	// mismatch in 5 requests at GET /a $.version (value): "1" vs "2"
	// mismatch in 5 requests at GET /b $.version (value): "1" vs "2"
	// noise at GET /a $.served_at
	// noise at GET /b $.served_at
}

package demo_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/demo"
)

// TestDocumentedDefaultsMatch checks the default figures written in prose
// (Default's comment, docs/demo.md's settings table, the README) against
// Default(), so that a changed default cannot leave a stale figure behind.
func TestDocumentedDefaultsMatch(t *testing.T) {
	d := demo.Default()
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	rps := fmt.Sprintf("%g", d.RPS)
	for _, tc := range []struct {
		name, file string
		re         *regexp.Regexp // its first group is the figure
		want       string
	}{
		{"Default's comment gives the request rate", "config.go", regexp.MustCompile(`scenario at (\d+) req/s`), rps},
		{"docs/demo.md gives DEMO_RPS", "../../docs/demo.md", regexp.MustCompile("`DEMO_RPS` \\| `-rps` \\| (\\d+) \\|"), rps},
		{"docs/demo.md gives DEMO_CONCURRENCY", "../../docs/demo.md", regexp.MustCompile("`DEMO_CONCURRENCY` \\| `-concurrency` \\| (\\d+) \\|"), fmt.Sprint(d.Concurrency)},
		{"the README gives the request rate", "../../README.md", regexp.MustCompile(`(\d+) requests/s`), rps},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := read(tc.file)
			ms := tc.re.FindAllStringSubmatch(text, -1)
			if len(ms) == 0 {
				t.Fatalf("%s: no match for %s", tc.file, tc.re)
			}
			for _, m := range ms {
				if m[1] != tc.want {
					t.Errorf("%s says %q, the default is %s", tc.file, strings.TrimSpace(m[0]), tc.want)
				}
			}
		})
	}
}

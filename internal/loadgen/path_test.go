package loadgen_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/poolparity/poolparity/internal/loadgen"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		tmpl    string
		want    map[string]bool // every path it may return; nil: an error
		wantErr string
	}{
		{"/thumbnail/img-{key}?w={64|128}", map[string]bool{"/thumbnail/img-7?w=64": true, "/thumbnail/img-7?w=128": true}, ""},
		{"/static", map[string]bool{"/static": true}, ""},
		{"/{a}/{key}{key}", map[string]bool{"/a/77": true}, ""},
		{"thumbnail", nil, "starting with /"},
		{"/a b", nil, "no spaces"},
		{"/a#frag", nil, "'#'"},
		{"/a\x00", nil, "control"},
		{"/a{key", nil, "'{' without its '}'"},
		{"/a{x{y}}", nil, "'{' without its '}'"},
		{"/a}", nil, "'}' without '{'"},
		{"/a{}", nil, "non-empty choices"},
		{"/a{x||y}", nil, "non-empty choices"},
		{"/" + strings.Repeat("a", loadgen.MaxPathTemplate), nil, "longer than"},
		{"/\xff", nil, "no spaces"},
	}
	for _, tt := range tests {
		t.Run(tt.tmpl, func(t *testing.T) {
			path, err := loadgen.ParsePath(tt.tmpl)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rnd := rand.New(rand.NewPCG(1, 2))
			seen := map[string]bool{}
			for range 100 {
				p := path(7, rnd)
				if !tt.want[p] {
					t.Fatalf("path %q, want one of %v", p, tt.want)
				}
				seen[p] = true
			}
			if len(seen) != len(tt.want) {
				t.Errorf("100 draws gave %v, want every one of %v", seen, tt.want)
			}
		})
	}
}

// FuzzParsePath: any template is refused with an error or gives paths that
// start with / and hold no space, control character or invalid UTF-8; never
// a panic.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/thumbnail/img-{key}?w={64|128}", "/a{key", "/a}", "/{|}", "/{x}{y|z}", "/%7B"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, tmpl string, key int) {
		path, err := loadgen.ParsePath(tmpl)
		if err != nil {
			return
		}
		rnd := rand.New(rand.NewPCG(uint64(key), 1))
		for range 3 {
			p := path(key, rnd)
			if !strings.HasPrefix(p, "/") || !utf8.ValidString(p) || strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
				t.Fatalf("template %q gave path %q", tmpl, p)
			}
		}
	})
}

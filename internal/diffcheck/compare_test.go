package diffcheck_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/diffcheck"
)

func TestCompare(t *testing.T) {
	const js = "application/json"
	tests := []struct {
		name, a, b, ct string
		want           []string // each diff's String()
	}{
		{"key order and white space do not count", `{"a":1,"b":[true,null]}`, "{ \"b\" : [ true , null ],\n\"a\":1 }", js, nil},
		{"number formatting does not count", `{"n":[1,1.5,100,0]}`, `{"n":[1.0,15e-1,1e2,-0]}`, js, nil},
		{"large integers are compared exactly", `9007199254740993`, `9007199254740992`, js, []string{"$ value: 9007199254740993 | 9007199254740992"}},
		{"a changed field has its path", `{"items":[{"id":1},{"id":2}]}`, `{"items":[{"id":1},{"id":3}]}`, js, []string{"$.items[1].id value: 2 | 3"}},
		{"an odd key is quoted", `{"a b":"x"}`, `{"a b":"y"}`, "application/problem+json", []string{`$["a b"] value: "x" | "y"`}},
		{"missing and extra members and elements", `{"a":1,"l":[1,2]}`, `{"b":2,"l":[1]}`, js, []string{
			"$.a missing: 1 | ", "$.b extra:  | 2", "$.l[1] missing: 2 | ",
		}},
		{"a type change", `{"a":"1"}`, `{"a":1}`, js, []string{`$.a type: "1" | 1`}},
		{"trailing garbage after gray's JSON", `{"a":1}`, `{"a":1}{"a":1}`, js, []string{"$ invalid-json: valid JSON | invalid JSON: invalid character '{' after top-level value"}},
		{"a truncated JSON body from stable", `{"a":`, `{"a":1}`, js, []string{"$ invalid-json: invalid JSON: unexpected end of JSON input | valid JSON"}},
		{"invalid JSON on both sides is compared as bytes", `{x`, `{y`, js, []string{"$ bytes: 2 bytes, from byte 1: x | 2 bytes, from byte 1: y"}},
		{"equal non-JSON bodies", "a,b\n1,2", "a,b\n1,2", "text/csv", nil},
		{"non-JSON bodies are compared as bytes", "a,b\n1,2", "a,b\n1,3", "text/csv", []string{`$ bytes: 7 bytes, from byte 6: 2 | 7 bytes, from byte 6: 3`}},
		{"control characters are escaped", "a\n\xff", "a\r", "text/plain", []string{`$ bytes: 3 bytes, from byte 1: \x0a\xff | 2 bytes, from byte 1: \x0d`}},
		{"JSON under a text type is compared as bytes", `{"a":1,"b":2}`, `{"b":2,"a":1}`, "text/plain", []string{`$ bytes: 13 bytes, from byte 2: a":1,"b":2} | 13 bytes, from byte 2: b":2,"a":1}`}},
		{"no content type and JSON is JSON", `{"a":1,"b":2}`, `{"b":2,"a":1}`, "", nil},
		{"no content type and text is bytes", `hello`, `hellO`, "", []string{"$ bytes: 5 bytes, from byte 4: o | 5 bytes, from byte 4: O"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, d := range diffcheck.Compare([]byte(tt.a), []byte(tt.b), tt.ct) {
				got = append(got, d.String())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("diffs\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestCompareIsBounded(t *testing.T) {
	a, b := map[string]int{}, map[string]int{}
	for i := range 1000 {
		a[fmt.Sprint("k", i)], b[fmt.Sprint("k", i)] = i, i+1
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if n := len(diffcheck.Compare(ja, jb, "application/json")); n != diffcheck.MaxDiffs {
		t.Errorf("%d diffs of 1000 changed fields, want MaxDiffs (%d)", n, diffcheck.MaxDiffs)
	}
	long := `"` + strings.Repeat("é", 1000) + `"`
	d := diffcheck.Compare([]byte(long), []byte(`"x"`), "application/json")
	if len(d) != 1 || len(d[0].A) > 2*diffcheck.MaxShown+3 || !strings.HasSuffix(d[0].A, "...") {
		t.Errorf("diff %v, want one with A cut at %d bytes", d, diffcheck.MaxShown)
	}
}

func TestPattern(t *testing.T) {
	if got := diffcheck.Pattern(`$.items[3].tags[12]["a b"]`); got != `$.items[*].tags[*]["a b"]` {
		t.Errorf("Pattern = %q", got)
	}
}

func TestWilson(t *testing.T) {
	tests := []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 0, 0, 1},
		{0, 10, 0, 0.2775},
		{5, 10, 0.2366, 0.7634},
		{10, 10, 0.7225, 1},
		{0, 400, 0, 0.00952},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d of %d", tt.k, tt.n), func(t *testing.T) {
			lo, hi := diffcheck.Wilson(tt.k, tt.n)
			if math.Abs(lo-tt.lo) > 1e-4 || math.Abs(hi-tt.hi) > 1e-4 {
				t.Errorf("Wilson = [%.5f, %.5f], want [%.5f, %.5f]", lo, hi, tt.lo, tt.hi)
			}
		})
	}
}

// FuzzCompare: Compare never panics; a body compared with itself has no
// diff; a pair has diffs in one order if and only if in the other (when
// the content type is JSON, so that both orders compare alike); diffs are
// bounded and their paths well formed.
func FuzzCompare(f *testing.F) {
	for _, s := range [][2]string{
		{`{"a":1,"b":[1,2]}`, `{"b":[1,2,3],"a":1.0}`},
		{`{"a":1}`, `{"a":1}{"a":1}`},
		{`[1e400]`, `[1e401]`},
		{`{"a b":{"c":null}}`, `{"a b":{"c":false}}`},
		{`x`, `y`},
		{``, `{}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]), "application/json")
		f.Add([]byte(s[0]), []byte(s[1]), "text/plain")
	}
	f.Fuzz(func(t *testing.T, a, b []byte, ct string) {
		if d := diffcheck.Compare(a, a, ct); len(d) != 0 {
			t.Fatalf("a body differs from itself: %v", d)
		}
		ab := diffcheck.Compare(a, b, ct)
		if len(ab) > diffcheck.MaxDiffs {
			t.Fatalf("%d diffs, more than MaxDiffs", len(ab))
		}
		for _, d := range ab {
			if !strings.HasPrefix(d.Path, "$") || strings.ContainsAny(d.A+d.B, "\n\r") {
				t.Fatalf("malformed diff %q", d)
			}
		}
		if ct == "application/json" && json.Valid(a) == json.Valid(b) {
			ba := diffcheck.Compare(b, a, ct)
			if (len(ab) == 0) != (len(ba) == 0) {
				t.Fatalf("a vs b: %v; b vs a: %v", ab, ba)
			}
		}
	})
}

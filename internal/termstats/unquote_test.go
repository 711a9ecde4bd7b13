package termstats

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAppendUnquotedMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		`""`, `"plain"`, `"a\"b\\c\/d"`, `"\b\f\n\r\t"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`,
		`"\ud83d"`, `"\ude00x"`, `"\ud83dx"`, `"héllo"`, `"\ud83d\u0041"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatalf("json.Unmarshal(%s): %v", s, err)
		}
		got, err := appendUnquoted(nil, []byte(s))
		if err != nil || string(got) != want {
			t.Errorf("appendUnquoted(%s) = %q, %v; want %q", s, got, err, want)
		}
	}
	for _, s := range []string{`"`, `x`, `"\"`, `"\x"`, `"\u12"`} {
		if _, err := appendUnquoted(nil, []byte(s)); err == nil {
			t.Errorf("appendUnquoted(%s) accepted a malformed string", s)
		}
	}
}

func FuzzAppendUnquoted(f *testing.F) {
	f.Add(`"a\u00e9\ud83d\ude00\n"`)
	f.Fuzz(func(t *testing.T, s string) {
		b, _ := json.Marshal(s)
		var want string
		_ = json.Unmarshal(b, &want)
		got, err := appendUnquoted(nil, b)
		if err != nil || string(got) != want {
			t.Fatalf("appendUnquoted(%s) = %q, %v; want %q", b, got, err, want)
		}
	})
}

func TestCounterTopBreaksTiesByText(t *testing.T) {
	c := newCounter()
	forEachWord([]byte("b a c a B C zz"), func(w []byte) { c.add(w, 1) })
	var got []string
	for _, i := range c.top(nil, 3) {
		got = append(got, string(c.word(c.terms[i])))
	}
	if want := "a b c"; strings.Join(got, " ") != want {
		t.Errorf("top = %q, want %s", got, want)
	}
}

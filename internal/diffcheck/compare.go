package diffcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind says how two responses differ at a Diff's path.
type Kind string

// The kinds of Diff.
const (
	// KindStatus: the status codes differ (path "status").
	KindStatus Kind = "status"
	// KindContentType: the media types or their parameters differ (path
	// "content-type").
	KindContentType Kind = "content-type"
	// KindValue: two JSON scalars of one type differ.
	KindValue Kind = "value"
	// KindType: two JSON values of different types (object, array, string,
	// number, boolean, null).
	KindType Kind = "type"
	// KindMissing: the path is in the first body only.
	KindMissing Kind = "missing"
	// KindExtra: the path is in the second body only.
	KindExtra Kind = "extra"
	// KindInvalidJSON: a JSON body is not valid JSON on one side (B or A
	// says which), while it is on the other.
	KindInvalidJSON Kind = "invalid-json"
	// KindBytes: bodies that are not JSON (or JSON on neither side) differ,
	// compared as bytes (path "$").
	KindBytes Kind = "bytes"
	// KindBodySize: one body is over the read cap, the other not.
	KindBodySize Kind = "body-size"
	// KindError: one side got no response (a transport error or timeout).
	KindError Kind = "error"
)

// Diff is one difference between two responses.
type Diff struct {
	// Path locates the difference: "$" for a body as a whole,
	// "$.items[3].id" (or $["odd key"]) in a JSON body, "status" or
	// "content-type".
	Path string `json:"path"`
	// Kind says how the two sides differ.
	Kind Kind `json:"kind"`
	// A and B show each side's value there ("" where a side has none),
	// cut at MaxShown bytes of the value and quoted to stay on one line.
	A string `json:"a"`
	B string `json:"b"`
}

// String returns the diff on one line.
func (d Diff) String() string {
	return fmt.Sprintf("%s %s: %s | %s", d.Path, d.Kind, d.A, d.B)
}

// Bounds of a comparison.
const (
	// MaxDiffs bounds the diffs Compare returns for one pair of bodies;
	// it stops at the first MaxDiffs, in document order.
	MaxDiffs = 32
	// MaxShown bounds Diff.A and Diff.B.
	MaxShown = 96
)

// Compare compares two response bodies of the given content type (the
// first side's Content-Type header). JSON (application/json or a +json
// type, or no content type and a first body that is valid JSON) is
// compared as data: object key order, white space and number formatting do
// not count (integers within int64 are compared exactly, other numbers as
// float64), and every difference has the path of its field. A body that is
// not valid JSON where the other is gives one KindInvalidJSON diff at "$";
// when neither is valid JSON, or the content type is not JSON, the bodies
// are compared as bytes, giving at most one KindBytes diff at "$". Compare
// returns nil when the bodies are alike, at most MaxDiffs diffs otherwise.
func Compare(a, b []byte, contentType string) []Diff {
	d, _ := compare(a, b, contentType)
	return d
}

// compare is Compare that also says whether the bodies were compared as
// bytes.
func compare(a, b []byte, contentType string) (diffs []Diff, asBytes bool) {
	if !isJSON(contentType, a) {
		return compareBytes(a, b), true
	}
	va, errA := decode(a)
	vb, errB := decode(b)
	switch {
	case errA != nil && errB != nil:
		return compareBytes(a, b), true
	case errA != nil:
		return []Diff{{Path: "$", Kind: KindInvalidJSON, A: "invalid JSON: " + show(errA.Error()), B: "valid JSON"}}, false
	case errB != nil:
		return []Diff{{Path: "$", Kind: KindInvalidJSON, A: "valid JSON", B: "invalid JSON: " + show(errB.Error())}}, false
	}
	var w walker
	w.walk("$", va, vb)
	return w.out, false
}

// isJSON reports whether bodies of the content type are compared as JSON.
func isJSON(contentType string, a []byte) bool {
	if strings.TrimSpace(contentType) == "" {
		return json.Valid(a)
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// decode decodes one JSON value, numbers as json.Number; trailing data
// after it (a second value, garbage) makes it invalid.
func decode(b []byte) (any, error) {
	if !json.Valid(b) {
		// json.Valid gives no reason; Unmarshal does.
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("invalid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func compareBytes(a, b []byte) []Diff {
	if bytes.Equal(a, b) {
		return nil
	}
	at := 0
	for at < len(a) && at < len(b) && a[at] == b[at] {
		at++
	}
	side := func(x []byte) string {
		return fmt.Sprintf("%d bytes, from byte %d: %s", len(x), at, show(string(x[at:])))
	}
	return []Diff{{Path: "$", Kind: KindBytes, A: side(a), B: side(b)}}
}

// walker collects the diffs of two decoded JSON values.
type walker struct {
	out []Diff
}

func (w *walker) add(d Diff) bool {
	if len(w.out) >= MaxDiffs {
		return false
	}
	w.out = append(w.out, d)
	return true
}

func (w *walker) walk(path string, a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			return w.objects(path, x, y)
		}
	case []any:
		if y, ok := b.([]any); ok {
			return w.arrays(path, x, y)
		}
	default:
		if typeOf(a) == typeOf(b) {
			if equalScalar(a, b) {
				return true
			}
			return w.add(Diff{Path: path, Kind: KindValue, A: render(a), B: render(b)})
		}
	}
	return w.add(Diff{Path: path, Kind: KindType, A: render(a), B: render(b)})
}

func (w *walker) objects(path string, a, b map[string]any) bool {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		va, inA := a[k]
		vb, inB := b[k]
		p := path + member(k)
		var ok bool
		switch {
		case !inB:
			ok = w.add(Diff{Path: p, Kind: KindMissing, A: render(va)})
		case !inA:
			ok = w.add(Diff{Path: p, Kind: KindExtra, B: render(vb)})
		default:
			ok = w.walk(p, va, vb)
		}
		if !ok {
			return false
		}
	}
	return true
}

func (w *walker) arrays(path string, a, b []any) bool {
	for i := range max(len(a), len(b)) {
		p := path + "[" + strconv.Itoa(i) + "]"
		var ok bool
		switch {
		case i >= len(b):
			ok = w.add(Diff{Path: p, Kind: KindMissing, A: render(a[i])})
		case i >= len(a):
			ok = w.add(Diff{Path: p, Kind: KindExtra, B: render(b[i])})
		default:
			ok = w.walk(p, a[i], b[i])
		}
		if !ok {
			return false
		}
	}
	return true
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// member returns the path step to an object's member k.
func member(k string) string {
	if identifier.MatchString(k) {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

func typeOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// equalScalar compares two JSON scalars of one type.
func equalScalar(a, b any) bool {
	na, ok := a.(json.Number)
	if !ok {
		return a == b
	}
	nb, _ := b.(json.Number) // the caller checked that both are numbers
	if ia, err := strconv.ParseInt(string(na), 10, 64); err == nil {
		if ib, err := strconv.ParseInt(string(nb), 10, 64); err == nil {
			return ia == ib
		}
	}
	fa, errA := strconv.ParseFloat(string(na), 64)
	fb, errB := strconv.ParseFloat(string(nb), 64)
	if errA != nil || errB != nil { // out of float64's range: compare the text
		return na == nb
	}
	return fa == fb
}

// render shows a JSON value as compact JSON, cut to MaxShown bytes.
func render(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return show(fmt.Sprint(v))
	}
	return show(string(b))
}

// show cuts s to MaxShown bytes on a rune boundary, marking the cut, and
// escapes control characters and invalid UTF-8 (as \xNN) so that it stays
// on one line.
func show(s string) string {
	cut := len(s) > MaxShown
	if cut {
		s = s[:MaxShown]
		for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
			if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size != 1 {
				break
			}
			s = s[:len(s)-1]
		}
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r < ' ' || r == 0x7f {
			fmt.Fprintf(&b, "\\x%02x", s[i])
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	if cut {
		b.WriteString("...")
	}
	return b.String()
}

// indices matches a path's array indices.
var indices = regexp.MustCompile(`\[[0-9]+\]`)

// Pattern returns path with every array index written [*]: the noise of
// $.items[3].ts and $.items[7].ts is learned as one, $.items[*].ts.
func Pattern(path string) string {
	return indices.ReplaceAllString(path, "[*]")
}

// sameContentType reports whether two Content-Type headers name the same
// media type with the same parameters (case and spacing aside).
func sameContentType(a, b string) bool {
	if a == b {
		return true
	}
	ma, pa, errA := mime.ParseMediaType(a)
	mb, pb, errB := mime.ParseMediaType(b)
	if errA != nil || errB != nil {
		return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
	}
	if ma != mb || len(pa) != len(pb) {
		return false
	}
	for k, v := range pa {
		if !strings.EqualFold(pb[k], v) {
			return false
		}
	}
	return true
}

package item_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/item"
)

func TestValidateID(t *testing.T) {
	for id, ok := range map[string]bool{
		"a": true, "A-z_09": true, strings.Repeat("x", 64): true,
		"": false, strings.Repeat("x", 65): false, "a b": false, "a/b": false, "é": false, "a.b": false,
	} {
		if err := item.ValidateID(id); (err == nil) != ok {
			t.Errorf("ValidateID(%q) = %v, want ok=%v", id, err, ok)
		}
	}
}

func TestResetClearsEveryField(t *testing.T) {
	it := item.Item{Name: "n", Tags: []string{"a", "b"}, Payload: "p"}
	it.Reset()
	if it.Name != "" || len(it.Tags) != 0 || it.Payload != "" {
		t.Fatalf("after Reset: %+v", it)
	}
	// A body without tags must not inherit the previous tags.
	if err := item.Decode([]byte(`{"name":"m"}`), &it); err != nil {
		t.Fatal(err)
	}
	if len(it.Tags) != 0 {
		t.Fatalf("stale tags after Reset and Decode: %q", it.Tags)
	}
}

func TestDecodeIsStrict(t *testing.T) {
	long := strings.Repeat("k", 900_000)
	tests := []struct {
		name, body  string
		errContains string // empty: accepted
	}{
		{"a field name in another case is unknown", `{"name":"a","NAME":"b"}`, "unknown field"},
		{"a capitalised field is unknown", `{"Name":"a"}`, "unknown field"},
		{"case variants of tags are unknown", `{"name":"a","Tags":["z"]}`, "unknown field"},
		{"a duplicate field is rejected", `{"name":"a","name":"b"}`, "duplicate field"},
		{"a duplicate tags field is rejected", `{"name":"a","tags":[],"tags":["x"]}`, "duplicate field"},
		{"invalid UTF-8 in the name is rejected", "{\"name\":\"a\xff\xfeb\"}", "valid UTF-8"},
		{"invalid UTF-8 in the payload is rejected", "{\"name\":\"a\",\"payload\":\"\xc3\"}", "valid UTF-8"},
		{"invalid UTF-8 in a tag is rejected", "{\"name\":\"a\",\"tags\":[\"\xed\xa0\x80\"]}", "valid UTF-8"},
		{"invalid UTF-8 in a field name is rejected", "{\"na\xffme\":\"a\"}", "valid UTF-8"},
		{"a lone high surrogate is rejected", `{"name":"a\ud83d"}`, "surrogate"},
		{"a lone low surrogate is rejected", `{"name":"\ude00a"}`, "surrogate"},
		{"a high surrogate before a non-surrogate is rejected", `{"name":"\ud83d\u0041"}`, "surrogate"},
		{"a raw control character is rejected", "{\"name\":\"a\tb\"}", "control character"},
		{"a huge unknown field name is cut in the message", `{"` + long + `":1}`, "cut"},
		{"a number for the name is rejected", `{"name":5}`, `"name" must be a string`},
		{"a null tag is rejected", `{"name":"a","tags":[null]}`, `"tags" must be an array of strings`},
		{"too many tags stop the decoder", `{"name":"a","tags":[` + strings.Repeat(`"t",`, item.MaxTags) + `"t"]}`, "more than"},
		{"a surrogate pair is accepted", `{"name":"\ud83d\ude00"}`, ""},
		{"an escaped exact field name is accepted", `{"n\u0061me":"a"}`, ""},
		{"null tags and payload are accepted", `{"name":"a","tags":null,"payload":null}`, ""},
		{"an empty object gets the name rule", `{}`, "name is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var it item.Item
			err := item.Decode([]byte(tt.body), &it)
			if tt.errContains == "" {
				if err != nil {
					t.Fatalf("Decode = %v, want accepted", err)
				}
				return
			}
			if err == nil || !errors.Is(err, item.ErrInvalid) {
				t.Fatalf("Decode = %v (item %+v), want an ErrInvalid mentioning %q", err, it, tt.errContains)
			}
			if !strings.Contains(err.Error(), tt.errContains) {
				t.Errorf("error %q does not mention %q", err, tt.errContains)
			}
			if len(err.Error()) > 200 {
				t.Errorf("error is %d bytes long, want <= 200: it echoes the input", len(err.Error()))
			}
		})
	}
}

// FuzzDecodeItem checks that Decode never panics, that whatever it accepts
// is a valid item that survives an encode/decode round trip unchanged, and
// that everything it rejects wraps ErrInvalid.
func FuzzDecodeItem(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","tags":["x","y"],"payload":"hello"}`,
		`{"name":"a","NAME":"b","Tags":["z"]}`, `{"name":"a","name":"b"}`, `{"tags":[],"name":"a","tags":[]}`,
		"{\"name\":\"a\xff\xfeb\"}", `{"name":"\ud800"}`, `{"name":"\udc00\ud800"}`, `{"n\u0061me":"a"}`,
		`{"name":"a"}`, `{"name":"a","tags":null}`, `{"name":"\u00e9\n","payload":"\ud83d\ude00"}`,
		`{"name":"a"} x`, `{"name":`, `[]`, `null`, `{"name":"a","x":1}`, `{"name":1}`, ``, " \n{\"name\":\"b\"}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var it item.Item
		err := item.Decode(data, &it)
		if err != nil {
			if !errors.Is(err, item.ErrInvalid) {
				t.Fatalf("Decode(%q) = %v, which does not wrap ErrInvalid", data, err)
			}
			return
		}
		if err := it.Validate(); err != nil {
			t.Fatalf("Decode accepted an invalid item %+v: %v", it, err)
		}
		// What the strict decoder accepts, encoding/json accepts too and
		// reads the same way: strictness only removes inputs.
		var std item.Item
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&std); err != nil {
			t.Fatalf("Decode accepted %q, encoding/json rejects it: %v", data, err)
		}
		std.Normalize()
		if std.Name != it.Name || std.Payload != it.Payload || !slices.Equal(std.Tags, it.Tags) {
			t.Fatalf("Decode(%q) = %+v, encoding/json = %+v", data, it, std)
		}
		b, err := json.Marshal(&it)
		if err != nil {
			t.Fatal(err)
		}
		var again item.Item
		if err := item.Decode(b, &again); err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		b2, _ := json.Marshal(&again)
		if string(b) != string(b2) {
			t.Fatalf("round trip changed the item: %s != %s", b, b2)
		}
		// Decoding into a reused item gives the same result as a fresh one.
		var reused item.Item
		_ = item.Decode([]byte(`{"name":"old","tags":["stale"],"payload":"stale"}`), &reused)
		reused.Reset()
		if err := item.Decode(data, &reused); err != nil {
			t.Fatalf("reused item rejected what a fresh one accepted: %v", err)
		}
		b3, _ := json.Marshal(&reused)
		if string(b3) != string(b) {
			t.Fatalf("reused item decoded to %s, fresh to %s", b3, b)
		}
	})
}

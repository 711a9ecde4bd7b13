package item_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/app/internal/item"
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

// FuzzDecodeItem checks that Decode never panics, that whatever it accepts
// is a valid item that survives an encode/decode round trip unchanged, and
// that everything it rejects wraps ErrInvalid.
func FuzzDecodeItem(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","tags":["x","y"],"payload":"hello"}`,
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

// Package item defines the API's item: its JSON form, the strict decoder
// that accepts a request body, and the rules an item and its id must obey.
package item

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Limits on an item. MaxBodyBytes is enforced by the HTTP layer (413);
// the others by Validate (400).
const (
	// MaxBodyBytes is the largest request body accepted: 1 MiB.
	MaxBodyBytes = 1 << 20
	// MaxIDLen is the longest id.
	MaxIDLen = 64
	// MaxNameLen is the longest name, in bytes.
	MaxNameLen = 256
	// MaxTags is the most tags an item may carry.
	MaxTags = 32
	// MaxTagLen is the longest tag, in bytes.
	MaxTagLen = 64
)

// ErrInvalid is wrapped by every error that Decode and Validate return for
// a body or an id the client got wrong (as opposed to an I/O failure).
var ErrInvalid = errors.New("invalid item")

// Item is what clients store: a name, tags and a free-text payload.
type Item struct {
	Name    string   `json:"name"`
	Tags    []string `json:"tags"`
	Payload string   `json:"payload"`
}

// Reset clears it for reuse, keeping the tag slice's capacity. A pooled
// Item must be reset before it is decoded into again: encoding/json leaves
// fields that are absent from the input untouched, so a stale Item would
// hand one request's tags or payload to the next.
func (it *Item) Reset() {
	clear(it.Tags) // drop references to old strings
	*it = Item{Tags: it.Tags[:0]}
}

// Decode decodes exactly one JSON object from data into it, which must be
// freshly reset. It is stricter than encoding/json: field names must match
// exactly (name, tags, payload; "Name" is an unknown field), a field may
// appear once, and strings must be valid UTF-8 with no lone UTF-16
// surrogate escapes (encoding/json would silently store U+FFFD instead).
// Unknown or duplicate fields, trailing data, a JSON null, values of the
// wrong type and an item that fails Validate are errors wrapping
// ErrInvalid; their messages quote at most a few dozen bytes of the input.
func Decode(data []byte, it *Item) error {
	d := decoder{data: data}
	if err := d.object(it); err != nil {
		return err
	}
	if d.peek() != 0 {
		return fmt.Errorf("%w: trailing data after the JSON object", ErrInvalid)
	}
	it.Normalize()
	return it.Validate()
}

// Normalize makes absent or null tags an empty list, so that an item
// encodes the same ("tags":[]) whether its Tags slice was fresh or reused.
func (it *Item) Normalize() {
	if it.Tags == nil {
		it.Tags = []string{}
	}
}

// Validate checks the item's fields.
func (it *Item) Validate() error {
	switch {
	case it.Name == "":
		return fmt.Errorf("%w: name is required", ErrInvalid)
	case len(it.Name) > MaxNameLen:
		return fmt.Errorf("%w: name is longer than %d bytes", ErrInvalid, MaxNameLen)
	case len(it.Tags) > MaxTags:
		return fmt.Errorf("%w: more than %d tags", ErrInvalid, MaxTags)
	case !utf8.ValidString(it.Name) || !utf8.ValidString(it.Payload):
		return fmt.Errorf("%w: name and payload must be valid UTF-8", ErrInvalid)
	}
	for i, t := range it.Tags {
		if t == "" || len(t) > MaxTagLen || !utf8.ValidString(t) {
			return fmt.Errorf("%w: tag %d must be 1 to %d bytes of UTF-8", ErrInvalid, i, MaxTagLen)
		}
	}
	return nil
}

// ValidateID checks an item id against ^[A-Za-z0-9_-]{1,64}$.
func ValidateID(id string) error {
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("%w: id must be 1 to %d characters", ErrInvalid, MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%w: id must match ^[A-Za-z0-9_-]{1,%d}$", ErrInvalid, MaxIDLen)
		}
	}
	return nil
}

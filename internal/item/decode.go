package item

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxEchoBytes bounds how much of a client's input an error message quotes.
const maxEchoBytes = 64

// decoder is a strict, single-purpose JSON parser for an Item. Unlike
// encoding/json it matches field names exactly (no case folding), rejects
// duplicate fields, and rejects strings that are not valid UTF-8 or that
// hold a lone UTF-16 surrogate escape instead of rewriting them to U+FFFD.
// Its error messages quote at most maxEchoBytes of the input.
type decoder struct {
	data []byte
	pos  int
	buf  []byte // unescaping scratch
}

// errorf returns an error wrapping ErrInvalid.
func errorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// malformed reports a syntax error at the current position, or a
// truncation when the input ended.
func (d *decoder) malformed() error {
	if d.pos >= len(d.data) {
		return errorf("truncated JSON")
	}
	return errorf("malformed JSON at byte %d", d.pos)
}

// expect consumes c after optional whitespace.
func (d *decoder) expect(c byte) error {
	d.skipSpace()
	if d.pos >= len(d.data) || d.data[d.pos] != c {
		return d.malformed()
	}
	d.pos++
	return nil
}

// peek returns the next non-space byte, or 0 at the end.
func (d *decoder) peek() byte {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return 0
	}
	return d.data[d.pos]
}

// literal consumes the literal word (null, true, false) if it is next.
func (d *decoder) literal(word string) bool {
	if len(d.data)-d.pos >= len(word) && string(d.data[d.pos:d.pos+len(word)]) == word {
		d.pos += len(word)
		return true
	}
	return false
}

// kind names the JSON value starting with c, for error messages.
func kind(c byte) string {
	switch {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || '0' <= c && c <= '9':
		return "a number"
	}
	return "not JSON"
}

// str parses a JSON string at the current position (after whitespace) and
// returns its bytes, valid only until the next call. Invalid UTF-8, a lone
// surrogate escape and raw control characters are errors.
func (d *decoder) str() ([]byte, error) {
	if err := d.expect('"'); err != nil {
		return nil, err
	}
	start := d.pos
	d.buf = d.buf[:0]
	escaped := false
	for {
		if d.pos >= len(d.data) {
			return nil, errorf("truncated JSON")
		}
		c := d.data[d.pos]
		switch {
		case c == '"':
			raw := d.data[start:d.pos]
			d.pos++
			if !escaped {
				return raw, nil
			}
			return d.buf, nil
		case c < 0x20:
			return nil, errorf("malformed JSON at byte %d: control character in a string", d.pos)
		case c == '\\':
			if !escaped {
				d.buf = append(d.buf, d.data[start:d.pos]...)
				escaped = true
			}
			if err := d.escape(); err != nil {
				return nil, err
			}
		case c < utf8.RuneSelf:
			if escaped {
				d.buf = append(d.buf, c)
			}
			d.pos++
		default:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			if r == utf8.RuneError && size <= 1 {
				return nil, errorf("invalid UTF-8 in a string at byte %d: strings must be valid UTF-8", d.pos)
			}
			if escaped {
				d.buf = append(d.buf, d.data[d.pos:d.pos+size]...)
			}
			d.pos += size
		}
	}
}

// escape decodes the escape sequence at d.pos (a backslash) into d.buf.
func (d *decoder) escape() error {
	at := d.pos
	if d.pos+1 >= len(d.data) {
		return errorf("truncated JSON")
	}
	c := d.data[d.pos+1]
	d.pos += 2
	switch c {
	case '"', '\\', '/':
		d.buf = append(d.buf, c)
	case 'b':
		d.buf = append(d.buf, '\b')
	case 'f':
		d.buf = append(d.buf, '\f')
	case 'n':
		d.buf = append(d.buf, '\n')
	case 'r':
		d.buf = append(d.buf, '\r')
	case 't':
		d.buf = append(d.buf, '\t')
	case 'u':
		r, ok := d.hex4()
		if !ok {
			return errorf("malformed JSON at byte %d: bad \\u escape", at)
		}
		if utf16.IsSurrogate(r) {
			r2 := rune(-1)
			if d.pos+1 < len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
				d.pos += 2
				if r2, ok = d.hex4(); !ok {
					return errorf("malformed JSON at byte %d: bad \\u escape", d.pos-2)
				}
			}
			if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
				return errorf("lone UTF-16 surrogate escape at byte %d: strings must be valid UTF-8", at)
			}
		}
		d.buf = utf8.AppendRune(d.buf, r)
	default:
		return errorf("malformed JSON at byte %d: bad escape", at)
	}
	return nil
}

// hex4 consumes four hex digits.
func (d *decoder) hex4() (rune, bool) {
	if len(d.data)-d.pos < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(d.data[d.pos:d.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	d.pos += 4
	return rune(v), true
}

// echo quotes at most maxEchoBytes of s, cut on a rune boundary.
func echo(s []byte) string {
	if len(s) <= maxEchoBytes {
		return strconv.Quote(string(s))
	}
	n := maxEchoBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strconv.Quote(string(s[:n])) + fmt.Sprintf(" (%d bytes, cut)", len(s))
}

// Field names, matched exactly.
const (
	fieldName    = "name"
	fieldTags    = "tags"
	fieldPayload = "payload"
)

// object parses the item object into it.
func (d *decoder) object(it *Item) error {
	switch c := d.peek(); c {
	case '{':
		d.pos++
	case 0:
		return errorf("empty body")
	default:
		return errorf("body must be a JSON object, not %s", kind(c))
	}
	var seen [3]bool
	if d.peek() == '}' {
		d.pos++
		return nil
	}
	for {
		key, err := d.str()
		if err != nil {
			return err
		}
		var i int
		switch string(key) {
		case fieldName:
			i = 0
		case fieldTags:
			i = 1
		case fieldPayload:
			i = 2
		default:
			return errorf("unknown field %s: fields are name, tags and payload (exact case)", echo(key))
		}
		if seen[i] {
			return errorf("duplicate field %q", key)
		}
		seen[i] = true
		if err := d.expect(':'); err != nil {
			return err
		}
		switch i {
		case 0:
			err = d.stringField(fieldName, &it.Name)
		case 1:
			err = d.tags(it)
		case 2:
			err = d.stringField(fieldPayload, &it.Payload)
		}
		if err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return nil
		default:
			return d.malformed()
		}
	}
}

// value checks that a field's value starts with want (not consumed), or is
// null (consumed, which leaves the field as it was, as encoding/json
// does). It reports whether the value is null.
func (d *decoder) value(field string, want byte, what string) (null bool, err error) {
	switch c := d.peek(); c {
	case want:
		return false, nil
	case 'n':
		if d.literal("null") {
			return true, nil
		}
		return false, d.malformed()
	case 0:
		return false, errorf("truncated JSON")
	default:
		return false, errorf("field %q must be %s, not %s", field, what, kind(c))
	}
}

// stringField parses a string or null into dst.
func (d *decoder) stringField(name string, dst *string) error {
	if null, err := d.value(name, '"', "a string"); null || err != nil {
		return err
	}
	b, err := d.str()
	if err != nil {
		return err
	}
	*dst = string(b)
	return nil
}

// tags parses the tags array (or null) into it.Tags.
func (d *decoder) tags(it *Item) error {
	if null, err := d.value(fieldTags, '[', "an array of strings"); null || err != nil {
		return err
	}
	d.pos++
	it.Tags = it.Tags[:0]
	if d.peek() == ']' {
		d.pos++
		return nil
	}
	for {
		switch c := d.peek(); c {
		case '"':
		case 0:
			return errorf("truncated JSON")
		default:
			return errorf("field %q must be an array of strings, not hold %s", fieldTags, kind(c))
		}
		if len(it.Tags) == MaxTags {
			return errorf("more than %d tags", MaxTags)
		}
		b, err := d.str()
		if err != nil {
			return err
		}
		it.Tags = append(it.Tags, string(b))
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return nil
		default:
			return d.malformed()
		}
	}
}

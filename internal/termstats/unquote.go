package termstats

import (
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

var errBadString = errors.New("malformed JSON string")

// appendUnquoted appends the value of the JSON string literal q (with its
// quotes) to dst. It exists so that a report can decode payloads into a
// reused buffer, where encoding/json would allocate a new string for each.
func appendUnquoted(dst, q []byte) ([]byte, error) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return dst, errBadString
	}
	q = q[1 : len(q)-1]
	for i := 0; i < len(q); {
		c := q[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		if i+1 >= len(q) {
			return dst, errBadString
		}
		switch q[i+1] {
		case '"', '\\', '/':
			dst = append(dst, q[i+1])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(q[i+2:])
			if !ok {
				return dst, errBadString
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(q) && q[i] == '\\' && q[i+1] == 'u' {
					if r2, ok := hex4(q[i+2 : i+6]); ok && utf16.DecodeRune(r, r2) != utf8.RuneError {
						d := utf16.DecodeRune(r, r2)
						i += 6
						dst = utf8.AppendRune(dst, d)
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			return dst, errBadString
		}
		i += 2
	}
	return dst, nil
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

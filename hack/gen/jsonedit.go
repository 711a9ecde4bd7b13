package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// jsonLeaf is one scalar of a JSON document: where it sits (object keys and array indexes from
// the root) and where its literal lies in the document, so that it can be replaced in place.
type jsonLeaf struct {
	path       []string
	start, end int // byte offsets of the literal, quotes included
	value      any // string, json.Number, bool or nil
}

// jsonFrame is an open object or array while jsonLeaves walks a document.
type jsonFrame struct {
	array     bool
	index     int    // the next element's index, in an array
	key       string // the current key, in an object
	expectKey bool
	path      []string // the container's own path
}

// jsonLeaves returns every scalar of a JSON document in document order.
func jsonLeaves(data []byte) ([]jsonLeaf, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var (
		stack  []*jsonFrame
		leaves []jsonLeaf
	)
	// elem is the path element of the value the innermost container holds next.
	elem := func() []string {
		if len(stack) == 0 {
			return nil
		}
		f := stack[len(stack)-1]
		p := append([]string(nil), f.path...)
		if f.array {
			return append(p, strconv.Itoa(f.index))
		}
		return append(p, f.key)
	}
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		f := stack[len(stack)-1]
		if f.array {
			f.index++
		} else {
			f.expectKey = true
		}
	}
	for {
		before := int(dec.InputOffset())
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("decoding JSON at byte %d: %w", before, err)
		}
		end := int(dec.InputOffset())
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, &jsonFrame{array: t == '[', expectKey: t == '{', path: elem()})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
			continue
		case string:
			if f := stack[len(stack)-1]; !f.array && f.expectKey {
				f.key, f.expectKey = t, false
				continue
			}
		}
		start := before + bytes.IndexFunc(data[before:end], func(r rune) bool {
			return r != ' ' && r != '\t' && r != '\r' && r != '\n' && r != ':' && r != ','
		})
		leaves = append(leaves, jsonLeaf{path: elem(), start: start, end: end, value: tok})
		valueDone()
	}
	return leaves, nil
}

// jsonEdit replaces data[start:end] with repl.
type jsonEdit struct {
	start, end int
	repl       []byte
}

// applyEdits returns data with the edits applied; they must not overlap.
func applyEdits(data []byte, edits []jsonEdit) []byte {
	var out bytes.Buffer
	last := 0
	for _, e := range edits {
		out.Write(data[last:e.start])
		out.Write(e.repl)
		last = e.end
	}
	out.Write(data[last:])
	return out.Bytes()
}

package loadgen

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
)

// MaxCheckedBodyBytes bounds the bodies Config.CheckJSON reads: a longer
// one is read on and discarded, not judged.
const MaxCheckedBodyBytes = 16 << 20

// keptBufferBytes bounds the buffers the checks keep for the next body.
const keptBufferBytes = 1 << 20

// jsonType reports whether a Content-Type names JSON: application/json or
// a +json type.
func jsonType(contentType string) bool {
	if contentType == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// checked reports whether CheckJSON judges an answer of method with resp's
// status and Content-Type: one whose Content-Type says JSON and that may
// carry a body.
func checked(method string, resp *http.Response) bool {
	code := resp.StatusCode
	return method != http.MethodHead && code >= 200 && code != http.StatusNoContent && code != http.StatusNotModified &&
		jsonType(resp.Header.Get("Content-Type"))
}

// malformedBody reports whether body, a JSON answer's whole body, is not
// one valid JSON value (trailing data after one included).
func malformedBody(body []byte) bool { return !json.Valid(body) }

// readChecked reads resp's body (Config.CheckJSON), closes it and reports
// whether it is malformed JSON; a body over MaxCheckedBodyBytes is not
// judged.
func (g *Generator) readChecked(resp *http.Response) (malformed bool, err error) {
	defer resp.Body.Close()
	buf, _ := g.bodies.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	defer func() {
		if buf.Cap() <= keptBufferBytes {
			buf.Reset()
			g.bodies.Put(buf) // deferred: after malformedBody has read its bytes
		}
	}()
	buf.Reset()
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, MaxCheckedBodyBytes+1))
	if err == nil && n > MaxCheckedBodyBytes {
		_, err = io.Copy(io.Discard, resp.Body)
		return false, err
	}
	if err != nil {
		return false, err
	}
	return malformedBody(buf.Bytes()), nil
}

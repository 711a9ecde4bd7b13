package targets_test

import (
	"bytes"
	"errors"
	"io/fs"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/targets"
)

// files is a fake file system for body files.
func files(m map[string]string) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		s, ok := m[name]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(s), nil
	}
}

func TestParseAcceptsTheFormat(t *testing.T) {
	read := files(map[string]string{"dir/testdata/sample.csv": "a,b\n1,2\n", "/abs/body.json": "{}"})
	tests := []struct {
		name, in string
		want     []targets.Target
	}{
		{"a request line alone", "GET /a", []targets.Target{{Method: "GET", URL: "/a", Line: 1}}},
		{"comments and blank lines around requests", "# c\n\n  \nGET /a\n# inside\n\n\n# c\nDELETE http://localhost:1/b?x=1\n", []targets.Target{
			{Method: "GET", URL: "/a", Line: 4},
			{Method: "DELETE", URL: "http://localhost:1/b?x=1", Line: 9},
		}},
		{"headers, repeated and canonicalized, values trimmed", "GET /a\nx-trace:  abc \nAccept: a\nAccept:b\nX-Empty:", []targets.Target{
			{Method: "GET", URL: "/a", Line: 1, Header: http.Header{"X-Trace": {"abc"}, "Accept": {"a", "b"}, "X-Empty": {""}}},
		}},
		{"a body file relative to the requests file", "POST http://127.0.0.1:8080/convert\nContent-Type: text/csv\n@testdata/sample.csv\n", []targets.Target{
			{Method: "POST", URL: "http://127.0.0.1:8080/convert", Line: 1, Header: http.Header{"Content-Type": {"text/csv"}}, Body: []byte("a,b\n1,2\n"), BodyFile: "testdata/sample.csv"},
		}},
		{"an absolute body file", "PUT /x\n@/abs/body.json", []targets.Target{
			{Method: "PUT", URL: "/x", Line: 1, Body: []byte("{}"), BodyFile: "/abs/body.json"},
		}},
		{"an inline body up to the blank line, '#' lines included", "PUT /api/v1/items/7\r\nContent-Type: application/json\r\n{\"name\":\r\n# not a comment\r\n\"x\"}\r\n\r\nGET /b", []targets.Target{
			{Method: "PUT", URL: "/api/v1/items/7", Line: 1, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte("{\"name\":\n# not a comment\n\"x\"}")},
			{Method: "GET", URL: "/b", Line: 7},
		}},
		{"an inline body straight after the request line", "POST /q\n[1,2]", []targets.Target{
			{Method: "POST", URL: "/q", Line: 1, Body: []byte("[1,2]")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := targets.Parse(strings.NewReader(tt.in), "dir/reqs.txt", read)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseRefusesWithFileAndLine(t *testing.T) {
	big := strings.Repeat("x", targets.MaxBodyBytes+1)
	read := files(map[string]string{"big": big, "ok": "{}"})
	tests := []struct {
		name, in, want string
	}{
		{"an empty file", "", "reqs:"},
		{"a file of comments", "# only\n\n", "no request"},
		{"an unknown method", "\nFETCH /a", "reqs:2: unknown method \"FETCH\""},
		{"a lower-case method", "get /a", "reqs:1: unknown method"},
		{"a request line without a URL", "GET", "reqs:1: want a request line"},
		{"a request line with a third field", "GET /a HTTP/1.1", "reqs:1: want a request line"},
		{"a relative URL", "GET a/b", "reqs:1: bad URL"},
		{"an ftp URL", "GET ftp://127.0.0.1/a", "reqs:1: bad URL"},
		{"an absolute URL without a host", "GET http:///a", "reqs:1: bad URL"},
		{"a bad escape", "GET /a%zz", "reqs:1: bad URL"},
		{"a fragment", "GET /a#b", "reqs:1: bad URL"},
		{"a path starting with //", "GET //evil/a", "reqs:1: bad URL"},
		{"a header without a colon", "GET /a\nX-Trace abc", "reqs:2: header without a colon"},
		{"a bad header name", "GET /a\nX(y): z", "reqs:2: bad header name"},
		{"a control character in a value", "GET /a\nX: a\x01b", "reqs:2: header X: control character"},
		{"a missing body file", "POST /a\n@nope.json", "reqs:2: body file \"nope.json\": file does not exist"},
		{"a body file too large", "POST /a\n@big", "reqs:2: body file \"big\": 1048577 bytes, more than the 1048576"},
		{"an @ without a name", "POST /a\n@", "reqs:2: @ without a file name"},
		{"a control character in an inline body", "POST /a\n{\x00}", "reqs:2: control character in an inline body"},
		{"a line after the body file", "POST /a\n@ok\nX: y", "reqs:3: after the body file"},
		{"an inline body too large", "POST /a\n{" + big, "reqs:2: inline body longer than"},
		{"a line too long", "POST /a\n{" + big + big, "reqs:2: line longer than"},
		{"an inline body over the cap in lines", "POST /a\n{" + strings.Repeat("\n{"+strings.Repeat("x", 1<<16), 16), "reqs:18: inline body longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := targets.Parse(strings.NewReader(tt.in), "reqs", read)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if !errors.Is(err, targets.ErrSyntax) {
				t.Errorf("error %v does not wrap ErrSyntax", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is more than one line", err)
			}
		})
	}
}

func TestParseWithoutReadFileRefusesBodyFiles(t *testing.T) {
	if _, err := targets.Parse(strings.NewReader("POST /a\n@b"), "r", nil); err == nil || !strings.Contains(err.Error(), "r:2") {
		t.Fatalf("error %v, want one at r:2", err)
	}
}

func TestResolve(t *testing.T) {
	tests := []struct{ url, base, want string }{
		{"/api/v1/items/7?x=1", "http://127.0.0.1:9000", "http://127.0.0.1:9000/api/v1/items/7?x=1"},
		{"/a", "http://127.0.0.1:9000/", "http://127.0.0.1:9000/a"},
		{"http://127.0.0.1:8080/b?y=2", "http://127.0.0.1:9000/pre", "http://127.0.0.1:9000/pre/b?y=2"},
		{"http://example.com", "http://[::1]:1", "http://[::1]:1/"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			got, err := targets.Target{Method: "GET", URL: tt.url}.Resolve(tt.base)
			if err != nil || got != tt.want {
				t.Errorf("Resolve(%q) = %q, %v; want %q", tt.base, got, err, tt.want)
			}
		})
	}
}

func TestKey(t *testing.T) {
	tests := []struct{ method, url, want string }{
		{"GET", "/api/v1/items/42?x=1", "GET /api/v1/items/{n}"},
		{"PUT", "http://127.0.0.1:8080/api/v1/items/7/tags/x9", "PUT /api/v1/items/{n}/tags/x9"},
		{"GET", "http://127.0.0.1:8080", "GET /"},
		{"DELETE", "/v1/", "DELETE /v1/"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			if got := (targets.Target{Method: tt.method, URL: tt.url}).Key(); got != tt.want {
				t.Errorf("Key() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFormatRefusesABodyItCannotInline(t *testing.T) {
	for _, body := range []string{"name=x", "{\n\n}", "{\r\n}", "@x", "#{", "{\n  \n}"} {
		t.Run(body, func(t *testing.T) {
			var b bytes.Buffer
			err := targets.Format(&b, []targets.Target{{Method: "POST", URL: "/a", Body: []byte(body)}})
			if !errors.Is(err, targets.ErrNotInline) {
				t.Errorf("error %v, want ErrNotInline", err)
			}
		})
	}
}

// FuzzParse: Parse never panics, and every file it accepts formats to one
// that it reads back as the same targets (but for their lines).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"GET /a",
		"# c\nGET http://127.0.0.1:8080/api/v1/items/42\nX-Trace: abc\n\nPOST /convert\nContent-Type: text/csv\n@sample.csv\n",
		"PUT /api/v1/items/7\nContent-Type: application/json\n{\"name\":\"x\"}\n\nDELETE /x\n",
		"POST /a\n[1,\n# x\n 2]\r\n\r\n",
		"GET a", "GET /a\nX y", "FETCH /", "\n\n", "POST /a\n@", "GET http://h/#",
	} {
		f.Add(s)
	}
	read := func(string) ([]byte, error) { return []byte("a\n\nb"), nil }
	f.Fuzz(func(t *testing.T, in string) {
		ts, err := targets.Parse(strings.NewReader(in), "dir/f", read)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		var b bytes.Buffer
		if err := targets.Format(&b, ts); err != nil {
			t.Fatalf("formatting what Parse accepted: %v", err)
		}
		again, err := targets.Parse(&b, "dir/f", read)
		if err != nil {
			t.Fatalf("parsing what Format wrote:\n%s\n%v", b.String(), err)
		}
		if len(again) != len(ts) {
			t.Fatalf("%d targets, %d after a round trip", len(ts), len(again))
		}
		for i := range ts {
			ts[i].Line, again[i].Line = 0, 0
		}
		if !reflect.DeepEqual(ts, again) {
			t.Fatalf("round trip changed the targets:\n%+v\n%+v", ts, again)
		}
	})
}

// Package targets reads and writes a requests file: the HTTP requests a
// load or a differential check replays, in a text format close to vegeta's
// "http" targets format.
//
// # Format
//
// A requests file is a list of requests separated by blank lines:
//
//	# a comment: a line whose first character is '#', outside an inline body
//	GET http://127.0.0.1:8080/api/v1/items/42
//	X-Trace: abc
//
//	POST http://127.0.0.1:8080/convert
//	Content-Type: text/csv
//	@testdata/sample.csv
//
//	PUT /api/v1/items/7
//	Content-Type: application/json
//	{"name":"x"}
//
// Each request is:
//
//   - a request line, METHOD URL: the method one of GET, HEAD, POST, PUT,
//     PATCH, DELETE and OPTIONS, in capitals; the URL either absolute
//     (http or https, with a host) or a path starting with / (with an
//     optional query), which a sender resolves against the base URL of
//     the service it sends to (Target.Resolve);
//   - header lines, Name: value, zero or more: the name a token (letters,
//     digits and !#$%&'*+-.^_`|~), the value trimmed of spaces and tabs;
//     a header may repeat;
//   - optionally a body, either "@path", the bytes of a file (a relative
//     path is relative to the requests file's directory), alone on its line
//     and last, or (an extension of vegeta's format) an inline body: every
//     line from the first line that cannot be a header, up to the next
//     blank line or the end of the file, joined with "\n" (no final
//     newline). An inline body must therefore start with a character no
//     header name can start with ('{', '[', '<', '"' and the like); a body
//     that starts with a letter or a digit, or that holds a blank line, goes
//     in a file.
//
// A line of only spaces and tabs is a blank line. A line ending "\r\n" is read as ending "\n". Line numbers in errors count
// from 1. Bounds: a body, inline or from a file, is at most MaxBodyBytes; a
// line at most MaxLineBytes; a file at most MaxTargets requests. A file
// without any request is an error.
//
// Parse accepts an absolute URL to any host; loadgen.CheckTargets refuses the
// hosts outside loopback (but for those a caller allows), as loadgen does for
// its base URL.
package targets

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
)

// Bounds of a requests file.
const (
	// MaxBodyBytes bounds a request's body, inline or from a file: 1 MiB,
	// the reference service's own body limit.
	MaxBodyBytes = 1 << 20
	// MaxLineBytes bounds a line of the file (an inline body's line too).
	MaxLineBytes = MaxBodyBytes + 1024
	// MaxTargets bounds the requests in one file.
	MaxTargets = 100_000
)

// Methods are the request methods a requests file may use.
var Methods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions,
}

// ErrSyntax is wrapped by every error Parse returns for a malformed file.
var ErrSyntax = errors.New("requests file")

// Target is one request of a requests file.
type Target struct {
	// Method is the request method, one of Methods.
	Method string
	// URL is an absolute http or https URL, or a path starting with /
	// (with its query) that a sender resolves against its base URL.
	URL string
	// Header holds the request's headers, their names canonical; nil when
	// there is none.
	Header http.Header
	// Body is the request body; nil when there is none.
	Body []byte
	// BodyFile is the @path the body was read from, as the file wrote it,
	// or "" for an inline body or none. Format writes it back.
	BodyFile string
	// Line is the line of the request line in its file, from 1.
	Line int
}

// IsPath reports whether t.URL is a path to resolve against a base URL
// rather than an absolute URL.
func (t Target) IsPath() bool { return strings.HasPrefix(t.URL, "/") }

// Key names t's endpoint, for counting requests by it: its method and its
// URL's path (without the scheme, host and query) with every segment made
// of digits only written {n}, as "GET /api/v1/items/{n}".
func (t Target) Key() string {
	p := t.URL
	if !t.IsPath() {
		if u, err := url.Parse(t.URL); err == nil {
			p = u.EscapedPath()
		}
	}
	p, _, _ = strings.Cut(p, "?")
	if p == "" {
		p = "/"
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if s != "" && strings.Trim(s, "0123456789") == "" {
			segs[i] = "{n}"
		}
	}
	return t.Method + " " + strings.Join(segs, "/")
}

// Resolve returns the URL to send t to: base (scheme and host, with an
// optional path prefix, no query) followed by t's path and query. An
// absolute URL in the file is rebased the same way: its scheme and host say
// where the file was written for, base says where the request goes, so that
// one file can drive two builds of a service on two ports.
func (t Target) Resolve(base string) (string, error) {
	pathQuery := t.URL
	if !t.IsPath() {
		u, err := url.Parse(t.URL)
		if err != nil {
			return "", fmt.Errorf("resolving %s %s: %w", t.Method, t.URL, err)
		}
		pathQuery = u.RequestURI()
	}
	return strings.TrimRight(base, "/") + pathQuery, nil
}

// Parse reads a requests file from r. name is the file's name, for errors
// and to resolve relative body files (a name of "" resolves them against
// the working directory); readFile reads a body file (os.ReadFile, or a
// fake in tests), and may be nil when the file has no @path line. Every
// error names name:line and the problem on one line, and wraps ErrSyntax
// when the file is malformed.
func Parse(r io.Reader, name string, readFile func(string) ([]byte, error)) ([]Target, error) {
	p := parser{name: name, readFile: readFile}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	for sc.Scan() {
		p.line++
		if err := p.feed(sc.Text()); err != nil { // without its "\n" or "\r\n"
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, p.errorf(p.line+1, "line longer than %d bytes", MaxLineBytes)
		}
		return nil, fmt.Errorf("reading requests file %s: %w", name, err)
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	if len(p.out) == 0 {
		return nil, fmt.Errorf("%w %s: no request in the file", ErrSyntax, p.where(0))
	}
	return p.out, nil
}

// state is where a parser is in the current request.
type state int

const (
	between  state = iota // before a request line
	headers               // after the request line or a header
	inline                // in an inline body
	bodyDone              // after an @path line
)

type parser struct {
	name     string
	readFile func(string) ([]byte, error)
	line     int
	st       state
	cur      Target
	body     []byte
	out      []Target
}

func (p *parser) where(line int) string {
	name := p.name
	if name == "" {
		name = "<requests>"
	}
	if line <= 0 {
		return name
	}
	return fmt.Sprintf("%s:%d", name, line)
}

func (p *parser) errorf(line int, format string, a ...any) error {
	return fmt.Errorf("%w %s: %s", ErrSyntax, p.where(line), fmt.Sprintf(format, a...))
}

// feed takes one line, without its line ending.
func (p *parser) feed(l string) error {
	switch {
	case strings.Trim(l, " \t") == "":
		return p.end()
	case p.st == inline:
		return p.appendBody(l)
	case l[0] == '#':
		return nil
	case p.st == between:
		return p.requestLine(l)
	case p.st == bodyDone:
		return p.errorf(p.line, "after the body file, want a blank line before the next request, got %q", clip(l))
	case l[0] == '@':
		return p.bodyFile(l[1:])
	case isTokenByte(l[0]):
		return p.header(l)
	default:
		p.st = inline
		p.body = []byte{}
		return p.appendBody(l)
	}
}

func (p *parser) requestLine(l string) error {
	if len(p.out) >= MaxTargets {
		return p.errorf(p.line, "more than %d requests", MaxTargets)
	}
	f := strings.Fields(l)
	if len(f) != 2 {
		return p.errorf(p.line, "want a request line METHOD URL, got %q", clip(l))
	}
	if !slices.Contains(Methods, f[0]) {
		return p.errorf(p.line, "unknown method %q (want one of %s)", clip(f[0]), strings.Join(Methods, ", "))
	}
	if err := checkURL(f[1]); err != nil {
		return p.errorf(p.line, "bad URL %q: %v", clip(f[1]), err)
	}
	p.cur = Target{Method: f[0], URL: f[1], Line: p.line}
	p.st = headers
	return nil
}

// checkURL accepts an absolute http(s) URL with a host, or a path.
func checkURL(s string) error {
	if strings.Contains(s, "#") {
		return errors.New("a fragment ('#') is never sent")
	}
	if strings.HasPrefix(s, "/") {
		if strings.HasPrefix(s, "//") {
			return errors.New("a path must not start with //")
		}
		_, err := url.ParseRequestURI(s)
		return err
	}
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("want an http or https URL, or a path starting with /")
	}
	if u.Host == "" || u.Opaque != "" {
		return errors.New("an absolute URL needs a host")
	}
	return nil
}

func (p *parser) header(l string) error {
	name, value, ok := strings.Cut(l, ":")
	if !ok {
		return p.errorf(p.line, "header without a colon: %q (an inline body must start with a character no header name can, such as '{'; put other bodies in an @file)", clip(l))
	}
	if !isToken(name) {
		return p.errorf(p.line, "bad header name %q", clip(name))
	}
	value = strings.Trim(value, " \t")
	if strings.ContainsFunc(value, isControl) {
		return p.errorf(p.line, "header %s: control character in its value", name)
	}
	if p.cur.Header == nil {
		p.cur.Header = http.Header{}
	}
	p.cur.Header.Add(name, value)
	return nil
}

func (p *parser) bodyFile(path string) error {
	if path == "" {
		return p.errorf(p.line, "@ without a file name")
	}
	if p.readFile == nil {
		return p.errorf(p.line, "body file %q: no way to read files here", clip(path))
	}
	full := path
	if !filepath.IsAbs(path) {
		full = filepath.Join(filepath.Dir(p.name), path)
	}
	b, err := p.readFile(full)
	if err != nil {
		return p.errorf(p.line, "body file %q: %v", clip(path), err)
	}
	if len(b) > MaxBodyBytes {
		return p.errorf(p.line, "body file %q: %d bytes, more than the %d a body may have", clip(path), len(b), MaxBodyBytes)
	}
	p.cur.Body, p.cur.BodyFile = b, path
	p.st = bodyDone
	return nil
}

func (p *parser) appendBody(l string) error {
	if strings.ContainsFunc(l, isControl) {
		return p.errorf(p.line, "control character in an inline body (put such a body in an @file)")
	}
	if len(p.body) > 0 {
		p.body = append(p.body, '\n')
	}
	if len(p.body)+len(l) > MaxBodyBytes {
		return p.errorf(p.line, "inline body longer than %d bytes", MaxBodyBytes)
	}
	p.body = append(p.body, l...)
	return nil
}

// end closes the current request, if any.
func (p *parser) end() error {
	if p.st == between {
		return nil
	}
	if p.st == inline {
		p.cur.Body = p.body
	}
	p.out = append(p.out, p.cur)
	p.cur, p.body, p.st = Target{}, nil, between
	return nil
}

// isControl reports whether r is an ASCII control character other than tab.
func isControl(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }

// isTokenByte reports whether c may appear in a header name (RFC 9110's
// tchar).
func isTokenByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if !isTokenByte(s[i]) {
			return false
		}
	}
	return true
}

// clip bounds a piece of input quoted in an error.
func clip(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// ErrNotInline is returned by Format for a body it cannot write inline: one
// that starts with a byte a header name may start with (or '#' or '@'), or
// holds a blank line or a control character other than tab and newline, and was not read from a
// file.
var ErrNotInline = errors.New("targets: body cannot be written inline; give it a BodyFile")

// Format writes ts in the requests file format, in order, separated by
// blank lines: a body with a BodyFile as its @path line (the file itself is
// not written), any other body inline. Parse, with a readFile that gives the
// same body files, reads back the same targets (but for Line).
func Format(w io.Writer, ts []Target) error {
	var b bytes.Buffer
	for i, t := range ts {
		if i > 0 {
			b.WriteByte('\n')
		}
		if err := formatOne(&b, t); err != nil {
			return fmt.Errorf("formatting request %d (%s %s): %w", i+1, t.Method, clip(t.URL), err)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

func formatOne(b *bytes.Buffer, t Target) error {
	fmt.Fprintf(b, "%s %s\n", t.Method, t.URL)
	for _, name := range slices.Sorted(maps.Keys(t.Header)) {
		for _, v := range t.Header[name] {
			fmt.Fprintf(b, "%s: %s\n", name, v)
		}
	}
	switch {
	case t.BodyFile != "":
		fmt.Fprintf(b, "@%s\n", t.BodyFile)
	case len(t.Body) > 0:
		if !inlineable(t.Body) {
			return ErrNotInline
		}
		b.Write(t.Body)
		b.WriteByte('\n')
	}
	return nil
}

// inlineable reports whether Parse reads body back from an inline body.
func inlineable(body []byte) bool {
	c := body[0]
	if isTokenByte(c) || c == '@' {
		return false
	}
	if bytes.ContainsFunc(body, func(r rune) bool { return isControl(r) && r != '\n' }) {
		return false
	}
	for l := range bytes.SplitSeq(body, []byte("\n")) {
		if len(bytes.Trim(l, " \t")) == 0 {
			return false // a blank line would end the body
		}
	}
	return true
}

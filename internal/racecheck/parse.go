package racecheck

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Kind is how a racing access touched memory, as the race detector words
// it, in lower case.
type Kind string

// The kinds the Go race detector prints: the access that was caught, then
// the earlier one it conflicts with.
const (
	KindWrite         Kind = "write"
	KindRead          Kind = "read"
	KindPreviousWrite Kind = "previous write"
	KindPreviousRead  Kind = "previous read"
)

// MainGoroutine is the Goroutine of an access the race detector reports as
// "by main goroutine".
const MainGoroutine = 0

// maxFrames bounds the frames kept for one stack; the top ones are kept.
const maxFrames = 64

// maxLine bounds the bytes of one line that Parse looks at; the rest of a
// longer line is skipped.
const maxLine = 64 << 10

// Frame is one frame of a stack in a race report.
type Frame struct {
	// Func is the function as printed, without the trailing "()":
	// "main.(*server).handler", "bytes.(*Buffer).Reset".
	Func string
	// File is the source file as printed, usually an absolute path.
	File string
	// Line is the line in File.
	Line int
}

// IsZero reports whether f is the zero Frame: no frame was reported.
func (f Frame) IsZero() bool { return f == Frame{} }

// String returns "pkg.Func (file.go:123)", with only the file's base name.
func (f Frame) String() string {
	if f.IsZero() {
		return "an unknown frame"
	}
	return fmt.Sprintf("%s (%s:%d)", f.Func, baseName(f.File), f.Line)
}

// Access is one of the two accesses of a race.
type Access struct {
	// Kind is how the memory was touched; empty when the report's header for
	// this access was missing or unreadable.
	Kind Kind
	// Goroutine is the race detector's number for the goroutine that made the
	// access (its own numbering, which need not match a goroutine dump), or
	// MainGoroutine.
	Goroutine int
	// Top is the frame that stands for the access: the first frame of Stack
	// in the program's own code. See Parse for the rule.
	Top Frame
	// Stack is the access's stack as printed, innermost first, at most the
	// top 64 frames.
	Stack []Frame
	// CreatedAt is the stack where the goroutine was started, when the
	// report says ("Goroutine N (running) created at:").
	CreatedAt []Frame
}

// String returns "write at pkg.Func (file.go:12) by goroutine 7".
func (a Access) String() string {
	kind := string(a.Kind)
	if kind == "" {
		kind = "unknown access"
	}
	by := "goroutine " + strconv.Itoa(a.Goroutine)
	if a.Goroutine == MainGoroutine {
		by = "main goroutine"
	}
	if a.Kind == "" {
		return kind + " at " + a.Top.String()
	}
	return kind + " at " + a.Top.String() + " by " + by
}

// Race is a distinct data race: the first report of it, and how many
// reports in the output had the same pair of top frames.
type Race struct {
	// Access is the access the detector caught ("Write at ... by goroutine N").
	Access Access
	// Previous is the earlier access it conflicts with ("Previous read at ...").
	Previous Access
	// Count is how many reports had this pair of top frames, at least 1.
	Count int
}

// String returns the race on one line, for a FAIL message:
//
//	data race: write at main.handler (main.go:41) by goroutine 12 vs previous read at main.writeOut (main.go:57) by goroutine 9 (3 times)
func (r Race) String() string {
	s := "data race: " + r.Access.String() + " vs " + r.Previous.String()
	if r.Count > 1 {
		s += fmt.Sprintf(" (%d times)", r.Count)
	}
	return s
}

// Report is what Parse found in a process's output.
type Report struct {
	// Races are the distinct races, in the order they were first reported.
	Races []Race
	// Found is the N of the "Found N data race(s)" trailer a -race binary
	// prints when it exits normally, summed if the output holds several
	// trailers; 0 when there is none.
	Found int
	// ExitStatus66 is whether a line "exit status 66" (what `go run` and
	// `go test` print for a binary that exited with ExitCode) was seen.
	ExitStatus66 bool
}

// Failed reports whether the output shows a race: a report, a nonzero
// trailer, or exit status 66. A trailer without reports still fails, so a
// log that lost the reports themselves does not pass.
func (r Report) Failed() bool {
	return len(r.Races) > 0 || r.Found > 0 || r.ExitStatus66
}

// Occurrences returns how many race reports were parsed: the sum of the
// Races' counts.
func (r Report) Occurrences() int {
	n := 0
	for _, race := range r.Races {
		n += race.Count
	}
	return n
}

// patterns are the lines of a report that Parse recognises.
type patterns struct {
	access  *regexp.Regexp // "Write at 0x... by goroutine 7:", "Previous read at 0x... by main goroutine:"
	created *regexp.Regexp // "Goroutine 7 (running) created at:"
	found   *regexp.Regexp // "Found 3 data race(s)"
}

func newPatterns() patterns {
	return patterns{
		access:  regexp.MustCompile(`^([A-Za-z][A-Za-z ]*?) at \S+ by (?:(main) goroutine|goroutine (\d{1,9})):$`),
		created: regexp.MustCompile(`^Goroutine (\d{1,9}) \([^)]*\) created at:$`),
		found:   regexp.MustCompile(`Found (\d{1,9}) data race\(s\)`),
	}
}

// ParseFile parses the output of a process that its caller redirected to
// the file at path (stdout and stderr together are fine), as Parse does.
// Call it once the process has stopped.
func ParseFile(path string) (Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return Report{}, fmt.Errorf("reading race reports: %w", err)
	}
	defer f.Close()
	return Parse(f)
}

// Parse reads the output of a -race binary and returns the races it
// reports. Lines outside "WARNING: DATA RACE" blocks are ignored except the
// trailer "Found N data race(s)" and "exit status 66"; so are lines inside a
// block that are not part of the report (another goroutine's log lines), a
// block cut short, and lines of any length. Parse never panics on garbage;
// its error is only the reader's, returned with what was parsed before it.
//
// The top frame of an access is the first frame of its stack that is in the
// program's own code: frames of the race runtime and of synchronisation
// (packages runtime, runtime/..., internal/..., sync, sync/atomic, and
// frames with no package) are skipped, and so are frames of the rest of the
// standard library (packages whose first path element is a standard one
// such as bytes, fmt or net), so that a race inside bytes.(*Buffer).Write
// called from main.handler is attributed to main.handler. When the stack has
// no such frame, the top frame is its first frame outside the race runtime
// and synchronisation, and failing that its first frame.
//
// Reports are deduplicated by the unordered pair of their two top frames
// (function, file and line): the same pair reported again, either way
// round, adds to the Count of the first report.
func Parse(r io.Reader) (Report, error) {
	p := &parser{re: newPatterns(), index: map[pairKey]int{}}
	br := bufio.NewReader(r)
	for {
		line, err := readLine(br)
		if line != "" || err == nil {
			p.line(line)
		}
		if err != nil {
			p.endBlock()
			if errors.Is(err, io.EOF) {
				return p.report, nil
			}
			return p.report, fmt.Errorf("reading race reports: %w", err)
		}
	}
}

// readLine returns the next line without its line ending, at most maxLine
// bytes of it, and io.EOF after the last line.
func readLine(br *bufio.Reader) (string, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if room := maxLine - len(buf); room > 0 {
			buf = append(buf, chunk[:min(len(chunk), room)]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		s := strings.TrimRight(string(buf), "\r\n")
		return s, err
	}
}

// section is the part of a report that frames are being added to.
type section int

const (
	sectionNone section = iota
	sectionAccess
	sectionPrevious
	sectionCreated
)

// block is one report being read.
type block struct {
	accesses []Access        // in the order printed: the caught access, then the previous one
	created  map[int][]Frame // goroutine → where it was created
}

// pairKey identifies a race by its two top frames, in a fixed order.
type pairKey struct{ a, b Frame }

// parser holds the state of one Parse.
type parser struct {
	re     patterns
	report Report
	index  map[pairKey]int // pair → index in report.Races
	cur    *block          // nil outside a report
	sec    section
	gid    int    // goroutine of sectionCreated
	fn     string // function line waiting for its file line
}

func (p *parser) line(raw string) {
	trimmed := strings.TrimSpace(raw)
	switch {
	case strings.Contains(raw, "WARNING: DATA RACE"):
		p.endBlock()
		p.cur = &block{created: map[int][]Frame{}}
		p.sec, p.fn = sectionNone, ""
		return
	case isSeparator(trimmed):
		p.endBlock()
		return
	}
	if m := submatch(p.re.found, raw, strings.Contains(raw, " data race(s)")); m != nil {
		n, _ := strconv.Atoi(m[1])
		p.report.Found += min(n, math.MaxInt-p.report.Found) // saturates on garbage
		return
	}
	if trimmed == "exit status 66" || strings.HasSuffix(trimmed, " exit status 66") {
		p.report.ExitStatus66 = true
		return
	}
	if p.cur == nil || trimmed == "" {
		return
	}
	if raw[0] == ' ' || raw[0] == '\t' {
		p.frameLine(trimmed)
		return
	}
	if m := submatch(p.re.access, trimmed, strings.HasSuffix(trimmed, ":") && strings.Contains(trimmed, " by ")); m != nil {
		a := Access{Kind: Kind(strings.ToLower(m[1])), Goroutine: MainGoroutine}
		if m[2] == "" {
			a.Goroutine, _ = strconv.Atoi(m[3])
		}
		switch len(p.cur.accesses) {
		case 0:
			p.sec = sectionAccess
		case 1:
			p.sec = sectionPrevious
		default:
			p.sec = sectionNone // a third access: not part of Go's report format
			return
		}
		p.cur.accesses = append(p.cur.accesses, a)
		p.fn = ""
		return
	}
	if m := submatch(p.re.created, trimmed, strings.HasPrefix(trimmed, "Goroutine ")); m != nil {
		p.gid, _ = strconv.Atoi(m[1])
		p.sec, p.fn = sectionCreated, ""
	}
	// Any other unindented line is someone else's output: ignored, and the
	// section goes on.
}

// submatch returns re's submatches in s, skipping the match when a cheaper
// test says it cannot succeed.
func submatch(re *regexp.Regexp, s string, worth bool) []string {
	if !worth {
		return nil
	}
	return re.FindStringSubmatch(s)
}

// frameLine handles an indented line of a report: a function, the file
// line that follows it, or a note such as "[failed to restore the stack]".
func (p *parser) frameLine(trimmed string) {
	if strings.HasPrefix(trimmed, "[") {
		p.fn = ""
		return
	}
	if file, line, ok := fileLine(trimmed); ok {
		if p.fn != "" {
			p.addFrame(Frame{Func: p.fn, File: file, Line: line})
			p.fn = ""
		}
		return // else a file line whose function line was lost
	}
	p.fn = strings.TrimSuffix(trimmed, "()")
}

func (p *parser) addFrame(f Frame) {
	var stack *[]Frame
	switch p.sec {
	case sectionAccess:
		stack = &p.cur.accesses[0].Stack
	case sectionPrevious:
		stack = &p.cur.accesses[1].Stack
	case sectionCreated:
		s := p.cur.created[p.gid]
		if len(s) < maxFrames {
			p.cur.created[p.gid] = append(s, f)
		}
		return
	default:
		return
	}
	if len(*stack) < maxFrames {
		*stack = append(*stack, f)
	}
}

// endBlock turns the report being read, if any, into a Race.
func (p *parser) endBlock() {
	b := p.cur
	if b == nil {
		return
	}
	p.cur, p.sec, p.fn = nil, sectionNone, ""
	var race Race
	for i := range b.accesses {
		a := &b.accesses[i]
		a.Top = topFrame(a.Stack)
		if s, ok := b.created[a.Goroutine]; ok && a.Goroutine != MainGoroutine {
			a.CreatedAt = s
		}
	}
	if len(b.accesses) > 0 {
		race.Access = b.accesses[0]
	}
	if len(b.accesses) > 1 {
		race.Previous = b.accesses[1]
	}
	key := pairKey{race.Access.Top, race.Previous.Top}
	if frameLess(key.b, key.a) {
		key.a, key.b = key.b, key.a
	}
	if i, ok := p.index[key]; ok {
		p.report.Races[i].Count++
		return
	}
	race.Count = 1
	p.index[key] = len(p.report.Races)
	p.report.Races = append(p.report.Races, race)
}

func frameLess(x, y Frame) bool {
	if x.Func != y.Func {
		return x.Func < y.Func
	}
	if x.File != y.File {
		return x.File < y.File
	}
	return x.Line < y.Line
}

// fileLine parses the line under a function in a stack,
// "/src/main.go:41 +0x1c4" (the "+0x..." offset may be missing).
func fileLine(s string) (file string, line int, ok bool) {
	if i := strings.LastIndex(s, " +0x"); i >= 0 && isDigits(s[i+4:], 16) {
		s = s[:i]
	}
	i := strings.LastIndexByte(s, ':')
	if i < 1 || len(s)-i-1 > 9 || !isDigits(s[i+1:], 10) {
		return "", 0, false
	}
	line, _ = strconv.Atoi(s[i+1:])
	return s[:i], line, true
}

// isDigits reports whether s is a nonempty string of digits in base 10 or 16.
func isDigits(s string, base int) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case '0' <= c && c <= '9':
		case base == 16 && ('a' <= c && c <= 'f' || 'A' <= c && c <= 'F'):
		default:
			return false
		}
	}
	return true
}

// isSeparator reports whether s is the line of '=' that closes a report.
func isSeparator(s string) bool {
	return len(s) >= 10 && strings.Trim(s, "=") == ""
}

// topFrame applies the rule documented on Parse.
func topFrame(stack []Frame) Frame {
	for _, f := range stack {
		if c := classify(f.Func); c == classProgram {
			return f
		}
	}
	for _, f := range stack {
		if classify(f.Func) != classRuntime {
			return f
		}
	}
	if len(stack) > 0 {
		return stack[0]
	}
	return Frame{}
}

// class is where a frame's function comes from.
type class int

const (
	classProgram class = iota // the program's own code and its dependencies
	classStd                  // the standard library, but for classRuntime
	classRuntime              // the race runtime and synchronisation
)

// isStdRoot reports whether root is the first element of a standard
// library import path (`go list std | cut -d/ -f1 | sort -u`, Go 1.26).
func isStdRoot(root string) bool {
	switch root {
	case "archive", "bufio", "bytes", "cmp", "compress", "container", "context", "crypto",
		"database", "debug", "embed", "encoding", "errors", "expvar", "flag", "fmt", "go",
		"hash", "html", "image", "index", "internal", "io", "iter", "log", "maps", "math",
		"mime", "net", "os", "path", "plugin", "reflect", "regexp", "runtime", "slices",
		"sort", "strconv", "strings", "structs", "sync", "syscall", "testing", "text", "time",
		"unicode", "unique", "unsafe", "vendor", "weak":
		return true
	}
	return false
}

func classify(fn string) class {
	pkg := packagePath(fn)
	switch {
	case pkg == "", pkg == "runtime", strings.HasPrefix(pkg, "runtime/"),
		pkg == "internal", strings.HasPrefix(pkg, "internal/"),
		pkg == "sync", pkg == "sync/atomic":
		return classRuntime
	}
	root, _, _ := strings.Cut(pkg, "/")
	if isStdRoot(root) {
		return classStd
	}
	return classProgram
}

// packagePath returns the import path of the package that defines the
// function fn as the race detector prints it ("net/http.(*conn).serve" →
// "net/http"), or "" when fn names none. A path whose last element has a dot
// ("gopkg.in/yaml.v3") comes back cut at that dot, which keeps its first
// element, the part classify looks at.
func packagePath(fn string) string {
	if i := strings.IndexByte(fn, '['); i >= 0 {
		fn = fn[:i] // type arguments may hold dots and slashes
	}
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return ""
	}
	return fn[:slash+1+dot]
}

// baseName returns the last element of a slash- or backslash-separated path.
func baseName(file string) string {
	if i := strings.LastIndexAny(file, `/\`); i >= 0 {
		return file[i+1:]
	}
	return file
}

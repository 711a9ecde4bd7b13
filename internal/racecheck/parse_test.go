package racecheck_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/poolparity/poolparity/internal/racecheck"
)

// readReport returns a report captured from a real -race binary (see testdata/reports).
func readReport(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "reports", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Literal reports, in the format of the Go race detector, for what the
// captured ones do not show.
const (
	runtimeOnTop = `==================
WARNING: DATA RACE
Write at 0x00c000022640 by goroutine 8:
  runtime.slicecopy()
      /usr/local/go/src/runtime/slice.go:392 +0x0
  internal/race.WriteRange()
      /usr/local/go/src/internal/race/race.go:45 +0x1
  bytes.(*Buffer).Write()
      /usr/local/go/src/bytes/buffer.go:199 +0x118
  example.com/svc/render.(*Page).Encode()
      /src/svc/render/page.go:88 +0x10d
  main.main.func1()
      /src/svc/main.go:26 +0xba

Previous read at 0x00c000022640 by goroutine 11:
  sync/atomic.LoadInt64()
      /usr/local/go/src/sync/atomic/doc.go:1 +0x1
  sync.(*Pool).Get()
      /usr/local/go/src/sync/pool.go:140 +0x3
  example.com/svc/render.Borrow()
      /src/svc/render/pool.go:12 +0x44

Goroutine 8 (running) created at:
  main.main()
      /src/svc/main.go:23 +0x56

Goroutine 11 (finished) created at:
  main.main()
      /src/svc/main.go:23 +0x56
==================
`
	stdOnly = `==================
WARNING: DATA RACE
Read at 0x00c0001a2000 by goroutine 5:
  runtime.memmove()
      /usr/local/go/src/runtime/memmove_amd64.s:100 +0x1
  net/http.(*conn).readRequest()
      /usr/local/go/src/net/http/server.go:1000 +0x2
  net/http.(*conn).serve()
      /usr/local/go/src/net/http/server.go:2000 +0x3

Previous write at 0x00c0001a2000 by goroutine 6:
  runtime.mapassign()
      /usr/local/go/src/runtime/map.go:1 +0x4
  runtime.goexit()
      /usr/local/go/src/runtime/asm_amd64.s:1700 +0x1
==================
`
	dotlessAndGeneric = `WARNING: DATA RACE
Write at 0x1 by goroutine 3:
  slices.SortFunc[...]()
      /usr/local/go/src/slices/sort.go:30 +0x1
  poolsvc.sortItems[...]()
      /home/u/poolsvc/items.go:17 +0x2

Previous read at 0x1 by goroutine 4:
  gopkg.in/yaml.v3.(*parser).parse()
      /home/u/go/pkg/mod/gopkg.in/yaml.v3@v3.0.1/parserc.go:12 +0x3
==================
`
	interleaved = `{"level":"INFO","msg":"listening"}
==================
WARNING: DATA RACE
Write at 0x00c000010000 by goroutine 12:
{"level":"INFO","msg":"request","path":"/a"}
  bytes.(*Buffer).WriteString()
      /usr/local/go/src/bytes/buffer.go:180 +0x1
  poolsvc.handler()
{"level":"INFO","msg":"request","path":"/b"}
      /srv/poolsvc/main.go:41 +0x2

      /srv/poolsvc/stray.go:1 +0x3
Previous read at 0x00c000010000 by goroutine 9:
  poolsvc.writeOut()
      /srv/poolsvc/main.go:57 +0x4
==================
{"level":"INFO","msg":"request","path":"/c"}
`
	failedStack = `WARNING: DATA RACE
Write at 0x00c000010000 by goroutine 9:
  [failed to restore the stack]

Previous write at 0x00c000010000 by goroutine 7:
  main.handler()
      /src/main.go:41 +0x1
==================
`
	cutShort = `racy: listening
==================
WARNING: DATA RACE
Write at 0x00c000010000 by goroutine 9:
  main.handler()
      /src/main.go:41 +0x1

Previous write at 0x00c000010000 by goroutine 7:
  main.hand`
	swapped = `==================
WARNING: DATA RACE
Write at 0x1 by goroutine 1:
  main.handler()
      /src/main.go:41 +0x1

Previous read at 0x1 by goroutine 2:
  main.writeOut()
      /src/main.go:57 +0x1
==================
==================
WARNING: DATA RACE
Write at 0x1 by goroutine 3:
  main.writeOut()
      /src/main.go:57 +0x1

Previous write at 0x1 by goroutine 4:
  main.handler()
      /src/main.go:41 +0x1
WARNING: DATA RACE
Read at 0x2 by goroutine 5:
  main.handler()
      /src/main.go:41 +0x1

Previous write at 0x2 by goroutine 6:
  main.handler()
      /src/main.go:41 +0x1
`
)

func TestParse(t *testing.T) {
	tests := []struct {
		name       string
		input      string
		wantRaces  []string // Race.String of each race
		wantFound  int
		wantExit66 bool
		check      func(t *testing.T, rep racecheck.Report)
	}{
		{
			name:  "the racy HTTP service's log attributes every race to its handler in main.go",
			input: readReport(t, "httpbuffer.log"),
			wantRaces: []string{
				"data race: write at main.(*server).handler (main.go:38) by goroutine 79 vs previous read at main.(*server).handler (main.go:41) by goroutine 63 (2 times)",
				"data race: write at main.(*server).handler (main.go:38) by goroutine 79 vs previous write at main.(*server).handler (main.go:38) by goroutine 63 (3 times)",
				"data race: write at main.(*server).handler (main.go:39) by goroutine 77 vs previous write at main.(*server).handler (main.go:39) by goroutine 63",
			},
			wantFound: 6,
			check: func(t *testing.T, rep racecheck.Report) {
				a := rep.Races[0].Access
				if len(a.Stack) != 8 || a.Stack[0].Func != "bytes.(*Buffer).Reset" || a.Stack[2].File != "<autogenerated>" {
					t.Errorf("stack of the first access = %v, want the 8 frames as printed, bytes.(*Buffer).Reset first", a.Stack)
				}
				if want := "/work/main/internal/racecheck/testdata/racy/main.go"; a.Top.File != want || a.Top.Line != 38 {
					t.Errorf("top frame = %s:%d, want %s:38", a.Top.File, a.Top.Line, want)
				}
				if len(a.CreatedAt) != 2 || a.CreatedAt[1].Func != "main.run.func2" {
					t.Errorf("created at = %v, want net/http.(*Server).Serve then main.run.func2", a.CreatedAt)
				}
				if rep.Occurrences() != rep.Found {
					t.Errorf("parsed %d reports, the trailer says %d", rep.Occurrences(), rep.Found)
				}
			},
		},
		{
			name:  "a race with the main goroutine names it and where the other goroutine started",
			input: readReport(t, "counter.log"),
			wantRaces: []string{
				"data race: read at main.main (main.go:19) by main goroutine vs previous write at main.bump (main.go:10) by goroutine 8",
			},
			wantFound: 1,
			check: func(t *testing.T, rep racecheck.Report) {
				r := rep.Races[0]
				if r.Access.Goroutine != racecheck.MainGoroutine || r.Access.CreatedAt != nil {
					t.Errorf("access = %+v, want the main goroutine without a creation stack", r.Access)
				}
				if r.Access.Kind != racecheck.KindRead || r.Previous.Kind != racecheck.KindPreviousWrite {
					t.Errorf("kinds = %q, %q", r.Access.Kind, r.Previous.Kind)
				}
				if len(r.Previous.CreatedAt) != 1 || r.Previous.CreatedAt[0].String() != "main.main (main.go:14)" {
					t.Errorf("previous access created at %v, want main.main (main.go:14)", r.Previous.CreatedAt)
				}
			},
		},
		{
			name:  "a buffer used after sync.Pool.Put races with its next user",
			input: readReport(t, "poolput.log"),
			wantRaces: []string{
				"data race: write at main.render (main.go:13) by goroutine 8 vs previous read at main.main.func1 (main.go:27) by goroutine 11 (2 times)",
				"data race: write at main.render (main.go:14) by goroutine 8 vs previous read at main.main.func1 (main.go:27) by goroutine 11",
			},
			wantFound: 3,
		},
		{
			name:  "race runtime, sync and standard library frames on top are skipped",
			input: runtimeOnTop,
			wantRaces: []string{
				"data race: write at example.com/svc/render.(*Page).Encode (page.go:88) by goroutine 8 vs previous read at example.com/svc/render.Borrow (pool.go:12) by goroutine 11",
			},
		},
		{
			name:  "a stack with only standard library frames keeps its first frame outside the race runtime",
			input: stdOnly,
			wantRaces: []string{
				"data race: read at net/http.(*conn).readRequest (server.go:1000) by goroutine 5 vs previous write at runtime.mapassign (map.go:1) by goroutine 6",
			},
		},
		{
			name:  "dot-less user packages, generics and versioned module paths count as the program's code",
			input: dotlessAndGeneric,
			wantRaces: []string{
				"data race: write at poolsvc.sortItems[...] (items.go:17) by goroutine 3 vs previous read at gopkg.in/yaml.v3.(*parser).parse (parserc.go:12) by goroutine 4",
			},
		},
		{
			name:  "log lines of other goroutines inside a report are ignored",
			input: interleaved,
			wantRaces: []string{
				"data race: write at poolsvc.handler (main.go:41) by goroutine 12 vs previous read at poolsvc.writeOut (main.go:57) by goroutine 9",
			},
			check: func(t *testing.T, rep racecheck.Report) {
				if n := len(rep.Races[0].Access.Stack); n != 2 {
					t.Errorf("the access has %d frames, want 2 (the stray file line dropped): %v", n, rep.Races[0].Access.Stack)
				}
			},
		},
		{
			name:  "an access whose stack was not restored has an unknown top frame",
			input: failedStack,
			wantRaces: []string{
				"data race: write at an unknown frame by goroutine 9 vs previous write at main.handler (main.go:41) by goroutine 7",
			},
		},
		{
			name:  "a report cut short by a killed process still counts",
			input: cutShort,
			wantRaces: []string{
				"data race: write at main.handler (main.go:41) by goroutine 9 vs previous write at an unknown frame by goroutine 7",
			},
		},
		{
			name:  "a report whose accesses are unreadable still counts",
			input: "WARNING: DATA RACE\nWrite at somewhere\n==================\n",
			wantRaces: []string{
				"data race: unknown access at an unknown frame vs unknown access at an unknown frame",
			},
		},
		{
			name:  "the same pair of frames either way round is one race, and a missing separator still ends a report",
			input: swapped,
			wantRaces: []string{
				"data race: write at main.handler (main.go:41) by goroutine 1 vs previous read at main.writeOut (main.go:57) by goroutine 2 (2 times)",
				"data race: read at main.handler (main.go:41) by goroutine 5 vs previous write at main.handler (main.go:41) by goroutine 6",
			},
		},
		{
			name:       "CRLF line endings parse as LF does",
			input:      strings.ReplaceAll(readReport(t, "counter.log"), "\n", "\r\n") + "exit status 66\r\n",
			wantRaces:  []string{"data race: read at main.main (main.go:19) by main goroutine vs previous write at main.bump (main.go:10) by goroutine 8"},
			wantFound:  1,
			wantExit66: true,
		},
		{
			name:      "a line longer than any buffer is skipped",
			input:     strings.Repeat("x", 300<<10) + "\n" + readReport(t, "counter.log"),
			wantRaces: []string{"data race: read at main.main (main.go:19) by main goroutine vs previous write at main.bump (main.go:10) by goroutine 8"},
			wantFound: 1,
		},
		{
			name:       "the go command's exit status 66 alone fails the run",
			input:      "racy: listening\nexit status 66\n",
			wantExit66: true,
		},
		{
			name:      "a trailer whose reports were lost still fails the run",
			input:     "==================\nFound 2 data race(s)\n",
			wantFound: 2,
		},
		{
			name:  "a clean log has no races",
			input: "racy: listening\n==================\nbanner\n==================\nexit status 0\nracy: stopped\n",
		},
		{
			name: "an empty log has no races",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := racecheck.Parse(strings.NewReader(tt.input))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var got []string
			for _, r := range rep.Races {
				got = append(got, r.String())
			}
			if strings.Join(got, "\n") != strings.Join(tt.wantRaces, "\n") {
				t.Errorf("races:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.wantRaces, "\n"))
			}
			if rep.Found != tt.wantFound || rep.ExitStatus66 != tt.wantExit66 {
				t.Errorf("Found, ExitStatus66 = %d, %t; want %d, %t", rep.Found, rep.ExitStatus66, tt.wantFound, tt.wantExit66)
			}
			wantFailed := len(tt.wantRaces) > 0 || tt.wantFound > 0 || tt.wantExit66
			if rep.Failed() != wantFailed {
				t.Errorf("Failed() = %t, want %t", rep.Failed(), wantFailed)
			}
			if tt.check != nil && len(rep.Races) > 0 {
				tt.check(t, rep)
			}
		})
	}
}

func TestRaceString(t *testing.T) {
	handler := racecheck.Frame{Func: "poolsvc.handler", File: "/srv/poolsvc/main.go", Line: 41}
	writeOut := racecheck.Frame{Func: "poolsvc.writeOut", File: `C:\srv\poolsvc\main.go`, Line: 57}
	tests := []struct {
		name string
		race racecheck.Race
		want string
	}{
		{
			name: "a race seen three times says so",
			race: racecheck.Race{
				Access:   racecheck.Access{Kind: racecheck.KindWrite, Goroutine: 12, Top: handler},
				Previous: racecheck.Access{Kind: racecheck.KindPreviousRead, Goroutine: 9, Top: writeOut},
				Count:    3,
			},
			want: "data race: write at poolsvc.handler (main.go:41) by goroutine 12 vs previous read at poolsvc.writeOut (main.go:57) by goroutine 9 (3 times)",
		},
		{
			name: "a race seen once has no count",
			race: racecheck.Race{
				Access:   racecheck.Access{Kind: racecheck.KindRead, Goroutine: racecheck.MainGoroutine, Top: handler},
				Previous: racecheck.Access{Kind: racecheck.KindPreviousWrite, Goroutine: 2, Top: writeOut},
				Count:    1,
			},
			want: "data race: read at poolsvc.handler (main.go:41) by main goroutine vs previous write at poolsvc.writeOut (main.go:57) by goroutine 2",
		},
		{
			name: "the zero race still reads as one line",
			want: "data race: unknown access at an unknown frame vs unknown access at an unknown frame",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.race.String(); got != tt.want {
				t.Errorf("String() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestParseFile(t *testing.T) {
	tests := []struct {
		name      string
		path      string
		wantRaces int
		wantErr   error
	}{
		{"a log file with reports is parsed", filepath.Join("testdata", "reports", "poolput.log"), 2, nil},
		{"a missing log file is an error that names it", filepath.Join(t.TempDir(), "gray.log"), 0, fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := racecheck.ParseFile(tt.path)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ParseFile: error %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tt.path) {
				t.Errorf("error %q does not name %s", err, tt.path)
			}
			if len(rep.Races) != tt.wantRaces {
				t.Errorf("%d races, want %d", len(rep.Races), tt.wantRaces)
			}
		})
	}
}

func TestParseReturnsWhatItReadBeforeAReadError(t *testing.T) {
	boom := errors.New("disk gone")
	r := io.MultiReader(strings.NewReader(readReport(t, "counter.log")), iotest.ErrReader(boom))
	rep, err := racecheck.Parse(r)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "reading race reports") {
		t.Fatalf("Parse: error %v, want it to wrap %v with context", err, boom)
	}
	if len(rep.Races) != 1 || rep.Found != 1 {
		t.Errorf("parsed %d races and Found %d before the error, want 1 and 1", len(rep.Races), rep.Found)
	}
}

package racecheck_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/poolparity/poolparity/internal/racecheck"
)

// FuzzParse checks that Parse never panics nor errs on any input, reads the
// same whatever the reader's chunking, and counts one report per
// "WARNING: DATA RACE" line. Its seeds are the reports captured from real
// -race binaries in testdata/reports and the literal ones of TestParse.
//
//	go test -run='^$' -fuzz=FuzzParse -fuzztime=30s ./internal/racecheck/
//
// The seeds are tens of kilobytes, so minimising a new interesting input
// can stall the exec count for up to -fuzzminimizetime (60 s by default);
// -fuzzminimizetime=5s keeps a short run fuzzing.
func FuzzParse(f *testing.F) {
	logs, err := filepath.Glob(filepath.Join("testdata", "reports", "*.log"))
	if err != nil || len(logs) == 0 {
		f.Fatalf("no seed reports in testdata/reports (%v)", err)
	}
	for _, path := range logs {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"", "\n", "WARNING: DATA RACE", "==================",
		runtimeOnTop, stdOnly, dotlessAndGeneric, interleaved, failedStack, cutShort, swapped,
		"Found 99999 data race(s)\nexit status 66\n",
		"WARNING: DATA RACE\n  f()\n  g()\n      x.go:1\n\t\t:2 +0x\n  [\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := racecheck.Parse(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		again, err := racecheck.Parse(iotest.OneByteReader(bytes.NewReader(data)))
		if err != nil {
			t.Fatalf("Parse, one byte at a time: %v", err)
		}
		if !reflect.DeepEqual(rep, again) {
			t.Fatalf("Parse depends on the reads: %+v then %+v", rep, again)
		}
		if len(data) < 64<<10 { // no line is long enough to be cut
			markers := 0
			for _, line := range strings.Split(string(data), "\n") {
				if strings.Contains(line, "WARNING: DATA RACE") {
					markers++
				}
			}
			if markers != rep.Occurrences() {
				t.Fatalf("%d lines with a report marker, %d reports parsed", markers, rep.Occurrences())
			}
		}
		if rep.Found < 0 || (len(rep.Races) > 0 && !rep.Failed()) {
			t.Fatalf("inconsistent report: %+v", rep)
		}
		for _, r := range rep.Races {
			s := r.String()
			if r.Count < 1 || strings.Contains(s, "\n") || !strings.HasPrefix(s, "data race: ") {
				t.Fatalf("race %+v reads %q", r, s)
			}
		}
	})
}

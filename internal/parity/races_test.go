package parity_test

import (
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/racecheck"
)

func TestAddRaces(t *testing.T) {
	access := func(kind racecheck.Kind, fn, file string, line, goroutine int) racecheck.Access {
		return racecheck.Access{Kind: kind, Goroutine: goroutine, Top: racecheck.Frame{Func: fn, File: "/src/svc/" + file, Line: line}}
	}
	handler := racecheck.Race{
		Access:   access(racecheck.KindWrite, "main.(*server).handler", "main.go", 38, 79),
		Previous: access(racecheck.KindPreviousRead, "main.(*server).render", "main.go", 51, 80),
		Count:    3,
	}
	counter := racecheck.Race{
		Access:   access(racecheck.KindRead, "main.count", "count.go", 9, 12),
		Previous: access(racecheck.KindPreviousWrite, "main.count", "count.go", 10, 13),
		Count:    1,
	}
	run := parity.RaceRun{Package: "./cmd/svc", Seconds: 20, Concurrency: 32, Requests: 4000, Log: "out/logs/gray-race.log"}
	tests := []struct {
		name    string
		verdict parity.Verdict
		rep     racecheck.Report
		want    parity.Verdict
		reason  string // Reasons[0]; "" for none added
		line    string // a substring of Races.Line()
	}{
		{"one race fails a passing report naming both top frames", parity.Pass, racecheck.Report{Races: []racecheck.Race{handler}, Found: 3}, parity.Fail,
			"data race in gray under concurrent load (race detector): write at main.(*server).handler (main.go:38) vs previous read at main.(*server).render (main.go:51)",
			"1 distinct data races (3 reports)"},
		{"more races are counted after the first", parity.Pass, racecheck.Report{Races: []racecheck.Race{handler, counter}, Found: 4}, parity.Fail,
			"data race in gray under concurrent load (race detector): write at main.(*server).handler (main.go:38) vs previous read at main.(*server).render (main.go:51); 1 more",
			"2 distinct data races (4 reports)"},
		{"a trailer without a readable report still fails", parity.Pass, racecheck.Report{Found: 2}, parity.Fail,
			"data race in gray under concurrent load (race detector): the -race build reported 2 data races, but its log holds no readable report (out/logs/gray-race.log)",
			"the race detector reported 2 data races, none readable"},
		{"exit status 66 alone fails", parity.NoData, racecheck.Report{ExitStatus66: true}, parity.Fail, "reported a data race (exit status 66)", ""},
		{"no race leaves the verdict and adds only the section", parity.Pass, racecheck.Report{}, parity.Pass, "",
			"-race build of ./cmd/svc, 20s of load at concurrency 32: 4000 requests (0 failed); no data race reported"},
		{"a race leaves an ERROR an ERROR", parity.Error, racecheck.Report{Races: []racecheck.Race{counter}}, parity.Error,
			"data race in gray under concurrent load (race detector): read at main.count (count.go:9) vs previous write at main.count (count.go:10)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := parity.Report{Verdict: tt.verdict, Reasons: []string{"the rows said so"}}
			r.AddRaces(run, tt.rep)
			if r.Verdict != tt.want {
				t.Errorf("verdict %s, want %s", r.Verdict, tt.want)
			}
			switch {
			case tt.reason == "" && len(r.Reasons) != 1:
				t.Errorf("reasons %q, want the rows' only", r.Reasons)
			case tt.reason != "" && (len(r.Reasons) != 2 || !strings.Contains(r.Reasons[0], tt.reason)):
				t.Errorf("reasons %q, want the first to contain %q and the rows' kept after it", r.Reasons, tt.reason)
			}
			if r.Races == nil || r.Races.Failed != (tt.reason != "") || len(r.Races.Found) != len(tt.rep.Races) {
				t.Fatalf("races %+v, want the section with %d races", r.Races, len(tt.rep.Races))
			}
			if !strings.Contains(r.Races.Line(), tt.line) {
				t.Errorf("line %q, want it to contain %q", r.Races.Line(), tt.line)
			}
		})
	}
}

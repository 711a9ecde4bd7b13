package parity

import (
	"fmt"

	"github.com/poolparity/poolparity/internal/racecheck"
)

// RaceRun says what a race phase ran: a -race build of gray driven by a
// concurrent load (`poolparity-parity local -gray-pkg`).
type RaceRun struct {
	// Package is the Go package built with -race.
	Package string `json:"package"`
	// Seconds is how long the load ran on the race build.
	Seconds float64 `json:"seconds"`
	// Concurrency bounds the load's requests in flight.
	Concurrency int `json:"concurrency"`
	// Requests and Errors are the load's counts: requests answered or
	// failed, and of them the 5xx and those with no response.
	Requests uint64 `json:"requests"`
	Errors   uint64 `json:"errors"`
	// Log is the file the race build's output went to, which the race
	// detector's reports were read from.
	Log string `json:"log,omitempty"`
}

// RaceFound is one distinct data race the race detector reported: its two
// accesses, each with the top frame of its stack in the program's own code
// ("write at main.handler (main.go:41) by goroutine 12"), and how many
// reports named the same pair of frames.
type RaceFound struct {
	Access   string `json:"access"`
	Previous string `json:"previous"`
	Count    int    `json:"count"`
}

// Races is the race phase in a report: what ran and what it found.
type Races struct {
	RaceRun
	// Found are the distinct races, in the order first reported.
	Found []RaceFound `json:"found,omitempty"`
	// Reports is how many race reports the log held (every repeat of a
	// race counted); Trailer is the N of the detector's "Found N data
	// race(s)" line, 0 when the process printed none (it was killed).
	Reports int `json:"reports"`
	Trailer int `json:"trailer,omitempty"`
	// Failed is whether the log shows a race (racecheck.Report.Failed).
	Failed bool `json:"failed"`
}

// Line states the race phase in one line: what ran, and the races found.
func (rs Races) Line() string {
	s := fmt.Sprintf("-race build of %s, %.0fs of load at concurrency %d: %d requests (%d failed)", rs.Package, rs.Seconds, rs.Concurrency, rs.Requests, rs.Errors)
	switch {
	case len(rs.Found) > 0:
		s += fmt.Sprintf("; %d distinct data races (%d reports)", len(rs.Found), rs.Reports)
	case rs.Failed:
		s += "; the race detector reported " + raceCount(rs.Trailer) + ", none readable in the log"
	default:
		s += "; no data race reported"
	}
	return s
}

// AddRaces puts the race phase into the report and into its verdict: a
// race found (rep.Failed) fails the report (an ERROR stays ERROR) with a
// reason naming the top frames of both stacks of the first race and how
// many more there are, put before the others; no race adds only the
// section.
func (r *Report) AddRaces(run RaceRun, rep racecheck.Report) {
	rs := &Races{RaceRun: run, Reports: rep.Occurrences(), Trailer: rep.Found, Failed: rep.Failed()}
	for _, race := range rep.Races {
		rs.Found = append(rs.Found, RaceFound{Access: race.Access.String(), Previous: race.Previous.String(), Count: race.Count})
	}
	r.Races = rs
	if !rs.Failed {
		return
	}
	reason := "data race in gray under concurrent load (race detector): "
	if len(rep.Races) == 0 {
		reason += "the -race build reported " + raceCount(rep.Found) + ", but its log holds no readable report"
		if run.Log != "" {
			reason += " (" + run.Log + ")"
		}
	} else {
		first := rep.Races[0]
		reason += topAccess(first.Access) + " vs " + topAccess(first.Previous)
		if more := len(rep.Races) - 1; more > 0 {
			reason += fmt.Sprintf("; %d more", more)
		}
	}
	if r.Verdict != Error {
		r.Verdict = Fail
	}
	r.Reasons = append([]string{reason}, r.Reasons...)
}

// topAccess names an access by its kind and top frame, without its
// goroutine: "write at main.handler (main.go:41)", "previous read at
// main.render (main.go:57)".
func topAccess(a racecheck.Access) string {
	kind := string(a.Kind)
	if kind == "" {
		kind = "unknown access"
	}
	return kind + " at " + a.Top.String()
}

// raceCount words the N of a "Found N data race(s)" trailer; 0 is a race
// known only from the exit status.
func raceCount(n int) string {
	switch n {
	case 0:
		return "a data race (exit status 66)"
	case 1:
		return "1 data race"
	}
	return fmt.Sprintf("%d data races", n)
}

package render_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/render"
	"github.com/poolparity/poolparity/internal/racecheck"
)

func TestRacesAreWritten(t *testing.T) {
	var races []racecheck.Race
	for i := range 12 {
		races = append(races, racecheck.Race{
			Access:   racecheck.Access{Kind: racecheck.KindWrite, Goroutine: 7, Top: racecheck.Frame{Func: "main.handler", File: "/src/main.go", Line: 40 + i}},
			Previous: racecheck.Access{Kind: racecheck.KindPreviousRead, Goroutine: 9, Top: racecheck.Frame{Func: "main.render", File: "/src/main.go", Line: 60}},
			Count:    1 + i%2,
		})
	}
	r := parity.Report{Title: "t", Verdict: parity.Pass}
	r.AddRaces(parity.RaceRun{Package: "./cmd/svc", Seconds: 20, Concurrency: 32, Requests: 4000, Log: "out/logs/gray-race.log"}, racecheck.Report{Races: races, Found: 18})
	var text, html bytes.Buffer
	if err := render.Text(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := render.HTML(&html, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"race phase: -race build of ./cmd/svc, 20s of load at concurrency 32: 4000 requests (0 failed); 12 distinct data races (18 reports)",
		"  data race: write at main.handler (main.go:40) by goroutine 7 vs previous read at main.render (main.go:60) by goroutine 9\n",
		"  data race: write at main.handler (main.go:41) by goroutine 7 vs previous read at main.render (main.go:60) by goroutine 9 (2 times)\n",
		"  ... and 2 more (report.json, report.html)\n",
		"  log: out/logs/gray-race.log\n",
		"VERDICT: FAIL (data race in gray under concurrent load (race detector): write at main.handler (main.go:40) vs previous read at main.render (main.go:60); 11 more)",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text report lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{"<h2>Race phase</h2>", "<code>write at main.handler (main.go:51) by goroutine 7</code>", fmt.Sprintf("<td>%d</td>", 2)} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("the HTML report lacks %q", want)
		}
	}
}

package racecheck_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/poolparity/poolparity/internal/racecheck"
)

// ExampleParse turns the output of a -race binary into one line per
// distinct race, attributed to the program's own frames rather than to the
// bytes.Buffer method in which the access happened.
func ExampleParse() {
	output := `poolsvc: listening on 127.0.0.1:8081
==================
WARNING: DATA RACE
Write at 0x00c000124000 by goroutine 12:
  bytes.(*Buffer).WriteString()
      /usr/local/go/src/bytes/buffer.go:180 +0x1c4
  poolsvc.handler()
      /srv/poolsvc/main.go:41 +0x9a
  net/http.HandlerFunc.ServeHTTP()
      /usr/local/go/src/net/http/server.go:2306 +0x47

Previous read at 0x00c000124000 by goroutine 9:
  bytes.(*Buffer).Bytes()
      /usr/local/go/src/bytes/buffer.go:60 +0x2b8
  poolsvc.writeOut()
      /srv/poolsvc/main.go:57 +0x44

Goroutine 12 (running) created at:
  net/http.(*Server).Serve()
      /usr/local/go/src/net/http/server.go:3484 +0x889
==================
poolsvc: stopped
Found 1 data race(s)
`
	rep, err := racecheck.Parse(strings.NewReader(output))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rep.Races {
		fmt.Println(r)
	}
	fmt.Println("found:", rep.Found, "failed:", rep.Failed())
	// Output:
	// data race: write at poolsvc.handler (main.go:41) by goroutine 12 vs previous read at poolsvc.writeOut (main.go:57) by goroutine 9
	// found: 1 failed: true
}

// ExampleBuild builds a service with -race; the caller then runs it with
// its output in a log file, drives concurrent requests, stops it and reads
// the log with ParseFile.
func ExampleBuild() {
	err := racecheck.Build(context.Background(), racecheck.BuildOptions{
		Package: "./cmd/poolsvc",
		Dir:     "/src/poolsvc",
		Output:  "/tmp/poolsvc-race",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// ... start /tmp/poolsvc-race with its output in gray.log, load it, stop it ...
	rep, err := racecheck.ParseFile("gray.log")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rep.Races {
		fmt.Println("FAIL", r)
	}
}

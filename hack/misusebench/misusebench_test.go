package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const wrkOutput = `Running 20s test @ http://127.0.0.1:40000
  2 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.10ms    2.01ms  40.12ms   88.00%
    Req/Sec     2.61k   180.11     3.02k    70.00%
  Latency Distribution
     50%    2.71ms
     75%    3.60ms
     90%    5.01ms
     99%   11.35ms
  104213 requests in 20.00s, 90.12MB read
  Non-2xx or 3xx responses: 9120
Requests/sec:   5210.44
Transfer/sec:      4.51MB
`

func TestParseWrk(t *testing.T) {
	r, err := parseWrk(wrkOutput)
	if err != nil {
		t.Fatal(err)
	}
	if r.RPS != 5210.44 || r.Requests != 104213 || r.P99 != 11350*time.Microsecond {
		t.Errorf("parsed %+v", r)
	}
	for _, bad := range []string{"", "Requests/sec: 1\n", strings.Replace(wrkOutput, "99%", "98%", 1)} {
		if _, err := parseWrk(bad); err == nil {
			t.Errorf("parseWrk(%q) succeeded", bad)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Config{Duration: 20 * time.Second, Warmup: time.Second, Connections: 16, Threads: 2, Modes: allModes}
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"one mode has no base to compare with", func(c *Config) { c.Modes = "pooled" }, "BENCH_MODES"},
		{"a run of hours is refused", func(c *Config) { c.Duration = time.Hour }, "BENCH_DURATION"},
		{"more threads than connections", func(c *Config) { c.Threads = 32 }, "BENCH_THREADS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mod(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

func TestWriteBetweenMarkers(t *testing.T) {
	p := filepath.Join(t.TempDir(), "doc.md")
	doc := "intro\n" + beginMarker + "\nold table\n" + endMarker + "\nafter\n"
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeBetweenMarkers(p, "| new |\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if want := "intro\n" + beginMarker + "\n| new |\n" + endMarker + "\nafter\n"; string(b) != want {
		t.Errorf("got %q, want %q", b, want)
	}
	if err := os.WriteFile(p, []byte("no markers"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeBetweenMarkers(p, "x"); err == nil {
		t.Error("a file without markers was accepted")
	}
}

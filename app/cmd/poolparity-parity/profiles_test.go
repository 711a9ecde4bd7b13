package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/profdiff/profdifftest"
)

func TestRunProfiles(t *testing.T) {
	// Gray spends 3 ms of CPU per request scrubbing; both spend 1 ms in the handler.
	gray, stable := profdifftest.Misuse(t)
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()

	tests := []struct {
		name         string
		firing       bool // the verdict is FAIL
		gray         string
		wantExit     int
		wantOut      []string // in stdout
		wantStderr   string   // stderr's one line; empty: nothing
		wantProfiled bool
	}{
		{"a FAIL profiles both instances and reports the difference per request", true, gray.URL, parity.ExitFail,
			[]string{"profiling gray at", "profiles, CPU per request over 1s: gray 4.00ms, stable 1.00ms (3 and 3 requests)", "pools.ScrubBytes (in runtime.memclrNoHeapPointers)",
				"allocated bytes per request over 1s", "estimated as its track's mean per instance (2 instances; none at 127.0.0.1)", "FAIL"}, "", true},
		{"a pprof endpoint that does not answer leaves the FAIL and says why", true, downURL, parity.ExitFail,
			[]string{"profiles not compared: ", "FAIL"}, "poolparity-parity: profiles missing (the verdict stands): fetching the profiles: ", false},
		{"a PASS profiles nothing", false, gray.URL, parity.ExitPass, []string{"PASS"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeProm(t)
			f.firing = tt.firing
			f.instances = map[string]map[string]float64{
				"true":  {"10.0.0.5:8080": 2, "10.0.0.6:8080": 4},
				"false": {"10.0.0.7:8080": 1, "10.0.0.8:8080": 5},
			}
			before := len(gray.Requests()) + len(stable.Requests())
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			args := []string{"-out", out, "-gate", "confirmed", "-pprof-gray", tt.gray, "-pprof-stable", stable.URL, "-profile-seconds", "1"}
			code := cli.Exit(&stderr, "poolparity-parity", run(context.Background(), args, env(map[string]string{"PROMETHEUS_URL": f.srv.URL}), &stdout, &stderr))
			if code != tt.wantExit {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantExit, stdout.String(), stderr.String())
			}
			for _, s := range tt.wantOut {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout does not show %q:\n%s", s, stdout.String())
				}
			}
			msg := strings.TrimSuffix(stderr.String(), "\n")
			if (tt.wantStderr == "") != (msg == "") || !strings.HasPrefix(msg, tt.wantStderr) || strings.Contains(msg, "\n") {
				t.Errorf("stderr %q, want one line starting %q", msg, tt.wantStderr)
			}
			if profiled := len(gray.Requests())+len(stable.Requests()) > before; tt.firing != profiled {
				t.Errorf("profiled %v on a FAIL %v", profiled, tt.firing)
			}
			for _, u := range append(gray.Requests(), stable.Requests()...) {
				if !strings.HasSuffix(u, "?seconds=1") {
					t.Errorf("profile request %s, want both kinds over -profile-seconds 1", u)
				}
			}
			b, err := os.ReadFile(filepath.Join(out, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			var rep parity.Report
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			if got := len(rep.Profiles) == 2 && rep.Profiles[0].Rows[0].Function == profdifftest.Scrub; got != tt.wantProfiled {
				t.Errorf("report.json profiles %+v; want the scrub first: %v", rep.Profiles, tt.wantProfiled)
			}
		})
	}
}

func TestRunProfilesBadSettings(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a gray URL without a stable one", []string{"-pprof-gray", "http://10.0.0.5:6060"}, "PPROF_GRAY and PPROF_STABLE go together"},
		{"an unparsable URL", []string{"-pprof-gray", "http://[::1", "-pprof-stable", "http://10.0.0.7:6060"}, `PPROF_GRAY must be the http URL of an instance's pprof port such as http://10.0.0.5:6060, got "http://[::1"`},
		{"a URL without a scheme", []string{"-pprof-gray", "http://10.0.0.5:6060", "-pprof-stable", "10.0.0.7:6060"}, "PPROF_STABLE must be the http URL"},
		{"no seconds", []string{"-profile-seconds", "0"}, "PROFILE_SECONDS must be 1 to 120, got 0"},
		{"more seconds than the pprof port allows", []string{"-profile-seconds", "121"}, "PROFILE_SECONDS must be 1 to 120"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := cli.Exit(&stderr, "poolparity-parity", run(context.Background(), tt.args, env(map[string]string{"PROMETHEUS_URL": "http://127.0.0.1:9090"}), &stdout, &stderr))
			msg := strings.TrimSuffix(stderr.String(), "\n")
			if code != parity.ExitUsage || !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Errorf("exit %d, stderr %q; want %d and one line saying %q", code, msg, parity.ExitUsage, tt.want)
			}
		})
	}
}

func TestRatesOf(t *testing.T) {
	r := rates{"true": {"10.0.0.5:8080": 2, "10.0.0.6:8080": 4}, "false": {"10.0.0.7": 3}}
	tests := []struct {
		name, status, host string
		want               float64
		estimated          bool
		wantErr            bool
	}{
		{"the instance at the URL's host", "true", "10.0.0.6", 4, false, false},
		{"an instance label without a port", "false", "10.0.0.7", 3, false, false},
		{"a port-forward is the track's mean", "true", "127.0.0.1", 3, true, false},
		{"a track without series is an error", "baseline", "10.0.0.5", 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, note, err := r.of(tt.status, tt.host)
			if (err != nil) != tt.wantErr || got != tt.want || (note != "") != tt.estimated {
				t.Errorf("of(%q, %q) = %v, %q, %v; want %v, estimated %v", tt.status, tt.host, got, note, err, tt.want, tt.estimated)
			}
		})
	}
}

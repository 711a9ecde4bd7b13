package racecheck_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/racecheck"
	"github.com/poolparity/poolparity/internal/testtool"
)

// raceToolchain returns the go command, or skips the test (fails it when
// CI=true) when a -race build cannot work here (testtool.RaceToolchain).
func raceToolchain(t *testing.T) string {
	t.Helper()
	return testtool.RaceToolchain(t)
}

// goEnv is the environment of the go commands the tests run: the test's,
// outside any workspace and without the caller's GOFLAGS.
func goEnv(extra ...string) []string {
	return append(os.Environ(), append([]string{"GOWORK=off", "GOFLAGS="}, extra...)...)
}

// writeModule writes a one-file main module into a new directory.
func writeModule(t *testing.T, mainGo string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"go.mod": "module scratch\n\ngo 1.26\n", "main.go": mainGo}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestBuildRejectsBadOptionsWithoutRunningGo(t *testing.T) {
	tests := []struct {
		name    string
		opts    racecheck.BuildOptions
		wantErr string
		wantIs  error
	}{
		{"no package is an error", racecheck.BuildOptions{Output: "x"}, "no package given", nil},
		{"a package that looks like a flag is refused", racecheck.BuildOptions{Package: "-toolexec=evil", Output: "x"}, "may not start with '-'", nil},
		{"no output path is an error", racecheck.BuildOptions{Package: "./cmd/svc"}, "building ./cmd/svc with -race: no output path", nil},
		{
			"a go command that is not there wraps exec.ErrNotFound",
			racecheck.BuildOptions{Package: "./cmd/svc", Output: "x", GoBin: "poolparity-no-such-go"},
			"building ./cmd/svc with -race", exec.ErrNotFound,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := racecheck.Build(context.Background(), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Build: error %v, want one containing %q", err, tt.wantErr)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Build: error %v does not wrap %v", err, tt.wantIs)
			}
		})
	}
}

func TestBuildRunsTheGoCommand(t *testing.T) {
	goBin := raceToolchain(t)
	const okMain = "package main\n\nfunc main() {}\n"
	tests := []struct {
		name         string
		mainGo       string
		env          []string
		canceled     bool
		wantErr      []string // substrings of the error; none means success
		wantIs       error
		wantOutputOK bool
	}{
		{
			name:         "CGO_ENABLED=0 in the environment is overridden, as -race needs cgo",
			mainGo:       okMain,
			env:          goEnv("CGO_ENABLED=0"),
			wantOutputOK: true,
		},
		{
			name:    "a compile error quotes the go command's output",
			mainGo:  "package main\n\nfunc main() { undefinedThing() }\n",
			env:     goEnv(),
			wantErr: []string{"building . with -race: exit status 1; go build said:", "undefined: undefinedThing"},
		},
		{
			name:     "a context that has ended stops the build",
			mainGo:   okMain,
			env:      goEnv(),
			canceled: true,
			wantErr:  []string{"building . with -race: context canceled"},
			wantIs:   context.Canceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeModule(t, tt.mainGo)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if tt.canceled {
				cancel()
			}
			out := filepath.Join(t.TempDir(), "bin")
			err := racecheck.Build(ctx, racecheck.BuildOptions{Package: ".", Dir: dir, Output: out, Env: tt.env, GoBin: goBin})
			if len(tt.wantErr) == 0 && err != nil {
				t.Fatalf("Build: %v", err)
			}
			for _, want := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Build: error %v, want one containing %q", err, want)
				}
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Build: error %v does not wrap %v", err, tt.wantIs)
			}
			if _, statErr := os.Stat(out); (statErr == nil) != tt.wantOutputOK {
				t.Errorf("binary written: %t, want %t", statErr == nil, tt.wantOutputOK)
			}
		})
	}
}

// TestRaceRunOfHTTPService is the run the local mode does with a gray track
// given as a Go package: build testdata/racy with -race, serve it on
// loopback, send concurrent requests, stop it and parse its log. The racy
// variant shares one bytes.Buffer between requests; RACY_LOCK=1 guards it.
func TestRaceRunOfHTTPService(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs a -race binary")
	}
	goBin := raceToolchain(t)
	dir, err := filepath.Abs(filepath.Join("testdata", "racy"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "racy")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	if err := racecheck.Build(ctx, racecheck.BuildOptions{Package: ".", Dir: dir, Output: bin, Env: goEnv(), GoBin: goBin}); err != nil {
		t.Fatal(err)
	}
	t.Logf("built testdata/racy with -race in %s", time.Since(start).Round(time.Millisecond))

	const handler = "main.(*server).handler"
	tests := []struct {
		name      string
		lock      string
		wantRaces bool
	}{
		{"a package-level bytes.Buffer shared by all requests races in the handler", "0", true},
		{"the same buffer behind a mutex gives no race", "1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := runRacy(t, bin, tt.lock)
			rep, err := racecheck.ParseFile(run.logPath)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rep.Races {
				t.Log(r)
			}
			t.Logf("%d requests ok, %d failed; exit code %d", run.ok, run.failed, run.exitCode)
			if !tt.wantRaces {
				if rep.Failed() || run.exitCode != 0 || run.failed != 0 {
					t.Errorf("race-free variant: %d races, Found %d, exit code %d, %d failed requests; want none, 0, 0, 0",
						len(rep.Races), rep.Found, run.exitCode, run.failed)
				}
				return
			}
			if run.exitCode != racecheck.ExitCode || rep.Found == 0 || rep.Found != rep.Occurrences() {
				t.Errorf("exit code %d, Found %d, %d reports parsed; want %d and as many reports parsed as found",
					run.exitCode, rep.Found, rep.Occurrences(), racecheck.ExitCode)
			}
			inHandler := 0
			for _, r := range rep.Races {
				if isHandler(r.Access.Top, handler) && isHandler(r.Previous.Top, handler) {
					inHandler++
				}
			}
			if inHandler == 0 {
				t.Errorf("no race has both top frames in %s in main.go; log:\n%s", handler, tail(t, run.logPath))
			}
		})
	}
}

func isHandler(f racecheck.Frame, fn string) bool {
	return f.Func == fn && filepath.Base(f.File) == "main.go" && f.Line > 0
}

// racyRun is what one run of the racy service gave.
type racyRun struct {
	logPath    string
	exitCode   int
	ok, failed int64
}

// runRacy starts bin on a free loopback port with its output in a log file,
// waits until it answers, sends 200 requests from 16 clients at once, and
// stops it with SIGINT (SIGKILL after 10 s).
func runRacy(t *testing.T, bin, lock string) racyRun {
	t.Helper()
	port := freePort(t)
	logPath := filepath.Join(t.TempDir(), "racy.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port), "RACY_LOCK="+lock, "GORACE=")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait() // the exit code is read from ProcessState
		close(done)
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			_ = cmd.Process.Kill()
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	t.Cleanup(stop)

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := waitReady(ctx, client, base+"/healthz", done); err != nil {
		t.Fatalf("racy did not come up: %v; log:\n%s", err, tail(t, logPath))
	}

	const requests, clients = 200, 16
	var next, ok, failed atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for n := next.Add(1); n <= requests && ctx.Err() == nil; n = next.Add(1) {
				if get(ctx, client, fmt.Sprintf("%s/?n=%d", base, n)) == nil {
					ok.Add(1)
				} else {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if ok.Load() == 0 {
		t.Fatalf("no request succeeded; log:\n%s", tail(t, logPath))
	}
	client.CloseIdleConnections() // so that the server's graceful shutdown has nothing to wait for
	stop()
	return racyRun{logPath: logPath, exitCode: cmd.ProcessState.ExitCode(), ok: ok.Load(), failed: failed.Load()}
}

// waitReady polls url until it answers 200, the process ends, or ctx ends.
func waitReady(ctx context.Context, client *http.Client, url string, exited <-chan struct{}) error {
	for {
		err := get(ctx, client, url)
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("the process exited (last check: %w)", err)
		case <-ctx.Done():
			return fmt.Errorf("%w (last check: %w)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// get GETs url and wants a 200.
func get(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// tail returns the last 40 lines of the file at path, for failure messages.
func tail(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}

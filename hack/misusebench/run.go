package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// errPrereq is a missing tool: one line, exit 2.
type errPrereq struct{ msg string }

func (e errPrereq) Error() string { return e.msg }

// result is one mode's measurement.
type result struct {
	Mode     string
	RPS      float64
	P99      time.Duration
	Requests float64
	CPU      time.Duration // the service's user+system CPU over the measured run
}

// cpuPerRequest is CPU seconds per request.
func (r result) cpuPerRequest() float64 { return r.CPU.Seconds() / r.Requests }

func splitModes(s string) []string {
	var out []string
	for _, m := range strings.Split(s, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// benchEnv is what every measurement shares: the service binary, wrk, its
// script and the redis-server's address.
type benchEnv struct {
	svc, wrk, script, redisAddr string
}

// setup checks the tools, builds the service and starts a redis-server on
// loopback; stop stops it and removes the build.
func setup(ctx context.Context) (env benchEnv, stop func(), err error) {
	if env.wrk, err = exec.LookPath("wrk"); err != nil {
		return env, nil, errPrereq{"wrk is not on PATH: apt-get install wrk"}
	}
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		return env, nil, errPrereq{"redis-server is not on PATH: apt-get install redis-server"}
	}
	if runtime.GOOS != "linux" {
		return env, nil, errPrereq{"misusebench reads CPU time from /proc: it runs on Linux only"}
	}
	dir, err := os.MkdirTemp("", "misusebench-")
	if err != nil {
		return env, nil, err
	}
	env.svc = filepath.Join(dir, "poolparity")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", env.svc, "./app/cmd/poolparity").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return env, nil, fmt.Errorf("building the service (run from the repository root): %w\n%s", err, out)
	}
	if env.script, err = filepath.Abs(filepath.Join("hack", "misusebench", "mix.lua")); err != nil {
		os.RemoveAll(dir)
		return env, nil, err
	}
	redisPort, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return env, nil, err
	}
	redis := exec.CommandContext(ctx, redisBin, "--bind", "127.0.0.1", "--port", strconv.Itoa(redisPort), "--save", "", "--appendonly", "no")
	if err := redis.Start(); err != nil {
		os.RemoveAll(dir)
		return env, nil, fmt.Errorf("starting redis-server: %w", err)
	}
	env.redisAddr = fmt.Sprintf("127.0.0.1:%d", redisPort)
	return env, func() { _ = redis.Process.Kill(); _ = redis.Wait(); os.RemoveAll(dir) }, nil
}

// bench measures every mode of cfg and prints (and with cfg.Write writes) the table;
// with cfg.GC, the GC tuning table instead (gcBench).
func bench(ctx context.Context, cfg Config, stdout io.Writer) error {
	env, stop, err := setup(ctx)
	if err != nil {
		return err
	}
	defer stop()
	if cfg.GC != "" {
		return gcBench(ctx, cfg, env, stdout)
	}
	var results []result
	for i, mode := range splitModes(cfg.Modes) {
		r, err := measure(ctx, cfg, env, mode, i%16, nil, nil)
		if err != nil {
			return fmt.Errorf("mode %s: %w", mode, err)
		}
		fmt.Fprintf(os.Stderr, "misusebench: %-14s %8.0f req/s  p99 %-8s CPU %.0f µs/request\n", mode, r.RPS, r.P99, r.cpuPerRequest()*1e6)
		results = append(results, r)
	}
	return emit(stdout, cfg.Write, beginMarker, endMarker, render(cfg, results))
}

// emit prints a table and, when path is set, writes it between the markers begin and end
// of that file.
func emit(stdout io.Writer, path, begin, end, table string) error {
	fmt.Fprint(stdout, table)
	if path == "" {
		return nil
	}
	return writeBetween(path, begin, end, table)
}

// measure starts the service in mode on its own Redis DB with the extra
// environment, warms it up with wrk, then measures one wrk run and the
// service's CPU time over it. hook, when set, is called right before the
// measured run and right after it (after=true), with the service's pid and
// address.
func measure(ctx context.Context, cfg Config, env benchEnv, mode string, db int, extra []string,
	hook func(ctx context.Context, pid int, addr string, after bool) error) (result, error) {
	port, err := freePort()
	if err != nil {
		return result{}, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.CommandContext(ctx, env.svc)
	cmd.Env = append(os.Environ(), "HTTP_ADDR="+addr, "POOL_MODE="+mode, "GRAY_STATUS=true", "REDIS_ADDR="+env.redisAddr,
		"REDIS_DB="+strconv.Itoa(db), "LOG_LEVEL=error", "SHUTDOWN_DELAY=0s", "SHUTDOWN_TIMEOUT=2s")
	cmd.Env = append(cmd.Env, extra...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		return result{}, fmt.Errorf("starting the service: %w", err)
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	if err := waitReady(ctx, "http://"+addr+"/readyz", 20*time.Second); err != nil {
		return result{}, fmt.Errorf("%w\n%s", err, logs.String())
	}
	url := "http://" + addr
	if cfg.Warmup > 0 {
		if _, err := runWrk(ctx, env.wrk, env.script, url, cfg, cfg.Warmup); err != nil {
			return result{}, err
		}
	}
	if hook != nil {
		if err := hook(ctx, cmd.Process.Pid, addr, false); err != nil {
			return result{}, err
		}
	}
	before, err := cpuTime(cmd.Process.Pid)
	if err != nil {
		return result{}, err
	}
	r, err := runWrk(ctx, env.wrk, env.script, url, cfg, cfg.Duration)
	if err != nil {
		return result{}, err
	}
	after, err := cpuTime(cmd.Process.Pid)
	if err != nil {
		return result{}, err
	}
	if hook != nil {
		if err := hook(ctx, cmd.Process.Pid, addr, true); err != nil {
			return result{}, err
		}
	}
	r.Mode, r.CPU = mode, after-before
	return r, nil
}

var (
	reRPS      = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	reRequests = regexp.MustCompile(`([0-9]+) requests in`)
	reP99      = regexp.MustCompile(`\s99%\s+([0-9.]+)(us|ms|s)\b`)
)

func runWrk(ctx context.Context, wrk, script, url string, cfg Config, d time.Duration) (result, error) {
	out, err := exec.CommandContext(ctx, wrk, "-t", strconv.Itoa(cfg.Threads), "-c", strconv.Itoa(cfg.Connections),
		"-d", fmt.Sprintf("%ds", int(d.Seconds())), "--latency", "-s", script, url).CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("wrk: %w\n%s", err, out)
	}
	return parseWrk(string(out))
}

// parseWrk reads throughput, the request count and p99 from wrk --latency output.
func parseWrk(out string) (result, error) {
	var r result
	m := reRPS.FindStringSubmatch(out)
	n := reRequests.FindStringSubmatch(out)
	p := reP99.FindStringSubmatch(out)
	if m == nil || n == nil || p == nil {
		return r, fmt.Errorf("wrk printed no Requests/sec, request count or 99%% latency:\n%s", out)
	}
	r.RPS, _ = strconv.ParseFloat(m[1], 64)
	r.Requests, _ = strconv.ParseFloat(n[1], 64)
	v, _ := strconv.ParseFloat(p[1], 64)
	unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[p[2]]
	r.P99 = time.Duration(v * float64(unit))
	if r.Requests <= 0 {
		return r, errors.New("wrk completed no request")
	}
	return r, nil
}

// cpuTime is a process's user+system CPU time from /proc/<pid>/stat (in
// clock ticks of 1/100 s, Linux's USER_HZ).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces; the fields after it start past ")".
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

func render(cfg Config, rs []result) string {
	var b strings.Builder
	base := rs[0]
	fmt.Fprintf(&b, "Measured %s UTC on %d CPUs (%s/%s), wrk -t%d -c%d, %s per mode after a %s warm-up; ratios to %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH,
		cfg.Threads, cfg.Connections, cfg.Duration, cfg.Warmup, base.Mode)
	fmt.Fprintln(&b, "| POOL_MODE | req/s | throughput | p99 | p99 | CPU per request | CPU per request |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %.0f | %.2f | %s | %.2f | %.0f µs | %.2f |\n", r.Mode, r.RPS, r.RPS/base.RPS,
			r.P99.Round(10*time.Microsecond), float64(r.P99)/float64(base.P99), r.cpuPerRequest()*1e6, r.cpuPerRequest()/base.cpuPerRequest())
	}
	return b.String()
}

const (
	beginMarker = "<!-- misusebench:begin -->"
	endMarker   = "<!-- misusebench:end -->"
)

// writeBetween replaces what lies between the markers begin and end in path.
func writeBetween(path, beginMarker, endMarker, table string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s markers", path, beginMarker, endMarker)
	}
	s = s[:i+len(beginMarker)] + "\n" + table + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func waitReady(ctx context.Context, url string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %s", url, limit)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

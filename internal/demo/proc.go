package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a child process in its own process group, its output in a log
// file. stop ends the whole group, so nothing the child started outlives
// the demo.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	log     *os.File
	done    chan struct{}
	waitErr error
}

// startProc starts bin with args and env (the whole environment), logging
// to logDir/name.log.
func startProc(name, bin string, args, env []string, logDir string) (*proc, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the log of %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, log: f, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, waits up to grace, then sends
// SIGKILL to the group and waits for the process to be reaped.
func (p *proc) stop(grace time.Duration) {
	pgid := p.cmd.Process.Pid
	if !p.exited() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
	}
	select {
	case <-p.done:
	case <-time.After(grace):
	}
	// Whether or not the leader is gone, kill whatever is left in its group.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// tail returns the last lines of the process's log, for error messages.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// errExited is returned while waiting for a process that has ended.
var errExited = errors.New("process exited")

// waitUntil polls check every interval until it returns nil, the process
// exits, ctx ends or timeout passes.
func waitUntil(ctx context.Context, p *proc, timeout, interval time.Duration, what string, check func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, interval+time.Second)
		last = check(cctx)
		cancel()
		if last == nil {
			return nil
		}
		if p != nil && p.exited() {
			return fmt.Errorf("%s: %w (%v); last lines of %s:\n%s", what, errExited, p.waitErr, p.logPath, p.tail(15))
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
	msg := fmt.Sprintf("%s: not ready after %s: %v", what, timeout, last)
	if p != nil {
		msg += fmt.Sprintf("; last lines of %s:\n%s", p.logPath, p.tail(15))
	}
	return errors.New(msg)
}

// httpOK returns a check that GETs url and wants a 200.
func httpOK(client *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// redisPing returns a check that sends PING to a Redis server (redis-server
// or the embedded one).
func redisPing(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		// A RESP array, not an inline command: the embedded server
		// (miniredis) does not read inline commands.
		if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
			return err
		}
		buf := make([]byte, 16)
		n, err := conn.Read(buf)
		if err != nil {
			return err
		}
		if !strings.HasPrefix(string(buf[:n]), "+PONG") {
			return fmt.Errorf("redis answered %q", buf[:n])
		}
		return nil
	}
}

// reservePort returns port when it is free on 127.0.0.1, or a free
// ephemeral port when port is 0.
func reservePort(port int) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		if port != 0 {
			return 0, fmt.Errorf("port %d on 127.0.0.1 is not free: %w", port, err)
		}
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// serviceEnvKeys are the variables the service reads; the demo sets them
// itself and never passes the caller's values through.
var serviceEnvKeys = []string{
	"HTTP_ADDR", "GRAY_STATUS", "POOL_MODE", "LOG_LEVEL", "REDIS_", "SHUTDOWN_", "FAULT_", "OTEL_", "PPROF_",
}

// childEnv returns the demo's environment without the service's variables,
// plus set (KEY=value entries).
func childEnv(set ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		key, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, k := range serviceEnvKeys {
			if key == k || strings.HasSuffix(k, "_") && strings.HasPrefix(key, k) {
				drop = true
				break
			}
		}
		if !drop {
			env = append(env, kv)
		}
	}
	return append(env, set...)
}

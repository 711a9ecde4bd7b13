// Package localproc runs the child processes of a local run on one machine
// (the demo's tracks, Redis, collectors and Prometheus; the tracks and
// Prometheus of `poolparity-parity local`): each child in its own process
// group with its output in a log file, polled until it is ready, and stopped
// with its whole group. It also finds free loopback ports and resolves the
// binaries a run needs.
//
// It is a library: it reads no flags, and the environment only where a
// caller asks for a child's environment (Environ).
package localproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a child process in its own process group, its output in a log
// file. Stop ends the whole group, so nothing the child started outlives
// the run. Its methods are safe for concurrent use.
type Proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	waitErr error
}

// Start starts bin with args and env (the whole environment), logging to
// logDir/name.log.
func Start(name, bin string, args, env []string, logDir string) (*Proc, error) {
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
	p := &Proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Name is the name the process was started with.
func (p *Proc) Name() string { return p.name }

// LogPath is the file the process's output goes to.
func (p *Proc) LogPath() string { return p.logPath }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// WaitErr is what waiting for the process returned (its exit status), nil
// while it runs.
func (p *Proc) WaitErr() error {
	if !p.Exited() {
		return nil
	}
	return p.waitErr
}

// Stop sends SIGTERM to the process group, waits up to grace, then sends
// SIGKILL to the group and waits for the process to be reaped.
func (p *Proc) Stop(grace time.Duration) {
	pgid := p.cmd.Process.Pid
	if !p.Exited() {
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

// Group holds the processes of a run, to stop them together. It is safe
// for concurrent use; its zero value is empty.
type Group struct {
	mu    sync.Mutex
	procs []*Proc
}

// Add adds p to the group.
func (g *Group) Add(p *Proc) {
	g.mu.Lock()
	g.procs = append(g.procs, p)
	g.mu.Unlock()
}

// Stop stops every process of the group at once, each as Proc.Stop does
// with grace, empties the group, and returns how many it stopped once each
// one has ended.
func (g *Group) Stop(grace time.Duration) int {
	g.mu.Lock()
	procs := g.procs
	g.procs = nil
	g.mu.Unlock()
	var wg sync.WaitGroup
	for i := len(procs) - 1; i >= 0; i-- {
		wg.Go(func() { procs[i].Stop(grace) })
	}
	wg.Wait()
	return len(procs)
}

// Tail returns the last n lines of the process's log, for error messages.
func (p *Proc) Tail(n int) string {
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

// ErrExited is returned while waiting for a process that has ended.
var ErrExited = errors.New("process exited")

// WaitUntil polls check every interval until it returns nil, the process
// exits (an error wrapping ErrExited, with the last lines of its log), ctx
// ends or timeout passes. p may be nil for a check of something that is not
// a child.
func WaitUntil(ctx context.Context, p *Proc, timeout, interval time.Duration, what string, check func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, interval+time.Second)
		last = check(cctx)
		cancel()
		if last == nil {
			return nil
		}
		if p != nil && p.Exited() {
			return fmt.Errorf("%s: %w (%v); last lines of %s:\n%s", what, ErrExited, p.waitErr, p.logPath, p.Tail(15))
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
		msg += fmt.Sprintf("; last lines of %s:\n%s", p.logPath, p.Tail(15))
	}
	return errors.New(msg)
}

// HTTPOK returns a check that GETs url and wants a 200.
func HTTPOK(client *http.Client, url string) func(context.Context) error {
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

// Ports hands out loopback ports for the processes a run starts, never
// the same port twice. A port is free when handed out, but nothing holds
// it until the process it is meant for listens on it: the kernel may give
// a port just closed to the next bind of port 0, so two picks made one
// after another, each listening and closing, can return the same port.
// Ports remembers what it gave and skips it.
//
// The zero value is ready to use. Ports is safe for concurrent use.
type Ports struct {
	mu    sync.Mutex
	given map[int]bool
}

// maxPicks bounds the ephemeral ports Reserve tries before it gives up.
const maxPicks = 64

// Reserve returns port when it is free on 127.0.0.1 and not handed out
// before, or, when port is 0, a free ephemeral port not handed out before.
func (ps *Ports) Reserve(port int) (int, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.given == nil {
		ps.given = map[int]bool{}
	}
	if port != 0 {
		if ps.given[port] {
			return 0, fmt.Errorf("port %d on 127.0.0.1 is already given to another process of this run", port)
		}
		l, err := listenLoopback(port)
		if err != nil {
			return 0, fmt.Errorf("port %d on 127.0.0.1 is not free: %w", port, err)
		}
		l.Close()
		ps.given[port] = true
		return port, nil
	}
	// Every listener stays open until a new port is found, so the kernel
	// cannot hand the same one out twice in the loop.
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range maxPicks {
		l, err := listenLoopback(0)
		if err != nil {
			return 0, fmt.Errorf("finding a free port: %w", err)
		}
		held = append(held, l)
		if p := l.Addr().(*net.TCPAddr).Port; !ps.given[p] {
			ps.given[p] = true
			return p, nil
		}
	}
	return 0, fmt.Errorf("finding a free port: the kernel gave only ports already handed out, %d times", maxPicks)
}

// ReservePort returns port when it is free on 127.0.0.1, or a free
// ephemeral port when port is 0. Two calls may return the same port; a
// run that starts several processes uses one Ports instead.
func ReservePort(port int) (int, error) {
	var ps Ports
	return ps.Reserve(port)
}

func listenLoopback(port int) (net.Listener, error) {
	return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}

// Environ returns environ (os.Environ(), or a test's) without the
// variables that drop names, plus set (KEY=value entries). A name in drop
// that ends with '_' drops every variable with that prefix.
func Environ(environ, drop []string, set ...string) []string {
	var env []string
	for _, kv := range environ {
		key, _, _ := strings.Cut(kv, "=")
		dropped := false
		for _, k := range drop {
			if key == k || strings.HasSuffix(k, "_") && strings.HasPrefix(key, k) {
				dropped = true
				break
			}
		}
		if !dropped {
			env = append(env, kv)
		}
	}
	return append(env, set...)
}

// Executable resolves path (a path, or a name on PATH) and checks that it
// is an executable file; what names it in errors.
func Executable(path, what string) (string, error) {
	p := path
	if !strings.Contains(p, string(os.PathSeparator)) {
		if _, err := os.Stat(p); err != nil {
			lp, lerr := exec.LookPath(p)
			if lerr != nil {
				return "", fmt.Errorf("%s: %q not found: %w", what, path, lerr)
			}
			p = lp
		}
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s: %s is not an executable file", what, abs)
	}
	return abs, nil
}

// Output runs bin with args and returns its output, or "" on failure.
func Output(bin string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	return string(out)
}

var promVersionRe = regexp.MustCompile(`version (\S+)`)

// PrometheusVersion returns e.g. "3.7.3" from `prometheus --version`.
func PrometheusVersion(bin string) string {
	if m := promVersionRe.FindStringSubmatch(Output(bin, "--version")); m != nil {
		return m[1]
	}
	return "(unknown version)"
}

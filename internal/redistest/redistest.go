// Package redistest gives tests a real Redis server: the one named by
// REDIS_ADDR, or a redis-server process of their own on a free loopback
// port, without persistence, that a test can stop and restart on the same
// port to simulate an outage, or freeze (SIGSTOP) and thaw to simulate a
// stall.
//
// When neither is available, tests are skipped with a message, except in
// CI (CI=true), where a missing Redis fails the test: Redis-backed tests
// must never silently not run there.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// EnvAddr names the variable holding the address of an external server.
const EnvAddr = "REDIS_ADDR"

// Binary is the server program looked up on PATH.
const Binary = "redis-server"

// Addr returns a Redis address for t: REDIS_ADDR when set, otherwise the
// address of a server started for t (stopped when t ends). Tests sharing an
// external server must keep their keys apart (for example by a key prefix).
func Addr(t testing.TB) string {
	t.Helper()
	if addr := os.Getenv(EnvAddr); addr != "" {
		return addr
	}
	return Start(t).Addr()
}

// missing fails t in CI and skips it elsewhere.
func missing(t testing.TB, why string) {
	t.Helper()
	msg := why + ": install redis-server (Debian: apt-get install -y redis-server) or set " + EnvAddr
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: Redis-backed tests must run)")
	}
	t.Skip(msg)
}

// Server is a redis-server process owned by one test.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts a redis-server for t on a free loopback port, with no
// persistence, and stops it when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath(Binary)
	if err != nil {
		missing(t, Binary+" is not on PATH")
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), port: freePort(t)}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

// Addr returns the server's host:port. It stays the same across restarts.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

func (s *Server) start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--dir", s.dir,
		"--logfile", "",
		"--loglevel", "warning",
	)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("starting %s: %v", s.bin, err)
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait() // the exit status of a server we stop is not interesting
		close(done)
	}(s.cmd, s.done)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(s.Addr()); err == nil {
			return
		} else if time.Now().After(deadline) {
			s.Stop()
			s.t.Fatalf("redis-server on %s did not answer PING within 10s: %v", s.Addr(), err)
		}
		select {
		case <-s.done:
			s.t.Fatalf("redis-server on %s exited at start (port taken?)", s.Addr())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop stops the server (the data is lost). It is safe to call twice.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Kill() // our own child; it holds no data worth a clean shutdown
	<-s.done
}

// Restart starts the server again on the same port after Stop.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// ping sends an inline PING and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}

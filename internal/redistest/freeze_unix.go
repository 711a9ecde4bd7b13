//go:build unix

package redistest

import "syscall"

// Freeze stops the server process with SIGSTOP: connections stay open and
// the kernel still accepts new ones, but nothing is answered, as when a
// Redis stalls (a long fork, a frozen VM, a paused container). Thaw
// resumes it. Stop kills a frozen server as well.
func (s *Server) Freeze() {
	s.t.Helper()
	s.signal(syscall.SIGSTOP)
}

// Thaw resumes a server stopped by Freeze with SIGCONT.
func (s *Server) Thaw() {
	s.t.Helper()
	s.signal(syscall.SIGCONT)
}

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	if s.cmd == nil || s.cmd.Process == nil {
		s.t.Fatalf("redis-server on %s is not running", s.Addr())
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("sending %v to redis-server on %s: %v", sig, s.Addr(), err)
	}
}

package demo

import "syscall"

// sysProcAttr puts the child in its own process group (so that stop can
// signal everything it started) and has the kernel kill it should the demo
// itself die without cleaning up.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

package localproc

import "syscall"

// sysProcAttr puts the child in its own process group (so that Stop can
// signal everything it started) and has the kernel kill it should the parent
// itself die without cleaning up.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

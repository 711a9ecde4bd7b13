//go:build unix && !linux

package localproc

import "syscall"

// sysProcAttr puts the child in its own process group, so that Stop can
// signal everything it started.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

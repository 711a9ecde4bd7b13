package testtool

import (
	"os/exec"
	"strings"
	"testing"
)

// RaceToolchain returns the go command after checking that a -race build
// can work here: go on PATH and the C compiler that cgo uses. Without them
// it skips the test, or fails it when CI=true (SkipOrFail).
func RaceToolchain(t testing.TB) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		SkipOrFail(t, "a -race build needs the go command: %v", err)
	}
	out, err := exec.Command(goBin, "env", "CC").Output()
	if err != nil {
		SkipOrFail(t, "a -race build needs `go env CC`: %v", err)
	}
	cc := strings.Fields(string(out))
	if len(cc) == 0 {
		SkipOrFail(t, "-race needs cgo, and `go env CC` names no C compiler")
	}
	if _, err := exec.LookPath(cc[0]); err != nil {
		SkipOrFail(t, "-race needs cgo and its C compiler %q: %v", cc[0], err)
	}
	return goBin
}

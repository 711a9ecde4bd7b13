// Package testtool holds what tests that need an external tool (helm, kustomize, a control
// plane, a collector) share: how a missing tool is reported; and LogBuffer, which collects the
// log lines of a service under test. It lives in the module's internal/ so that the tests under
// app/, deploy/ and hack/ use the one copy.
package testtool

import (
	"os"
	"testing"
)

// SkipOrFail skips the test, or fails it when CI=true: a missing tool must not pass silently in CI.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

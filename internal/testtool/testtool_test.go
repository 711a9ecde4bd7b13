package testtool_test

import (
	"runtime"
	"testing"

	"github.com/poolparity/poolparity/internal/testtool"
)

// recorder is a testing.TB that records whether the test was skipped or failed and, like
// testing.T, stops the goroutine there.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Skipf(string, ...any)  { r.skipped = true; runtime.Goexit() }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; runtime.Goexit() }

func TestSkipOrFail(t *testing.T) {
	tests := []struct {
		name, ci      string
		skip, failure bool
	}{
		{"outside CI a missing tool skips", "", true, false},
		{"CI=true turns the skip into a failure", "true", false, true},
		{"another CI value still skips", "1", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			r := &recorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				testtool.SkipOrFail(r, "helm missing")
			}()
			<-done
			if r.skipped != tt.skip || r.failed != tt.failure {
				t.Errorf("skipped=%v failed=%v, want skipped=%v failed=%v", r.skipped, r.failed, tt.skip, tt.failure)
			}
		})
	}
}

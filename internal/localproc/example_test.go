package localproc_test

import (
	"fmt"

	"github.com/poolparity/poolparity/internal/localproc"
)

// ExampleEnviron shows a child's environment: the caller's, without the
// variables it must not inherit, plus its own.
func ExampleEnviron() {
	parent := []string{"PATH=/usr/bin", "REDIS_ADDR=10.0.0.1:6379", "POOL_MODE=pooled"}
	fmt.Println(localproc.Environ(parent, []string{"REDIS_", "POOL_MODE"}, "PORT=8081", "GRAY_STATUS=false"))
	// Output:
	// [PATH=/usr/bin PORT=8081 GRAY_STATUS=false]
}

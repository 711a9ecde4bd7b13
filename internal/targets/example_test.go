package targets_test

import (
	"fmt"
	"os"

	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/targets"
)

// A requests file is parsed, checked for hosts outside loopback, and each
// request resolved against the base URL of the service it is sent to.
func Example() {
	f, err := os.Open("testdata/example.requests")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	ts, err := targets.Parse(f, "testdata/example.requests", os.ReadFile)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := loadgen.CheckTargets(ts, nil); err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range ts {
		u, _ := t.Resolve("http://127.0.0.1:9090")
		fmt.Printf("line %d: %s %s (%d body bytes)\n", t.Line, t.Method, u, len(t.Body))
	}
	// Output:
	// line 2: GET http://127.0.0.1:9090/api/v1/items/42 (0 body bytes)
	// line 5: POST http://127.0.0.1:9090/convert (24 body bytes)
	// line 9: PUT http://127.0.0.1:9090/api/v1/items/7 (12 body bytes)
}

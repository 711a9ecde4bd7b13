package loadgen_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/poolparity/poolparity/internal/loadgen"
)

// TestMisusebenchMixMatchesDefaultMix holds the wrk script of hack/misusebench
// (make misuse-bench) to DefaultMix: the wrk table in docs/pool-misuse.md
// claims the load generator's endpoint mix, and the script is a copy of it in
// Lua, so a change to one must show up here.
func TestMisusebenchMixMatchesDefaultMix(t *testing.T) {
	b, err := os.ReadFile("../../hack/misusebench/mix.lua")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, m := range regexp.MustCompile(`add\((\d+), "(\w+)"\)`).FindAllStringSubmatch(string(b), -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			t.Fatalf("mix.lua: weight %q: %v", m[1], err)
		}
		got[m[2]] += n
	}
	d := loadgen.DefaultMix
	want := map[string]int{"get": d.Get, "put": d.Put, "list": d.List, "report": d.Report, "delete": d.Delete}
	if len(got) != len(want) {
		t.Fatalf("mix.lua weighs %v, want the ops of DefaultMix %v", got, want)
	}
	for op, w := range want {
		if got[op] != w {
			t.Errorf("mix.lua weighs %s %d, DefaultMix %d", op, got[op], w)
		}
	}
}

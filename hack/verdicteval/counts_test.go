package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCountsQuickWritesTheReport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "counts.md")
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"counts", "-quick", "-models", "iid", "-seeds", "1,2", "-out", out}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	report := string(b)
	for _, want := range []string{
		"# Count-level simulation of the parity judges", "## Targets (issue 37)", "## Results", "### iid",
		"| 150 req/s 90/10 | A/A | counts | 20 s | 8 |", "| 150 req/s 90/10 | p99 +40% | per-minute sequential | 1 min | 8 |",
		"go run ./hack/verdicteval counts -quick -models iid -seeds 1,2",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

func TestCountsRefusesBadFlags(t *testing.T) {
	cases := [][]string{{"-seeds", "1,x"}, {"-models", "nosuch"}, {"extra"}, {"-quick", "-lead", "1s"}, {"-rollout", "90s", "-quick=false", "-models", "iid", "-runs", "1", "-regression-runs", "1"}}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), append([]string{"counts"}, args...), &stdout, &stderr); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

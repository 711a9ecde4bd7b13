package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/steps"
)

// This file is what adding a kind step takes: the step's type, its Def, and one registration
// (here the test's registry; in the harness a line in steps.Defs).

// countStep is a test-only step: it counts to n, needs no cluster, and reports its own result.
type countStep struct{ n int }

// countResult is countStep's own result.
type countResult struct {
	Counted int `json:"counted"`
}

// Table implements harness.Result.
func (r countResult) Table(harness.Results) string { return fmt.Sprintf("\n== count: %d\n", r.Counted) }

func (countStep) Name() string { return "count" }

func (s countStep) Run(context.Context, *harness.Env) (harness.Outcome, error) {
	return harness.Outcome{Note: fmt.Sprintf("counted to %d", s.n), Result: countResult{Counted: s.n}}, nil
}

// countDef declares the count step.
func countDef() harness.Def {
	return harness.Def{Step: countStep{n: 3}, Doc: "Count to three (a test-only step)."}
}

// TestANewStepIsOneFileAndItsRegistration registers the test-only count step beside the
// harness's steps and runs it through the CLI: -steps accepts it, -h lists it, the runner runs
// it and the report holds its result under its name.
func TestANewStepIsOneFileAndItsRegistration(t *testing.T) {
	reg, err := steps.Registry()
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(countDef()); err != nil {
		t.Fatal(err)
	}
	var help strings.Builder
	_ = run(context.Background(), reg, []string{"-h"}, func(string) string { return "" }, &strings.Builder{}, &help)
	if !strings.Contains(help.String(), "count") || !strings.Contains(help.String(), "Count to three") {
		t.Errorf("-h does not list the count step:\n%s", help.String())
	}
	dir := t.TempDir()
	var out strings.Builder
	if err := run(context.Background(), reg, []string{"-steps", "count", "-out", dir}, func(string) string { return "" }, &out, &strings.Builder{}); err != nil {
		t.Fatalf("run -steps count: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "step count done") || !strings.Contains(out.String(), "== count: 3") {
		t.Errorf("the run did not run the step and print its table:\n%s", out.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Steps map[string]countResult `json:"steps"`
	}
	if err := json.Unmarshal(b, &rep); err != nil || rep.Steps["count"].Counted != 3 {
		t.Errorf("report.json holds %+v (%v), want steps.count.counted = 3:\n%s", rep.Steps, err, b)
	}
	if err := run(context.Background(), reg, []string{"-steps", "counts", "-out", dir}, func(string) string { return "" }, &out, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), `unknown step "counts"`) {
		t.Errorf("run -steps counts: err = %v, want the unknown step refused", err)
	}
}

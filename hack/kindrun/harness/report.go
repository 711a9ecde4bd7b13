package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Report is what a run did: each step's wall time and note, and each step's own result.
type Report struct {
	Mode    string        `json:"mode"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Phases  []Phase       `json:"phases"`
	// Results are the steps' results in the order they ran; report.json has them under
	// "steps", by step name.
	Results Results `json:"-"`
}

// Phase is one step's wall time.
type Phase struct {
	Step    string        `json:"step"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Note    string        `json:"note,omitempty"`
}

// add appends one step's phase and result.
func (r *Report) add(p Phase, res Result) {
	r.Phases = append(r.Phases, p)
	if res != nil {
		r.Results = append(r.Results, StepResult{Step: p.Step, Result: res})
	}
}

// MarshalJSON writes the phases and, under "steps", each step's result by its name.
func (r Report) MarshalJSON() ([]byte, error) {
	steps := map[string]Result{}
	for _, s := range r.Results {
		steps[s.Step] = s.Result
	}
	type plain Report
	return json.Marshal(struct {
		plain
		Steps map[string]Result `json:"steps"`
	}{plain(r), steps})
}

// Write saves the report as out/kind/report.json and report.txt; a report it cannot write is
// logged, not fatal.
func (r Report) Write(env *Env) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(env.Cfg.OutDir, "report.json"), b, 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(env.Cfg.OutDir, "report.txt"), []byte(r.Summary(r.Elapsed)), 0o644)
	}
	if err != nil {
		env.Logf("writing the report: %v", err)
	}
}

// Summary is the phases, then each step's table, in the order the steps ran.
func (r Report) Summary(elapsed time.Duration) string {
	var w strings.Builder
	fmt.Fprintf(&w, "\n== kind run (%s) in %s\n", r.Mode, elapsed.Round(time.Second))
	for _, p := range r.Phases {
		fmt.Fprintf(&w, "  %-13s %7s  %s\n", p.Step, p.Elapsed, p.Note)
	}
	for i, s := range r.Results {
		w.WriteString(s.Result.Table(r.Results[:i]))
	}
	return w.String()
}

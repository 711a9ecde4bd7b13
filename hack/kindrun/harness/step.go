package harness

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Step is one phase of a run. Run reads what it needs from env (the configuration, the
// cluster, the tools) and returns what it did and measured; it keeps nothing for the steps
// after it, which read the cluster instead. Run is called once per run, from one goroutine.
type Step interface {
	// Name is the step's name on the command line and in the Makefile.
	Name() string
	// Run runs the step.
	Run(ctx context.Context, env *Env) (Outcome, error)
}

// Outcome is what one step returns.
type Outcome struct {
	// Note is a one-line summary for the progress log and the report.
	Note string
	// Result holds what the step measured, nil when it measures nothing; the report writes it
	// under the step's name and prints its table.
	Result Result
	// Stop undoes what the step started outside the cluster (the Docker engine of the env
	// step); the run calls it at its end, unless -keep.
	Stop func()
}

// Result is what one step measured. The report writes it, as JSON, under the step's name in
// report.json, and prints its Table in report.txt and at the end of the run.
type Result interface {
	// Table is the step's section of the printed report. earlier holds the results of the
	// steps that ran before it, for a table that sets this step's figures beside theirs.
	Table(earlier Results) string
}

// Results are the results of a run's steps, in the order they ran.
type Results []StepResult

// StepResult is one step's result.
type StepResult struct {
	Step   string
	Result Result
}

// Of returns the result of the step called name, if it ran and measured something.
func (rs Results) Of(name string) (Result, bool) {
	for _, r := range slices.Backward(rs) {
		if r.Step == name {
			return r.Result, true
		}
	}
	return nil, false
}

// Def declares a step once: its name (the Step's), the steps whose work it needs, the
// Makefile target that runs it alone and its one-line doc. The CLI's -steps, its help, the
// default list, the Makefile's step targets and docs/kind.md's step list come from the Defs of
// one Registry.
type Def struct {
	Step Step
	// Needs names the steps whose work this one reads (a cluster, images, the release). The
	// runner runs the engine step first for a step that needs it; the others are what the
	// cluster must already hold, and a default list runs them before.
	Needs []string
	// Target is the Makefile target that runs this step alone, "" when none does.
	Target string
	// Doc is one line: what the step does (the Makefile target's help, docs/kind.md's list).
	Doc string
	// Default says whether `all` (make test-kind, CI) runs it.
	Default bool
	// Beside names a group of steps that run side by side: steps of one group that are next to
	// each other in a run start together and the run goes on when all of them are done. They
	// are steps that wait on the cluster's clock (analysis intervals, loads) and touch only
	// their own namespaces, never each other's objects. "" runs the step alone.
	Beside string
}

// Name is the step's name.
func (d Def) Name() string { return d.Step.Name() }

// Registry holds the steps a run may name, in the order `all` runs them (steps run only by
// name after). Register is for setting it up; after that a Registry is read-only and safe for
// concurrent reads.
type Registry struct {
	defs []Def
}

// Register adds d. It refuses a second step of d's name and a need no registered step meets.
func (r *Registry) Register(d Def) error {
	if d.Step == nil || d.Name() == "" {
		return fmt.Errorf("registering a step without a name")
	}
	if _, ok := r.Lookup(d.Name()); ok {
		return fmt.Errorf("two steps are called %q", d.Name())
	}
	for _, n := range d.Needs {
		nd, ok := r.Lookup(n)
		if !ok {
			return fmt.Errorf("step %q needs %q, which is not registered before it", d.Name(), n)
		}
		if d.Beside != "" && nd.Beside == d.Beside {
			return fmt.Errorf("step %q needs %q, which runs beside it (group %q)", d.Name(), n, d.Beside)
		}
	}
	if d.Doc == "" {
		return fmt.Errorf("step %q has no doc line", d.Name())
	}
	r.defs = append(r.defs, d)
	return nil
}

// Lookup returns the step called name.
func (r *Registry) Lookup(name string) (Def, bool) {
	i := slices.IndexFunc(r.defs, func(d Def) bool { return d.Name() == name })
	if i < 0 {
		return Def{}, false
	}
	return r.defs[i], true
}

// Defs returns every registered step, in registration order.
func (r *Registry) Defs() []Def { return slices.Clone(r.defs) }

// Names lists the steps a user may name: those `all` runs, in its order, then the others.
func (r *Registry) Names() []string {
	names := r.Default()
	for _, d := range r.defs {
		if !d.Default {
			names = append(names, d.Name())
		}
	}
	return names
}

// Default lists the steps `all` runs, in order.
func (r *Registry) Default() []string {
	var names []string
	for _, d := range r.defs {
		if d.Default {
			names = append(names, d.Name())
		}
	}
	return names
}

// Steps resolves names ("all" alone, or empty, is the default list) to their Defs, in order.
func (r *Registry) Steps(names []string) ([]Def, error) {
	if len(names) == 0 || len(names) == 1 && names[0] == "all" {
		names = r.Default()
	}
	out := make([]Def, 0, len(names))
	for _, n := range names {
		d, ok := r.Lookup(n)
		if !ok {
			return nil, fmt.Errorf("unknown step %q (steps: all %s)", n, strings.Join(r.Names(), " "))
		}
		out = append(out, d)
	}
	return out, nil
}

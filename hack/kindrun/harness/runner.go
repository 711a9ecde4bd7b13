package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// Runner runs steps in order, those of one Beside group next to each other side by side. A step that needs the Engine step (Def.Needs) gets it first,
// once, when it has not run. On a failure (not a missing prerequisite) it calls OnFailure;
// unless Keep it undoes what the steps started (their Stop). It always writes the report.
type Runner struct {
	Env *Env
	// Engine is the step the others need for a container engine (the env step).
	Engine Def
	// OnFailure prints the diagnostics of a failed run (and deletes the cluster unless Keep).
	OnFailure func(context.Context)
}

// Run runs steps and returns the report of what they did and measured.
func (r Runner) Run(ctx context.Context, steps []Def) (rep Report, err error) {
	env := r.Env
	start := time.Now()
	rep.Mode = env.Cfg.Mode
	if err := os.MkdirAll(env.LogDir, 0o755); err != nil {
		return rep, fmt.Errorf("creating %s: %w", env.LogDir, err)
	}
	var stops []func()
	defer func() {
		if err != nil && !errors.As(err, new(*PrereqError)) && r.OnFailure != nil {
			r.OnFailure(context.WithoutCancel(ctx))
		}
		if !env.Cfg.Keep {
			for _, stop := range slices.Backward(stops) {
				stop()
			}
		}
		rep.Elapsed = time.Since(start)
		rep.Write(env)
	}()
	engine := false
	for i := 0; i < len(steps); {
		batch := besideBatch(steps[i:])
		for _, d := range batch {
			if !engine && d.Name() != r.Engine.Name() && slices.Contains(d.Needs, r.Engine.Name()) {
				o, err := r.Engine.Step.Run(ctx, env)
				if o.Stop != nil {
					stops = append(stops, o.Stop)
				}
				if err != nil {
					return rep, fmt.Errorf("step %s: %w", r.Engine.Name(), err)
				}
				engine = true
			}
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		runs := r.runBatch(ctx, batch)
		var first error
		for _, sr := range runs {
			rep.add(sr.phase, sr.o.Result)
			if sr.o.Stop != nil {
				stops = append(stops, sr.o.Stop)
			}
			if sr.err != nil && (first == nil || errors.Is(first, context.Canceled) && !errors.Is(sr.err, context.Canceled)) {
				first = fmt.Errorf("step %s: %w", sr.phase.Step, sr.err)
			}
			engine = engine || sr.phase.Step == r.Engine.Name()
		}
		if first != nil {
			return rep, first
		}
		i += len(batch)
	}
	env.Print(rep.Summary(time.Since(start)))
	return rep, nil
}

// stepRun is what one step of a batch did.
type stepRun struct {
	phase Phase
	o     Outcome
	err   error
}

// besideBatch returns the steps at the head of steps that run together: the first, and the
// steps after it of its Beside group.
func besideBatch(steps []Def) []Def {
	n := 1
	for g := steps[0].Beside; g != "" && n < len(steps) && steps[n].Beside == g; n++ {
	}
	return steps[:n]
}

// runBatch runs the steps of batch, side by side when there are several, and returns what
// each did, in batch's order. When one fails, the others' context is cancelled.
func (r Runner) runBatch(ctx context.Context, batch []Def) []stepRun {
	env := r.Env
	runs := make([]stepRun, len(batch))
	one := func(ctx context.Context, i int) error {
		s := batch[i].Step
		t := time.Now()
		env.Logf("step %s", s.Name())
		o, err := s.Run(ctx, env)
		runs[i] = stepRun{Phase{Step: s.Name(), Elapsed: time.Since(t).Round(time.Second), Note: o.Note}, o, err}
		if err == nil {
			env.Logf("step %s done in %s%s", s.Name(), time.Since(t).Round(time.Second), noteSuffix(o.Note))
		}
		return err
	}
	if len(batch) == 1 {
		_ = one(ctx, 0)
		return runs
	}
	names := make([]string, len(batch))
	for i, d := range batch {
		names[i] = d.Name()
	}
	env.Logf("steps %s side by side (group %s)", strings.Join(names, ", "), batch[0].Beside)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i := range batch {
		wg.Go(func() {
			if err := one(ctx, i); err != nil {
				env.Logf("step %s failed: %v; stopping the steps beside it", batch[i].Name(), err)
				cancel()
			}
		})
	}
	wg.Wait()
	return runs
}

func noteSuffix(n string) string {
	if n == "" {
		return ""
	}
	return " (" + n + ")"
}

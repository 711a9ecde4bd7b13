package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
)

// Runner runs steps in order. A step that needs the Engine step (Def.Needs) gets it first,
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
	for _, d := range steps {
		s := d.Step
		if !engine && s.Name() != r.Engine.Name() && slices.Contains(d.Needs, r.Engine.Name()) {
			o, err := r.Engine.Step.Run(ctx, env)
			if o.Stop != nil {
				stops = append(stops, o.Stop)
			}
			if err != nil {
				return rep, fmt.Errorf("step %s: %w", r.Engine.Name(), err)
			}
			engine = true
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		t := time.Now()
		env.Logf("step %s", s.Name())
		o, err := s.Run(ctx, env)
		rep.add(Phase{Step: s.Name(), Elapsed: time.Since(t).Round(time.Second), Note: o.Note}, o.Result)
		if o.Stop != nil {
			stops = append(stops, o.Stop)
		}
		if err != nil {
			return rep, fmt.Errorf("step %s: %w", s.Name(), err)
		}
		engine = engine || s.Name() == r.Engine.Name()
		env.Logf("step %s done in %s%s", s.Name(), time.Since(t).Round(time.Second), noteSuffix(o.Note))
	}
	env.Print(rep.Summary(time.Since(start)))
	return rep, nil
}

func noteSuffix(n string) string {
	if n == "" {
		return ""
	}
	return " (" + n + ")"
}

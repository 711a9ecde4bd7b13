package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// togetherStep runs steps at the same time, each on its own release and load, and reports them
// as one phase: a run on 2 cores is budgeted in minutes, and steps whose assertions do not
// depend on an idle machine (a share by weight, a trigger that fires on latency) need not wait
// for each other. Each step keeps its own name for -steps; `all` runs the group.
type togetherStep struct{ steps []Step }

// Name implements Step: the steps' names joined by "+".
func (s togetherStep) Name() string {
	names := make([]string, len(s.steps))
	for i, st := range s.steps {
		names[i] = st.Name()
	}
	return strings.Join(names, "+")
}

// Run implements Step: every step runs to its end, even when another fails; the outcome holds
// all their measurements, a note with each one's time, and every error.
func (s togetherStep) Run(ctx context.Context, env *Env) (Outcome, error) {
	outs := make([]Outcome, len(s.steps))
	errs := make([]error, len(s.steps))
	took := make([]time.Duration, len(s.steps))
	var wg sync.WaitGroup
	for i, st := range s.steps {
		wg.Go(func() {
			t := time.Now()
			outs[i], errs[i] = st.Run(ctx, env)
			took[i] = time.Since(t).Round(time.Second)
			env.logf("step %s (of %s) done in %s", st.Name(), s.Name(), took[i])
		})
	}
	wg.Wait()
	var o Outcome
	var notes []string
	var stops []func()
	for i, st := range s.steps {
		o.Result.merge(outs[i].Result)
		notes = append(notes, fmt.Sprintf("%s %s: %s", st.Name(), took[i], outs[i].Note))
		if outs[i].Stop != nil {
			stops = append(stops, outs[i].Stop)
		}
		if errs[i] != nil {
			errs[i] = fmt.Errorf("%s: %w", st.Name(), errs[i])
		}
	}
	o.Note = strings.Join(notes, "; ")
	if len(stops) > 0 {
		o.Stop = func() {
			for _, f := range stops {
				f()
			}
		}
	}
	return o, errors.Join(errs...)
}

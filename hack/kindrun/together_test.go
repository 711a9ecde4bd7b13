package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// togetherFake is a step for the togetherStep tests: it waits for the others to start (so they
// provably run at the same time), then returns its outcome.
type togetherFake struct {
	name    string
	err     error
	started *atomic.Int32
	all     int32
}

func (f togetherFake) Name() string { return f.name }

func (f togetherFake) Run(ctx context.Context, _ *Env) (Outcome, error) {
	f.started.Add(1)
	for f.started.Load() < f.all {
		select {
		case <-ctx.Done():
			return Outcome{}, errors.New("the other steps never started: not run together")
		case <-time.After(time.Millisecond):
		}
	}
	return Outcome{Note: f.name + " note", Result: Result{Scaled: []string{f.name}}}, f.err
}

func TestTogetherStepRunsAllAtOnceAndJoinsTheirOutcomes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var started atomic.Int32
	s := togetherStep{steps: []Step{
		togetherFake{name: "a", started: &started, all: 2},
		togetherFake{name: "b", err: errors.New("b broke"), started: &started, all: 2},
	}}
	if s.Name() != "a+b" {
		t.Errorf("Name() = %q, want a+b", s.Name())
	}
	env := newEnv(Config{OutDir: t.TempDir()}, io.Discard)
	o, err := s.Run(ctx, env)
	if err == nil || !strings.Contains(err.Error(), "b: b broke") || strings.Contains(err.Error(), "not run together") {
		t.Errorf("error %v, want only b's, named", err)
	}
	if len(o.Result.Scaled) != 2 || !strings.Contains(o.Note, "a note") || !strings.Contains(o.Note, "b note") {
		t.Errorf("outcome %+v: want both steps' results and notes", o)
	}
}

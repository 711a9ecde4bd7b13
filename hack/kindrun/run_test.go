package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
)

// fakeStep is a Step that records its runs in a shared log and returns a fixed outcome.
type fakeStep struct {
	name string
	o    Outcome
	err  error
	log  *[]string
}

func (s fakeStep) Name() string { return s.name }

func (s fakeStep) Run(context.Context, *Env) (Outcome, error) {
	*s.log = append(*s.log, s.name)
	return s.o, s.err
}

func TestRunner(t *testing.T) {
	tests := []struct {
		name        string
		steps       []string // a name ending in "!" fails, in "?" misses a prerequisite
		keep        bool
		wantRan     []string
		wantPhases  []string
		wantErr     string
		wantFailure bool
		wantStopped bool
	}{
		{"the engine runs first, once, and is stopped at the end", []string{"kind-up", "helm-install"}, false,
			[]string{"env", "kind-up", "helm-install"}, []string{"kind-up", "helm-install"}, "", false, true},
		{"an explicit env step is the engine", []string{"env", "kind-up"}, false,
			[]string{"env", "kind-up"}, []string{"env", "kind-up"}, "", false, true},
		{"kind-down alone needs no engine", []string{"kind-down"}, false,
			[]string{"kind-down"}, []string{"kind-down"}, "", false, false},
		{"a failed step stops the run and is diagnosed", []string{"kind-up", "helm-install!", "scenarios"}, false,
			[]string{"env", "kind-up", "helm-install!"}, []string{"kind-up", "helm-install!"}, "step helm-install!: boom", true, true},
		{"a missing prerequisite is not diagnosed", []string{"kind-up?"}, false,
			[]string{"env", "kind-up?"}, []string{"kind-up?"}, "missing tool", false, true},
		{"keep leaves the engine running", []string{"kind-up"}, true,
			[]string{"env", "kind-up"}, []string{"kind-up"}, "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ran []string
			stopped, failure := false, false
			engine := fakeStep{name: "env", o: Outcome{Note: "engine", Stop: func() { stopped = true }}, log: &ran}
			var steps []Step
			for _, n := range tt.steps {
				s := fakeStep{name: n, log: &ran, o: Outcome{Note: "did " + n, Result: Result{Scaled: []string{"gray"}}}}
				switch {
				case n == "env":
					s = engine
				case strings.HasSuffix(n, "!"):
					s.err = errors.New("boom")
				case strings.HasSuffix(n, "?"):
					s.err = prereq("missing tool")
				}
				steps = append(steps, s)
			}
			dir := t.TempDir()
			env := newEnv(Config{Mode: "offline", OutDir: dir, Keep: tt.keep}, &strings.Builder{})
			r := runner{env: env, engine: engine, onFailure: func(context.Context) { failure = true }}
			res, err := r.run(context.Background(), steps)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("run error = %v, want %q", err, tt.wantErr)
			}
			var phases []string
			for _, p := range res.Phases {
				phases = append(phases, p.Step)
			}
			if !slices.Equal(ran, tt.wantRan) || !slices.Equal(phases, tt.wantPhases) {
				t.Errorf("ran %v with phases %v, want %v and %v", ran, phases, tt.wantRan, tt.wantPhases)
			}
			if failure != tt.wantFailure || stopped != tt.wantStopped {
				t.Errorf("diagnosed %v, engine stopped %v; want %v, %v", failure, stopped, tt.wantFailure, tt.wantStopped)
			}
			if len(res.Scaled) > 1 {
				t.Errorf("scaled %v: a track is listed once", res.Scaled)
			}
			b, err := os.ReadFile(filepath.Join(dir, "report.json"))
			var back Result
			if err != nil || json.Unmarshal(b, &back) != nil || len(back.Phases) != len(res.Phases) {
				t.Errorf("report.json (%v) does not hold the run's phases:\n%s", err, b)
			}
		})
	}
}

func TestPipe(t *testing.T) {
	tests := []struct {
		name     string
		from, to cmd
		wantErr  string
		wantLog  string
	}{
		{"from's output is to's input", cmd{name: "echo", args: []string{"hello"}}, cmd{name: "tr", args: []string{"a-z", "A-Z"}}, "", "HELLO"},
		{"a failing writer fails the pipe", cmd{name: "false"}, cmd{name: "cat"}, "false : exit status 1", ""},
		{"a failing reader fails the pipe", cmd{name: "echo", args: []string{"x"}}, cmd{name: "sh", args: []string{"-c", "exit 3"}}, "exit status 3", ""},
		{"a writer whose reader is gone does not hang", cmd{name: "yes"}, cmd{name: "head", args: []string{"-c", "1"}}, "yes", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			env := newEnv(Config{OutDir: dir, Root: dir}, &strings.Builder{})
			if err := os.MkdirAll(env.logDir, 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := env.pipe(ctx, "p", tt.from, tt.to)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("pipe = %v, want %q", err, tt.wantErr)
			}
			log, _ := os.ReadFile(filepath.Join(env.logDir, "p.log"))
			if !strings.Contains(string(log), tt.wantLog) || !strings.Contains(string(log), " | ") {
				t.Errorf("log %q, want the command line and %q", log, tt.wantLog)
			}
		})
	}
}

func TestSplitPoint(t *testing.T) {
	tests := []struct {
		name       string
		at         time.Duration
		ready      []readySample
		wantShare  float64
		wantSteady bool
		wantErr    bool
	}{
		{"steady replicas over the minute", 90 * time.Second, []readySample{{20 * time.Second, 1, 4}, {40 * time.Second, 2, 4}, {60 * time.Second, 2, 4}, {80 * time.Second, 2, 4}}, 0.5, true, false},
		{"replicas that changed in the minute", 90 * time.Second, []readySample{{40 * time.Second, 1, 4}, {80 * time.Second, 2, 4}}, 0.375, false, false},
		{"no sample in the minute", 200 * time.Second, []readySample{{10 * time.Second, 1, 2}}, 0, false, true},
		{"no sample at all", 90 * time.Second, nil, 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp, err := splitPoint("good", tt.at, 0.4, tt.ready)
			if (err != nil) != tt.wantErr {
				t.Fatalf("splitPoint error = %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && (sp.ReadyShare != tt.wantShare || sp.Steady != tt.wantSteady || sp.ReqShare != 0.4) {
				t.Errorf("splitPoint = %+v, want ready share %g, steady %v", sp, tt.wantShare, tt.wantSteady)
			}
		})
	}
}

func TestOnlyZombies(t *testing.T) {
	tests := []struct {
		states string
		want   bool
	}{
		{"", true},
		{"Z\n", true},
		{"Zs\nZ\n", true},
		{"Ssl\n", false},
		{"Z\nSl\n", false},
	}
	for _, tt := range tests {
		if got := onlyZombies(tt.states); got != tt.want {
			t.Errorf("onlyZombies(%q) = %v, want %v", tt.states, got, tt.want)
		}
	}
}

func TestSeenStepAndFinished(t *testing.T) {
	tests := []struct {
		name     string
		status   v1alpha1.PoolCanaryStatus
		seen     string
		finished bool
	}{
		{"progressing without an analysis yet", v1alpha1.PoolCanaryStatus{Phase: "Progressing", CurrentWeight: 10}, "Progressing@10%", false},
		{"promoted after a passing analysis", v1alpha1.PoolCanaryStatus{Phase: "Promoted", CurrentWeight: 100, LastAnalysis: &v1alpha1.AnalysisStatus{Verdict: "Pass"}}, "Promoted@100% Pass", true},
		{"rolled back", v1alpha1.PoolCanaryStatus{Phase: "RolledBack"}, "RolledBack@0%", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := seenStep(tt.status); got != tt.seen {
				t.Errorf("seenStep = %q, want %q", got, tt.seen)
			}
			if got := finished(string(tt.status.Phase)); got != tt.finished {
				t.Errorf("finished(%s) = %v, want %v", tt.status.Phase, got, tt.finished)
			}
		})
	}
}

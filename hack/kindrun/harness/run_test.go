package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeStep is a Step that records its runs in a shared log and returns a fixed outcome. A step
// with a barrier waits (up to a second) until every step of the barrier has started, which only
// steps run side by side can; with waitCancel it then waits for its context to end.
type fakeStep struct {
	name       string
	o          Outcome
	err        error
	log        *fakeLog
	barrier    *sync.WaitGroup
	waitCancel bool
}

// fakeLog is the steps' shared log of runs.
type fakeLog struct {
	mu  sync.Mutex
	ran []string
}

func (s fakeStep) Name() string { return s.name }

func (s fakeStep) Run(ctx context.Context, _ *Env) (Outcome, error) {
	s.log.mu.Lock()
	s.log.ran = append(s.log.ran, s.name)
	s.log.mu.Unlock()
	if s.barrier != nil {
		s.barrier.Done()
		done := make(chan struct{})
		go func() { s.barrier.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Second):
			return s.o, errors.New("the steps beside it did not start while it ran")
		}
	}
	if s.waitCancel {
		select {
		case <-ctx.Done():
			return s.o, ctx.Err()
		case <-time.After(5 * time.Second):
			return s.o, errors.New("not cancelled when the step beside it failed")
		}
	}
	return s.o, s.err
}

// fakeResult is a step's own result: what it counted.
type fakeResult struct {
	Count int `json:"count"`
}

func (r fakeResult) Table(earlier Results) string {
	return fmt.Sprintf("\n== fake: %d after %d results\n", r.Count, len(earlier))
}

func TestRunner(t *testing.T) {
	tests := []struct {
		name        string
		steps       []string // a name ending in "!" fails, in "?" misses a prerequisite; "~" runs beside the next "~", "^" too and waits to be cancelled
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
		{"steps of one group run side by side, then the next", []string{"kind-up", "argo~", "flagger~", "canary~", "hpa-groups"}, false,
			[]string{"env", "kind-up", "argo~", "canary~", "flagger~", "hpa-groups"}, []string{"kind-up", "argo~", "flagger~", "canary~", "hpa-groups"}, "", false, true},
		{"a failed step cancels the steps beside it and is the run's error", []string{"kind-up", "argo^", "flagger~!", "scenarios"}, false,
			[]string{"env", "kind-up", "argo^", "flagger~!"}, []string{"kind-up", "argo^", "flagger~!"}, "step flagger~!: boom", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &fakeLog{}
			stopped, failure := false, false
			engine := Def{Step: fakeStep{name: "env", o: Outcome{Note: "engine", Stop: func() { stopped = true }}, log: log}, Doc: "the engine"}
			var steps []Def
			barrier := &sync.WaitGroup{}
			for i, n := range tt.steps {
				s := fakeStep{name: n, log: log, o: Outcome{Note: "did " + n, Result: fakeResult{Count: i}}}
				d := Def{Step: s, Doc: "a step", Needs: []string{"env"}}
				if strings.ContainsAny(n, "~^") {
					d.Beside = "rollouts"
					barrier.Add(1)
					s.barrier, s.waitCancel = barrier, strings.Contains(n, "^")
				}
				switch {
				case n == "env":
					d = engine
				case n == "kind-down":
					d.Needs = nil
				case strings.HasSuffix(n, "!"):
					s.err = errors.New("boom")
				case strings.HasSuffix(n, "?"):
					s.err = Prereq("missing tool")
				}
				if n != "env" {
					d.Step = s
				}
				steps = append(steps, d)
			}
			dir := t.TempDir()
			var out strings.Builder
			env := NewEnv(Config{Mode: "offline", OutDir: dir, Keep: tt.keep}, &out)
			r := Runner{Env: env, Engine: engine, OnFailure: func(context.Context) { failure = true }}
			rep, err := r.Run(context.Background(), steps)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("run error = %v, want %q", err, tt.wantErr)
			}
			var phases []string
			for _, p := range rep.Phases {
				phases = append(phases, p.Step)
			}
			ran := slices.Clone(log.ran)
			// Steps side by side start in any order: compare their runs sorted.
			for i := 0; i < len(ran); {
				j := i
				for j < len(ran) && strings.ContainsAny(ran[j], "~^") {
					j++
				}
				if j > i {
					slices.Sort(ran[i:j])
					i = j
				} else {
					i++
				}
			}
			if !slices.Equal(ran, tt.wantRan) || !slices.Equal(phases, tt.wantPhases) {
				t.Errorf("ran %v with phases %v, want %v and %v", ran, phases, tt.wantRan, tt.wantPhases)
			}
			if failure != tt.wantFailure || stopped != tt.wantStopped {
				t.Errorf("diagnosed %v, engine stopped %v; want %v, %v", failure, stopped, tt.wantFailure, tt.wantStopped)
			}
			b, err := os.ReadFile(filepath.Join(dir, "report.json"))
			var back struct {
				Phases []Phase               `json:"phases"`
				Steps  map[string]fakeResult `json:"steps"`
			}
			if err != nil || json.Unmarshal(b, &back) != nil || len(back.Phases) != len(rep.Phases) {
				t.Fatalf("report.json (%v) does not hold the run's phases:\n%s", err, b)
			}
			for i, n := range tt.steps[:len(phases)] {
				if n == "env" {
					continue
				}
				if got, ok := back.Steps[n]; !ok || got.Count != i {
					t.Errorf("report.json's steps.%s = %+v, %v; want the step's own result {count: %d}:\n%s", n, got, ok, i, b)
				}
			}
			txt, err := os.ReadFile(filepath.Join(dir, "report.txt"))
			if n := strings.Count(string(txt), "== fake: "); err != nil || n != len(rep.Results) || len(rep.Results) > 1 && !strings.Contains(string(txt), "after 1 results") {
				t.Errorf("report.txt (%v) prints %d tables of %d results, each with the results before it:\n%s", err, n, len(rep.Results), txt)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	step := func(name string, needs ...string) Def {
		return Def{Step: fakeStep{name: name}, Needs: needs, Doc: "does " + name, Default: name != "extra"}
	}
	beside := func(d Def) Def { d.Beside = "g"; return d }
	tests := []struct {
		name    string
		defs    []Def
		steps   []string
		want    []string
		wantErr string
	}{
		{"all is the default steps in their order", []Def{step("a"), step("b", "a"), step("extra")}, []string{"all"}, []string{"a", "b"}, ""},
		{"no steps is all", []Def{step("a"), step("extra")}, nil, []string{"a"}, ""},
		{"a step run by name is found", []Def{step("a"), step("extra")}, []string{"extra", "a"}, []string{"extra", "a"}, ""},
		{"an unknown step is refused with the list", []Def{step("a"), step("extra")}, []string{"b"}, nil, `unknown step "b" (steps: all a extra)`},
		{"two steps of one name are refused", []Def{step("a"), step("a")}, nil, nil, `two steps are called "a"`},
		{"a need no step meets is refused", []Def{step("b", "a")}, nil, nil, `step "b" needs "a"`},
		{"a step without a doc line is refused", []Def{{Step: fakeStep{name: "a"}}}, nil, nil, `step "a" has no doc line`},
		{"a step needing one beside it is refused", []Def{beside(step("a")), beside(step("b", "a"))}, nil, nil, `step "b" needs "a", which runs beside it (group "g")`},
		{"a step of a group may need one before the group", []Def{step("a"), beside(step("b", "a")), beside(step("c", "a"))}, nil, []string{"a", "b", "c"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Registry
			var err error
			for _, d := range tt.defs {
				if err = r.Register(d); err != nil {
					break
				}
			}
			var got []Def
			if err == nil {
				got, err = r.Steps(tt.steps)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, d := range got {
				names = append(names, d.Name())
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("steps %v, want %v", names, tt.want)
			}
		})
	}
}

func TestPipe(t *testing.T) {
	tests := []struct {
		name     string
		from, to Cmd
		wantErr  string
		wantLog  string
	}{
		{"from's output is to's input", Cmd{Name: "echo", Args: []string{"hello"}}, Cmd{Name: "tr", Args: []string{"a-z", "A-Z"}}, "", "HELLO"},
		{"a failing writer fails the pipe", Cmd{Name: "false"}, Cmd{Name: "cat"}, "false : exit status 1", ""},
		{"a failing reader fails the pipe", Cmd{Name: "echo", Args: []string{"x"}}, Cmd{Name: "sh", Args: []string{"-c", "exit 3"}}, "exit status 3", ""},
		{"a writer whose reader is gone does not hang", Cmd{Name: "yes"}, Cmd{Name: "head", Args: []string{"-c", "1"}}, "yes", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			env := NewEnv(Config{OutDir: dir, Root: dir}, &strings.Builder{})
			if err := os.MkdirAll(env.LogDir, 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := env.Pipe(ctx, "p", tt.from, tt.to)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("pipe = %v, want %q", err, tt.wantErr)
			}
			log, _ := os.ReadFile(filepath.Join(env.LogDir, "p.log"))
			if !strings.Contains(string(log), tt.wantLog) || !strings.Contains(string(log), " | ") {
				t.Errorf("log %q, want the command line and %q", log, tt.wantLog)
			}
		})
	}
}

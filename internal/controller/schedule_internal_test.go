package controller

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
)

// analyzerFunc is an Analyzer from a function.
type analyzerFunc func(ctx context.Context, a *v1alpha1.Analysis, in Input) v1alpha1.AnalysisStatus

func (f analyzerFunc) Analyze(ctx context.Context, a *v1alpha1.Analysis, in Input) v1alpha1.AnalysisStatus {
	return f(ctx, a, in)
}

// scheduleCanary is a canary of two 15 s steps analysed every second, failureLimit 2, no
// warm-up (its pods are not listed), in mode.
func scheduleCanary(mode v1alpha1.StatisticalMode) *v1alpha1.PoolCanary {
	return &v1alpha1.PoolCanary{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop", Generation: 1},
		Spec: v1alpha1.PoolCanarySpec{
			PoolModes:    v1alpha1.TrackPoolModes{Stable: v1alpha1.PoolModeUnpooled, Gray: v1alpha1.PoolModePooled},
			Steps:        []int32{10, 50},
			StepInterval: metav1.Duration{Duration: 15 * time.Second},
			Analysis: v1alpha1.Analysis{
				Interval:     metav1.Duration{Duration: time.Second},
				FailureLimit: 2,
				Warmup:       &metav1.Duration{},
				Statistical:  v1alpha1.StatisticalTest{Mode: mode},
			},
		},
	}
}

// TestNextLookAfterAPassedStep (issue 59, "No interim looks after a passed step"): the requeue
// after a step's end passed comes from schedule, as every other look does. In the anytime-valid
// modes (Counts, the default, and Sequential) the new step is read after an analysis interval,
// not only at its end; the windowed modes still wait for the step's end. The reconciler is
// driven by its own requeues only, as a canary whose split does not change is in a cluster (no
// Deployment event wakes it): a regression from step 2's start rolls back within two analysis
// intervals (failureLimit 2) in the anytime-valid modes. Before the fix the first step's pass
// asked for the step interval, and the regression was found at step 2's end.
func TestNextLookAfterAPassedStep(t *testing.T) {
	const (
		interval = time.Second
		step     = 15 * time.Second
	)
	for _, tt := range []struct {
		mode         v1alpha1.StatisticalMode
		anytimeValid bool
	}{
		{"", true}, // the default: Counts
		{v1alpha1.StatisticalCounts, true},
		{v1alpha1.StatisticalSequential, false}, // retired: refused, never read early
		{v1alpha1.StatisticalConfirm, false},
		{v1alpha1.StatisticalOff, false},
	} {
		name := string(tt.mode)
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			if got := anytimeValid(tt.mode); got != tt.anytimeValid {
				t.Fatalf("anytimeValid(%q) = %v, the test expects %v", tt.mode, got, tt.anytimeValid)
			}
			pc := scheduleCanary(tt.mode)
			// Gray passes at weight 10 and fails from weight 50 on.
			analyses := map[int32][]time.Time{}
			r := &PoolCanaryReconciler{Analyzer: analyzerFunc(func(_ context.Context, _ *v1alpha1.Analysis, in Input) v1alpha1.AnalysisStatus {
				w := pc.Status.CurrentWeight
				analyses[w] = append(analyses[w], in.Now)
				if w >= 50 {
					return v1alpha1.AnalysisStatus{Time: metav1.NewTime(in.Now), Verdict: v1alpha1.VerdictFail, Message: "gray is twice as slow"}
				}
				return v1alpha1.AnalysisStatus{Time: metav1.NewTime(in.Now), Verdict: v1alpha1.VerdictPass}
			})}
			ctx := context.Background()
			start := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
			now := start
			var step2, rolledBack time.Time
			var afterPass time.Duration
			for i := 0; i < 200 && rolledBack.IsZero(); i++ {
				before := pc.Status.CurrentWeight
				wait := r.advance(ctx, pc, now, &pending{}, false)
				switch {
				case pc.RolloutEnded():
					if wait != 0 {
						t.Errorf("requeue %s after the rollout ended, want 0", wait)
					}
					rolledBack = now
					continue
				case before == 10 && pc.Status.CurrentWeight == 50:
					step2, afterPass = now, wait
				}
				if wait <= 0 {
					t.Fatalf("at %s (weight %d): requeue %s while the rollout runs", now.Sub(start), pc.Status.CurrentWeight, wait)
				}
				now = now.Add(wait)
			}
			if step2.IsZero() || rolledBack.IsZero() {
				t.Fatalf("step 2 began at %v, rolled back at %v: want both (status %+v)", step2, rolledBack, pc.Status)
			}
			if got := pc.Status.Conditions; !pc.RolloutEnded() || phaseOf(pc) != v1alpha1.PhaseRolledBack {
				t.Fatalf("phase %s (conditions %+v), want RolledBack", phaseOf(pc), got)
			}
			took := rolledBack.Sub(step2)
			t.Logf("step 2 began %s into the rollout; rolled back %s later; requeue after the pass %s; analyses at weight 50: %d",
				step2.Sub(start), took, afterPass, len(analyses[50]))
			if tt.anytimeValid {
				if afterPass != interval {
					t.Errorf("requeue after the passed step %s, want the analysis interval %s", afterPass, interval)
				}
				if took > 2*interval {
					t.Errorf("rolled back %s after step 2 began, want within 2 analysis intervals (failureLimit 2)", took)
				}
				for _, at := range analyses[50] {
					if !at.Before(step2.Add(step)) {
						t.Errorf("an analysis at weight 50 at %s, after step 2's end", at.Sub(step2))
					}
				}
				// Step 1 was read every second too, then passed at its end.
				if n := len(analyses[10]); n != int(step/interval) {
					t.Errorf("%d analyses at weight 10, want %d (one a second, the last at the step's end)", n, int(step/interval))
				}
				return
			}
			if afterPass != step {
				t.Errorf("requeue after the passed step %s, want the step interval %s", afterPass, step)
			}
			// Judged at the step's end only: the first failure then, the second an interval later.
			if want := step + interval; took != want {
				t.Errorf("rolled back %s after step 2 began, want %s (its end, then an analysis interval)", took, want)
			}
			if n := len(analyses[10]); n != 1 {
				t.Errorf("%d analyses at weight 10, want 1 at the step's end", n)
			}
		})
	}
}

// TestNextLookFollowsTheStatus: the requeue after each kind of analysis is schedule's from the
// status the analysis left.
func TestNextLookFollowsTheStatus(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	analysed := func(s float64, weight int32) *v1alpha1.AnalysisStatus {
		return &v1alpha1.AnalysisStatus{Time: metav1.NewTime(at(s)), Weight: weight, Verdict: v1alpha1.VerdictNoData}
	}
	for _, tt := range []struct {
		name     string
		mode     v1alpha1.StatisticalMode
		step     float64 // step started at (s)
		zeroStep bool    // stepInterval 0
		last     *v1alpha1.AnalysisStatus
		now      float64
		want     time.Duration
	}{
		{"a step just entered (anytime-valid): its first interim look", "", 15, false, analysed(15, 10), 15, time.Second},
		{"a step just entered (windowed): its end", v1alpha1.StatisticalConfirm, 15, false, analysed(15, 10), 15, 15 * time.Second},
		{"after an interim look: the next one", v1alpha1.StatisticalCounts, 15, false, analysed(20, 50), 20, time.Second},
		{"an interim look close to the step's end: the end", v1alpha1.StatisticalCounts, 15, false, analysed(29.5, 50), 29.5, 500 * time.Millisecond},
		{"a step held at its end: an analysis interval", v1alpha1.StatisticalConfirm, 15, false, analysed(30, 50), 30, time.Second},
		{"a step of no length just entered: an analysis interval, not a loop", "", 15, true, analysed(15, 10), 15, time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pc := scheduleCanary(tt.mode)
			if tt.zeroStep {
				pc.Spec.StepInterval.Duration = 0
			}
			pc.Status.CurrentStep, pc.Status.CurrentWeight = 1, 50
			pc.Status.StepStartedAt = ptrTime(at(tt.step))
			pc.Status.LastAnalysis = tt.last
			setCondition(pc, v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonStepping, "")
			if got := nextLook(pc, at(tt.now)); got != tt.want {
				t.Errorf("nextLook = %s, want %s", got, tt.want)
			}
		})
	}
	pc := scheduleCanary("")
	setCondition(pc, v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonRolledBack, "")
	if got := nextLook(pc, t0); got != 0 {
		t.Errorf("nextLook after a rollback = %s, want 0", got)
	}
}

// TestLooksKeepAFixedClock (issue 63, "Drift and silence"): looks keep to a clock of analysis
// intervals from the step's start, so analyses that each run late do not push the later ones
// back (before, every look was due an interval after the last one ran, and 0.4s of lateness
// per look put the tenth 3.6s behind); an analysis a second or more late says so in
// status.lastAnalysis.lateBy.
func TestLooksKeepAFixedClock(t *testing.T) {
	for _, tt := range []struct {
		name    string
		lag     time.Duration
		lateBy  bool
		analyze int
	}{
		{"0.4s late each time", 400 * time.Millisecond, false, 12},
		{"1.5s late each time", 1500 * time.Millisecond, true, 6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pc := scheduleCanary(v1alpha1.StatisticalCounts)
			var ran []time.Time
			r := &PoolCanaryReconciler{Analyzer: analyzerFunc(func(_ context.Context, _ *v1alpha1.Analysis, in Input) v1alpha1.AnalysisStatus {
				ran = append(ran, in.Now)
				return v1alpha1.AnalysisStatus{Time: metav1.NewTime(in.Now), Verdict: v1alpha1.VerdictNoData, Message: "too little traffic"}
			})}
			start := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
			now := start
			for range 40 {
				if len(ran) == tt.analyze {
					break
				}
				n := len(ran)
				wait := r.advance(context.Background(), pc, now, &pending{}, false)
				if len(ran) > n && n > 0 {
					got := pc.Status.LastAnalysis.LateBy
					if tt.lateBy != (got != nil) || (got != nil && got.Duration != tt.lag) {
						t.Errorf("analysis %d at %s: lateBy %v, want it set %t (%s)", len(ran), now.Sub(start), got, tt.lateBy, tt.lag)
					}
				}
				if wait <= 0 {
					t.Fatalf("requeue %s while the rollout runs", wait)
				}
				now = now.Add(wait)
				if len(ran) > 0 {
					now = now.Add(tt.lag) // the reconcile runs late, every time
				}
			}
			if len(ran) != tt.analyze {
				t.Fatalf("%d analyses, want %d", len(ran), tt.analyze)
			}
			// The first look is due an interval after the step began and runs on time; each
			// later one is due on the step's clock of whole seconds and runs lag after it.
			for i, at := range ran {
				due := at
				if i > 0 {
					due = at.Add(-tt.lag)
				}
				if off := due.Sub(start) % time.Second; off != 0 {
					t.Errorf("analysis %d ran at %s: due at %s, %s off the step's clock (drift)", i+1, at.Sub(start), due.Sub(start), off)
				}
			}
		})
	}
}

package v1alpha1

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
)

// Reasons of the Progressing condition. The False ones also record how a rollout ended, so
// the phase survives a restart of the controller and a spell of TracksReady=False.
const (
	ReasonStepping         = "Stepping"         // True: a step is running or holding.
	ReasonPaused           = "Paused"           // False: spec.paused.
	ReasonPromoted         = "Promoted"         // False: the last step passed; stable runs gray's pool mode.
	ReasonNothingToCompare = "NothingToCompare" // False: both tracks have the same pool mode.
	ReasonPausedOnSuccess  = "PausedOnSuccess"  // False: the last step passed and onSuccess is None.
	ReasonRolledBack       = "RolledBack"       // False: failureLimit breaches; gray is at 0.
	ReasonPausedOnFailure  = "PausedOnFailure"  // False: failureLimit breaches and onFailure is Pause.
	ReasonAborted          = "Aborted"          // False: an operator aborted (poolparity.dev/abort); gray is at 0.
)

// progressReason is what a Progressing reason says of the rollout: the phase it shows and
// whether the rollout has ended (promoted, rolled back, or paused by onSuccess or onFailure;
// spec.paused only pauses it).
type progressReason struct {
	phase Phase
	ended bool
}

// progressReasons maps every Progressing reason to its phase and whether the rollout has
// ended: the one place RolloutEnded, ReasonPhase and the controller's phase read. Read only.
var progressReasons = map[string]progressReason{
	ReasonStepping:         {PhaseProgressing, false},
	ReasonPaused:           {PhasePaused, false},
	ReasonPromoted:         {PhasePromoted, true},
	ReasonNothingToCompare: {PhasePromoted, true},
	ReasonPausedOnSuccess:  {PhasePaused, true},
	ReasonRolledBack:       {PhaseRolledBack, true},
	ReasonPausedOnFailure:  {PhasePaused, true},
	ReasonAborted:          {PhaseRolledBack, true},
}

// ReasonPhase returns the phase a Progressing reason shows; ok is false for a reason that is
// not one of the Reason constants.
func ReasonPhase(reason string) (phase Phase, ok bool) {
	r, ok := progressReasons[reason]
	return r.phase, ok
}

// ProgressReasons returns every Progressing reason, sorted.
func ProgressReasons() []string {
	return slices.Sorted(maps.Keys(progressReasons))
}

// RolloutEnded reports whether the rollout has ended (promoted, rolled back, or paused by
// onSuccess or onFailure); spec.paused only pauses it.
func (pc *PoolCanary) RolloutEnded() bool {
	prog := meta.FindStatusCondition(pc.Status.Conditions, ConditionProgressing)
	return prog != nil && progressReasons[prog.Reason].ended
}

// RequestRefusal says why the controller would not act on a promote or abort request now, or
// returns "" when it would: a rollout runs, is paused (spec.paused), or ended paused
// (onSuccess None, onFailure Pause) with gray still at its weight, or has not started yet (it
// starts first). A promoted, rolled back or aborted rollout, or one with nothing to compare,
// refuses both.
func (pc *PoolCanary) RequestRefusal() string {
	prog := meta.FindStatusCondition(pc.Status.Conditions, ConditionProgressing)
	if prog != nil && pc.RolloutEnded() && prog.Reason != ReasonPausedOnSuccess && prog.Reason != ReasonPausedOnFailure {
		return fmt.Sprintf("the rollout has ended (%s: %s)", prog.Reason, prog.Message)
	}
	return "" // a rollout that has not started yet starts before a request is handled
}

// TrackName is the name of a track's Deployment (and, by default, of its Service):
// <canary>-<track>, e.g. <canary>-stable.
func (pc *PoolCanary) TrackName(track string) string {
	return pc.Name + "-" + track
}

// ServiceNames returns the names of the stable and the gray track's Services, with the
// defaults (<canary>-stable, <canary>-gray) filled in.
func (g GatewayAPIRouting) ServiceNames(pc *PoolCanary) (stable, gray string) {
	stable, gray = g.StableService, g.GrayService
	if stable == "" {
		stable = pc.TrackName(TrackStable)
	}
	if gray == "" {
		gray = pc.TrackName(TrackGray)
	}
	return stable, gray
}

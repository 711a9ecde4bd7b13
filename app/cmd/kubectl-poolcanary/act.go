package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
)

// act runs promote, abort, pause, resume or retry on pc, as a JSON merge patch of the one
// field or annotation it changes, and returns what it did in a few words. A request the
// canary's state refuses is an error and nothing is written.
func act(ctx context.Context, c client.Client, pc *v1alpha1.PoolCanary, command string, now time.Time) (string, error) {
	stamp := now.UTC().Format(time.RFC3339Nano) // the request's value: when it was asked, unique enough
	var patch map[string]any
	var did string
	switch command {
	case "promote", "abort":
		if why := pc.RequestRefusal(); why != "" {
			return "", fmt.Errorf("poolcanary %s/%s: cannot %s: %s", pc.Namespace, pc.Name, command, why)
		}
		ann := map[string]string{"promote": v1alpha1.AnnotationPromote, "abort": v1alpha1.AnnotationAbort}[command]
		patch = map[string]any{"metadata": map[string]any{"annotations": map[string]string{ann: stamp}}}
		did = fmt.Sprintf("%s requested (%s=%s); the controller acts on it at once", command, ann, stamp)
	case "pause", "resume":
		paused := command == "pause"
		if pc.Spec.Paused == paused {
			return fmt.Sprintf("spec.paused is already %t; nothing to do", paused), nil
		}
		patch = map[string]any{"spec": map[string]any{"paused": paused}}
		did = fmt.Sprintf("spec.paused set to %t", paused)
	case "retry":
		if pc.Status.Phase == v1alpha1.PhasePromoted {
			return "", fmt.Errorf("poolcanary %s/%s: cannot retry: it is Promoted, and a new rollout would start from stable's spec.poolModes again; change spec.trigger yourself if that is meant", pc.Namespace, pc.Name)
		}
		trigger := "kubectl-poolcanary retry " + stamp
		patch = map[string]any{"spec": map[string]any{"trigger": trigger}}
		did = fmt.Sprintf("spec.trigger set to %q: a new rollout starts from the first step", trigger)
	default:
		return "", fmt.Errorf("unknown command %q", command) // parseArgs refuses it first
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return "", err
	}
	if err := c.Patch(ctx, pc, client.RawPatch(types.MergePatchType, body)); err != nil {
		return "", fmt.Errorf("patching poolcanary %s/%s: %s", pc.Namespace, pc.Name, oneLine(err))
	}
	return did, nil
}

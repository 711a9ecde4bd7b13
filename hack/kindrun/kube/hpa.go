package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// SetHPAMinReplicas sets the minReplicas of the HorizontalPodAutoscaler ns/name to min, at most
// its maxReplicas, and returns the minimum it had and the one it has now.
func (k *Kube) SetHPAMinReplicas(ctx context.Context, ns, name string, want int32) (from, to int32, err error) {
	h, err := k.CS.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, 0, fmt.Errorf("reading HPA %s/%s: %w", ns, name, err)
	}
	from = 1
	if h.Spec.MinReplicas != nil {
		from = *h.Spec.MinReplicas
	}
	to = max(1, min(want, h.Spec.MaxReplicas))
	patch := fmt.Sprintf(`{"spec":{"minReplicas":%d}}`, to)
	if _, err := k.CS.AutoscalingV2().HorizontalPodAutoscalers(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return from, from, fmt.Errorf("setting HPA %s/%s's minReplicas to %d: %w", ns, name, to, err)
	}
	return from, to, nil
}

package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// HPARange is a HorizontalPodAutoscaler's replica bounds.
type HPARange struct {
	Min, Max int32
}

// HPARange returns the replica bounds of the HorizontalPodAutoscaler ns/name (an unset
// minReplicas is 1).
func (k *Kube) HPARange(ctx context.Context, ns, name string) (HPARange, error) {
	h, err := k.CS.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return HPARange{}, fmt.Errorf("reading HPA %s/%s: %w", ns, name, err)
	}
	r := HPARange{Min: 1, Max: h.Spec.MaxReplicas}
	if h.Spec.MinReplicas != nil {
		r.Min = *h.Spec.MinReplicas
	}
	return r, nil
}

// SetHPARange sets the minReplicas and maxReplicas of the HorizontalPodAutoscaler ns/name.
func (k *Kube) SetHPARange(ctx context.Context, ns, name string, r HPARange) error {
	if r.Min < 1 || r.Max < r.Min {
		return fmt.Errorf("setting HPA %s/%s's replicas to %d-%d: want 1 <= min <= max", ns, name, r.Min, r.Max)
	}
	patch := fmt.Sprintf(`{"spec":{"minReplicas":%d,"maxReplicas":%d}}`, r.Min, r.Max)
	if _, err := k.CS.AutoscalingV2().HorizontalPodAutoscalers(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("setting HPA %s/%s's replicas to %d-%d: %w", ns, name, r.Min, r.Max, err)
	}
	return nil
}

// Package kubetest holds the test helpers of the harness's packages: objects as the cluster would
// return them.
package kubetest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pod is a pod of namespace monitoring with one container, Ready or not.
func Pod(name string, ready bool, labels map[string]string, ports ...corev1.ContainerPort) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "monitoring", Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "prometheus", Ports: ports}}},
		Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
}

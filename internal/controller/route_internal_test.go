package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestServicePort(t *testing.T) {
	tests := []struct {
		name  string
		ports [][]corev1.ContainerPort
		want  int32
	}{
		{"no port is 8080", nil, 8080},
		{"an unnamed port is not http", [][]corev1.ContainerPort{{{ContainerPort: 9000}}}, 8080},
		{"the port named http", [][]corev1.ContainerPort{{{Name: "metrics", ContainerPort: 9090}, {Name: "http", ContainerPort: 8081}}}, 8081},
		{"the first container's http port wins", [][]corev1.ContainerPort{{{Name: "admin", ContainerPort: 1}}, {{Name: "http", ContainerPort: 3000}}, {{Name: "http", ContainerPort: 4000}}}, 3000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tmpl corev1.PodTemplateSpec
			for _, ps := range tt.ports {
				tmpl.Spec.Containers = append(tmpl.Spec.Containers, corev1.Container{Ports: ps})
			}
			if got := servicePort(&tmpl); got != tt.want {
				t.Errorf("servicePort = %d, want %d", got, tt.want)
			}
		})
	}
}

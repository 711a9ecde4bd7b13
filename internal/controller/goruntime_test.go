package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
)

// goRuntimeCanary is a canary whose one container has a 256Mi memory limit and sets GOGC
// itself only when templateGOGC is not empty.
func goRuntimeCanary(g *v1alpha1.TrackGoRuntimes, templateGOGC string) *v1alpha1.PoolCanary {
	c := corev1.Container{Name: "app", Image: "poolparity:test", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
	}}
	if templateGOGC != "" {
		c.Env = []corev1.EnvVar{{Name: "GOGC", Value: templateGOGC}}
	}
	pc := &v1alpha1.PoolCanary{ObjectMeta: metav1.ObjectMeta{Name: "pc", Namespace: "ns", UID: "u"}}
	pc.Spec.Template.Spec.Containers = []corev1.Container{c}
	pc.Spec.GoRuntime = g
	return pc
}

// TestTrackGoRuntime: each track's Deployment gets its own GOGC and GOMEMLIMIT (a fresh
// baseline the stable track's), a percent of the container's memory limit in bytes, and
// never over a value the template sets itself.
func TestTrackGoRuntime(t *testing.T) {
	tuned := &v1alpha1.TrackGoRuntimes{
		Stable: &v1alpha1.GoRuntime{GOGC: "100", GOMEMLIMIT: "200MiB"},
		Gray:   &v1alpha1.GoRuntime{GOGC: "400", GOMEMLIMITPercent: 90},
	}
	tests := []struct {
		name         string
		g            *v1alpha1.TrackGoRuntimes
		templateGOGC string
		track        string
		want         map[string]string // GOGC and GOMEMLIMIT; absent: not set
	}{
		{"no goRuntime sets neither", nil, "", v1alpha1.TrackGray, map[string]string{}},
		{"the gray track gets its own, the limit as 90% of 256Mi", tuned, "", v1alpha1.TrackGray,
			map[string]string{"GOGC": "400", "GOMEMLIMIT": "241591910"}},
		{"the stable track gets its own", tuned, "", v1alpha1.TrackStable,
			map[string]string{"GOGC": "100", "GOMEMLIMIT": "200MiB"}},
		{"a fresh baseline runs as stable", tuned, "", v1alpha1.TrackBaseline,
			map[string]string{"GOGC": "100", "GOMEMLIMIT": "200MiB"}},
		{"a track without settings gets none", &v1alpha1.TrackGoRuntimes{Gray: tuned.Gray}, "", v1alpha1.TrackStable,
			map[string]string{}},
		{"the template's own GOGC wins", tuned, "50", v1alpha1.TrackGray,
			map[string]string{"GOGC": "50", "GOMEMLIMIT": "241591910"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc := goRuntimeCanary(tt.g, tt.templateGOGC)
			d, err := trackDeployment(pc, effectiveSelector(pc), tt.track, v1alpha1.PoolModePooled, 1)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			n := map[string]int{}
			for _, e := range d.Spec.Template.Spec.Containers[0].Env {
				if name := *e.Name; name == "GOGC" || name == "GOMEMLIMIT" {
					got[name] = *e.Value
					n[name]++
				}
			}
			for _, name := range []string{"GOGC", "GOMEMLIMIT"} {
				if got[name] != tt.want[name] || n[name] > 1 {
					t.Errorf("%s = %q (set %d times), want %q once", name, got[name], n[name], tt.want[name])
				}
			}
		})
	}
}

func TestTrackGoRuntimePercentNeedsAMemoryLimit(t *testing.T) {
	pc := goRuntimeCanary(&v1alpha1.TrackGoRuntimes{Gray: &v1alpha1.GoRuntime{GOMEMLIMITPercent: 90}}, "")
	pc.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	_, err := trackDeployment(pc, effectiveSelector(pc), v1alpha1.TrackGray, v1alpha1.PoolModePooled, 1)
	if err == nil || !strings.Contains(err.Error(), `spec.goRuntime.gray.gomemlimitPercent 90 needs a memory limit on container "app"`) {
		t.Fatalf("err = %v, want one naming the field and the container", err)
	}
	// The stable track has no percent: it is applied as before.
	if _, err := trackDeployment(pc, effectiveSelector(pc), v1alpha1.TrackStable, v1alpha1.PoolModeUnpooled, 1); err != nil {
		t.Errorf("stable track: %v", err)
	}
}

// TestRolloutHashCountsTheGrayGoRuntime: the gray's Go runtime is part of the candidate, so a
// change of it starts a new rollout; the stable's is not, and a canary without goRuntime
// keeps the hash it had before the field existed.
func TestRolloutHashCountsTheGrayGoRuntime(t *testing.T) {
	base := v1alpha1.PoolCanarySpec{PoolModes: v1alpha1.TrackPoolModes{Stable: "unpooled", Gray: "pooled"}, Trigger: "t1"}
	// The hash of the spec above as rolloutHash computed it before goRuntime existed.
	const before = "a4d1b997ebec2267"
	if got := rolloutHash(&base); got != before {
		t.Errorf("hash without goRuntime = %s, want the old %s (running canaries would restart)", got, before)
	}
	gray := base
	gray.GoRuntime = &v1alpha1.TrackGoRuntimes{Gray: &v1alpha1.GoRuntime{GOGC: "400"}}
	if rolloutHash(&gray) == before {
		t.Error("a gray GOGC did not change the rollout hash")
	}
	stable := base
	stable.GoRuntime = &v1alpha1.TrackGoRuntimes{Stable: &v1alpha1.GoRuntime{GOGC: "400"}}
	if got := rolloutHash(&stable); got != before {
		t.Errorf("a stable GOGC changed the rollout hash to %s", got)
	}
}

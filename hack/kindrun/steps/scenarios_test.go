package steps

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

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

func TestReplicaPointsAndScaledTracks(t *testing.T) {
	deploy := func(name, track string, replicas, ready int32) appsv1.Deployment {
		return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{trackLabel: track}},
			Status: appsv1.DeploymentStatus{Replicas: replicas, ReadyReplicas: ready}}
	}
	hpa := func(target string, min, desired int32, cpu *int32) autoscalingHPA {
		return newHPA(target, min, desired, cpu)
	}
	ds := []appsv1.Deployment{deploy("rel-gray", "gray", 3, 2), deploy("rel-stable", "stable", 2, 2)}
	hs := []autoscalingHPA{hpa("rel-gray", 2, 3, ptr.To[int32](85)), hpa("rel-stable", 2, 2, nil)}
	pts := replicaPoints(ds, hs, "good", 10*time.Second)
	if len(pts) != 2 || pts[0].Track != "gray" || pts[0].Min != 2 || pts[0].Desired != 3 || pts[0].CPU != 85 || pts[1].CPU != -1 || pts[1].Ready != 2 {
		t.Fatalf("replicaPoints = %+v", pts)
	}
	tests := []struct {
		name string
		pts  []ReplicaPoint
		want []string
	}{
		{"a track above its minimum with a CPU reading scaled", pts, []string{"gray"}},
		{"without a CPU reading it did not", []ReplicaPoint{{Track: "gray", Replicas: 3, Min: 2, CPU: -1}}, nil},
		{"at its minimum it did not", []ReplicaPoint{{Track: "stable", Replicas: 2, Min: 2, CPU: 40}}, nil},
		{"each track once, in the order seen", []ReplicaPoint{{Track: "stable", Replicas: 3, Min: 2, CPU: 90}, {Track: "gray", Replicas: 3, Min: 2, CPU: 90}, {Track: "stable", Replicas: 4, Min: 2, CPU: 90}}, []string{"stable", "gray"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := scaledTracks(tt.pts); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("scaledTracks = %v, want %v", got, tt.want)
			}
		})
	}
}

// autoscalingHPA keeps the table above short.
type autoscalingHPA = autoscalingv2.HorizontalPodAutoscaler

func newHPA(target string, min, desired int32, cpu *int32) autoscalingHPA {
	h := autoscalingHPA{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &min, ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Name: target}},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{DesiredReplicas: desired}}
	if cpu != nil {
		h.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: cpu}}}}
	}
	return h
}

func TestCheckSplit(t *testing.T) {
	tests := []struct {
		name string
		pts  []SplitPoint
		ok   bool
	}{
		{"steady samples close to the ready share pass", []SplitPoint{{ReqShare: 0.34, ReadyShare: 1.0 / 3, Steady: true}, {ReqShare: 0.9, ReadyShare: 0.5}}, true},
		{"a steady sample far from the ready share fails", []SplitPoint{{ReqShare: 0.5, ReadyShare: 0.25, Steady: true}}, false},
		{"no steady sample fails", []SplitPoint{{ReqShare: 0.5, ReadyShare: 0.5}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkSplit(tt.pts); (err == nil) != tt.ok {
				t.Errorf("checkSplit = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestSizedRPS(t *testing.T) {
	tests := []struct {
		name                   string
		cpuPerRequest, request float64
		target, replicas       int
		share, margin, want    float64
		wantErr                bool
	}{
		{"the rate that puts the pods at the target", 0.001, 0.05, 60, 2, 0.5, 1, 120, false},
		{"a margin above it", 0.001, 0.05, 60, 2, 0.5, 1.5, 180, false},
		{"a raised target needs more", 0.001, 0.05, 1000, 2, 0.5, 1.5, 3000, false},
		{"cheaper requests need more", 0.0005, 0.05, 60, 2, 0.5, 1, 240, false},
		{"no measured CPU cannot size", math.NaN(), 0.05, 60, 2, 0.5, 1, 0, true},
		{"no requests to the track cannot size", 0.001, 0.05, 60, 2, 0, 1, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sizedRPS(tt.cpuPerRequest, tt.request, tt.target, tt.replicas, tt.share, tt.margin)
			if (err != nil) != tt.wantErr || math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("sizedRPS = %g, %v; want %g (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestCPUTarget(t *testing.T) {
	sixty := int32(60)
	h := autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{Metrics: []autoscalingv2.MetricSpec{
		{Type: autoscalingv2.PodsMetricSourceType},
		{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{AverageUtilization: &sixty}}},
	}}}
	if got := cpuTarget(h); got != 60 {
		t.Errorf("cpuTarget = %d, want 60", got)
	}
	if got := cpuTarget(autoscalingv2.HorizontalPodAutoscaler{}); got != 0 {
		t.Errorf("cpuTarget of an HPA without a CPU metric = %d, want 0", got)
	}
}

func TestScaledFrom(t *testing.T) {
	start := map[string]int{"stable": 2, "gray": 1}
	tests := []struct {
		name string
		pts  []ReplicaPoint
		want []string
	}{
		{"replicas the scenarios left are not the sized load's doing", []ReplicaPoint{{Track: "stable", Replicas: 2, Desired: 2, Min: 1}, {Track: "gray", Replicas: 1, Desired: 1, Min: 1}}, nil},
		{"an HPA that wants more than the start scaled", []ReplicaPoint{{Track: "stable", Replicas: 2, Desired: 3, Min: 1}}, []string{"stable"}},
		{"more replicas than the start scaled", []ReplicaPoint{{Track: "gray", Replicas: 2, Desired: 2, Min: 1}}, []string{"gray"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := scaledFrom(tt.pts, start); !slices.Equal(got, tt.want) {
				t.Errorf("scaledFrom = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestScaledToMax(t *testing.T) {
	up := func(track string, replicas, cpu int) ReplicaPoint {
		return ReplicaPoint{Track: track, Replicas: replicas, Min: 1, Desired: replicas, CPU: cpu}
	}
	both := []ReplicaPoint{up("stable", 1, 4), up("gray", 1, 6), up("stable", 2, 114), up("gray", 2, 108), up("stable", 4, 74), up("gray", 4, 84)}
	cases := []struct {
		name string
		err  error
		pts  []ReplicaPoint
		want bool
	}{
		{"both scaled to their maximum by the scenarios", errAllAtMax, both, true},
		{"wrapped", fmt.Errorf("hpa-cpu: %w", errAllAtMax), both, true},
		{"one track never scaled", errAllAtMax, []ReplicaPoint{up("stable", 1, 30), up("gray", 1, 20), up("gray", 4, 90)}, false},
		{"scaled without a CPU reading", errAllAtMax, []ReplicaPoint{up("stable", 4, -1), up("gray", 4, -1)}, false},
		{"another error", errors.New("reading the stable track's HPA: timeout"), both, false},
		{"no error: the sized load ran", nil, both, false},
		{"no samples", errAllAtMax, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := scaledToMax(c.err, c.pts); got != c.want {
				t.Errorf("scaledToMax = %v, want %v", got, c.want)
			}
		})
	}
}

package controller

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
)

func testPod(name string, created time.Time, ready *time.Time) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
	if ready != nil {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(*ready)}}
	} else {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	}
	return p
}

func span(from, to time.Time) v1alpha1.TimeRange {
	return v1alpha1.TimeRange{From: metav1.NewTime(from), To: metav1.NewTime(to)}
}

func TestWarmState(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	at := func(m float64) time.Time { return t0.Add(time.Duration(m * float64(time.Minute))) }
	ptr := func(t time.Time) *time.Time { return &t }
	const warmup = 2 * time.Minute
	for _, tt := range []struct {
		name       string
		pods       []corev1.Pod
		now        time.Time
		wantWarmAt time.Time
		wantCold   []v1alpha1.TimeRange
		waiting    []string // substrings of the waiting list, in order
	}{
		{"no pod waits for nothing", nil, at(10), time.Time{}, nil, nil},
		{"a pod ready long ago is warm, and its cold span is still recorded",
			[]corev1.Pod{testPod("a", at(0), ptr(at(0.5)))}, at(10), at(2.5), []v1alpha1.TimeRange{span(at(0), at(2.5))}, nil},
		{"a pod ready 40 s ago waits until 2 m after its readiness",
			[]corev1.Pod{testPod("a", at(0), ptr(at(0.5))), testPod("b", at(9), ptr(at(9.5)))}, at(10), at(11.5),
			[]v1alpha1.TimeRange{span(at(0), at(2.5)), span(at(9), at(11.5))}, []string{"b (ready 30s of 2m0s)"}},
		{"a pod not ready is cold through now plus the warm-up",
			[]corev1.Pod{testPod("c", at(9), nil)}, at(10), at(12), []v1alpha1.TimeRange{span(at(9), at(12))}, []string{"c (not ready)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := warmState(tt.pods, warmup, tt.now)
			if !w.WarmAt.Equal(tt.wantWarmAt) {
				t.Errorf("warm at %s, want %s", w.WarmAt, tt.wantWarmAt)
			}
			if len(w.Cold) != len(tt.wantCold) {
				t.Fatalf("cold spans %v, want %v", w.Cold, tt.wantCold)
			}
			for i := range w.Cold {
				if !w.Cold[i].From.Equal(&tt.wantCold[i].From) || !w.Cold[i].To.Equal(&tt.wantCold[i].To) {
					t.Errorf("cold span %d = %v, want %v", i, w.Cold[i], tt.wantCold[i])
				}
			}
			if strings.Join(w.Waiting, "|") != strings.Join(tt.waiting, "|") {
				t.Errorf("waiting %q, want %q", w.Waiting, tt.waiting)
			}
		})
	}
}

func TestMergeSpans(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	t.Run("overlapping and touching spans merge; spans before since are dropped or clipped", func(t *testing.T) {
		got := mergeSpans(
			[]v1alpha1.TimeRange{span(at(0), at(2)), span(at(10), at(12))},
			[]v1alpha1.TimeRange{span(at(11), at(14)), span(at(14), at(15)), span(at(3), at(6)), span(at(-5), at(1))},
			at(1))
		want := []v1alpha1.TimeRange{span(at(1), at(2)), span(at(3), at(6)), span(at(10), at(15))}
		if len(got) != len(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		for i := range got {
			if !got[i].From.Equal(&want[i].From) || !got[i].To.Equal(&want[i].To) {
				t.Errorf("span %d = %v..%v, want %v..%v", i, got[i].From, got[i].To, want[i].From, want[i].To)
			}
		}
	})
	t.Run("past the bound the closest spans merge, so nothing cold is dropped", func(t *testing.T) {
		var spans []v1alpha1.TimeRange
		for i := range 20 {
			spans = append(spans, span(at(i*20), at(i*20+10)))
		}
		spans[8] = span(at(8*20-5), at(8*20+10)) // 5 minutes after span 7 ends: the closest gap
		got := mergeSpans(nil, spans, at(0))
		if len(got) != maxExcluded {
			t.Fatalf("%d spans, want %d", len(got), maxExcluded)
		}
		if !got[0].From.Time.Equal(at(0)) || !got[len(got)-1].To.Time.Equal(at(19*20+10)) {
			t.Errorf("the merged spans lost an end: %v..%v", got[0].From, got[len(got)-1].To)
		}
		var covered time.Duration
		for _, s := range got {
			covered += s.To.Sub(s.From.Time)
		}
		if covered < 20*10*time.Minute {
			t.Errorf("the spans cover %s, less than the 200m of cold time given", covered)
		}
	})
}

func TestCacheByObjectKeepsOnlyTrackPods(t *testing.T) {
	byObject, err := CacheByObject()
	if err != nil {
		t.Fatal(err)
	}
	var sel labels.Selector
	for obj, by := range byObject {
		if _, ok := obj.(*corev1.Pod); !ok {
			t.Errorf("a cache restriction on %T: only pods are narrowed", obj)
		}
		sel = by.Label
	}
	tests := []struct {
		name   string
		labels labels.Set
		want   bool
	}{
		{"a gray pod", labels.Set{v1alpha1.LabelTrack: v1alpha1.TrackGray}, true},
		{"a baseline pod", labels.Set{v1alpha1.LabelTrack: v1alpha1.TrackBaseline, "app": "x"}, true},
		{"any other pod", labels.Set{"app": "x"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if sel == nil {
				t.Fatal("no pod selector")
			}
			if got := sel.Matches(tt.labels); got != tt.want {
				t.Errorf("selector %q matches %v: %v, want %v", sel, tt.labels, got, tt.want)
			}
		})
	}
}

func TestWarmupPodsIncludeNewStablePods(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	at := func(m float64) time.Time { return t0.Add(time.Duration(m * float64(time.Minute))) }
	ptr := func(t time.Time) *time.Time { return &t }
	start := at(0) // the rollout's start
	gray := testPod("g", at(1), ptr(at(1.5)))
	oldStable := testPod("s-old", at(-60), ptr(at(-59)))
	newStable := testPod("s-hpa", at(7), ptr(at(7.5)))
	baseline := testPod("b", at(0.5), ptr(at(1)))
	tests := []struct {
		name    string
		byTrack map[string][]corev1.Pod
		fresh   bool
		since   time.Time
		want    []string
	}{
		{"item 4: a stable pod created after the rollout started is warmed up, an older one is not",
			map[string][]corev1.Pod{v1alpha1.TrackGray: {gray}, v1alpha1.TrackStable: {oldStable, newStable}}, false, start, []string{"g", "s-hpa"}},
		{"a stable pod created at the rollout's start is new",
			map[string][]corev1.Pod{v1alpha1.TrackStable: {testPod("s0", start, nil)}}, false, start, []string{"s0"}},
		{"with a fresh baseline every baseline pod counts and stable is not compared",
			map[string][]corev1.Pod{v1alpha1.TrackGray: {gray}, v1alpha1.TrackBaseline: {baseline}, v1alpha1.TrackStable: {newStable}}, true, start, []string{"g", "b"}},
		{"without a rollout start no stable pod is new",
			map[string][]corev1.Pod{v1alpha1.TrackGray: {gray}, v1alpha1.TrackStable: {newStable}}, false, time.Time{}, []string{"g"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range warmupPods(tt.byTrack, tt.fresh, tt.since) {
				got = append(got, p.Name)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("pods %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("item 4: the new stable pod's cold span is recorded and waited for", func(t *testing.T) {
		pods := warmupPods(map[string][]corev1.Pod{v1alpha1.TrackGray: {gray}, v1alpha1.TrackStable: {oldStable, newStable}}, false, start)
		w := warmState(pods, defaultWarmup, at(8))
		want := span(at(7), at(9.5))
		if len(w.Cold) != 2 || !w.Cold[1].From.Equal(&want.From) || !w.Cold[1].To.Equal(&want.To) {
			t.Errorf("cold spans %v, want the gray pod's and %v", w.Cold, want)
		}
		if strings.Join(w.Waiting, "|") != "s-hpa (ready 30s of 2m0s)" {
			t.Errorf("waiting %q, want the new stable pod", w.Waiting)
		}
	})
}

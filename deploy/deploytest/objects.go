package deploytest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/poolparity/poolparity/instrument"
)

// Label keys of the tracks contract (docs/contracts.md, sections 1 and 2).
const (
	LabelTrack      = "poolparity.dev/track"
	LabelGrayStatus = "poolparity.dev/gray-status"
	LabelPoolMode   = "poolparity.dev/pool-mode"
)

// GrayStatus is the gray-status label value each track must carry.
var GrayStatus = map[string]string{"stable": instrument.GrayStatusStable, "gray": instrument.GrayStatusGray}

// Decode splits a multi-document YAML stream into objects, skipping empty documents.
func Decode(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decoding manifests: %w", err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// Index groups decoded objects by kind.
type Index map[string][]*unstructured.Unstructured

// NewIndex indexes objects by kind.
func NewIndex(objs []*unstructured.Unstructured) Index {
	idx := Index{}
	for _, o := range objs {
		idx[o.GetKind()] = append(idx[o.GetKind()], o)
	}
	return idx
}

func convert[T any](u *unstructured.Unstructured) (*T, error) {
	var out T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out); err != nil {
		return nil, fmt.Errorf("converting %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return &out, nil
}

// CheckTracks verifies the two-track contract on a set of manifests (rendered, or read back from
// an apiserver): pod labels and Downward API env, per-track Service selectors, one split (the
// split Service's selector, or an HTTPRoute naming every track Service), HPA and PDB targets. It
// returns every violation found, joined.
func CheckTracks(objs []*unstructured.Unstructured) error {
	idx := NewIndex(objs)
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	// Deployments of the service, by track.
	deps := map[string]*appsv1.Deployment{}
	for _, u := range idx["Deployment"] {
		d, err := convert[appsv1.Deployment](u)
		if err != nil {
			return err
		}
		track, ok := d.Spec.Template.Labels[LabelTrack]
		if !ok {
			continue // e.g. the in-cluster Redis
		}
		if _, dup := deps[track]; dup {
			fail("two Deployments for track %q", track)
		}
		deps[track] = d
		tl := d.Spec.Template.Labels
		if want, ok := GrayStatus[track]; !ok {
			fail("Deployment %s: unknown track %q", d.Name, track)
		} else if tl[LabelGrayStatus] != want {
			fail("Deployment %s: track %s has %s=%q, want %q", d.Name, track, LabelGrayStatus, tl[LabelGrayStatus], want)
		}
		if pm := tl[LabelPoolMode]; pm != "pooled" && pm != "unpooled" {
			fail("Deployment %s: %s=%q, want pooled or unpooled", d.Name, LabelPoolMode, pm)
		}
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			fail("Deployment %s: selector: %v", d.Name, err)
		} else if !sel.Matches(labels.Set(tl)) {
			fail("Deployment %s: selector %s does not match its pod template labels %v", d.Name, sel, tl)
		}
		checkDownwardEnv(d, fail)
	}
	if len(deps) == 0 {
		fail("no Deployment of the service (none has label %s)", LabelTrack)
	}

	// Services: one per track selecting only that track, and a split Service selecting all tracks.
	trackSvcs, splitSvcs := map[string]string{}, 0
	for _, u := range idx["Service"] {
		s, err := convert[corev1.Service](u)
		if err != nil {
			return err
		}
		if s.Labels["app.kubernetes.io/component"] != "app" {
			continue
		}
		sel := labels.SelectorFromSet(s.Spec.Selector)
		var matched []string
		for track, d := range deps {
			if sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				matched = append(matched, track)
			}
		}
		sort.Strings(matched)
		if track, ok := s.Labels[LabelTrack]; ok {
			trackSvcs[track] = s.Name
			if len(matched) != 1 || matched[0] != track {
				fail("Service %s (track %s): selector %v matches tracks %v, want only %s", s.Name, track, s.Spec.Selector, matched, track)
			}
		} else {
			splitSvcs++
			if len(matched) != len(deps) {
				fail("split Service %s: selector %v matches tracks %v, want all %d tracks", s.Name, s.Spec.Selector, matched, len(deps))
			}
		}
		if len(s.Spec.Ports) == 0 || s.Spec.Ports[0].TargetPort.String() != "http" {
			fail("Service %s: first port must target the container port named http", s.Name)
		}
	}
	for track := range deps {
		if _, ok := trackSvcs[track]; !ok {
			fail("track %s has no Service of its own", track)
		}
	}
	// One split only: the split Service (traffic follows replicas), or an HTTPRoute whose
	// backendRefs name every track's Service (traffic follows weights), never both.
	switch routes := idx["HTTPRoute"]; {
	case len(routes) == 0 && splitSvcs != 1:
		fail("found %d split Services (app Service without %s) and no HTTPRoute, want 1", splitSvcs, LabelTrack)
	case len(routes) > 0 && splitSvcs != 0:
		fail("found %d split Services beside HTTPRoute %s: two splits at once, want none", splitSvcs, routes[0].GetName())
	case len(routes) > 1:
		fail("found %d HTTPRoutes (%s), want 1", len(routes), Names(routes))
	case len(routes) == 1:
		named := RouteBackends(routes[0])
		for track, svc := range trackSvcs {
			if _, ok := named[svc]; !ok {
				fail("HTTPRoute %s: no backendRef names Service %s of track %s", routes[0].GetName(), svc, track)
			}
		}
	}

	// HPAs: each targets its own track's Deployment; a Deployment under an HPA leaves replicas unset.
	hpaTracks := map[string]bool{}
	for _, u := range idx["HorizontalPodAutoscaler"] {
		h, err := convert[autoscalingv2.HorizontalPodAutoscaler](u)
		if err != nil {
			return err
		}
		track := h.Labels[LabelTrack]
		d, ok := deps[track]
		switch {
		case !ok:
			fail("HPA %s: track label %q names no Deployment", h.Name, track)
		case h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.Name != d.Name:
			fail("HPA %s (track %s) targets %s/%s, want Deployment/%s", h.Name, track, h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name, d.Name)
		}
		if hpaTracks[track] {
			fail("two HPAs for track %s", track)
		}
		hpaTracks[track] = true
	}

	// KEDA ScaledObjects: each targets its own track's Deployment, and a track has either an HPA of
	// the chart or a ScaledObject (whose HPA KEDA makes), never both.
	scaledTracks := map[string]bool{}
	for _, u := range idx["ScaledObject"] {
		track := u.GetLabels()[LabelTrack]
		kind, _, _ := unstructured.NestedString(u.Object, "spec", "scaleTargetRef", "kind")
		name, _, _ := unstructured.NestedString(u.Object, "spec", "scaleTargetRef", "name")
		d, ok := deps[track]
		switch {
		case !ok:
			fail("ScaledObject %s: track label %q names no Deployment", u.GetName(), track)
		case (kind != "" && kind != "Deployment") || name != d.Name:
			fail("ScaledObject %s (track %s) targets %s/%s, want Deployment/%s", u.GetName(), track, kind, name, d.Name)
		}
		if scaledTracks[track] {
			fail("two ScaledObjects for track %s", track)
		}
		if hpaTracks[track] {
			fail("track %s has both an HPA and a ScaledObject", track)
		}
		scaledTracks[track] = true
	}

	// PDBs: each selects its own track only.
	for _, u := range idx["PodDisruptionBudget"] {
		p, err := convert[policyv1.PodDisruptionBudget](u)
		if err != nil {
			return err
		}
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil {
			fail("PDB %s: %v", p.Name, err)
			continue
		}
		for track, d := range deps {
			if got, want := sel.Matches(labels.Set(d.Spec.Template.Labels)), track == p.Labels[LabelTrack]; got != want {
				fail("PDB %s (track %s): matches track %s = %v, want %v", p.Name, p.Labels[LabelTrack], track, got, want)
			}
		}
	}
	return errors.Join(errs...)
}

// RouteBackends returns the weight of every backendRef of an HTTPRoute's rules by the name it
// names (-1 when it sets no weight).
func RouteBackends(route *unstructured.Unstructured) map[string]int64 {
	out := map[string]int64{}
	rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
	for _, r := range rules {
		refs, _, _ := unstructured.NestedSlice(r.(map[string]any), "backendRefs")
		for _, b := range refs {
			ref := b.(map[string]any)
			name, _, _ := unstructured.NestedString(ref, "name")
			// Decoded YAML holds numbers as float64, objects read from the API server as int64.
			switch w := ref["weight"].(type) {
			case int64:
				out[name] = w
			case float64:
				out[name] = int64(w)
			default:
				out[name] = -1
			}
		}
	}
	return out
}

// CheckNoReplicasUnderHPA verifies, on rendered (not yet defaulted) manifests, that a Deployment
// managed by an HPA, or by a KEDA ScaledObject (KEDA makes its HPA), does not set spec.replicas
// (server-side apply would fight the HPA controller).
func CheckNoReplicasUnderHPA(objs []*unstructured.Unstructured) error {
	idx := NewIndex(objs)
	scaled := map[string]bool{}
	for _, h := range append(idx["HorizontalPodAutoscaler"], idx["ScaledObject"]...) {
		name, _, _ := unstructured.NestedString(h.Object, "spec", "scaleTargetRef", "name")
		scaled[name] = true
	}
	var errs []error
	for _, d := range idx["Deployment"] {
		_, has, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "replicas")
		if scaled[d.GetName()] && has {
			errs = append(errs, fmt.Errorf("deployment %s sets spec.replicas while an HPA manages it", d.GetName()))
		}
		if !scaled[d.GetName()] && !has && d.GetLabels()[LabelTrack] != "" {
			errs = append(errs, fmt.Errorf("deployment %s has neither an HPA, a ScaledObject nor spec.replicas", d.GetName()))
		}
	}
	return errors.Join(errs...)
}

func checkDownwardEnv(d *appsv1.Deployment, fail func(string, ...any)) {
	want := map[string]string{"GRAY_STATUS": LabelGrayStatus, "POOL_MODE": LabelPoolMode}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != "poolparity" {
			continue
		}
		seen := map[string]bool{}
		for _, e := range c.Env {
			label, ok := want[e.Name]
			if !ok {
				continue
			}
			seen[e.Name] = true
			path := fmt.Sprintf("metadata.labels['%s']", label)
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != path {
				fail("Deployment %s: env %s must come from fieldRef %s", d.Name, e.Name, path)
			}
			if _, ok := d.Spec.Template.Labels[label]; !ok {
				fail("Deployment %s: env %s reads label %s, which the pod template lacks", d.Name, e.Name, label)
			}
		}
		for name := range want {
			if !seen[name] {
				fail("Deployment %s: container poolparity lacks env %s", d.Name, name)
			}
		}
		return
	}
	fail("Deployment %s: no container named poolparity", d.Name)
}

// Names lists "Kind/name" of objects, for messages.
func Names(objs []*unstructured.Unstructured) string {
	var s []string
	for _, o := range objs {
		s = append(s, o.GetKind()+"/"+o.GetName())
	}
	return strings.Join(s, ", ")
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
)

// view is what `get` shows, in the order it shows it; -o json prints it as it is.
type view struct {
	Name      string         `json:"name"`
	Namespace string         `json:"namespace"`
	Phase     v1alpha1.Phase `json:"phase"`
	// PoolModes are the modes compared; StablePoolMode is the one stable runs (gray's after a
	// promotion).
	PoolModes      v1alpha1.TrackPoolModes `json:"poolModes"`
	StablePoolMode v1alpha1.PoolMode       `json:"stablePoolMode,omitempty"`
	Paused         bool                    `json:"paused"`
	Steps          []stepView              `json:"steps"`
	// Weight is the gray weight asked, ReplicaShare the share of the pods the split gives and
	// MeasuredShare the share of the requests the last analysis measured at this weight (all
	// percent; the shares are empty when unknown).
	Weight        int32  `json:"weight"`
	ReplicaShare  string `json:"replicaShare,omitempty"`
	MeasuredShare string `json:"measuredShare,omitempty"`
	// Route is spec.trafficRouting's HTTPRoute and the weights in force on it, when set.
	Route          *routeView               `json:"route,omitempty"`
	Replicas       replicasView             `json:"replicas"`
	FailedAnalyses int32                    `json:"failedAnalyses"`
	FailureLimit   int32                    `json:"failureLimit"`
	Conditions     []metav1.Condition       `json:"conditions,omitempty"`
	LastAnalysis   *v1alpha1.AnalysisStatus `json:"lastAnalysis,omitempty"`
	// RollbackProfile is the profile comparison taken at the rollback (analysis.profiles).
	RollbackProfile *v1alpha1.ProfileStatus `json:"rollbackProfile,omitempty"`
}

// stepView is one step: its weight and where the rollout is with it (passed, current,
// pending, or skipped once the rollout ended before it).
type stepView struct {
	Step    int    `json:"step"`
	Weight  int32  `json:"weight"`
	State   string `json:"state"`
	Current bool   `json:"current"`
}

// routeView is the HTTPRoute that splits the traffic and the weights the controller read back
// from it (nil while it cannot set them: the Degraded condition says why).
type routeView struct {
	HTTPRoute     string `json:"httpRoute"`
	StableService string `json:"stableService"`
	GrayService   string `json:"grayService"`
	GrayWeight    *int32 `json:"grayWeight,omitempty"`
	StableWeight  *int32 `json:"stableWeight,omitempty"`
}

type replicasView struct {
	Spec     int32 `json:"spec"`
	Stable   int32 `json:"stable"`
	Gray     int32 `json:"gray"`
	Baseline int32 `json:"baseline,omitempty"`
}

// newView gathers what `get` shows from the canary.
func newView(pc *v1alpha1.PoolCanary) view {
	st := &pc.Status
	v := view{
		Name: pc.Name, Namespace: pc.Namespace, Phase: st.Phase,
		PoolModes: pc.Spec.PoolModes, StablePoolMode: st.StablePoolMode, Paused: pc.Spec.Paused,
		Weight: st.CurrentWeight, ReplicaShare: st.ReplicaShare, MeasuredShare: st.MeasuredShare,
		Replicas:       replicasView{Stable: st.StableReplicas, Gray: st.GrayReplicas, Baseline: st.BaselineReplicas},
		FailedAnalyses: st.FailedAnalyses, FailureLimit: pc.Spec.Analysis.FailureLimit,
		Conditions: st.Conditions, LastAnalysis: st.LastAnalysis, RollbackProfile: st.RollbackProfile,
	}
	if pc.Spec.Replicas != nil {
		v.Replicas.Spec = *pc.Spec.Replicas
	}
	if tr := pc.Spec.TrafficRouting; tr != nil {
		stable, gray := tr.GatewayAPI.ServiceNames(pc)
		v.Route = &routeView{HTTPRoute: tr.GatewayAPI.HTTPRoute, StableService: stable, GrayService: gray}
		if w := st.RouteWeight; w != nil {
			stable := 100 - *w
			v.Route.GrayWeight, v.Route.StableWeight = w, &stable
		}
	}
	ended := pc.RolloutEnded()
	for i, w := range pc.Spec.Steps {
		s := stepView{Step: i + 1, Weight: w, Current: int32(i) == st.CurrentStep}
		switch {
		case int32(i) < st.CurrentStep:
			s.State = "passed"
		case s.Current && ended:
			s.State = "ended here"
		case s.Current:
			s.State = "current"
		case ended:
			s.State = "skipped"
		default:
			s.State = "pending"
		}
		v.Steps = append(v.Steps, s)
	}
	return v
}

// printCanary writes the canary as text tables or as JSON.
func printCanary(w io.Writer, pc *v1alpha1.PoolCanary, format string) error {
	v := newView(pc)
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	var buf bytes.Buffer
	if err := printText(&buf, v); err != nil {
		return err
	}
	// A table's empty last cell leaves the padding of the one before it.
	for line := range strings.Lines(buf.String()) {
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// printText writes the view as text tables.
func printText(w io.Writer, v view) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")) }
	phase := string(v.Phase)
	if phase == "" {
		phase = "(not reconciled yet)"
	}
	if v.Paused {
		phase += " (spec.paused)"
	}
	row("Name:", v.Namespace+"/"+v.Name)
	row("Phase:", phase)
	row("Pool modes:", fmt.Sprintf("stable %s, gray %s; stable runs %s", v.PoolModes.Stable, v.PoolModes.Gray, orDash(string(v.StablePoolMode))))
	row("Weight:", fmt.Sprintf("%d%% asked", v.Weight))
	split := "the replica split"
	if r := v.Route; r != nil {
		weights := "no weights set (see the Degraded condition)"
		if r.GrayWeight != nil {
			weights = fmt.Sprintf("gray %s %d%%, stable %s %d%% in force", r.GrayService, *r.GrayWeight, r.StableService, *r.StableWeight)
		}
		row("Route:", fmt.Sprintf("HTTPRoute %s: %s", r.HTTPRoute, weights))
		split = "the route splits the requests"
	}
	row("Share:", fmt.Sprintf("%s of the pods (%s), %s of the requests (measured)", percentOrUnknown(v.ReplicaShare), split, percentOrUnknown(v.MeasuredShare)))
	reps := fmt.Sprintf("stable %d, gray %d", v.Replicas.Stable, v.Replicas.Gray)
	if v.Replicas.Baseline > 0 {
		reps += fmt.Sprintf(", baseline %d", v.Replicas.Baseline)
	}
	row("Replicas:", fmt.Sprintf("%s (spec.replicas %d)", reps, v.Replicas.Spec))
	row("Failed analyses:", fmt.Sprintf("%d of %d", v.FailedAnalyses, v.FailureLimit))
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nSteps:")
	row("", "STEP", "WEIGHT", "STATE")
	for _, s := range v.Steps {
		mark := ""
		if s.Current {
			mark = ">"
		}
		row(mark, fmt.Sprint(s.Step), fmt.Sprintf("%d%%", s.Weight), s.State)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nConditions:")
	row("", "TYPE", "STATUS", "REASON", "SINCE", "MESSAGE")
	for _, c := range v.Conditions {
		row("", c.Type, string(c.Status), c.Reason, c.LastTransitionTime.UTC().Format(time.RFC3339), c.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	la := v.LastAnalysis
	if la == nil {
		fmt.Fprintln(w, "\nLast analysis: none yet")
		return nil
	}
	fmt.Fprintf(w, "\nLast analysis: %s at weight %d%%, %s", la.Verdict, la.Weight, la.Time.UTC().Format(time.RFC3339))
	if la.MeasuredShare != "" {
		fmt.Fprintf(w, ", gray served %s%% of the requests", la.MeasuredShare)
	}
	fmt.Fprintln(w)
	if la.Message != "" {
		fmt.Fprintf(w, "  %s\n", la.Message)
	}
	if s := la.Statistical; s != nil {
		fmt.Fprintf(w, "  statistical (%s): %s. %s\n", s.Mode, s.Verdict, s.Message)
	}
	row("", "SLI", "STABLE", "GRAY", "RATIO", "DELTA", "THRESHOLD", "VERDICT", "NOTE")
	for _, s := range la.SLIs {
		row("", s.Name, orDash(s.Stable), orDash(s.Gray), orDash(s.Ratio), orDash(s.Delta), orDash(s.Threshold), string(s.Verdict), s.Note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p := v.RollbackProfile; p != nil {
		fmt.Fprintf(w, "\nRollback profile: gray pod %s against stable pod %s, %s, per request\n", p.GrayPod, p.StablePod, p.Time.UTC().Format(time.RFC3339))
		if p.Message != "" {
			fmt.Fprintf(w, "  %s\n", p.Message)
		}
		row("", "KIND", "FUNCTION", "GRAY", "STABLE")
		for _, f := range p.Functions {
			row("", f.Kind, f.Function, f.GrayPerRequest, f.StablePerRequest)
		}
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func percentOrUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s + "%"
}

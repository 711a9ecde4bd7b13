package steps

import (
	"fmt"
	"slices"
	"strings"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
)

// ScenariosResult is what the scenarios step measured: the replicas per track over time, the
// tracks whose HPA scaled, the split and each scenario's verdict.
type ScenariosResult struct {
	Replicas  []ReplicaPoint `json:"replicas"`
	Scaled    []string       `json:"scaled"` // tracks whose HPA raised replicas above their minimum
	Split     []SplitPoint   `json:"split"`
	Scenarios []Scenario     `json:"scenarios"`
	// SizedScale is the load sized from this run's CPU per request that must make an HPA scale.
	SizedScale *ScaleCheck `json:"sized_scale,omitempty"`
}

// merge appends m's measurements; a track scaled in both is listed once.
func (r *ScenariosResult) merge(m ScenariosResult) {
	r.Replicas = append(r.Replicas, m.Replicas...)
	for _, t := range m.Scaled {
		if !slices.Contains(r.Scaled, t) {
			r.Scaled = append(r.Scaled, t)
		}
	}
	r.Split = append(r.Split, m.Split...)
	r.Scenarios = append(r.Scenarios, m.Scenarios...)
}

// Table implements harness.Result.
func (r ScenariosResult) Table(harness.Results) string {
	var w strings.Builder
	if len(r.Replicas) > 0 {
		w.WriteString(replicasTable(r.Replicas))
		fmt.Fprintf(&w, "  HPA scaled on CPU: %v\n", r.Scaled)
	}
	if c := r.SizedScale; c != nil && c.Track != "" {
		fmt.Fprintf(&w, "  sized load: %.0f req/s for %s (%.2f ms CPU per request, %.0f%% of the requests, %d pods of %.0fm, HPA target %d%%): scaled %v after %s\n",
			c.RPS, c.Track, 1000*c.CPUPerRequest, 100*c.Share, c.Replicas, 1000*c.RequestCores, c.TargetPct, c.Scaled, c.After)
	}
	w.WriteString(splitTable(r.Split))
	w.WriteString(scenarioLines(r.Scenarios))
	return w.String()
}

// RoutingResult is what the routing step measured: the gray share at the Gateway every 10 s.
type RoutingResult struct {
	Routed []RoutePoint `json:"routed"` // the weighted split through the Gateway
}

// Table implements harness.Result: the routed windows, and their share beside the replica
// split's when the scenarios ran before.
func (r RoutingResult) Table(earlier harness.Results) string {
	var split []SplitPoint
	if s, ok := earlier.Of("scenarios"); ok {
		if s, ok := s.(ScenariosResult); ok {
			split = s.Split
		}
	}
	return routedTable(r.Routed) + contrastTable(r.Routed, split)
}

// ExampleResult is the example step's verdicts.
type ExampleResult struct {
	Scenarios []Scenario `json:"scenarios"`
}

// Table implements harness.Result.
func (r ExampleResult) Table(harness.Results) string { return scenarioLines(r.Scenarios) }

// ChaosResult is the chaos step's faults.
type ChaosResult struct {
	Chaos []FaultRow `json:"chaos"`
}

// Table implements harness.Result.
func (r ChaosResult) Table(harness.Results) string { return chaosTable(r.Chaos) }

// CanaryResult is the canary step's PoolCanaries and the controller's faults.
type CanaryResult struct {
	Canary []CanaryRun `json:"canary"`
	Chaos  []FaultRow  `json:"chaos"`
}

// Table implements harness.Result.
func (r CanaryResult) Table(harness.Results) string {
	var w strings.Builder
	w.WriteString(chaosTable(r.Chaos))
	for _, c := range r.Canary {
		fmt.Fprintf(&w, "\n== PoolCanary %s: phase %s (want %s) after %s%s\n", c.Name, c.Phase, c.Want, strings.Join(c.Steps, " -> "), okText(c.OK))
		if c.Judge != "" {
			fmt.Fprintf(&w, "   judge: %s\n", c.Judge)
		}
	}
	return w.String()
}

// HPAGroupsResult is the replicas per track over time of the hpa-groups step's groups.
type HPAGroupsResult struct {
	Replicas []ReplicaPoint `json:"replicas"`
}

// Table implements harness.Result.
func (r HPAGroupsResult) Table(harness.Results) string {
	if len(r.Replicas) == 0 {
		return ""
	}
	return replicasTable(r.Replicas)
}

// replicasTable is the replicas per track over time.
func replicasTable(pts []ReplicaPoint) string {
	var w strings.Builder
	fmt.Fprintf(&w, "\n== replicas per track over time (ready/total, the HPA's desired count and CPU %% of requests)\n")
	fmt.Fprintf(&w, "  %-12s %6s  %-28s %-28s\n", "scenario", "t", "stable", "gray")
	rows := map[string]map[string]ReplicaPoint{}
	var keys []string
	for _, p := range pts {
		k := fmt.Sprintf("%-12s %6s", p.Scenario, p.At)
		if rows[k] == nil {
			rows[k] = map[string]ReplicaPoint{}
			keys = append(keys, k)
		}
		rows[k][p.Track] = p
	}
	for _, k := range keys {
		fmt.Fprintf(&w, "  %s  %-28s %-28s\n", k, cell(rows[k]["stable"]), cell(rows[k]["gray"]))
	}
	return w.String()
}

// splitTable is the gray share of requests against the gray share of ready replicas.
func splitTable(split []SplitPoint) string {
	if len(split) == 0 {
		return ""
	}
	var w strings.Builder
	fmt.Fprintf(&w, "\n== split: gray share of requests (last 1m) vs gray share of ready replicas\n")
	for _, s := range split {
		steady := ""
		if !s.Steady {
			steady = "  (replicas changed in the window)"
		}
		fmt.Fprintf(&w, "  %-12s %6s  requests %5.1f%%  ready %5.1f%% (%d/%d)%s\n", s.Scenario, s.At, 100*s.ReqShare, 100*s.ReadyShare, s.ReadyGray, s.ReadyTotal, steady)
	}
	return w.String()
}

// scenarioLines is one line per scenario verdict.
func scenarioLines(scs []Scenario) string {
	var w strings.Builder
	for _, s := range scs {
		fmt.Fprintf(&w, "\n== scenario %s: verdict %s (want %s), alerts firing %v%s\n", s.Name, s.Verdict, s.Want, s.Firing, okText(s.OK))
	}
	return w.String()
}

func cell(p ReplicaPoint) string {
	if p.Track == "" {
		return "-"
	}
	cpu := "?"
	if p.CPU >= 0 {
		cpu = fmt.Sprintf("%d%%", p.CPU)
	}
	return fmt.Sprintf("%d/%d want %d cpu %s", p.Ready, p.Replicas, p.Desired, cpu)
}

func okText(ok bool) string {
	if ok {
		return ": as expected"
	}
	return ": NOT as expected"
}

// contrastTable sets the gray share of requests by weight (the routed runs, measured at the
// Gateway every 10 s) beside the replica split's under the same load (the scenarios, over the
// last minute): the range each one spanned while the HPAs moved the replicas.
func contrastTable(routed []RoutePoint, split []SplitPoint) string {
	if len(routed) == 0 || len(split) == 0 {
		return ""
	}
	type span struct {
		lo, hi  float64
		n       int
		replica string
	}
	var order []string
	spans := map[string]*span{}
	add := func(key string, share float64, replica string) {
		sp, ok := spans[key]
		if !ok {
			sp = &span{lo: share, hi: share}
			spans[key] = sp
			order = append(order, key)
		}
		sp.lo, sp.hi, sp.n = min(sp.lo, share), max(sp.hi, share), sp.n+1
		if !strings.Contains(sp.replica, replica) {
			sp.replica = strings.TrimPrefix(sp.replica+", "+replica, ", ")
		}
	}
	for _, p := range routed {
		if p.Requests >= minWindowRequests {
			add("weight 10%: "+p.Run, p.Share, fmt.Sprintf("%d+%d", p.StableReady, p.GrayReady))
		}
	}
	for _, p := range split {
		add("replica split: "+p.Scenario, p.ReqShare, fmt.Sprintf("%d/%d gray", p.ReadyGray, p.ReadyTotal))
	}
	var w strings.Builder
	fmt.Fprintf(&w, "\n== the gray share by weight against the replica split, under the same load\n")
	fmt.Fprintf(&w, "  %-34s %8s %8s %8s  %s\n", "run", "min", "max", "samples", "ready replicas seen (stable+gray, or gray/all)")
	for _, k := range order {
		sp := spans[k]
		fmt.Fprintf(&w, "  %-34s %7.1f%% %7.1f%% %8d  %s\n", k, 100*sp.lo, 100*sp.hi, sp.n, sp.replica)
	}
	return w.String()
}

// outcome is a step's Outcome while it runs, with its result typed.
type outcome[R harness.Result] struct {
	Note   string
	Result R
}

// done is o as the runner takes it.
func (o outcome[R]) done() harness.Outcome { return harness.Outcome{Note: o.Note, Result: o.Result} }

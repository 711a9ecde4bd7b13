package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// writeReport saves the run's measurements as out/kind/report.json and report.txt; a report
// it cannot write is logged, not fatal.
func writeReport(env *Env, res Result, elapsed time.Duration) {
	b, err := json.MarshalIndent(res, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(env.cfg.OutDir, "report.json"), b, 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(env.cfg.OutDir, "report.txt"), []byte(summary(env.cfg.Mode, res, elapsed)), 0o644)
	}
	if err != nil {
		env.logf("writing the report: %v", err)
	}
}

// summary is the phases, the replicas per track over time, the split and the verdicts.
func summary(mode string, res Result, elapsed time.Duration) string {
	var w strings.Builder
	fmt.Fprintf(&w, "\n== kind run (%s) in %s\n", mode, elapsed.Round(time.Second))
	for _, p := range res.Phases {
		fmt.Fprintf(&w, "  %-13s %7s  %s\n", p.Step, p.Elapsed, p.Note)
	}
	if len(res.Replicas) > 0 {
		fmt.Fprintf(&w, "\n== replicas per track over time (ready/total, the HPA's desired count and CPU %% of requests)\n")
		fmt.Fprintf(&w, "  %-12s %6s  %-28s %-28s\n", "scenario", "t", "stable", "gray")
		rows := map[string]map[string]ReplicaPoint{}
		var keys []string
		for _, p := range res.Replicas {
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
		fmt.Fprintf(&w, "  HPA scaled on CPU: %v\n", res.Scaled)
	}
	if len(res.Split) > 0 {
		fmt.Fprintf(&w, "\n== split: gray share of requests (last 1m) vs gray share of ready replicas\n")
		for _, s := range res.Split {
			steady := ""
			if !s.Steady {
				steady = "  (replicas changed in the window)"
			}
			fmt.Fprintf(&w, "  %-12s %6s  requests %5.1f%%  ready %5.1f%% (%d/%d)%s\n", s.Scenario, s.At, 100*s.ReqShare, 100*s.ReadyShare, s.ReadyGray, s.ReadyTotal, steady)
		}
	}
	w.WriteString(routedTable(res.Routed))
	w.WriteString(contrastTable(res.Routed, res.Split))
	for _, s := range res.Scenarios {
		fmt.Fprintf(&w, "\n== scenario %s: verdict %s (want %s), alerts firing %v%s\n", s.Name, s.Verdict, s.Want, s.Firing, okText(s.OK))
	}
	w.WriteString(chaosTable(res.Chaos))
	for _, c := range res.Canary {
		fmt.Fprintf(&w, "\n== PoolCanary %s: phase %s (want %s) after %s%s\n", c.Name, c.Phase, c.Want, strings.Join(c.Steps, " -> "), okText(c.OK))
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

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

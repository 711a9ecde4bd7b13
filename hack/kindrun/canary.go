package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"text/template"
	"time"
)

// CanaryRun is one PoolCanary rollout watched to its end.
type CanaryRun struct {
	Name  string   `json:"name"`
	Modes string   `json:"pool_modes"` // stable -> gray
	Want  string   `json:"want"`
	Phase string   `json:"phase"`
	Steps []string `json:"steps"` // the phases, weights and verdicts seen, in order
	OK    bool     `json:"ok"`
}

// canaries: a pooled gray against an unpooled stable (pooling cuts the bytes allocated per
// request, so the canary is promoted) and the reverse (the gray allocates more, so it is
// rolled back). The candidate is a real pool mode, not an injected fault.
var canaries = []struct{ name, stable, gray, want string }{
	{"canary-pooled", "unpooled", "pooled", "Promoted"},
	{"canary-unpooled", "pooled", "unpooled", "RolledBack"},
}

// stepCanary installs the controller with the chart and runs both PoolCanaries at once, each
// under its own load, against the cluster's Prometheus.
func (h *Harness) stepCanary(ctx context.Context) (string, error) {
	if err := h.helmInstall(ctx, "--set", "controller.enabled=true"); err != nil {
		return "", err
	}
	if _, err := h.kubectl(ctx, "canary", "-n", h.cfg.Namespace, "rollout", "status", "deploy/"+h.fullname()+"-controller", "--timeout=120s"); err != nil {
		return "", err
	}
	tmpl, err := template.ParseFS(imageFiles, "images/canary.yaml")
	if err != nil {
		return "", err
	}
	runs := make([]CanaryRun, len(canaries))
	errs := make([]error, len(canaries))
	var wg sync.WaitGroup
	for i, c := range canaries {
		var y bytes.Buffer
		err := tmpl.Execute(&y, map[string]string{
			"Name": c.name, "Stable": c.stable, "Gray": c.gray, "Image": h.serviceImage(), "Namespace": h.cfg.Namespace,
			"Redis": h.fullname() + "-redis:6379", "PromService": h.promService(),
		})
		if err != nil {
			return "", err
		}
		if err := h.kubectlApply(ctx, "canary", y.Bytes(), "-n", h.cfg.Namespace); err != nil {
			return "", fmt.Errorf("creating PoolCanary %s: %w", c.name, err)
		}
		runs[i] = CanaryRun{Name: c.name, Modes: c.stable + " -> " + c.gray, Want: c.want}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.watchCanary(ctx, &runs[i])
		}()
	}
	wg.Wait()
	h.res.Canary = append(h.res.Canary, runs...)
	var failed []string
	for i, r := range runs {
		if errs[i] != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", r.Name, errs[i]))
		} else if !r.OK {
			failed = append(failed, fmt.Sprintf("%s ended %s, want %s (%s)", r.Name, r.Phase, r.Want, strings.Join(r.Steps, " -> ")))
		}
	}
	if len(failed) > 0 {
		return "", fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	return "promoted the pooled gray, rolled back the unpooled one", nil
}

// watchCanary loads one canary's Service and follows its status until the rollout ends.
func (h *Harness) watchCanary(ctx context.Context, r *CanaryRun) error {
	var job string
	err := poll(ctx, 5*time.Second, 2*time.Minute, r.Name+"'s tracks", func() (bool, error) {
		out, err := h.kubectl(ctx, "canary", "-n", h.cfg.Namespace, "get", "deploy", r.Name+"-stable", r.Name+"-gray", "-o", "jsonpath={.items[*].status.readyReplicas}")
		return err == nil && len(strings.Fields(out)) == 2, nil
	})
	if err != nil {
		return err
	}
	job, err = h.startLoadAt(ctx, r.Name, fmt.Sprintf("http://%s:80", r.Name), 5*time.Minute, h.cfg.LoadRPS/2)
	if err != nil {
		return err
	}
	defer func() {
		_, _ = h.kubectl(context.WithoutCancel(ctx), "canary", "-n", h.cfg.Namespace, "delete", "job", job, "--ignore-not-found")
	}()
	last := ""
	return poll(ctx, 5*time.Second, 5*time.Minute, r.Name+" to finish its rollout", func() (bool, error) {
		out, err := h.kubectl(ctx, "canary", "-n", h.cfg.Namespace, "get", "poolcanary", r.Name, "-o", "json")
		if err != nil {
			return false, err
		}
		var pc struct {
			Status struct {
				Phase         string
				CurrentWeight int
				LastAnalysis  *struct {
					Verdict, Message string
				}
			}
		}
		if err := json.Unmarshal([]byte(out), &pc); err != nil {
			return false, err
		}
		s := pc.Status
		seen := fmt.Sprintf("%s@%d%%", s.Phase, s.CurrentWeight)
		if s.LastAnalysis != nil {
			seen += " " + s.LastAnalysis.Verdict
		}
		if seen != last {
			r.Steps = append(r.Steps, seen)
			h.logf("%s (%s): %s", r.Name, r.Modes, seen)
			last = seen
		}
		r.Phase = s.Phase
		switch s.Phase {
		case "Promoted", "RolledBack", "Failed", "Paused":
			r.OK = s.Phase == r.Want
			return true, nil
		}
		return false, nil
	})
}

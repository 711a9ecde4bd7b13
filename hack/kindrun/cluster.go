package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

// kindConfig returns the kind cluster config: the repository's kind-config.yaml online; offline,
// its control-plane node alone (one node, static bridge CNI: see images/node.Dockerfile), told
// where its images are and, on a cgroup v1 host, that kubelet may run there.
func (h *Harness) kindConfig() ([]byte, string, error) {
	src := filepath.Join(h.cfg.Root, "kind-config.yaml")
	raw, err := os.ReadFile(src)
	if err != nil {
		return nil, "", err
	}
	if h.cfg.Mode == "online" {
		return raw, "3 nodes (kind-config.yaml)", nil
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, "", fmt.Errorf("parsing %s: %w", src, err)
	}
	nodes, _ := doc["nodes"].([]any)
	var cp []any
	for _, n := range nodes {
		if m, ok := n.(map[string]any); ok && m["role"] == "control-plane" {
			cp = append(cp, m)
			break
		}
	}
	if len(cp) == 0 {
		return nil, "", fmt.Errorf("%s has no control-plane node", src)
	}
	doc["nodes"] = cp
	doc["name"] = h.cfg.Cluster
	netw, _ := doc["networking"].(map[string]any)
	if netw == nil {
		netw = map[string]any{}
	}
	netw["disableDefaultCNI"] = true
	netw["podSubnet"] = "10.244.0.0/16"
	doc["networking"] = netw
	patches := []any{fmt.Sprintf("kind: ClusterConfiguration\nimageRepository: %s\netcd:\n  local:\n    imageTag: %s\n", registry, etcdTag)}
	note := "1 node, static bridge CNI"
	// kubelet refreshes mounted Secrets every syncFrequency (1m by default, and several minutes in
	// practice): prometheus-operator writes the scrape config into one, so a new ServiceMonitor
	// waited minutes for Prometheus. 10s keeps the run short.
	kubelet := "kind: KubeletConfiguration\nsyncFrequency: 10s\n"
	if v1, err := cgroupV1(); err != nil {
		return nil, "", err
	} else if v1 {
		// kubelet v1.37 refuses cgroup v1 unless told otherwise; these machines have v1.
		kubelet += "failCgroupV1: false\n"
		note += ", cgroup v1"
	}
	patches = append(patches, kubelet)
	doc["kubeadmConfigPatches"] = patches
	out, err := yaml.Marshal(doc)
	return out, note, err
}

// cgroupV1 reports whether /sys/fs/cgroup is a cgroup v1 (or hybrid) hierarchy.
func cgroupV1() (bool, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &st); err != nil {
		return false, fmt.Errorf("statfs /sys/fs/cgroup: %w", err)
	}
	const cgroup2Magic = 0x63677270
	return st.Type != cgroup2Magic, nil
}

// clusterExists reports whether kind knows the cluster.
func (h *Harness) clusterExists(ctx context.Context) bool {
	kind, err := h.tool("kind")
	if err != nil {
		return false
	}
	out, err := h.output(ctx, "kind", cmd{name: kind, args: []string{"get", "clusters"}})
	if err != nil {
		return false
	}
	for _, l := range strings.Fields(out) {
		if l == h.cfg.Cluster {
			return true
		}
	}
	return false
}

// stepUp creates the cluster (or reuses one of the same name) and waits for its node.
func (h *Harness) stepUp(ctx context.Context) (string, error) {
	kind, err := h.tool("kind")
	if err != nil {
		return "", err
	}
	conf, note, err := h.kindConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(h.cfg.OutDir, "kind-config.yaml")
	if err := os.WriteFile(path, conf, 0o644); err != nil {
		return "", err
	}
	if h.clusterExists(ctx) {
		h.logf("kind cluster %s exists; reusing it", h.cfg.Cluster)
		if err := h.run(ctx, "kind", cmd{name: kind, args: []string{"export", "kubeconfig", "--name", h.cfg.Cluster, "--kubeconfig", h.kube}}); err != nil {
			return "", err
		}
		return "reused", nil
	}
	args := []string{"create", "cluster", "--name", h.cfg.Cluster, "--config", path, "--kubeconfig", h.kube, "--wait", "3m", "--retain"}
	if h.cfg.Mode == "offline" {
		args = append(args, "--image", nodeImageRepo+":"+k8sVersion)
	}
	if err := h.run(ctx, "kind", cmd{name: kind, args: args}); err != nil {
		return "", err
	}
	// kube-proxy programs Services, CoreDNS answers: the add-ons kubeadm deploys.
	for _, obj := range []string{"daemonset/kube-proxy", "deployment/coredns"} {
		if _, err := h.kubectl(ctx, "kubectl", "-n", "kube-system", "rollout", "status", obj, "--timeout=180s"); err != nil {
			return "", err
		}
	}
	return note, nil
}

// waitPods waits until every pod in ns matching selector is Ready.
func (h *Harness) waitPods(ctx context.Context, ns, selector string, timeout time.Duration) error {
	args := []string{"-n", ns, "wait", "--for=condition=Ready", "pod", "-l", selector, "--timeout", fmt.Sprintf("%ds", int(timeout.Seconds()))}
	_, err := h.kubectl(ctx, "kubectl", args...)
	return err
}

// stepLoad puts the images the cluster runs on its node (kind load docker-image).
func (h *Harness) stepLoad(ctx context.Context) (string, error) {
	kind, err := h.tool("kind")
	if err != nil {
		return "", err
	}
	images := []string{h.serviceImage()}
	if h.cfg.Mode == "offline" {
		for _, im := range appImages() {
			images = append(images, im.Tag)
		}
	}
	args := append([]string{"load", "docker-image", "--name", h.cfg.Cluster}, images...)
	if err := h.run(ctx, "kind", cmd{name: kind, args: args}); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d images", len(images)), nil
}

// deleteCluster deletes the cluster, if it exists.
func (h *Harness) deleteCluster(ctx context.Context) {
	if !h.clusterExists(ctx) {
		return
	}
	kind, _ := h.tool("kind")
	h.logf("deleting kind cluster %s", h.cfg.Cluster)
	if err := h.run(ctx, "kind", cmd{name: kind, args: []string{"delete", "cluster", "--name", h.cfg.Cluster, "--kubeconfig", h.kube}}); err != nil {
		h.logf("deleting the cluster failed: %v", err)
	}
}

// diagnose prints what explains a failed step: pods that are not ready with their description
// and logs, and the latest events. Everything also goes to logs/diagnose.log.
func (h *Harness) diagnose(ctx context.Context) {
	if !h.clusterExists(ctx) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var b strings.Builder
	show := func(title string, args ...string) {
		out, err := h.kubectl(ctx, "diagnose", args...)
		if err != nil {
			out += "\n(" + err.Error() + ")"
		}
		fmt.Fprintf(&b, "----- %s\n%s\n", title, strings.TrimSpace(out))
	}
	show("pods", "get", "pods", "-A", "-o", "wide")
	show("deployments, HPAs", "get", "deploy,hpa", "-A")
	out, _ := h.kubectl(ctx, "diagnose", "get", "pods", "-A", "--no-headers",
		"-o", `custom-columns=NS:.metadata.namespace,NAME:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].status,PHASE:.status.phase`)
	n := 0
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || f[2] == "True" || f[3] == "Succeeded" || n >= 4 {
			continue
		}
		n++
		show("describe "+f[0]+"/"+f[1], "-n", f[0], "describe", "pod", f[1])
		show("logs "+f[0]+"/"+f[1], "-n", f[0], "logs", f[1], "--all-containers", "--tail=40")
	}
	show("events", "get", "events", "-A", "--sort-by=.lastTimestamp")
	text := b.String()
	_ = os.WriteFile(filepath.Join(h.logDir, "diagnose.log"), []byte(text), 0o644)
	lines := strings.Split(text, "\n")
	if len(lines) > 250 {
		lines = append(lines[:200], fmt.Sprintf("... (%d more lines in %s)", len(lines)-200, filepath.Join(h.logDir, "diagnose.log")))
	}
	fmt.Fprintln(h.out, strings.Join(lines, "\n"))
}

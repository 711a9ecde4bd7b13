package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/images"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	kindnodes "sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	kindlog "sigs.k8s.io/kind/pkg/log"
	"sigs.k8s.io/yaml"
)

// kindConfig returns the kind cluster config: the repository's kind-config.yaml online; offline,
// its control-plane node alone (one node, static bridge CNI: see images/node.Dockerfile), told
// where its images are and, on a cgroup v1 host, that kubelet may run there.
func kindConfig(env *harness.Env) ([]byte, string, error) {
	src := filepath.Join(env.Cfg.Root, "kind-config.yaml")
	raw, err := os.ReadFile(src)
	if err != nil {
		return nil, "", err
	}
	if env.Cfg.Mode == "online" {
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
	doc["name"] = env.Cfg.Cluster
	netw, _ := doc["networking"].(map[string]any)
	if netw == nil {
		netw = map[string]any{}
	}
	netw["disableDefaultCNI"] = true
	netw["podSubnet"] = "10.244.0.0/16"
	doc["networking"] = netw
	patches := []any{fmt.Sprintf("kind: ClusterConfiguration\nimageRepository: %s\netcd:\n  local:\n    imageTag: %s\n", images.Registry, images.EtcdTag)}
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

// Provider returns kind's cluster provider, on Docker, logging to logs/kind.log.
func Provider(env *harness.Env) *kindcluster.Provider {
	return kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(kindLogger{env: env}))
}

// kindLogger is kind's logger: everything goes to logs/kind.log, warnings and errors also to
// the progress output.
type kindLogger struct{ env *harness.Env }

func (l kindLogger) write(level, msg string) {
	f, err := l.env.LogFile("kind")
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s\n", level, strings.TrimRight(msg, "\n"))
}

// Warn logs a warning.
func (l kindLogger) Warn(msg string) { l.write("WARN", msg); l.env.Logf("kind: %s", msg) }

// Warnf logs a formatted warning.
func (l kindLogger) Warnf(format string, a ...any) { l.Warn(fmt.Sprintf(format, a...)) }

// Error logs an error.
func (l kindLogger) Error(msg string) { l.write("ERROR", msg); l.env.Logf("kind: %s", msg) }

// Errorf logs a formatted error.
func (l kindLogger) Errorf(format string, a ...any) { l.Error(fmt.Sprintf(format, a...)) }

// V returns the info logger of every level: all go to the log file.
func (l kindLogger) V(kindlog.Level) kindlog.InfoLogger { return l }

// Info logs a status message.
func (l kindLogger) Info(msg string) { l.write("INFO", msg) }

// Infof logs a formatted status message.
func (l kindLogger) Infof(format string, a ...any) { l.Info(fmt.Sprintf(format, a...)) }

// Enabled reports that every level is logged.
func (l kindLogger) Enabled() bool { return true }

// clusterExists reports whether kind knows the cluster.
func clusterExists(p *kindcluster.Provider, name string) (bool, error) {
	names, err := p.List()
	if err != nil {
		return false, fmt.Errorf("listing kind clusters: %w", err)
	}
	return slices.Contains(names, name), nil
}

// upStep creates the cluster with kind's Go API (or reuses one of the same name), writes its
// kubeconfig, and waits for the add-ons kubeadm deploys.
type upStep struct{}

// UpDef declares the "kind-up" step.
func UpDef() harness.Def {
	return harness.Def{Step: upStep{}, Needs: []string{"env", "kind-images"}, Target: "kind-up", Doc: "Create the kind cluster (online: kind-config.yaml; offline: its control-plane node).", Default: true}
}

// Name implements Step.
func (upStep) Name() string { return "kind-up" }

// Run implements Step.
func (upStep) Run(ctx context.Context, env *harness.Env) (harness.Outcome, error) {
	conf, note, err := kindConfig(env)
	if err != nil {
		return harness.Outcome{}, err
	}
	if err := os.WriteFile(filepath.Join(env.Cfg.OutDir, "kind-config.yaml"), conf, 0o644); err != nil {
		return harness.Outcome{}, fmt.Errorf("writing the kind config: %w", err)
	}
	p := Provider(env)
	exists, err := clusterExists(p, env.Cfg.Cluster)
	if err != nil {
		return harness.Outcome{}, err
	}
	if exists {
		env.Logf("kind cluster %s exists; reusing it", env.Cfg.Cluster)
		if err := p.ExportKubeConfig(env.Cfg.Cluster, env.Kubeconfig, false); err != nil {
			return harness.Outcome{}, fmt.Errorf("exporting the kubeconfig of %s: %w", env.Cfg.Cluster, err)
		}
		return harness.Outcome{Note: "reused"}, nil
	}
	opts := []kindcluster.CreateOption{
		kindcluster.CreateWithRawConfig(conf), kindcluster.CreateWithKubeconfigPath(env.Kubeconfig),
		kindcluster.CreateWithWaitForReady(3 * time.Minute), kindcluster.CreateWithRetain(true),
		kindcluster.CreateWithDisplayUsage(false), kindcluster.CreateWithDisplaySalutation(false),
	}
	if env.Cfg.Mode == "offline" {
		opts = append(opts, kindcluster.CreateWithNodeImage(images.NodeImageRepo+":"+images.K8sVersion))
	}
	// kind's Create takes no context; a cancelled run deletes the cluster afterwards.
	if err := p.Create(env.Cfg.Cluster, opts...); err != nil {
		return harness.Outcome{}, fmt.Errorf("creating kind cluster %s (log: %s): %w", env.Cfg.Cluster, filepath.Join(env.LogDir, "kind.log"), err)
	}
	// kube-proxy programs Services, CoreDNS answers: the add-ons kubeadm deploys.
	k, err := env.Kube()
	if err != nil {
		return harness.Outcome{}, err
	}
	if err := k.WaitDaemonSet(ctx, "kube-system", "kube-proxy", 3*time.Minute); err != nil {
		return harness.Outcome{}, err
	}
	if err := k.WaitDeployment(ctx, "kube-system", "coredns", 3*time.Minute); err != nil {
		return harness.Outcome{}, err
	}
	return harness.Outcome{Note: note}, nil
}

// loadImagesStep puts the images the cluster runs on its nodes: docker save, then kind's
// nodeutils.LoadImageArchive into each node's containerd (what `kind load docker-image` does).
type loadImagesStep struct{}

// LoadDef declares the "kind-load" step.
func LoadDef() harness.Def {
	return harness.Def{Step: loadImagesStep{}, Needs: []string{"env", "kind-images", "kind-up"}, Target: "kind-load", Doc: "Load the images into the kind cluster.", Default: true}
}

// Name implements Step.
func (loadImagesStep) Name() string { return "kind-load" }

// Run implements Step.
func (loadImagesStep) Run(ctx context.Context, env *harness.Env) (harness.Outcome, error) {
	tags := []string{images.ServiceImage(env), images.ProbeImage, images.ExampleImage}
	if env.Cfg.Mode == "offline" {
		for _, im := range images.AppImages() {
			tags = append(tags, im.Tag)
		}
	}
	nodes, err := Provider(env).ListInternalNodes(env.Cfg.Cluster)
	if err != nil {
		return harness.Outcome{}, fmt.Errorf("listing the nodes of %s: %w", env.Cfg.Cluster, err)
	}
	dir, err := os.MkdirTemp(env.Cfg.OutDir, "images-")
	if err != nil {
		return harness.Outcome{}, fmt.Errorf("creating a directory for the image archive: %w", err)
	}
	defer os.RemoveAll(dir)
	archive := filepath.Join(dir, "images.tar")
	if err := env.Run(ctx, "kind", harness.Cmd{Name: "docker", Args: append([]string{"save", "-o", archive}, tags...)}); err != nil {
		return harness.Outcome{}, fmt.Errorf("saving the images: %w", err)
	}
	for _, n := range nodes {
		if err := loadArchive(n, archive); err != nil {
			return harness.Outcome{}, err
		}
	}
	return harness.Outcome{Note: fmt.Sprintf("%d images on %d nodes", len(tags), len(nodes))}, nil
}

// loadArchive imports the image archive at path into node n's containerd.
func loadArchive(n kindnodes.Node, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening the image archive: %w", err)
	}
	defer f.Close()
	if err := nodeutils.LoadImageArchive(n, f); err != nil {
		return fmt.Errorf("loading the images into node %s: %w", n.String(), err)
	}
	return nil
}

// downStep deletes the kindcluster. It starts no Docker engine: without one, there is no cluster
// to delete.
type downStep struct{}

// DownDef declares the "kind-down" step.
func DownDef() harness.Def {
	return harness.Def{Step: downStep{}, Target: "kind-down", Doc: "Delete the kind cluster.", Default: true}
}

// Name implements Step.
func (downStep) Name() string { return "kind-down" }

// Run implements Step.
func (downStep) Run(ctx context.Context, env *harness.Env) (harness.Outcome, error) {
	if ok, _ := dockerAnswers(ctx); !ok {
		return harness.Outcome{Note: "no Docker engine answers: no cluster to delete"}, nil
	}
	return harness.Outcome{}, Delete(env)
}

// Delete deletes the cluster, if it exists.
func Delete(env *harness.Env) error {
	p := Provider(env)
	exists, err := clusterExists(p, env.Cfg.Cluster)
	if err != nil || !exists {
		return err
	}
	env.Logf("deleting kind cluster %s", env.Cfg.Cluster)
	err = p.Delete(env.Cfg.Cluster, env.Kubeconfig)
	if err != nil {
		// On a cgroup v1 host, a runc killed while it starts a pod's container inside the node
		// leaves that container's freezer cgroup FROZEN: its process cannot die, so neither can
		// the node, and `docker rm -f` gives up. Thaw such cgroups and try once more.
		thawed, terr := thawFrozen(freezerRoot)
		if terr != nil {
			env.Logf("looking for frozen cgroups under %s: %v", freezerRoot, terr)
		}
		if len(thawed) > 0 {
			env.Logf("deleting the cluster failed: %v; thawed %d frozen cgroups, trying again", err, len(thawed))
			err = p.Delete(env.Cfg.Cluster, env.Kubeconfig)
		}
	}
	if err != nil {
		env.Logf("deleting the cluster failed: %v", err)
		return fmt.Errorf("deleting kind cluster %s: %w", env.Cfg.Cluster, err)
	}
	return nil
}

// freezerRoot is where the cgroup v1 freezer hierarchy of Docker's containers lies.
const freezerRoot = "/sys/fs/cgroup/freezer/docker"

// thawFrozen writes THAWED to every freezer.state below root that reads FROZEN (or FREEZING) and
// returns the cgroups it thawed. A missing root (cgroup v2, or no container) thaws nothing.
func thawFrozen(root string) ([]string, error) {
	var thawed []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() || d.Name() != "freezer.state" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		if st := strings.TrimSpace(string(b)); st != "FROZEN" && st != "FREEZING" {
			return nil
		}
		if err := os.WriteFile(path, []byte("THAWED"), 0o644); err != nil {
			return fmt.Errorf("thawing %s: %w", path, err)
		}
		thawed = append(thawed, filepath.Dir(path))
		return nil
	})
	return thawed, err
}

// Diagnose prints what explains a failed step: the pods, Deployments and HPAs, the pods that
// are not ready with their status and logs, and the latest events. Everything also goes to
// logs/diagnose.log.
func Diagnose(ctx context.Context, env *harness.Env) {
	if exists, err := clusterExists(Provider(env), env.Cfg.Cluster); err != nil || !exists {
		return
	}
	k, err := env.Kube()
	if err != nil {
		env.Logf("diagnose: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var b strings.Builder
	section := func(title, body string, err error) {
		if err != nil {
			body += "\n(" + err.Error() + ")"
		}
		fmt.Fprintf(&b, "----- %s\n%s\n", title, strings.TrimSpace(body))
	}
	pods, err := k.CS.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		section("pods", "", err)
	} else {
		section("pods", podTable(pods.Items), nil)
	}
	section("deployments, HPAs", workloadTable(ctx, k), nil)
	n := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if kube.PodReady(p) || p.Status.Phase == corev1.PodSucceeded || n >= 4 {
			continue
		}
		n++
		section("status "+p.Namespace+"/"+p.Name, podStatus(p), nil)
		var logs strings.Builder
		err := k.WriteLogs(ctx, &logs, p, 40)
		section("logs "+p.Namespace+"/"+p.Name, logs.String(), err)
	}
	ev, err := k.CS.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		section("events", "", err)
	} else {
		section("events", eventTable(ev.Items), nil)
	}
	text := b.String()
	_ = os.WriteFile(filepath.Join(env.LogDir, "diagnose.log"), []byte(text), 0o644)
	lines := strings.Split(text, "\n")
	if len(lines) > 250 {
		lines = append(lines[:200], fmt.Sprintf("... (%d more lines in %s)", len(lines)-200, filepath.Join(env.LogDir, "diagnose.log")))
	}
	env.Print(strings.Join(lines, "\n") + "\n")
}

// podTable is one line per pod: namespace, name, ready, phase, restarts, node.
func podTable(pods []corev1.Pod) string {
	var b strings.Builder
	for i := range pods {
		p := &pods[i]
		restarts := int32(0)
		for _, c := range p.Status.ContainerStatuses {
			restarts += c.RestartCount
		}
		fmt.Fprintf(&b, "%-16s %-56s ready=%-5v %-10s restarts=%d %s\n", p.Namespace, p.Name, kube.PodReady(p), p.Status.Phase, restarts, p.Spec.NodeName)
	}
	return b.String()
}

// podStatus is what `kubectl describe pod` shows of a pod's state: its conditions and each
// container's state.
func podStatus(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s %s\n", p.Status.Phase, p.Status.Message)
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, "condition %s=%s %s %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, c := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		switch s := c.State; {
		case s.Waiting != nil:
			fmt.Fprintf(&b, "container %s: waiting: %s %s\n", c.Name, s.Waiting.Reason, s.Waiting.Message)
		case s.Terminated != nil:
			fmt.Fprintf(&b, "container %s: terminated: %s (exit %d) %s\n", c.Name, s.Terminated.Reason, s.Terminated.ExitCode, s.Terminated.Message)
		default:
			fmt.Fprintf(&b, "container %s: running, ready=%v, restarts %d\n", c.Name, c.Ready, c.RestartCount)
		}
	}
	return b.String()
}

// workloadTable is one line per Deployment and HPA.
func workloadTable(ctx context.Context, k *kube.Kube) string {
	var b strings.Builder
	if ds, err := k.CS.AppsV1().Deployments("").List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "(deployments: %v)\n", err)
	} else {
		for _, d := range ds.Items {
			fmt.Fprintf(&b, "deployment %s/%s ready %d/%d updated %d available %d\n", d.Namespace, d.Name, d.Status.ReadyReplicas, d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas)
		}
	}
	if hs, err := k.CS.AutoscalingV2().HorizontalPodAutoscalers("").List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "(HPAs: %v)\n", err)
	} else {
		for _, h := range hs.Items {
			fmt.Fprintf(&b, "hpa %s/%s current %d desired %d\n", h.Namespace, h.Name, h.Status.CurrentReplicas, h.Status.DesiredReplicas)
		}
	}
	return b.String()
}

// eventTable is the events, oldest first.
func eventTable(events []corev1.Event) string {
	last := func(e corev1.Event) time.Time {
		if !e.LastTimestamp.IsZero() {
			return e.LastTimestamp.Time
		}
		return e.EventTime.Time
	}
	slices.SortFunc(events, func(a, b corev1.Event) int { return last(a).Compare(last(b)) })
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "%s %-8s %s/%s %s: %s\n", last(e).UTC().Format("15:04:05"), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
	}
	return b.String()
}

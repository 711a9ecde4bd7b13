// Package images builds what the kind cluster runs, here, from Go modules and Debian packages:
// the kind node image with its control-plane images, the service image, and the images of the
// cluster's dependencies; it also embeds the templates and manifests the steps render (Files).
// Its step is kind-images.
package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
)

// Versions of what the offline cluster runs. The Go-built ones are the binaries hack/install-tools.sh
// builds; TestPinnedVersionsMatchInstallTools fails when the two disagree.
const (
	K8sVersion           = "v1.37.0"
	KindVersion          = "v0.32.0"
	EtcdTag              = "v3.6.16" // the etcd hack/install-tools.sh builds for envtest; kubeadm is told its tag
	PrometheusVersion    = "v3.15.0" // module github.com/prometheus/prometheus v0.315.0
	OperatorVersion      = "v0.85.0"
	MetricsServerVersion = "v0.9.0"
	CorednsVersion       = "v1.14.6" // kubeadm v1.37.0's default
	LocalPathVersion     = "v0.0.30" // github.com/rancher/local-path-provisioner
	KEDAVersion          = "v2.21.0" // github.com/kedacore/keda/v2 (hack/tools/keda)
	TraefikVersion       = "v3.6.12" // github.com/traefik/traefik/v3, hack/tools/traefik
	GatewayAPIVersion    = "v1.4.0"  // sigs.k8s.io/gateway-api, the version hack/tools/traefik requires
	FlaggerVersion       = "v1.36.1" // github.com/fluxcd/flagger, hack/tools/flagger
	ArgoRolloutsVersion  = "v1.10.1" // github.com/argoproj/argo-rollouts, hack/tools/argo-rollouts (as go.mod and internal/testenv)
)

// Images and settings of the offline cluster.
const (
	Registry           = "poolparity.local"
	debianSuite        = "bookworm"
	debianMirror       = "http://deb.debian.org/debian"
	baseImage          = Registry + "/debian:" + debianSuite
	NodeImageRepo      = Registry + "/kind-node"
	ServiceTag         = Registry + "/poolparity:dev"
	RedisImage         = Registry + "/redis:" + debianSuite
	TestImage          = Registry + "/helm-test:" + debianSuite
	PromImage          = Registry + "/prometheus:" + PrometheusVersion
	OperatorImage      = Registry + "/prometheus-operator:" + OperatorVersion
	ReloaderImage      = Registry + "/prometheus-config-reloader:" + OperatorVersion
	MetricsServerImage = Registry + "/metrics-server:" + MetricsServerVersion
	LocalPathImage     = Registry + "/local-path-provisioner:" + LocalPathVersion
	HelperImage        = Registry + "/local-path-helper:" + debianSuite
	ProbeImage         = Registry + "/chaosprobe:dev"
	ExampleImage       = Registry + "/imagesvc:dev"
	TraefikImage       = Registry + "/traefik:" + TraefikVersion
	// KEDA's images, built here (AppImages) from hack/install-tools.sh's binaries.
	KEDAImage        = Registry + "/keda:" + KEDAVersion
	KEDAAdapterImage = Registry + "/keda-metrics-apiserver:" + KEDAVersion
	// ArgoRolloutsImage is the Argo Rollouts controller's, built here (AppImages).
	ArgoRolloutsImage = Registry + "/argo-rollouts:" + ArgoRolloutsVersion
	recipeLabel       = "dev.poolparity.recipe"
	nonRootUser       = "65534:65534"
	imageBuildTime    = 20 * time.Minute
)

// FlaggerImage is Flagger's controller, built here (AppImages) from hack/install-tools.sh's binary.
const FlaggerImage = Registry + "/flagger:" + FlaggerVersion

// Files are the templates and manifests the harness renders: the component and node
// Dockerfiles, the CNI config, and the Prometheus, Gateway and PoolCanary manifests.
//
//go:embed *.yaml *.tmpl *.Dockerfile *.conflist
var Files embed.FS

// image is one image built from the component template.
type image struct {
	Tag        string
	Comment    string
	Base       string
	Packages   string
	Run        string
	User       string
	Entrypoint string            // JSON array
	Env        string            // an ENV instruction's arguments, e.g. PATH=/usr/bin
	Bins       map[string]string // name in BinDir -> path under ./bin
	BinDir     string            // where the binaries go; default /usr/local/bin/
}

// AppImages are the images the cluster runs besides the control plane; kind-load puts them on
// the node.
func AppImages() []image {
	return []image{
		{Tag: RedisImage, Comment: "Redis from Debian's redis-server (protected mode off, as in the official image).",
			Base: baseImage, Packages: "redis-server", User: "999:999",
			Entrypoint: `["redis-server", "--protected-mode", "no"]`},
		{Tag: TestImage, Comment: "sh, wget and grep for the chart's helm test pod (Debian's GNU wget: busybox 1.35's wget crashes on -T).",
			Base: baseImage, Packages: "wget", User: nonRootUser},
		// The operator runs these by the paths of the upstream images: /bin/<name>.
		{Tag: PromImage, Comment: "Prometheus " + PrometheusVersion + " (github.com/prometheus/prometheus, hack/tools/prometheus).",
			Base: baseImage, Bins: map[string]string{"prometheus": "prometheus", "promtool": "promtool"}, BinDir: "/bin/", User: nonRootUser,
			Entrypoint: `["/bin/prometheus"]`},
		{Tag: OperatorImage, Comment: "prometheus-operator " + OperatorVersion + ".",
			Base: baseImage, Bins: map[string]string{"operator": "cluster/operator"}, BinDir: "/bin/", User: nonRootUser,
			Entrypoint: `["/bin/operator"]`},
		{Tag: ReloaderImage, Comment: "prometheus-config-reloader " + OperatorVersion + ".",
			Base: baseImage, Bins: map[string]string{"prometheus-config-reloader": "cluster/prometheus-config-reloader"}, BinDir: "/bin/", User: nonRootUser,
			Entrypoint: `["/bin/prometheus-config-reloader"]`},
		{Tag: MetricsServerImage, Comment: "metrics-server " + MetricsServerVersion + ".",
			Base: baseImage, Bins: map[string]string{"metrics-server": "cluster/metrics-server"}, User: nonRootUser,
			Entrypoint: `["/usr/local/bin/metrics-server"]`},
		// Its manifest runs it by name (command: local-path-provisioner), so the image sets PATH.
		{Tag: LocalPathImage, Comment: "local-path-provisioner " + LocalPathVersion + " (github.com/rancher/local-path-provisioner): the default StorageClass.",
			Base: baseImage, Bins: map[string]string{"local-path-provisioner": "cluster/local-path-provisioner"}, User: nonRootUser,
			Env: "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", Entrypoint: `["/usr/local/bin/local-path-provisioner"]`},
		// Traefik's manifest gives no command, only arguments: the entry point runs it.
		{Tag: TraefikImage, Comment: "Traefik " + TraefikVersion + " (github.com/traefik/traefik/v3, hack/tools/traefik): the Gateway API data plane.",
			Base: baseImage, Bins: map[string]string{"traefik": "cluster/traefik"}, User: nonRootUser,
			Entrypoint: `["/usr/local/bin/traefik"]`},
		// KEDA's manifests run them as /keda and /keda-adapter.
		{Tag: KEDAImage, Comment: "KEDA operator " + KEDAVersion + " (github.com/kedacore/keda/v2, hack/tools/keda).",
			Base: baseImage, Bins: map[string]string{"keda": "cluster/keda"}, BinDir: "/", User: nonRootUser,
			Entrypoint: `["/keda"]`},
		{Tag: KEDAAdapterImage, Comment: "KEDA metrics API server " + KEDAVersion + " (external.metrics.k8s.io).",
			Base: baseImage, Bins: map[string]string{"keda-adapter": "cluster/keda-adapter"}, BinDir: "/", User: nonRootUser,
			Entrypoint: `["/keda-adapter"]`},
		// Flagger's manifest gives only arguments, and probes /healthz with wget (Debian's).
		{Tag: FlaggerImage, Comment: "Flagger " + FlaggerVersion + " (github.com/fluxcd/flagger, hack/tools/flagger): the controller of the flagger step.",
			Base: baseImage, Packages: "wget", Bins: map[string]string{"flagger": "cluster/flagger"}, User: nonRootUser,
			Entrypoint: `["/usr/local/bin/flagger"]`},
		// Argo's manifest runs it by its entry point, as upstream's image (/bin/rollouts-controller,
		// user 999); the argo step sets its working directory, where it keeps its plugins.
		{Tag: ArgoRolloutsImage, Comment: "Argo Rollouts controller " + ArgoRolloutsVersion + " (github.com/argoproj/argo-rollouts, hack/tools/argo-rollouts).",
			Base: baseImage, Bins: map[string]string{"rollouts-controller": "cluster/rollouts-controller"}, BinDir: "/bin/", User: "999:999",
			Entrypoint: `["/bin/rollouts-controller"]`},
		// Upstream's helper pods run busybox as root to create and remove volume directories on
		// the node; Debian's minbase has the sh, mkdir and rm they call.
		{Tag: HelperImage, Comment: "sh, mkdir and rm (Debian minbase, as root) for local-path-provisioner's helper pods.",
			Base: baseImage, Env: "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
	}
}

// imagesStep builds every image of the offline cluster (online mode builds only the
// service's).
type imagesStep struct{}

// Def declares the "kind-images" step.
func Def() harness.Def {
	return harness.Def{Step: imagesStep{}, Needs: []string{"env"}, Target: "kind-images", Doc: "Build the images the cluster runs (online: the service image only).", Default: true}
}

// Name implements Step.
func (imagesStep) Name() string { return "kind-images" }

// Run implements Step.
func (imagesStep) Run(ctx context.Context, env *harness.Env) (harness.Outcome, error) {
	if err := buildServiceImage(ctx, env); err != nil {
		return harness.Outcome{}, err
	}
	if err := buildExampleImage(ctx, env); err != nil {
		return harness.Outcome{}, err
	}
	if env.Cfg.Mode == "online" {
		return harness.Outcome{Note: "service, example service and chaos probe images only (online)"}, buildProbeImage(ctx, env)
	}
	if err := ensureBase(ctx, env); err != nil {
		return harness.Outcome{}, err
	}
	node, err := buildNodeImage(ctx, env)
	if err != nil {
		return harness.Outcome{}, err
	}
	for _, im := range AppImages() {
		if err := buildImage(ctx, env, im); err != nil {
			return harness.Outcome{}, err
		}
	}
	if err := buildProbeImage(ctx, env); err != nil {
		return harness.Outcome{}, err
	}
	return harness.Outcome{Note: "node image " + node}, nil
}

// buildServiceImage builds the service (and controller, and load generator) image from the
// repository's Dockerfile through hack/image.sh; offline, with prebuilt static binaries and a
// scratch runtime base, since no base image can be pulled.
func buildServiceImage(ctx context.Context, env *harness.Env) error {
	vars := []string{"IMAGE=" + ServiceImage(env)}
	if env.Cfg.Mode == "offline" {
		vars = append(vars, "IMAGE_OFFLINE=1")
	}
	if err := env.Run(ctx, "image", harness.Cmd{Name: filepath.Join(env.Cfg.Root, "hack/image.sh"), Env: vars}); err != nil {
		return fmt.Errorf("building %s: %w", ServiceImage(env), err)
	}
	return nil
}

// buildProbeImage builds the chaos step's in-cluster client (hack/kindrun/chaosprobe) from this
// repository, static, into a scratch image.
func buildProbeImage(ctx context.Context, env *harness.Env) error {
	return buildStaticImage(ctx, env, ProbeImage, "./hack/kindrun/chaosprobe",
		"The chaos step's client in the cluster: load and a verifying client (hack/kindrun/chaosprobe).")
}

// buildExampleImage builds the example service (examples/imagesvc), a team's own service as far
// as the chart is concerned, static, into a scratch image.
func buildExampleImage(ctx context.Context, env *harness.Env) error {
	return buildStaticImage(ctx, env, ExampleImage, "./examples/imagesvc",
		"The example service: thumbnails, no Redis, OpenTelemetry names (examples/imagesvc, docs/adopt.md).")
}

// buildStaticImage builds the Go command pkg of this repository, static, into a scratch image
// tagged tag, running as a non-root user.
func buildStaticImage(ctx context.Context, env *harness.Env, tag, pkg, comment string) error {
	name := filepath.Base(pkg)
	dir, err := os.MkdirTemp(env.Cfg.OutDir, name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, name)
	err = env.Run(ctx, "image", harness.Cmd{Name: "go", Args: []string{"build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", bin, pkg}, Env: []string{"CGO_ENABLED=0"}})
	if err != nil {
		return fmt.Errorf("building %s: %w", pkg, err)
	}
	df := fmt.Sprintf("# %s\nFROM scratch\nCOPY bin/%[2]s /%[2]s\nUSER 65532:65532\nENTRYPOINT [\"/%[2]s\"]\n", comment, name)
	return buildContext(ctx, env, tag, []byte(df), map[string]string{"bin/" + name: bin}, nil)
}

func ServiceImage(env *harness.Env) string {
	if env.Cfg.Mode == "online" {
		return "poolparity:dev"
	}
	return ServiceTag
}

// ensureBase makes the Debian base image with debootstrap and docker import, once.
func ensureBase(ctx context.Context, env *harness.Env) error {
	if imageExists(ctx, env, baseImage) {
		return nil
	}
	env.Logf("building %s with debootstrap (about a minute)", baseImage)
	dir, err := os.MkdirTemp(env.Cfg.OutDir, "rootfs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := env.Run(ctx, "images", harness.Cmd{Name: "debootstrap", Args: []string{"--variant=minbase", debianSuite, dir, debianMirror}}); err != nil {
		return fmt.Errorf("debootstrap: %w", err)
	}
	return env.Pipe(ctx, "images",
		harness.Cmd{Name: "tar", Args: []string{"-C", dir, "-c", "."}},
		harness.Cmd{Name: "docker", Args: []string{"import", "-c", `CMD ["/bin/bash"]`, "-", baseImage}})
}

func imageExists(ctx context.Context, env *harness.Env, tag string) bool {
	return imageID(ctx, env, tag) != ""
}

// imageLabel returns the recipe label of a local image, or "".
func imageLabel(ctx context.Context, env *harness.Env, tag string) string {
	return inspect(ctx, env, tag, "{{index .Config.Labels \""+recipeLabel+"\"}}")
}

// imageID returns the ID of a local image, or "" when there is none.
func imageID(ctx context.Context, env *harness.Env, tag string) string {
	return inspect(ctx, env, tag, "{{.Id}}")
}

// inspect returns one field of a local image (a docker inspect template), or "".
func inspect(ctx context.Context, env *harness.Env, tag, format string) string {
	out, err := env.Output(ctx, "images", harness.Cmd{Name: "docker", Args: []string{"image", "inspect", "--format", format, tag}})
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// buildImage builds im from the component template unless an image with the same recipe (the
// Dockerfile and the binaries' contents) exists.
func buildImage(ctx context.Context, env *harness.Env, im image) error {
	tmpl, err := template.ParseFS(Files, "component.Dockerfile.tmpl")
	if err != nil {
		return err
	}
	if im.BinDir == "" {
		im.BinDir = "/usr/local/bin/"
	}
	var df bytes.Buffer
	if err := tmpl.Execute(&df, im); err != nil {
		return err
	}
	files := map[string]string{}
	for name, rel := range im.Bins {
		p, err := env.Tool(rel)
		if err != nil {
			return err
		}
		files["bin/"+name] = p
	}
	return buildContext(ctx, env, im.Tag, df.Bytes(), files, nil)
}

// buildContext writes a build context (Dockerfile plus files copied from the given paths) and
// builds tag from it, unless tag already carries the same recipe hash.
func buildContext(ctx context.Context, env *harness.Env, tag string, dockerfile []byte, files map[string]string, args map[string]string) error {
	sum := sha256.New()
	sum.Write(dockerfile)
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(sum, "\x00%s\x00", k)
		if err := hashFile(sum, files[k]); err != nil {
			return err
		}
	}
	argKeys := make([]string, 0, len(args))
	for k := range args {
		argKeys = append(argKeys, k)
	}
	sort.Strings(argKeys)
	for _, k := range argKeys {
		fmt.Fprintf(sum, "\x00%s=%s", k, args[k])
	}
	recipe := hex.EncodeToString(sum.Sum(nil))[:16]
	if imageLabel(ctx, env, tag) == recipe {
		env.Logf("image %s: cached (recipe %s)", tag, recipe)
		return nil
	}
	t := time.Now()
	dir, err := os.MkdirTemp(env.Cfg.OutDir, "build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), dockerfile, 0o644); err != nil {
		return err
	}
	for _, k := range keys {
		if err := copyFile(files[k], filepath.Join(dir, k)); err != nil {
			return err
		}
	}
	bargs := []string{"build", "-t", tag, "--label", recipeLabel + "=" + recipe}
	for _, k := range argKeys {
		bargs = append(bargs, "--build-arg", k+"="+args[k])
	}
	bargs = append(bargs, dir)
	bctx, cancel := context.WithTimeout(ctx, imageBuildTime)
	defer cancel()
	if err := env.Run(bctx, "images", harness.Cmd{Name: "docker", Args: bargs}); err != nil {
		return fmt.Errorf("building %s: %w", tag, err)
	}
	env.Logf("image %s: built in %s", tag, time.Since(t).Round(time.Second))
	return nil
}

func hashFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// copyFile copies src (following links) to dst, keeping the executable bits.
func copyFile(src, dst string) error {
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	mode := os.FileMode(0o644)
	if st.Mode()&0o111 != 0 {
		mode = 0o755
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// ModuleDir returns the directory of module@version in the module cache, downloading it
// through the module proxy if needed. It runs outside any module, so no go.mod is touched.
func ModuleDir(ctx context.Context, env *harness.Env, module string) (string, error) {
	out, err := env.Output(ctx, "images", harness.Cmd{
		Name: "go", Args: []string{"mod", "download", "-json", module},
		Dir: os.TempDir(), Env: []string{"GOWORK=off", "GOFLAGS="},
	})
	if err != nil {
		return "", harness.Prereq("the Go module proxy did not give %s: %v", module, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", module, err)
	}
	if m.Error != "" || m.Dir == "" {
		return "", harness.Prereq("the Go module proxy did not give %s: %s", module, m.Error)
	}
	return m.Dir, nil
}

// controlPlaneImages builds the images kubeadm deploys, named as `kubeadm config images list`
// names them for our Registry, and returns their tags.
func controlPlaneImages(ctx context.Context, env *harness.Env) ([]string, error) {
	kubeadm, err := env.Tool("k8s/kubeadm")
	if err != nil {
		return nil, err
	}
	out, err := env.Output(ctx, "images", harness.Cmd{Name: kubeadm, Args: []string{"config", "images", "list", "--kubernetes-version", K8sVersion, "--image-repository", Registry}})
	if err != nil {
		return nil, err
	}
	var tags []string
	for _, tag := range strings.Fields(out) {
		name := strings.TrimPrefix(tag[:strings.LastIndex(tag, ":")], Registry+"/")
		im := image{Tag: tag, Base: baseImage}
		switch name {
		case "kube-apiserver", "kube-controller-manager", "kube-scheduler":
			im.Comment = name + " " + K8sVersion + " (k8s.io/kubernetes)."
			im.Bins = map[string]string{name: "k8s/" + name}
		case "kube-proxy":
			im.Comment = "kube-proxy " + K8sVersion + " (k8s.io/kubernetes) with Debian's iptables and conntrack."
			im.Bins = map[string]string{name: "k8s/" + name}
			im.Packages = "iptables conntrack nftables ipset kmod"
		case "etcd":
			// kubeadm v1.37.0 asks for etcd 3.7.0; the cluster runs the etcd v3.6.16 built for
			// envtest (one build fewer), and kind's config tells kubeadm its tag.
			im.Tag = Registry + "/etcd:" + EtcdTag
			im.Comment = "etcd " + EtcdTag + " (go.etcd.io/etcd/server/v3)."
			im.Bins = map[string]string{"etcd": "k8s/etcd"}
		case "coredns":
			im.Comment = "CoreDNS " + CorednsVersion + " with the plugins of kubeadm's Corefile (hack/tools/coredns)."
			im.Bins = map[string]string{"coredns": "cluster/coredns"}
			im.Entrypoint = `["/usr/local/bin/coredns"]`
			// Non-root, as upstream's image: the file capability lets it bind port 53.
			im.Packages = "libcap2-bin"
			im.Run = "setcap cap_net_bind_service=+ep /usr/local/bin/coredns"
			im.User = nonRootUser
		case "pause":
			p, err := buildPause(ctx, env)
			if err != nil {
				return nil, err
			}
			files := map[string]string{"bin/pause": p}
			df := "# The pod sandbox: Kubernetes' own pause.c (k8s.io/kubernetes build/pause), built static here.\n" +
				"FROM scratch\nCOPY bin/pause /pause\nUSER 65535:65535\nENTRYPOINT [\"/pause\"]\n"
			if err := buildContext(ctx, env, tag, []byte(df), files, nil); err != nil {
				return nil, err
			}
			tags = append(tags, tag)
			continue
		default:
			return nil, fmt.Errorf("kubeadm lists an image kindrun does not build: %s", tag)
		}
		if err := buildImage(ctx, env, im); err != nil {
			return nil, err
		}
		tags = append(tags, im.Tag)
	}
	return tags, nil
}

// buildPause compiles Kubernetes' pause.c from the k8s.io/kubernetes module, statically.
func buildPause(ctx context.Context, env *harness.Env) (string, error) {
	dir, err := ModuleDir(ctx, env, "k8s.io/kubernetes@"+K8sVersion)
	if err != nil {
		return "", err
	}
	out := filepath.Join(env.Cfg.CacheDir, "pause-"+K8sVersion, "pause")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	src := filepath.Join(dir, "build", "pause", "linux", "pause.c")
	err = env.Run(ctx, "images", harness.Cmd{Name: "gcc", Args: []string{"-Os", "-Wall", "-static", "-DVERSION=" + K8sVersion + "-poolparity", "-o", out, src}})
	if err != nil {
		return "", fmt.Errorf("compiling pause: %w", err)
	}
	return out, nil
}

// buildNodeImage builds the kind node image: kind's base recipe, the node binaries, and the
// control-plane images imported into its containerd, as kind's own node-image builder does.
func buildNodeImage(ctx context.Context, env *harness.Env) (string, error) {
	cp, err := controlPlaneImages(ctx, env)
	if err != nil {
		return "", err
	}
	kindDir, err := ModuleDir(ctx, env, "sigs.k8s.io/kind@"+KindVersion)
	if err != nil {
		return "", err
	}
	df, err := Files.ReadFile("node.Dockerfile")
	if err != nil {
		return "", err
	}
	conflist, err := Files.ReadFile("10-poolparity-bridge.conflist")
	if err != nil {
		return "", err
	}
	missing, err := harness.CapSysResourceMissing()
	if err != nil {
		return "", err
	}
	args := map[string]string{
		"BASE_IMAGE":             baseImage,
		"SANDBOX_IMAGE":          Registry + "/pause:" + pauseTag(cp),
		"RESTRICT_OOM_SCORE_ADJ": fmt.Sprint(missing),
	}
	// The build context: kind's base files, the node binaries, the version file, the CNI config.
	files := map[string]string{}
	base := filepath.Join(kindDir, "images", "base", "files")
	err = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		files["files/"+rel] = p
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("reading kind's base files: %w", err)
	}
	for _, b := range []string{"kubelet", "kubeadm", "kubectl"} {
		p, err := env.Tool("k8s/" + b)
		if err != nil {
			return "", err
		}
		files["bin/"+b] = p
	}
	gen, err := os.MkdirTemp(env.Cfg.OutDir, "nodefiles-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(gen)
	if err := os.WriteFile(filepath.Join(gen, "version"), []byte(K8sVersion+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(gen, "conflist"), conflist, 0o644); err != nil {
		return "", err
	}
	files["version"] = filepath.Join(gen, "version")
	files["10-poolparity-bridge.conflist"] = filepath.Join(gen, "conflist")
	// The stage-one image: kind's recipe with the binaries, no images yet.
	stage1 := NodeImageRepo + ":" + K8sVersion + "-base"
	if err := buildContext(ctx, env, stage1, df, files, args); err != nil {
		return "", err
	}
	// The node image proper: stage one plus the control-plane images, keyed by both.
	sum := sha256.New()
	fmt.Fprintln(sum, imageID(ctx, env, stage1))
	for _, t := range cp {
		fmt.Fprintln(sum, t, imageID(ctx, env, t))
	}
	recipe := hex.EncodeToString(sum.Sum(nil))[:16]
	node := NodeImageRepo + ":" + K8sVersion
	if imageLabel(ctx, env, node) == recipe {
		env.Logf("image %s: cached (recipe %s)", node, recipe)
		return node, nil
	}
	return node, preloadImages(ctx, env, stage1, node, recipe, cp)
}

func pauseTag(tags []string) string {
	for _, t := range tags {
		if strings.HasPrefix(t, Registry+"/pause:") {
			return strings.TrimPrefix(t, Registry+"/pause:")
		}
	}
	return "3.10.2"
}

// preloadImages starts a container of stage1, runs containerd in it, imports the images into
// its k8s.io namespace (pinned, unpacked later by the node's snapshotter, as kind does) and
// commits the result as node.
func preloadImages(ctx context.Context, env *harness.Env, stage1, node, recipe string, images []string) error {
	t := time.Now()
	name := fmt.Sprintf("kindrun-build-%d", time.Now().Unix())
	if err := env.Run(ctx, "images", harness.Cmd{Name: "docker", Args: []string{"run", "-d", "--entrypoint=sleep", "--name=" + name, "--security-opt", "seccomp=unconfined", stage1, "infinity"}}); err != nil {
		return fmt.Errorf("starting the node build container: %w", err)
	}
	defer func() {
		_ = env.Run(context.WithoutCancel(ctx), "images", harness.Cmd{Name: "docker", Args: []string{"rm", "-f", name}})
	}()
	dockerExec := func(args ...string) (string, error) {
		return env.Output(ctx, "images", harness.Cmd{Name: "docker", Args: append([]string{"exec", name}, args...)})
	}
	if err := env.Run(ctx, "images", harness.Cmd{Name: "docker", Args: []string{"exec", "-d", name, "containerd"}}); err != nil {
		return fmt.Errorf("starting containerd in the build container: %w", err)
	}
	err := kube.Poll(ctx, 200*time.Millisecond, 20*time.Second, "containerd in the build container", func() (bool, error) {
		_, err := dockerExec("ctr", "version")
		return err == nil, nil
	})
	if err != nil {
		return err
	}
	save := harness.Cmd{Name: "docker", Args: append([]string{"save"}, images...)}
	imp := harness.Cmd{Name: "docker", Args: []string{"exec", "-i", name, "ctr", "--namespace=k8s.io", "images", "import", "--all-platforms", "--no-unpack", "--digests", "-"}}
	if err := env.Pipe(ctx, "images", save, imp); err != nil {
		return fmt.Errorf("importing the control-plane images: %w", err)
	}
	// Pinned, as kind's builder imports them, so that kubelet's image GC keeps them (containerd
	// 1.6's ctr import has no --label).
	for _, im := range images {
		if _, err := dockerExec("ctr", "--namespace=k8s.io", "images", "label", im, "io.cri-containerd.pinned=pinned"); err != nil {
			return fmt.Errorf("pinning %s: %w", im, err)
		}
	}
	listed, err := dockerExec("ctr", "--namespace=k8s.io", "images", "list", "-q")
	if err != nil {
		return err
	}
	for _, im := range images {
		if !strings.Contains(listed, im) {
			return fmt.Errorf("image %s is not in the node's containerd after the import:\n%s", im, harness.Indent(listed))
		}
	}
	// sleep, the container's PID 1, does not reap: a stopped containerd stays a zombie.
	if _, err := dockerExec("pkill", "-x", "containerd"); err != nil {
		return fmt.Errorf("stopping containerd in the build container: %w", err)
	}
	err = kube.Poll(ctx, 200*time.Millisecond, 20*time.Second, "containerd in the build container to stop", func() (bool, error) {
		// ps exits 1 when no process matches.
		out, _ := dockerExec("ps", "-C", "containerd", "-o", "stat=")
		return onlyZombies(out), nil
	})
	if err != nil {
		return err
	}
	commit := []string{"commit",
		"--change", `ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]`,
		"--change", "LABEL " + recipeLabel + "=" + recipe,
		name, node}
	if err := env.Run(ctx, "images", harness.Cmd{Name: "docker", Args: commit}); err != nil {
		return fmt.Errorf("committing the node image: %w", err)
	}
	env.Logf("image %s: built in %s (%d control-plane images preloaded)", node, time.Since(t).Round(time.Second), len(images))
	return nil
}

// onlyZombies reports whether every process state ps listed (one a line, `ps -o stat=`) is a
// zombie's (Z), or there is none.
func onlyZombies(states string) bool {
	for _, st := range strings.Fields(states) {
		if !strings.HasPrefix(st, "Z") {
			return false
		}
	}
	return true
}

#!/usr/bin/env bash
# hack/install-tools.sh [tool|group ...]
#
# Builds the pinned external tools that poolparity's tests and demo need, from the Go module
# proxy (and Debian packages), into a cache outside the clone keyed by tool and version:
#   ${POOLPARITY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/poolparity}/<tool>-<version>/
# and links them into ./bin (Kubernetes binaries into ./bin/k8s, usable as KUBEBUILDER_ASSETS).
# A cache entry is reused when its binaries run. Prints one line per tool. Idempotent.
#
# Groups (default = no arguments):
#   default     staticcheck benchstat helm kustomize prometheus envtest controller-gen otelcol vuln apt
#   vuln        govulncheck, and vulndb: the Go vulnerability database built (hack/vulndb) from the
#               golang.org/x/vulndb module's OSV entries, linked as the directory bin/vulndb
#   envtest     kube-apiserver kubectl etcd        (alias: k8s)
#   kwok        kwok (kwok+kwokctl) kube-controller-manager kube-scheduler, plus envtest
#   apt         Debian packages redis-server wrk python3-scipy (the statistics tests' oracle)
#   chromium    Debian package chromium (only when asked)
#   kind        the offline kind cluster (hack/kindrun): kind, kubelet kubeadm kube-proxy, coredns,
#               prometheus-operator (+ config reloader), metrics-server, local-path-provisioner,
#               traefik (the Gateway API data plane), keda (operator + metrics API server),
#               flagger (the Flagger controller), argo-rollouts (the Argo Rollouts controller), plus the kwok group's
#               control plane, and Debian's docker.io debootstrap
#   all         default + kwok + kind (not chromium)
# Single tools: staticcheck benchstat govulncheck vulndb helm kustomize prometheus (alias promtool) kube-apiserver
#   kubectl etcd controller-gen kwok kube-controller-manager kube-scheduler kubelet kubeadm kube-proxy
#   coredns prometheus-operator metrics-server local-path-provisioner traefik keda flagger argo-rollouts kind redis-server wrk python3-scipy chromium docker.io debootstrap
#
# `hack/install-tools.sh versions` prints every pinned version as NAME_VERSION=version and installs
# nothing. The versions of the tools built from a tool module are read from hack/tools/*/go.mod
# (and the collector's from hack/tools/otelcol/builder-config.yaml): they are written only there.
#
# Environment: POOLPARITY_CACHE (cache dir), INSTALL_TOOLS_VERBOSE=1 (stream build output).
# See hack/tools/README.md for versions, build recipes and timings.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/lib.sh
. "$ROOT/hack/lib.sh"

CACHE=${POOLPARITY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/poolparity}
BIN=$ROOT/bin
TOOLS=$ROOT/hack/tools

fail() {
	printf 'install-tools: FAILED: %s\n' "$*" >&2
	exit 1
}

# modver DIR MODULE: the version of MODULE that hack/tools/DIR/go.mod requires. A tool built from a
# tool module is pinned there and only there; this script reads it.
modver() {
	local v
	v=$(awk -v m="$2" '$1 == "require" && $2 == m { print $3; exit } $1 == m && $2 ~ /^v/ { print $2; exit }' "$TOOLS/$1/go.mod")
	[[ -n $v ]] || fail "hack/tools/$1/go.mod does not require $2"
	printf '%s' "$v"
}

# otelcol_version: the one version every component of hack/tools/otelcol/builder-config.yaml has.
otelcol_version() {
	local vs
	vs=$(awk '$2 == "gomod:" { print $4 }' "$TOOLS/otelcol/builder-config.yaml" | sort -u)
	[[ -n $vs && $vs != *$'\n'* ]] || fail "hack/tools/otelcol/builder-config.yaml: want one version for every component, got: ${vs//$'\n'/ }"
	printf '%s' "$vs"
}

# Pinned versions: the tools that `go install` builds are pinned here; those built from a tool
# module (hack/tools/*/go.mod) or the collector builder's manifest are read from there.
STATICCHECK_VERSION=v0.8.2
BENCHSTAT_VERSION=v0.0.0-20250909190841-7e13e04d9366
GOVULNCHECK_VERSION=v1.9.0 # golang.org/x/vuln
# golang.org/x/vulndb: the OSV entries (data/osv) that bin/vulndb indexes for govulncheck -db.
VULNDB_VERSION=v0.0.0-20261105234957-e22db6528018
HELM_VERSION=v3.22.0
KUSTOMIZE_VERSION=v5.8.2
CONTROLLER_GEN_VERSION=v0.23.0
KWOK_VERSION=v0.8.0
KIND_VERSION=v0.32.0
LOCAL_PATH_PROVISIONER_VERSION=v0.0.30 # the offline kind cluster's StorageClass
K8S_VERSION=$(modver kubernetes k8s.io/kubernetes)
ETCD_VERSION=$(modver etcd go.etcd.io/etcd/server/v3)
PROMETHEUS_MODULE_VERSION=$(modver prometheus github.com/prometheus/prometheus)
COREDNS_VERSION=$(modver coredns github.com/coredns/coredns) # kubeadm's default CoreDNS
PROMETHEUS_OPERATOR_VERSION=$(modver prometheus-operator github.com/prometheus-operator/prometheus-operator)
METRICS_SERVER_VERSION=$(modver metrics-server sigs.k8s.io/metrics-server)
TRAEFIK_VERSION=$(modver traefik github.com/traefik/traefik/v3) # the Gateway API data plane
GATEWAY_API_VERSION=$(modver traefik sigs.k8s.io/gateway-api)   # its CRDs (the version Traefik is built against)
KEDA_VERSION=$(modver keda github.com/kedacore/keda/v2) # latency-driven autoscaling (ScaledObjects)
FLAGGER_VERSION=$(modver flagger github.com/fluxcd/flagger) # the Flagger controller (hack/kindrun flagger)
ARGO_ROLLOUTS_VERSION=$(modver argo-rollouts github.com/argoproj/argo-rollouts) # Rollouts judged by the metric plugin
OTELCOL_VERSION=$(otelcol_version) # the collector builder and every component
# Prometheus 3.x is published as module v0.3MM.P: v0.315.0 is Prometheus 3.15.0.
PROMETHEUS_VERSION=${PROMETHEUS_MODULE_VERSION#v0.}
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:0:1}.${PROMETHEUS_VERSION:1}
PROMETHEUS_TAGS=remove_all_sd,enable_kubernetes_sd # file, http, static and kubernetes SD only
# .Capabilities.KubeVersion baked into helm: the Kubernetes above.
HELM_KUBE_MAJOR=${K8S_VERSION#v}
HELM_KUBE_MAJOR=${HELM_KUBE_MAJOR%%.*}
HELM_KUBE_MINOR=${K8S_VERSION#v*.}
HELM_KUBE_MINOR=${HELM_KUBE_MINOR%%.*}

export GOWORK=off
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"

# ---------------------------------------------------------------------------------------
# Build recipes. Each gets an empty output directory as $1 and leaves its binaries there.

go_install() { # OUT PKG@VERSION [LDFLAGS]
	GOBIN=$1 go install -trimpath -ldflags "-s -w ${3:-}" "$2"
}

go_build_module() { # OUT MODULE_DIR TAGS LDFLAGS PKG... (OUT: a file, or a directory ending in /)
	local out=$1 mod=$2 tags=$3 ldf=$4
	shift 4
	(cd "$TOOLS/$mod" && go build -mod=readonly -trimpath -tags "$tags" -ldflags "-s -w $ldf" -o "$out" "$@")
}

k8s_ldflags() {
	local p ldf="" minor=${K8S_VERSION#v1.}
	minor=${minor%%.*}
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldf+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
		ldf+=" -X $p.gitTreeState=clean -X $p.buildDate=2026-01-01T00:00:00Z"
	done
	printf '%s' "$ldf"
}

build_staticcheck() { go_install "$1" "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"; }
build_benchstat() { go_install "$1" "golang.org/x/perf/cmd/benchstat@$BENCHSTAT_VERSION"; }
build_govulncheck() { go_install "$1" "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION"; }
# Not a binary: a database directory, written by the repository's own hack/vulndb.
build_vulndb() { (cd "$ROOT" && go run ./hack/vulndb -version "$VULNDB_VERSION" -out "$1/vulndb"); }
build_kustomize() { go_install "$1" "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"; }
build_controller_gen() { go_install "$1" "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_GEN_VERSION"; }

build_helm() {
	local h=helm.sh/helm/v3 ldf
	ldf="-X $h/internal/version.version=$HELM_VERSION -X $h/internal/version.gitTreeState=clean"
	# Default .Capabilities.KubeVersion (chartutil) and the deprecation linter's target version.
	ldf+=" -X $h/pkg/chartutil.k8sVersionMajor=$HELM_KUBE_MAJOR -X $h/pkg/chartutil.k8sVersionMinor=$HELM_KUBE_MINOR"
	ldf+=" -X $h/pkg/lint/rules.k8sVersionMajor=$HELM_KUBE_MAJOR -X $h/pkg/lint/rules.k8sVersionMinor=$HELM_KUBE_MINOR"
	go_install "$1" "$h/cmd/helm@$HELM_VERSION" "$ldf"
}

build_prometheus() {
	local v=github.com/prometheus/common/version
	go_build_module "$1/" prometheus "$PROMETHEUS_TAGS" \
		"-X $v.Version=$PROMETHEUS_VERSION -X $v.Revision=$PROMETHEUS_MODULE_VERSION -X $v.Branch=$PROMETHEUS_MODULE_VERSION -X $v.BuildUser=poolparity -X $v.BuildDate=20260101-00:00:00" \
		github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool
}

build_k8s_cmd() { go_build_module "$1/" kubernetes "" "$(k8s_ldflags)" "k8s.io/kubernetes/cmd/$2"; }
build_kube_apiserver() { build_k8s_cmd "$1" kube-apiserver; }
build_kubectl() { build_k8s_cmd "$1" kubectl; }
build_kube_controller_manager() { build_k8s_cmd "$1" kube-controller-manager; }
build_kube_scheduler() { build_k8s_cmd "$1" kube-scheduler; }
build_kubelet() { build_k8s_cmd "$1" kubelet; }
build_kubeadm() { build_k8s_cmd "$1" kubeadm; }
build_kube_proxy() { build_k8s_cmd "$1" kube-proxy; }
build_kind() { go_install "$1" "sigs.k8s.io/kind@$KIND_VERSION"; }
# No replace directives: go install builds it from its module (its vendor/ is not used).
build_local_path_provisioner() {
	go_install "$1" "github.com/rancher/local-path-provisioner@$LOCAL_PATH_PROVISIONER_VERSION" "-X main.VERSION=$LOCAL_PATH_PROVISIONER_VERSION"
}

build_coredns() {
	go_build_module "$1/coredns" coredns "" "-X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION" .
}

build_prometheus_operator() {
	local v=github.com/prometheus/common/version
	go_build_module "$1/" prometheus-operator "" \
		"-X $v.Version=${PROMETHEUS_OPERATOR_VERSION#v} -X $v.Revision=$PROMETHEUS_OPERATOR_VERSION -X $v.Branch=$PROMETHEUS_OPERATOR_VERSION -X $v.BuildUser=poolparity -X $v.BuildDate=20260101-00:00:00" \
		github.com/prometheus-operator/prometheus-operator/cmd/operator \
		github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader
}

build_metrics_server() {
	local p ldf=""
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldf+=" -X $p.gitVersion=$METRICS_SERVER_VERSION -X $p.gitTreeState=clean -X $p.buildDate=2026-01-01T00:00:00Z"
	done
	go_build_module "$1/" metrics-server "" "$ldf" sigs.k8s.io/metrics-server/cmd/metrics-server
}

build_traefik() {
	local v=github.com/traefik/traefik/v3/pkg/version
	go_build_module "$1/" traefik "" "-X $v.Version=${TRAEFIK_VERSION#v} -X $v.BuildDate=2026-01-01T00:00:00Z" \
		github.com/traefik/traefik/v3/cmd/traefik
}

build_keda() {
	# KEDA's Makefile sets version.Version (its release builds: the tag without the "v"); the
	# operator logs it and writes it into the app.kubernetes.io/version label of the HPAs it makes.
	local v=github.com/kedacore/keda/v2/version ldf
	ldf="-X $v.Version=${KEDA_VERSION#v} -X $v.GitCommit=$KEDA_VERSION"
	go_build_module "$1/keda" keda "" "$ldf" github.com/kedacore/keda/v2/cmd/operator
	go_build_module "$1/keda-adapter" keda "" "$ldf" github.com/kedacore/keda/v2/cmd/adapter
}

build_flagger() {
	# Flagger's Dockerfile sets only version.REVISION (the commit); VERSION is a constant of the
	# module. The controller alone: not the load tester (cmd/loadtester).
	go_build_module "$1/flagger" flagger "" "-X github.com/fluxcd/flagger/pkg/version.REVISION=$FLAGGER_VERSION" \
		github.com/fluxcd/flagger/cmd/flagger
}

build_argo_rollouts() {
	# Argo's Makefile sets utils/version's variables; with a tag and a clean tree the controller
	# reports the tag itself (v1.10.1), as its release images do.
	local v=github.com/argoproj/argo-rollouts/utils/version ldf
	ldf="-X $v.version=${ARGO_ROLLOUTS_VERSION#v} -X $v.buildDate=2026-01-01T00:00:00Z -X $v.gitCommit=$ARGO_ROLLOUTS_VERSION"
	ldf+=" -X $v.gitTag=$ARGO_ROLLOUTS_VERSION -X $v.gitTreeState=clean"
	go_build_module "$1/rollouts-controller" argo-rollouts "" "$ldf" github.com/argoproj/argo-rollouts/cmd/rollouts-controller
}

build_etcd() {
	# The main package is the module root (go.etcd.io/etcd/server/v3), so name the binary.
	go_build_module "$1/etcd" etcd "" "-X go.etcd.io/etcd/api/v3/version.GitSHA=$ETCD_VERSION" go.etcd.io/etcd/server/v3
}

build_kwok() {
	# Default the cluster's Kubernetes version to ours (kwok v0.8.0 defaults to 1.36.1).
	local ldf="-X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${K8S_VERSION#v}"
	go_install "$1" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "$ldf"
	go_install "$1" "sigs.k8s.io/kwok/cmd/kwokctl@$KWOK_VERSION" "$ldf"
}

build_otelcol() {
	# The OpenTelemetry Collector Builder generates a distribution from the manifest and compiles it.
	local work
	work=$(mktemp -d)
	GOBIN=$work go install -trimpath "go.opentelemetry.io/collector/cmd/builder@$OTELCOL_VERSION"
	sed "s#^\(  output_path:\).*#\1 $work/dist#" "$TOOLS/otelcol/builder-config.yaml" >"$work/builder-config.yaml"
	(cd "$work" && ./builder --config builder-config.yaml --ldflags="-s -w")
	mv "$work/dist/otelcol-poolparity" "$1/otelcol"
	rm -rf "$work"
}

# ---------------------------------------------------------------------------------------
# Tool table: spec NAME sets VER, BINS (binaries), DEST (subdir of ./bin), CHECK (arguments
# that make ${BINS[0]} print its version, `buildinfo` for `go version -m` of a binary that
# has no version flag, or `file NAME` for the file NAME inside the directory ${BINS[0]}) and
# EXPECT (text that output must contain).

spec() {
	DEST="" EXPECT=""
	case $1 in
	staticcheck) VER=$STATICCHECK_VERSION BINS=(staticcheck) CHECK=(-version) EXPECT="(${VER#v})" ;;
	benchstat) VER=$BENCHSTAT_VERSION BINS=(benchstat) CHECK=(/dev/null) ;;
	# govulncheck -version asks the database for its date; the build info names the module.
	govulncheck) VER=$GOVULNCHECK_VERSION BINS=(govulncheck) CHECK=(buildinfo) EXPECT=$'golang.org/x/vuln\t'$VER ;;
	# hack/vulndb writes SOURCE.txt last, naming the module version it indexed.
	vulndb) VER=$VULNDB_VERSION BINS=(vulndb) CHECK=(file SOURCE.txt) EXPECT="golang.org/x/vulndb@$VER " ;;
	helm) VER=$HELM_VERSION BINS=(helm) CHECK=(version) EXPECT=$HELM_VERSION ;;
	kustomize) VER=$KUSTOMIZE_VERSION BINS=(kustomize) CHECK=(version) EXPECT=$KUSTOMIZE_VERSION ;;
	controller-gen) VER=$CONTROLLER_GEN_VERSION BINS=(controller-gen) CHECK=(--version) EXPECT=$VER ;;
	prometheus) VER=$PROMETHEUS_MODULE_VERSION BINS=(prometheus promtool) CHECK=(--version) EXPECT=$PROMETHEUS_VERSION ;;
	kube-apiserver | kubectl | kube-controller-manager | kube-scheduler | kubelet | kubeadm | kube-proxy)
		VER=$K8S_VERSION BINS=("$1") DEST=k8s CHECK=(--version) EXPECT=$K8S_VERSION
		if [[ $1 == kubectl ]]; then CHECK=(version --client); fi
		if [[ $1 == kubeadm ]]; then CHECK=(version -o short); fi
		;;
	kind) VER=$KIND_VERSION BINS=(kind) CHECK=(version) EXPECT=$KIND_VERSION ;;
	coredns) VER=$COREDNS_VERSION BINS=(coredns) DEST=cluster CHECK=(-version) EXPECT=${COREDNS_VERSION#v} ;;
	prometheus-operator) VER=$PROMETHEUS_OPERATOR_VERSION BINS=(operator prometheus-config-reloader) DEST=cluster CHECK=(--version) EXPECT=${VER#v} ;;
	metrics-server) VER=$METRICS_SERVER_VERSION BINS=(metrics-server) DEST=cluster CHECK=(--version) EXPECT=$VER ;;
	traefik) VER=$TRAEFIK_VERSION BINS=(traefik) DEST=cluster CHECK=(version) EXPECT=${VER#v} ;;
	keda) VER=$KEDA_VERSION BINS=(keda keda-adapter) DEST=cluster CHECK=(buildinfo) EXPECT=$'github.com/kedacore/keda/v2\t'$VER ;;
	flagger) VER=$FLAGGER_VERSION BINS=(flagger) DEST=cluster CHECK=(-version) EXPECT=${VER#v} ;;
	argo-rollouts) VER=$ARGO_ROLLOUTS_VERSION BINS=(rollouts-controller) DEST=cluster CHECK=(--version) EXPECT=$VER ;;
	local-path-provisioner) VER=$LOCAL_PATH_PROVISIONER_VERSION BINS=(local-path-provisioner) DEST=cluster CHECK=(--version) EXPECT=$VER ;;
	etcd) VER=$ETCD_VERSION BINS=(etcd) DEST=k8s CHECK=(--version) EXPECT=${ETCD_VERSION#v} ;;
	kwok) VER=$KWOK_VERSION BINS=(kwokctl kwok) CHECK=(--version) EXPECT=${KWOK_VERSION#v} ;;
	otelcol) VER=$OTELCOL_VERSION BINS=(otelcol) CHECK=(--version) EXPECT=${OTELCOL_VERSION#v} ;;
	*) return 1 ;;
	esac
}

unit_ok() { # DIR: all binaries present and the first one reports the expected version
	local dir=$1 b out
	for b in "${BINS[@]}"; do [[ -x $dir/$b ]] || return 1; done
	if [[ ${CHECK[0]} == buildinfo ]]; then
		out=$(go version -m "$dir/${BINS[0]}" 2>&1) || return 1
	elif [[ ${CHECK[0]} == file ]]; then
		out=$(<"$dir/${BINS[0]}/${CHECK[1]}") || return 1
	else
		out=$("$dir/${BINS[0]}" "${CHECK[@]}" 2>&1) || return 1
	fi
	[[ -z $EXPECT || $out == *"$EXPECT"* ]]
}

install_go_tool() {
	local name=$1 dir tmp logf start status fd b
	spec "$name" || fail "unknown tool '$name'"
	dir=$CACHE/$name-$VER
	mkdir -p "$CACHE/logs"
	start=$(date +%s)
	# Serialize concurrent installs of the same tool (several scripts or agents at once).
	exec {fd}>"$CACHE/.$name-$VER.lock"
	flock "$fd"
	if unit_ok "$dir"; then
		status=cached
	else
		logf=$CACHE/logs/$name-$VER.log
		tmp=$(mktemp -d "$CACHE/.tmp-$name-XXXXXX")
		local rc=0
		if [[ ${INSTALL_TOOLS_VERBOSE:-} == 1 ]]; then
			"build_${name//-/_}" "$tmp" 2>&1 | tee "$logf" >&2 || rc=$?
		else
			"build_${name//-/_}" "$tmp" >"$logf" 2>&1 || rc=$?
		fi
		if ((rc != 0)); then
			rm -rf "$tmp"
			{
				echo "--- last lines of $logf:"
				tail -n 25 "$logf"
			} >&2
			fail "$name $VER: build failed after $(($(date +%s) - start))s (log: $logf)"
		fi
		rm -rf "$dir"
		mv "$tmp" "$dir"
		unit_ok "$dir" || fail "$name $VER: built, but '${BINS[0]} ${CHECK[*]}' does not report $EXPECT (log: $logf)"
		status=built
	fi
	exec {fd}>&-
	mkdir -p "$BIN/$DEST"
	for b in "${BINS[@]}"; do ln -sfn "$dir/$b" "$BIN/${DEST:+$DEST/}$b"; done
	printf '%-24s %-36s %-6s %4ss  -> bin/%s%s\n' "$name" "$VER" "$status" "$(($(date +%s) - start))" "${DEST:+$DEST/}" "${BINS[*]}"
}

# ---------------------------------------------------------------------------------------
# Debian packages.

APT_UPDATED=0
apt_ensure() { # PKG...: install the Debian packages that are missing (apt-get update once, quietly)
	local p missing=() start sudo="" logf=$CACHE/logs/apt.log
	start=$(date +%s)
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	if ((${#missing[@]} == 0)); then
		for p in "$@"; do printf '%-24s %-36s %-6s %4ss\n' "$p" "(apt)" cached 0; done
		return 0
	fi
	((EUID == 0)) || sudo=sudo
	mkdir -p "$CACHE/logs"
	if ((APT_UPDATED == 0)); then
		$sudo apt-get update -qq >"$logf" 2>&1 || {
			tail -n 10 "$logf" >&2
			fail "apt-get update failed (log: $logf)"
		}
		APT_UPDATED=1
	fi
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${APT_OPTS[@]}" "${missing[@]}" >>"$logf" 2>&1 || {
		tail -n 10 "$logf" >&2
		fail "apt-get install ${missing[*]} failed (log: $logf)"
	}
	for p in "$@"; do printf '%-24s %-36s %-6s %4ss\n' "$p" "(apt)" installed "$(($(date +%s) - start))"; done
}

# ---------------------------------------------------------------------------------------

expand() { # NAME: print the tools of a group (or the tool itself)
	case $1 in
	default) echo staticcheck benchstat helm kustomize prometheus kube-apiserver kubectl etcd controller-gen otelcol govulncheck vulndb redis-server wrk python3-scipy ;;
	all) echo "$(expand default) $(expand kwok) $(expand kind)" ;;
	kind) echo "$(expand kwok) kubelet kubeadm kube-proxy coredns prometheus-operator metrics-server local-path-provisioner traefik keda flagger argo-rollouts kind docker.io debootstrap" ;;
	envtest | k8s) echo kube-apiserver kubectl etcd ;;
	vuln) echo govulncheck vulndb ;;
	kwok) echo kube-apiserver kubectl etcd kube-controller-manager kube-scheduler kwok ;;
	kwokctl) echo kwok ;;
	promtool) echo prometheus ;;
	apt) echo redis-server wrk python3-scipy ;;
	*) echo "$1" ;;
	esac
}

main() {
	local t want=() seen=" " apt_pkgs=() go_tools=()
	(($# > 0)) || set -- default
	if [[ $1 == versions ]]; then
		(($# == 1)) || fail "versions takes no other argument"
		for t in STATICCHECK BENCHSTAT GOVULNCHECK VULNDB HELM KUSTOMIZE CONTROLLER_GEN KWOK KIND K8S ETCD PROMETHEUS_MODULE PROMETHEUS COREDNS PROMETHEUS_OPERATOR METRICS_SERVER KEDA FLAGGER ARGO_ROLLOUTS LOCAL_PATH_PROVISIONER TRAEFIK GATEWAY_API OTELCOL; do
			t=${t}_VERSION
			printf '%s=%s\n' "$t" "${!t}"
		done
		return 0
	fi
	for t in "$@"; do
		case $t in -h | --help)
			sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
			return 0
			;;
		esac
		# shellcheck disable=SC2207
		want+=($(expand "$t"))
	done
	for t in "${want[@]}"; do
		[[ $seen == *" $t "* ]] && continue
		seen+="$t "
		case $t in
		redis-server | wrk | python3-scipy | chromium | docker.io | debootstrap) apt_pkgs+=("$t") ;;
		*) spec "$t" || fail "unknown tool or group '$t' (see $0 --help)"; go_tools+=("$t") ;;
		esac
	done
	command -v go >/dev/null || fail "go is not on PATH"
	mkdir -p "$CACHE" "$BIN"
	local total_start=$(date +%s)
	if ((${#apt_pkgs[@]})); then
		APT_OPTS=(--no-install-recommends)
		[[ " ${apt_pkgs[*]} " == *" chromium "* ]] && APT_OPTS=() # chromium wants its recommended fonts
		apt_ensure "${apt_pkgs[@]}"
	fi
	for t in "${go_tools[@]}"; do install_go_tool "$t"; done
	log "done in $(($(date +%s) - total_start))s; cache: $CACHE"
}

main "$@"

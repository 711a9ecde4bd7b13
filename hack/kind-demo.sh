#!/usr/bin/env bash
# hack/kind-demo.sh: the poolparity demo on a local kind cluster.
#
#   hack/kind-demo.sh [all]      run every step: up image load deps install load-job parity
#   hack/kind-demo.sh STEP...    run only these steps (the Makefile's cluster targets call them one by one):
#                                up (kind create), image, load (kind load), deps (kube-prometheus-stack +
#                                metrics-server), install (helm + helm test), load-job, parity, down
#
# Needs Docker, kind, kubectl, helm and the internet (node image, chart repositories, images):
# it cannot run on this project's CI machines, which have no container engine and no network
# besides package registries. Versions are pinned below; bump them deliberately.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/lib.sh
export PATH="$PWD/bin:$PATH"

CLUSTER=${CLUSTER:-poolparity}
IMAGE=${IMAGE:-poolparity:dev}
NAMESPACE=${NAMESPACE:-poolparity}
RELEASE=${RELEASE:-poolparity}
MONITORING_NS=monitoring
KPS_RELEASE=kube-prometheus-stack          # the chart's kind values select this release label
KPS_CHART_VERSION=${KPS_CHART_VERSION:-79.5.0}
METRICS_SERVER_CHART_VERSION=${METRICS_SERVER_CHART_VERSION:-3.12.2}
LOAD_SECONDS=${LOAD_SECONDS:-300}
LOAD_WORKERS=${LOAD_WORKERS:-8}

need() { for c in "$@"; do command -v "$c" >/dev/null 2>&1 || die "$c is required for the kind demo (and Docker + internet)"; done; }

kind_up() {
	need docker kind kubectl
	docker info >/dev/null 2>&1 || die "no Docker engine answers: the kind demo needs one"
	if kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
		log "kind cluster $CLUSTER exists"
	else
		kind create cluster --name "$CLUSTER" --config kind-config.yaml --wait 120s
	fi
	kubectl config use-context "kind-$CLUSTER"
}

image() { IMAGE=$IMAGE hack/image.sh; }

kind_load() {
	need kind
	kind load docker-image "$IMAGE" --name "$CLUSTER"
}

monitoring() {
	need helm kubectl
	helm repo add prometheus-community https://prometheus-community.github.io/helm-charts --force-update >/dev/null
	helm repo add metrics-server https://kubernetes-sigs.github.io/metrics-server/ --force-update >/dev/null
	# metrics-server feeds the HPAs' CPU metric; kind's kubelets serve self-signed certificates.
	helm upgrade --install metrics-server metrics-server/metrics-server --version "$METRICS_SERVER_CHART_VERSION" \
		-n kube-system --set 'args={--kubelet-insecure-tls}' --wait --timeout 5m
	# Prometheus on host port 30090 and Grafana on 30030 (kind-config.yaml maps them).
	helm upgrade --install "$KPS_RELEASE" prometheus-community/kube-prometheus-stack --version "$KPS_CHART_VERSION" \
		-n "$MONITORING_NS" --create-namespace \
		--set prometheus.service.type=NodePort --set prometheus.service.nodePort=30090 \
		--set grafana.service.type=NodePort --set grafana.service.nodePort=30030 \
		--set prometheus.prometheusSpec.evaluationInterval=15s \
		--wait --timeout 10m
}

helm_install() {
	need helm kubectl
	kubectl create namespace "$NAMESPACE" --dry-run=client -o yaml | kubectl apply -f -
	kubectl label namespace "$NAMESPACE" pod-security.kubernetes.io/enforce=restricted --overwrite
	helm upgrade --install "$RELEASE" deploy/helm/poolparity -n "$NAMESPACE" \
		-f deploy/helm/poolparity/values-kind.yaml \
		--set service.type=NodePort --set service.nodePort=30080 \
		--wait --timeout 5m
	helm test "$RELEASE" -n "$NAMESPACE" --logs
}

# load_job: a bounded in-cluster Job (official busybox image) that calls the split Service, so the
# traffic split follows ready replicas of both tracks. It stops by itself after LOAD_SECONDS.
load_job() {
	need kubectl
	kubectl -n "$NAMESPACE" delete job poolparity-load --ignore-not-found
	kubectl -n "$NAMESPACE" apply -f - <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: poolparity-load
spec:
  backoffLimit: 0
  activeDeadlineSeconds: $((LOAD_SECONDS + 60))
  template:
    spec:
      restartPolicy: Never
      automountServiceAccountToken: false
      securityContext:
        runAsNonRoot: true
        runAsUser: 65534
        seccompProfile: {type: RuntimeDefault}
      containers:
        - name: load
          image: docker.io/library/busybox:1.37.0
          command: ["sh", "-c"]
          args:
            - |
              end=\$((\$(date +%s) + $LOAD_SECONDS))
              for w in \$(seq $LOAD_WORKERS); do
                (while [ \$(date +%s) -lt \$end ]; do
                  wget -q -O /dev/null "http://$RELEASE-poolparity/api/v1/report?n=200" || true
                  wget -q -O /dev/null "http://$RELEASE-poolparity/api/v1/items?limit=50" || true
                done) &
              done
              wait
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: ["ALL"]}
YAML
	log "load Job started for ${LOAD_SECONDS}s; waiting for it"
	kubectl -n "$NAMESPACE" wait --for=condition=complete job/poolparity-load --timeout=$((LOAD_SECONDS + 120))s
}

# parity: port-forward Prometheus and print the parity report that `make demo` prints, read
# from the cluster's recording rules.
parity() {
	need kubectl go
	local port pf
	port=$(free_port)
	kubectl -n "$MONITORING_NS" port-forward "svc/$KPS_RELEASE-prometheus" "$port:9090" >/dev/null 2>&1 &
	pf=$!
	trap 'kill "$pf" 2>/dev/null || true' RETURN
	wait_http "http://127.0.0.1:$port/-/ready" 30 || die "Prometheus port-forward did not answer"
	# The demo's report-only mode starts nothing: it reads the chart's 5m rules from this Prometheus,
	# for the release's series only (job is the release name, see the ServiceMonitor). Built rather
	# than `go run` so that its exit status, the verdict (0 PASS, 1 FAIL, 3 NO DATA, 4 Prometheus
	# unreadable), is this step's.
	CGO_ENABLED=0 go build -trimpath -o bin/poolparity-demo ./app/cmd/poolparity-demo
	local rc=0
	PROMETHEUS_URL="http://127.0.0.1:$port" bin/poolparity-demo -report-only -window 5m \
		-selector "namespace=\"$NAMESPACE\",job=\"$RELEASE\"" || rc=$?
	return "$rc"
}

kind_down() {
	need kind
	kind delete cluster --name "$CLUSTER"
}

steps=("$@")
# Step names match the Makefile's cluster targets; the long names are accepted too.
if [ ${#steps[@]} -eq 0 ] || [ "${steps[0]}" = all ]; then
	steps=(up image load deps install load-job parity)
fi
for s in "${steps[@]}"; do
	log "step $s"
	case $s in
	up | kind-up) kind_up ;;
	image) image ;;
	load | kind-load) kind_load ;;
	deps | monitoring) monitoring ;;
	install | helm-install) helm_install ;;
	load-job) load_job ;;
	parity) parity ;;
	down | kind-down) kind_down ;;
	*) die "unknown step $s (all up image load deps install load-job parity down)" ;;
	esac
done

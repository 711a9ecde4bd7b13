#!/usr/bin/env bash
# hack/bench-otlp.sh: the service's CPU per request with its metrics scraped from /metrics against
# pushed over OTLP to a collector, side by side.
#
#   hack/bench-otlp.sh [SECONDS] [ROUNDS]     (defaults 15 and 2)
#
# Modes, each run ROUNDS times, interleaved, against one redis-server:
#   scrape        no OTLP; /metrics fetched every 2s (what Prometheus does)
#   otlp-metrics  OTEL_EXPORTER_OTLP_METRICS_ENDPOINT to bin/otelcol, pushed every 2s; no scrape
#   otlp-all      OTEL_EXPORTER_OTLP_ENDPOINT: the metrics push plus trace export; no scrape
# Load: wrk -t2 -c16 on GET /api/v1/items/{id}. CPU: the service process's utime+stime from
# /proc/PID/stat over the wrk run (the collector's and wrk's CPU are not counted), divided by
# the requests wrk completed. Needs bin/otelcol (hack/install-tools.sh otelcol), redis-server, wrk.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=hack/lib.sh
. hack/lib.sh

SECS=${1:-15} ROUNDS=${2:-2}
for b in bin/otelcol; do [[ -x $b ]] || die "$b missing: hack/install-tools.sh otelcol"; done
command -v wrk >/dev/null || die "wrk missing: hack/install-tools.sh wrk"
command -v redis-server >/dev/null || die "redis-server missing: hack/install-tools.sh redis-server"
CGO_ENABLED=0 go build -trimpath -o bin/poolparity ./app/cmd/poolparity

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
TMP=$(mktemp -d)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT

RPORT=$(free_port)
redis-server --bind 127.0.0.1 --port "$RPORT" --save '' --appendonly no >"$TMP/redis.log" 2>&1 &
PIDS+=($!)
OTLP=$(free_port) PROM=$(free_port) SINK=$(free_port)
OTELCOL_OTLP_HTTP=127.0.0.1:$OTLP OTELCOL_PROMETHEUS=127.0.0.1:$PROM OTELCOL_TRACES_ENDPOINT=http://127.0.0.1:$SINK \
	bin/otelcol --config deploy/helm/poolparity/files/otel-collector.yaml >"$TMP/otelcol.log" 2>&1 &
PIDS+=($!)
sleep 2
TICK=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

run_mode() { # MODE -> prints "MODE requests ns_cpu_per_request"
	local mode=$1 port env=() svc scraper="" t0 t1 reqs
	port=$(free_port)
	case $mode in
	scrape) ;;
	otlp-metrics) env=(OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=http://127.0.0.1:$OTLP/v1/metrics OTEL_METRIC_EXPORT_INTERVAL=2000) ;;
	otlp-all) env=(OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$OTLP OTEL_METRIC_EXPORT_INTERVAL=2000) ;;
	esac
	env HTTP_ADDR=127.0.0.1:$port REDIS_ADDR=127.0.0.1:$RPORT POOL_MODE=pooled LOG_LEVEL=warn SHUTDOWN_DELAY=0s \
		"${env[@]}" bin/poolparity >"$TMP/svc-$mode.log" 2>&1 &
	svc=$!
	for _ in $(seq 50); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
	curl -fs -X PUT "http://127.0.0.1:$port/api/v1/items/bench" -d '{"name":"bench","tags":["a","b"],"payload":"hello pool"}' >/dev/null
	if [[ $mode == scrape ]]; then
		(for _ in $(seq $((SECS / 2 + 2))); do curl -fs "http://127.0.0.1:$port/metrics" >/dev/null; sleep 2; done) &
		scraper=$!
	fi
	t0=$(cpu_ticks "$svc")
	reqs=$(wrk -t2 -c16 -d"${SECS}s" "http://127.0.0.1:$port/api/v1/items/bench" | awk '/requests in/ {print $1}')
	t1=$(cpu_ticks "$svc")
	[[ -n $scraper ]] && { kill "$scraper" 2>/dev/null || true; wait "$scraper" 2>/dev/null || true; }
	kill "$svc"
	wait "$svc" 2>/dev/null || true
	awk -v m="$mode" -v r="$reqs" -v d=$((t1 - t0)) -v tk="$TICK" 'BEGIN { printf "%-13s %9d requests  %6.1f us CPU/request\n", m, r, d / tk * 1e6 / r }'
}

for round in $(seq "$ROUNDS"); do
	for mode in scrape otlp-metrics otlp-all; do run_mode "$mode"; done
done

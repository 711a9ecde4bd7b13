#!/usr/bin/env bash
# hack/bench-service.sh: benchmark the poolparity service in both pool modes
# and print benchstat tables.
#
#   hack/bench-service.sh                       # handlers + metrics cost + load
#   BENCH_COUNT=10 LOAD_DURATION=20s hack/bench-service.sh
#   BENCH_SKIP_LOAD=1 hack/bench-service.sh     # in-process benchmarks only
#
# What it runs:
#   1. In-process handler benchmarks (internal/server) against a real Redis:
#      BenchmarkReport and BenchmarkItemGet, sub-benchmarks mode=pooled|unpooled,
#      compared with `benchstat -col /mode` (base: pooled).
#   2. The request-metrics cost: BenchmarkMetricsCost metrics=on|off and the
#      recorder's own BenchmarkObserveRequest.
#   3. A loopback load comparison: two service processes (pooled, unpooled) on
#      one Redis, driven in turn by wrk on GET /api/v1/report?n=100; throughput
#      and p99 per mode. Bounded: LOAD_DURATION per mode, 127.0.0.1 only.
#
# Redis: REDIS_ADDR when set; otherwise the benchmarks start their own
# redis-server (see internal/redistest) and the load step starts one on a
# free loopback port. Debian: apt-get install -y redis-server wrk.
#
# Environment:
#   BENCH_COUNT    repetitions per benchmark (default 6)
#   BENCH_TIME     go test -benchtime (default 1s)
#   LOAD_DURATION  wrk duration per mode (default 10s)
#   LOAD_CONNS     wrk connections (default 16)
#   BENCH_OUT      directory for raw outputs (default out/bench-service)
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/lib.sh

count=${BENCH_COUNT:-6}
benchtime=${BENCH_TIME:-1s}
duration=${LOAD_DURATION:-10s}
conns=${LOAD_CONNS:-16}
outdir=${BENCH_OUT:-out/bench-service}
mkdir -p "$outdir"

benchstat=./bin/benchstat
if [[ ! -x $benchstat ]]; then
	log "installing the pinned benchstat into ./bin"
	GOBIN=$PWD/bin go install golang.org/x/perf/cmd/benchstat@v0.0.0-20250909190841-7e13e04d9366
fi
if [[ -z ${REDIS_ADDR:-} ]] && ! command -v redis-server >/dev/null; then
	die "no Redis: set REDIS_ADDR or install redis-server (apt-get install -y redis-server)"
fi

log "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
log "1/3 handler benchmarks (count=$count, benchtime=$benchtime)"
go test -run '^$' -bench '^(BenchmarkReport|BenchmarkItemGet)$' -benchmem -count "$count" -benchtime "$benchtime" \
	./internal/server | tee "$outdir/handlers.txt"
echo
echo "## Handlers, pooled vs unpooled (base: pooled)"
"$benchstat" -col /mode "$outdir/handlers.txt"

log "2/3 metrics cost"
go test -run '^$' -bench '^(BenchmarkMetricsCost|BenchmarkObserveRequest)$' -benchmem -count "$count" -benchtime "$benchtime" \
	./internal/server | tee "$outdir/metrics.txt"
echo
echo "## Request metrics on vs off (base: on)"
"$benchstat" -col /metrics -filter '.name:MetricsCost' "$outdir/metrics.txt"
echo
echo "## Recorder cost per request"
"$benchstat" -filter '.name:ObserveRequest' "$outdir/metrics.txt"

if [[ -n ${BENCH_SKIP_LOAD:-} ]]; then
	exit 0
fi
if ! command -v wrk >/dev/null; then
	log "wrk is not installed (apt-get install -y wrk): skipping the load comparison"
	exit 0
fi

log "3/3 loopback load comparison (wrk, $duration per mode, $conns connections)"
work=$(mktemp -d)
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/poolparity" ./app/cmd/poolparity
redis_addr=${REDIS_ADDR:-}
if [[ -z $redis_addr ]]; then
	rport=$(free_port)
	redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" --logfile "$work/redis.log" &
	pids+=($!)
	wait_port "$rport" 10 || die "redis-server did not start"
	redis_addr=127.0.0.1:$rport
fi

declare -A port
for mode in pooled unpooled; do
	port[$mode]=$(free_port)
	HTTP_ADDR=127.0.0.1:${port[$mode]} POOL_MODE=$mode GRAY_STATUS=$([[ $mode == pooled ]] && echo true || echo false) \
		REDIS_ADDR=$redis_addr LOG_LEVEL=warn SHUTDOWN_DELAY=0s "$work/poolparity" >"$work/$mode.log" 2>&1 &
	pids+=($!)
	wait_http "http://127.0.0.1:${port[$mode]}/readyz" 20 || die "$mode service did not become ready: $(cat "$work/$mode.log")"
done

log "seeding 100 items"
words=(pool buffer redis gray stable canary alloc latency heap scratch encoder report tail parity)
for i in $(seq -w 0 99); do
	payload=""
	for j in $(seq 1 300); do payload+="${words[$(((10#$i * 7 + j * j) % ${#words[@]}))]}$((j % 97)) "; done
	curl -fsS -o /dev/null -X PUT --data "{\"name\":\"item $i\",\"tags\":[\"t$((10#$i % 7))\"],\"payload\":\"$payload\"}" \
		"http://127.0.0.1:${port[pooled]}/api/v1/items/load$i"
done

printf '\n## Loopback load: GET /api/v1/report?n=100, wrk -t2 -c%s -d%s\n' "$conns" "$duration"
printf '| mode | requests/s | p50 | p99 |\n|---|---|---|---|\n'
for mode in unpooled pooled; do
	url="http://127.0.0.1:${port[$mode]}/api/v1/report?n=100"
	wrk -t2 -c"$conns" -d2s "$url" >/dev/null # warm-up
	wrk -t2 -c"$conns" -d"$duration" --latency "$url" >"$outdir/wrk-$mode.txt"
	rps=$(awk '/^Requests\/sec/ {print $2}' "$outdir/wrk-$mode.txt")
	p50=$(awk '$1 == "50%" {print $2}' "$outdir/wrk-$mode.txt")
	p99=$(awk '$1 == "99%" {print $2}' "$outdir/wrk-$mode.txt")
	printf '| %s | %s | %s | %s |\n' "$mode" "$rps" "$p50" "$p99"
done
log "load average: $(cut -d' ' -f1-3 /proc/loadavg); raw outputs in $outdir"

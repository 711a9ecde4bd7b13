#!/usr/bin/env bash
# hack/bench.sh: run the instrument benchmarks and print benchstat tables.
#
#   hack/bench.sh                      # BENCH_COUNT=10, -cpu 1,2,4
#   BENCH_COUNT=12 BENCH_TIME=500ms hack/bench.sh
#   BENCH_FILTER='GetPut|Overhead' hack/bench.sh   # only the pool tables
#
# Environment:
#   BENCH_COUNT  repetitions per benchmark (default 10; benchstat wants >= 6)
#   BENCH_TIME   go test -benchtime (default: go's 1s)
#   BENCH_CPU    go test -cpu list (default 1,2,4)
#   BENCH_FILTER go test -bench regexp (default: every benchmark)
#   BENCH_OUT    file for the raw go test output (default: a temp file, removed)
#
# The benchmarks are sub-benchmarks named impl=<variant>, so one
# `benchstat -col /impl` table compares the variants side by side, with the
# first variant (raw sync.Pool, or a plain allocation) as the base.
# cpu-sec/op is process CPU time per op: on a busy machine it is steadier
# than the wall-clock sec/op. The load average is printed before and after,
# since other work on the machine moves every number.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/lib.sh

count=${BENCH_COUNT:-10}
cpus=${BENCH_CPU:-1,2,4}
filter=${BENCH_FILTER:-.}
benchtime=()
[[ -n ${BENCH_TIME:-} ]] && benchtime=(-benchtime "$BENCH_TIME")

benchstat=./bin/benchstat
if [[ ! -x $benchstat ]]; then
	log "installing the pinned benchstat into ./bin"
	GOBIN=$PWD/bin go install golang.org/x/perf/cmd/benchstat@v0.0.0-20250909190841-7e13e04d9366
fi

out=${BENCH_OUT:-}
if [[ -z $out ]]; then
	out=$(mktemp)
	trap 'rm -f "$out"' EXIT
fi

# instrument is a module of its own: go -C runs the benchmarks inside it.
cmd=(go -C instrument test -run '^$' -bench "$filter" -benchmem -cpu "$cpus" -count "$count" "${benchtime[@]}" ./...)
echo "# $(go version)"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
echo "# command: ${cmd[*]@Q}"
if ! "${cmd[@]}" >"$out" 2>&1; then
	cat "$out" >&2
	die "benchmarks failed"
fi
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"

echo
echo "## Get + Reset + Put of a *bytes.Buffer (base: raw sync.Pool)"
echo "# $benchstat -col /impl -filter '.name:GetPut' <output>"
"$benchstat" -col /impl -filter '.name:GetPut' "$out"
echo
echo "## Get + Reset + Put of a struct through WithNew/WithReset/WithKeep (base: raw sync.Pool)"
echo "# $benchstat -col /impl -filter '.name:GetPutStruct' <output>"
"$benchstat" -col /impl -filter '.name:GetPutStruct' "$out"
echo
echo "## Where instrument.Pool's cost comes from (base: raw sync.Pool; see BenchmarkOverhead)"
echo "# $benchstat -col /impl -filter '.name:Overhead' <output>"
"$benchstat" -col /impl -filter '.name:Overhead' "$out"
echo
echo "## The generic path against the specialised buffer pool (base: raw sync.Pool)"
echo "# $benchstat -col /impl -filter '.name:OverheadGeneric' <output>"
"$benchstat" -col /impl -filter '.name:OverheadGeneric' "$out"
if grep -q '^BenchmarkAlloc1K' "$out"; then
	echo
	echo "## Seed micro-benchmarks (base: no pool)"
	echo "# $benchstat -col /impl -filter '.name:(Alloc1K OR JSONUnmarshal OR BufferWrite10K)' <output>"
	"$benchstat" -col /impl -filter '.name:(Alloc1K OR JSONUnmarshal OR BufferWrite10K)' "$out"
fi

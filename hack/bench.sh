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

# ratios prints, for each pool benchmark and -cpu, the median cpu-ns/op of
# every variant divided by the median of impl=raw, with the median ns/op
# ratio (wall clock, noisier on a shared machine) beside it.
ratios() {
	python3 - "$1" <<'PY'
import re, statistics, sys
from collections import defaultdict
line = re.compile(r"^Benchmark(GetPut|GetPutStruct|Overhead|OverheadGeneric)/impl=(\w+)(?:-(\d+))?\s+\d+\s+([\d.]+) ns/op\s+([\d.]+) cpu-ns/op")
samples = defaultdict(lambda: ([], []))
order = []
for text in open(sys.argv[1]):
    m = line.match(text)
    if not m:
        continue
    bench, impl, cpu = m.group(1), m.group(2), int(m.group(3) or 1)
    key = (bench, cpu, impl)
    if key not in samples:
        order.append(key)
    samples[key][0].append(float(m.group(5)))
    samples[key][1].append(float(m.group(4)))
print(f"{'benchmark':<22} {'cpu':>3} {'variant':<16} {'cpu-ns/op':>10} {'x raw':>7} {'ns/op x raw':>12} {'n':>3}")
first = {}
for bench, cpu, impl in order:
    first.setdefault(bench, len(first))
    first.setdefault((bench, impl), len(first))
order.sort(key=lambda k: (first[k[0]], k[1], first[(k[0], k[2])]))
for bench, cpu, impl in order:
    base = samples.get((bench, cpu, "raw"))
    cpu_s, wall_s = samples[(bench, cpu, impl)]
    c, w = statistics.median(cpu_s), statistics.median(wall_s)
    if base:
        rc = c / statistics.median(base[0])
        rw = w / statistics.median(base[1])
        print(f"{bench:<22} {cpu:>3} {impl:<16} {c:>10.2f} {rc:>6.2f}x {rw:>11.2f}x {len(cpu_s):>3}")
PY
}

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
echo "## Ratios: median cpu-ns/op of each variant / median of raw sync.Pool (target: instrument <= 1.05)"
ratios "$out"
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

#!/usr/bin/env bash
# Builds tests/gpu/probes/call_overhead.cu against the haxpy solution (1024-
# and 256-thread blocks) and the CUB peer, runs each plainly and under ncu,
# and prints the event medians next to ncu's median kernel duration.
#   SIZES="N:OFFSET ..." (default 67108869:0 67108869:1 268435455:0)
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/cuda/bin"
W=$(mktemp -d /tmp/probe.XXXXXX)
SIZES=${SIZES:-"67108869:0 67108869:1 268435455:0"}
SAMPLES=${SAMPLES:-31}
build() {   # name, haxpy source, flags
    nvcc -O3 -std=c++17 -arch=sm_90 $3 -Iexercises/haxpy -Igrader/worker \
        tests/gpu/probes/call_overhead.cu "$2" grader/worker/l2_flush.cu -o "$W/$1" || echo "build $1 failed"
}
build sol1024 solutions/haxpy/haxpy.cu "" &
build sol256 solutions/haxpy/haxpy.cu -DBW_BLOCK=256 &
build cub grader/peers/haxpy_cub.cu "" &
wait
for b in sol1024 sol256 cub; do
  for s in $SIZES; do
    n=${s%%:*}; off=${s#*:}
    echo "== $b n=$n offset=$off"
    "$W/$b" "$n" "$off" "$SAMPLES"
    ncu --cache-control none --clock-control none --kernel-name regex:'haxpy_kernel|transform|empty_kernel' \
        --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size --csv --page raw --print-units base \
        "$W/$b" "$n" "$off" "$SAMPLES" > "$W/$b.$n.$off.csv" 2>"$W/ncu.err" || tail -3 "$W/ncu.err"
    python3 - "$W/$b.$n.$off.csv" "$SAMPLES" <<'PY'
import csv, io, statistics, sys
text = open(sys.argv[1]).read()
text = text[text.find('"ID"'):]
rows = list(csv.DictReader(io.StringIO(text)))[1:]          # row 0: units
s = int(sys.argv[2])
dur = [(r["Kernel Name"], float(r["gpu__time_duration.sum"].replace(",", "")) / 1e3) for r in rows]
main = [d for k, d in dur if "empty" not in k][1:]           # drop the first call
empty = [d for k, d in dur if "empty" in k]
k0 = next((r for r in rows if "empty" not in r["Kernel Name"]), None)
if k0:
    print(f"ncu kernel {k0['Kernel Name'][:60]}: grid {k0['launch__grid_size']} x {k0['launch__block_size']}")
for name, g in (("bench", main[:s]), ("idle", main[s:2 * s]), ("spin", main[2 * s:3 * s]), ("empty", empty)):
    if g:
        print(f"ncu {name:6} median {statistics.median(g):.2f} us  min {min(g):.2f}  max {max(g):.2f}  ({len(g)} kernels)")
PY
  done
done

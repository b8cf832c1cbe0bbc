#!/usr/bin/env bash
# Builds the solutions with several knob settings (see the top of
# solutions/*/*.cu) and benchmarks each at the two large sizes, next to the
# CUB peer measured the same way in the same run. The default variants are
# the staging comparison of docs/BENCHMARKS.md (0: registers, 1: bulk copies
# in, 2: in and out) and the tile and block sizes tried around it.
# Needs a built build/ (bwgrade, libbwworker.a, the cub workers). Prints one table.
#   VARIANTS="NAME:-DKNOB=V,-DKNOB=V ..."   SIZES=N,N   OFFSETS=K,K
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/cuda/bin"
W=$(mktemp -d /tmp/sweep.XXXXXX)
VARIANTS=${VARIANTS:-"S0:-DBW_STAGING=0 S1:-DBW_STAGING=1 S2:-DBW_STAGING=2 S2B192:-DBW_STAGING=2,-DBW_STAGE_BLOCK=192 S2T3072:-DBW_STAGING=2,-DBW_STAGE_ELEMS=3072,-DBW_STAGE_BLOCK=384 S0A128:-DBW_STAGING=0,-DBW_HEAD_ALIGN=128"}
ARCH=${ARCH:-90}
SIZES=${SIZES:-268435455,67108869}
OFFSETS=${OFFSETS:-0,1,4}
for ex in haxpy vector_sum; do
  for v in $VARIANTS; do
    name=${v%%:*}; flags=${v#*:}; flags=${flags//,/ }
    nvcc -O3 -std=c++17 -arch=sm_$ARCH $flags -Iexercises/$ex -Igrader/protocol exercises/$ex/adapter.cu \
         solutions/$ex/$ex.cu build/libbwworker.a -o "$W/${ex}_$name" -lcudart &
  done
done
wait
for ex in haxpy vector_sum; do
  for v in $VARIANTS cub:; do
    name=${v%%:*}
    worker="$W/${ex}_$name"
    [ "$name" = cub ] && worker=build/bw_worker_${ex}_cub
    build/bwgrade bench $ex --worker "$worker" --label "$name" --sizes "$SIZES" \
        --offsets "$OFFSETS" --no-copy --json "$W/${ex}_$name.json" > "$W/${ex}_$name.txt" 2>&1
  done
done
python3 - "$W" <<'PY'
import json, pathlib, sys
rows = []
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    d = json.loads(f.read_text())
    for r in d["rows"]:
        rows.append((d["exercise"], d["label"], r["n"], r["offset"], r.get("gbs"), r.get("noise"), r["status"]))
print(f"{'exercise':10} {'variant':8} {'n':>10} {'off':>3} {'GB/s':>8} {'noise':>7} status")
for e, l, n, o, g, z, s in rows:
    print(f"{e:10} {l:8} {n:>10} {o:>3} {g if g is not None else '-':>8} {z if z is not None else '-':>7} {s}")
PY

#!/usr/bin/env bash
# The corpus entry bulk_copy_tiles (vector_sum staged with cp.async.bulk)
# rebuilt with other tile sizes and block sizes, benchmarked next to the
# vector_sum solution and the CUB peer in the same run: does staging through
# shared memory, at CUB's own tile (1,536 elements, 256 threads on sm_90),
# explain CUB's lead at offset 0? Needs a built build/.
#   TILES="ELEMS:THREADS ..."   SIZES=N,N   OFFSETS=K,K
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/cuda/bin"
W=$(mktemp -d /tmp/bulk.XXXXXX)
TILES=${TILES:-"1536:128 1536:256 2048:128 3072:256 4096:256"}
SIZES=${SIZES:-268435455,67108869}
OFFSETS=${OFFSETS:-0,1}
src=tests/corpus/bulk_copy_tiles/exercises/vector_sum/vector_sum.cu
for v in $TILES; do
    t=${v%%:*}; th=${v#*:}
    sed -e "s/kThreads = 256;/kThreads = $th;/" -e "s/kTileElems = 4096;/kTileElems = $t;/" \
        "$src" > "$W/tiles_${t}_$th.cu"
    nvcc -O3 -std=c++17 -arch=sm_90 -Iexercises/vector_sum -Igrader/protocol exercises/vector_sum/adapter.cu \
        "$W/tiles_${t}_$th.cu" build/libbwworker.a -o "$W/bulk_${t}x$th" -lcudart &
done
wait
printf '%-28s %s\n' variant "GB/s per (n, offset)"
for w in "$W"/bulk_* build/bw_worker_vector_sum_solution build/bw_worker_vector_sum_cub; do
    build/bwgrade bench vector_sum --worker "$w" --sizes "$SIZES" --offsets "$OFFSETS" --no-copy \
        --json "$W/r.json" > /dev/null 2>&1
    python3 - "$W/r.json" "$(basename "$w")" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:28} " + "  ".join(f"{r['n']}/{r['offset']}: {r.get('gbs')}" for r in d["rows"]))
PY
done

#!/usr/bin/env bash
# The solutions' kernel rule on this GPU (BW_STAGED_BELOW_MHZ, solutions/*):
# the headline rows with the rule's choice and the peers, then with each
# branch forced, then the register path as older GPUs get it (sm_80 code
# compiled by the driver). Writes bench_rule.json (for bench_tables.py).
#   bash tests/gpu/kernel_rule_check.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-/tmp/rule}; mkdir -p "$OUT"
export PATH="$PATH:/usr/local/cuda/bin" PYTHONUNBUFFERED=1
SIZES=67108869,268435455
nvidia-smi --query-gpu=name,clocks.max.mem --format=csv,noheader
timeout 500 python3 run.py benchmark --solutions --peers --sizes $SIZES --offsets 0,1,7 --json "$OUT/bench_rule.json" > "$OUT/bench_rule.txt" 2>&1
echo "rule: exit $?"
python3 tests/gpu/bench_tables.py "$OUT/bench_rule.json"
for force in 0 100000; do
    b=/tmp/build-force-$force
    cmake -S . -B $b -DBW_STUDENT_ONLY=OFF -DCMAKE_CUDA_FLAGS=-DBW_STAGED_BELOW_MHZ=$force > /dev/null &&
        cmake --build $b -j 16 --target bwgrade bw_worker_haxpy_solution bw_worker_vector_sum_solution > /dev/null 2>&1
    for ex in haxpy vector_sum; do
        $b/bwgrade bench $ex --worker $b/bw_worker_${ex}_solution --sizes $SIZES --json "$OUT/force_${force}_$ex.json" > /dev/null 2>&1
        python3 - "$OUT/force_${force}_$ex.json" "$ex" "$force" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
kind = "register" if sys.argv[3] == "0" else "staged"
print(f"  forced {kind:8} {sys.argv[2]:10} " + "  ".join(f"n={r['n']}: {r['gbs']} GB/s ({r['pct_copy']}% copy)" for r in d["rows"]))
PY
    done
done
# Older GPUs' path: sm_80 code, compiled by the driver for this GPU.
cmake -S . -B /tmp/build-sm80 -DBW_STUDENT_ONLY=OFF -DCMAKE_CUDA_ARCHITECTURES=80 > /dev/null &&
    cmake --build /tmp/build-sm80 -j 16 --target bwgrade bw_worker_haxpy_solution bw_worker_vector_sum_solution > /dev/null 2>&1
BWLAB_BUILD_DIR=/tmp/build-sm80 timeout 200 python3 run.py test --solutions > "$OUT/sm80.txt" 2>&1
echo "sm_80 code on this GPU: exit $? $(tail -1 "$OUT/sm80.txt")"

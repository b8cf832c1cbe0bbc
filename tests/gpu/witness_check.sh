#!/usr/bin/env bash
# The benchmark's own clock and its baseline (issue 24), before and after:
# the kit at HEAD in build/, an older kit unpacked in .old/ (git archive of
# the commit to compare with) built in /tmp/bw-old. Prints one line per
# figure; full JSON under $OUT.
#   bash tests/gpu/witness_check.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/witness-out}; mkdir -p "$OUT"
export PATH="$PATH:/usr/local/cuda/bin" PYTHONUNBUFFERED=1
if ls .deps/*.deb >/dev/null 2>&1; then
    mkdir -p /tmp/deps && for f in .deps/*.deb; do dpkg -x "$f" /tmp/deps; done
    export CMAKE_PREFIX_PATH=/tmp/deps/usr PATH="$PATH:/tmp/deps/usr/bin"
fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.mem --format=csv,noheader
BIG=268435455,67108869
row() { python3 tests/gpu/bench_rows.py "$1"; }
t0=$SECONDS
cmake -S . -B build -DBW_WERROR=ON -DBW_STUDENT_ONLY=OFF >/dev/null && cmake --build build -j 16 --target bwgrade bw_worker_haxpy_solution bw_worker_vector_sum_solution >"$OUT/build.log" 2>&1; echo "build new: $? ($((SECONDS-t0)) s)"
cmake -S .old -B /tmp/bw-old -DBW_STUDENT_ONLY=OFF >/dev/null && cmake --build /tmp/bw-old -j 16 --target bwgrade bw_worker_haxpy_solution bw_worker_vector_sum_solution >"$OUT/build-old.log" 2>&1; echo "build old: $? ($((SECONDS-t0)) s)"
for ex in haxpy vector_sum; do
  for k in 1 2; do
    /tmp/bw-old/bwgrade bench $ex --worker /tmp/bw-old/bw_worker_${ex}_solution --sizes $BIG --json "$OUT/old_${ex}_$k.json" >/dev/null 2>&1
    echo "old $ex solution (run $k):"; row "$OUT/old_${ex}_$k.json"
    build/bwgrade bench $ex --worker build/bw_worker_${ex}_solution --sizes $BIG --json "$OUT/new_${ex}_$k.json" > "$OUT/new_${ex}_$k.txt" 2>&1
    echo "new $ex solution (run $k):"; row "$OUT/new_${ex}_$k.json"
  done
done
cat "$OUT/new_haxpy_1.txt" | head -12
# The naive control and the forgery, old and new kit.
for e in simple_correct forges_timing; do
  (cd .old && BWLAB_BUILD_DIR=/tmp/bw-old-sub timeout 300 python3 run.py benchmark haxpy --quick --submission ../tests/corpus/$e --json "$OUT/old_$e.json" > "$OUT/old_$e.txt" 2>&1)
  echo "old kit, $e:"; grep -E "268435455|copy|failure" "$OUT/old_$e.txt" | head -4
  timeout 300 python3 run.py benchmark haxpy --quick --submission tests/corpus/$e --json "$OUT/new_$e.json" > "$OUT/new_$e.txt" 2>&1
  echo "new kit, $e:"; grep -E -A3 "268435455 |copy|failure" "$OUT/new_$e.txt" | head -12
done
# ncu on the copy kernel: its duration against the copy figure.
ncu --target-processes all --profile-from-start off --metrics gpu__time_duration.sum --csv --page raw --print-units base \
    build/bwgrade bench haxpy --worker build/bw_worker_haxpy_solution --quick --profile-calls 9 --json "$OUT/prof.json" > "$OUT/ncu.csv" 2>"$OUT/ncu.err"
python3 - "$OUT/ncu.csv" "$OUT/new_haxpy_1.json" <<'PY'
import csv, sys, json, statistics
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
hdr = rows[0]; i_n = hdr.index("Kernel Name"); i_d = hdr.index("gpu__time_duration.sum")
d = [float(r[i_d]) / 1e6 for r in rows[2:] if "bw_copy16" in r[i_n]]
b = json.load(open(sys.argv[2]))
k = [c for c in b.get("copies", []) if c.get("method") == "kernel"]
print(f"ncu copy kernel: {len(d)} calls, median {statistics.median(d) if d else None} ms; bench kernel copy {k[0]['ms_median'] if k else None} ms")
PY
echo "total $((SECONDS-t0)) s"
# Grading in both sandbox modes: the forgery and the naive control.
rm -rf /tmp/subs && mkdir -p /tmp/subs && cp -r tests/corpus/forges_timing tests/corpus/simple_correct /tmp/subs/
echo 4611686018427387905 > /tmp/seed
for sb in bwrap none; do
  t1=$SECONDS
  timeout 400 python3 run.py grade /tmp/subs/forges_timing /tmp/subs/simple_correct --out /tmp/g_$sb --seed-file /tmp/seed --sandbox $sb > "$OUT/grade_$sb.txt" 2>&1
  echo "grade --sandbox $sb: exit $? ($((SECONDS-t1)) s)"
  cut -d, -f1-12 /tmp/g_$sb/gradebook.csv 2>/dev/null | head -4
  grep -E "timing_mismatch|clock" -h /tmp/g_$sb/*.json 2>/dev/null | head -2
done
echo "total $((SECONDS-t0)) s"

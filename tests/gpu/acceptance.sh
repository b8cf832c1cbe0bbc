#!/usr/bin/env bash
# Everything that needs the GPU, in one go: build, the kit's tests with the GPU
# ones enabled, the solutions, the stubs, the corpus of broken submissions,
# the sanitizer, the benchmark against its peers, the profiler capture.
#
#   bash tests/gpu/acceptance.sh [STEP...]      (default: every step)
#   steps: build ctest sweep solutions stubs bench bench2 crosscheck corpus hostile sanitize
#          handout_zero profile grade grade_mix grade_alone e2e selftest
#   measurement steps, run only when named: probe (what events add to a call,
#          tests/gpu/probe_call_overhead.sh), bulk (tests/gpu/sweep_bulk_tiles.sh)
#
# Logs go to a folder packed at the end into one archive, $OUT/gpu-logs.tar.gz;
# the last lines printed are a summary.
# Where Check is not installed, Debian packages of it under .deps/ are used.
set -uo pipefail
cd "$(dirname "$0")/../.."
PACK=${OUT:-$PWD}
OUT=$(mktemp -d /tmp/gpu-logs.XXXXXX)
export PATH="$PATH:/usr/local/cuda/bin"
export PYTHONUNBUFFERED=1
export CORPUS_ARGS
STEPS=("$@")
[ ${#STEPS[@]} -eq 0 ] && STEPS=(build ctest sweep solutions stubs bench bench2 crosscheck corpus hostile sanitize handout_zero profile grade grade_mix grade_alone)
SUMMARY=()
note() { SUMMARY+=("$1"); echo "== $1"; }

# Check from .deps/*.deb, unpacked outside / (never over the system).
if ls .deps/*.deb >/dev/null 2>&1 && [ ! -f /usr/include/check.h ]; then
    mkdir -p /tmp/deps && for f in .deps/*.deb; do dpkg -x "$f" /tmp/deps; done
    export CMAKE_PREFIX_PATH=/tmp/deps/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
fi

step() { local s; for s in "${STEPS[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
# timed LIMIT CMD...: run with a time limit, say how long it took.
timed() { local lim=$1; shift; local t0=$SECONDS; timeout -k 5 "$lim" "$@"; local rc=$?; echo "   ($((SECONDS - t0)) s, exit $rc)" >&2; return $rc; }

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.mem --format=csv | tee "$OUT/gpu.txt"

if step build; then
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBW_WERROR=ON -DBW_REQUIRE_CHECK=ON > "$OUT/configure.log" 2>&1 \
        && timed 400 cmake --build build -j "$(nproc)" > "$OUT/build.log" 2>&1
    rc=$?
    note "build: exit $rc (tail: $(tail -1 "$OUT/build.log"))"
    [ $rc -ne 0 ] && { tail -5 "$OUT/configure.log"; grep -E -m 8 'error|Error' "$OUT/build.log"; }
fi
if step ctest; then
    (cd build && timeout 300 ctest -j 8 --output-on-failure) > "$OUT/ctest.log" 2>&1
    note "ctest: $(grep -E 'tests passed|tests failed' "$OUT/ctest.log")"
fi
if step sweep; then
    timed 300 bash tests/gpu/sweep_solutions.sh > "$OUT/sweep.txt" 2>&1
    note "sweep: exit $?"; cat "$OUT/sweep.txt"
fi
if step solutions; then
    for ex in haxpy vector_sum; do
        timed 240 build/bwgrade test $ex --worker build/bw_worker_${ex}_solution --json "$OUT/sol_$ex.json" > "$OUT/sol_$ex.txt" 2>&1
        note "solution $ex: $(head -1 "$OUT/sol_$ex.txt") [$(grep -E '^ +\(' "$OUT/sol_$ex.txt" | tail -1)]"
    done
fi
if step stubs; then
    timed 240 python3 run.py test --json "$OUT/stubs.json" > "$OUT/stubs.txt" 2>&1
    note "stubs: $(grep -iE 'not implemented' "$OUT/stubs.txt" | head -2 | tr '\n' ' ')"
fi
if step corpus; then
    # Each entry builds its own tree; run several at once (the GPU work is small).
    mkdir -p "$OUT/corpus"
    # CORPUS="a b" limits the run to those entries; CORPUS_ARGS="--all" runs
    # every case instead of the students' fail-fast default.
    # Entries marked "alone" (they take the whole GPU, e.g. all its memory)
    # run afterwards, one at a time.
    if [ -n "${CORPUS:-}" ]; then for e in $CORPUS; do echo "tests/corpus/$e/"; done; else ls -d tests/corpus/*/; fi \
      > "$OUT/corpus_entries.txt"
    one_entry='e=$(basename {}); ex=$(python3 -c "import json; print(json.load(open(\"{}expect.json\"))[\"exercise\"])")
        timeout 300 python3 run.py test $ex ${CORPUS_ARGS:-} --submission {} --json "$0/corpus/$e.json" > "$0/corpus/$e.txt" 2>&1'
    while read -r d; do grep -q '"alone": true' "${d}expect.json" || echo "$d"; done < "$OUT/corpus_entries.txt" \
      | xargs -P 4 -I{} sh -c "$one_entry" "$OUT"
    while read -r d; do grep -q '"alone": true' "${d}expect.json" && echo "$d"; done < "$OUT/corpus_entries.txt" \
      | xargs -P 1 -I{} sh -c "$one_entry" "$OUT"
    python3 tests/gpu/check_corpus.py --tests-only "$OUT/corpus" ${CORPUS:-} | tee "$OUT/corpus.txt"
    note "$(tail -1 "$OUT/corpus.txt")"
fi
if step hostile; then
    # The benchmark verdicts of the entries whose expect.json has a "bench"
    # part (the cheats), one at a time since they are timings; then the
    # controls' figures. Run after `corpus`, whose test results it re-checks.
    mkdir -p "$OUT/corpus"
    for d in tests/corpus/*/; do
        e=$(basename "$d")
        grep -q '"bench"' "$d/expect.json" || continue
        if [ -n "${CORPUS:-}" ] && ! echo " $CORPUS " | grep -q " $e "; then continue; fi
        ex=$(python3 -c "import json; print(json.load(open('$d/expect.json'))['exercise'])")
        timed 300 python3 run.py benchmark "$ex" --submission "$d" --quick \
            --json "$OUT/corpus/$e.bench.json" > "$OUT/corpus/$e.bench.txt" 2>&1
        grep -E '268435455' "$OUT/corpus/$e.bench.txt" | sed "s/^/   $e: /"
    done
    for ex in haxpy vector_sum; do
        timed 200 python3 run.py benchmark "$ex" --solutions --quick > "$OUT/control_fast_$ex.txt" 2>&1
        grep -E '268435455|copy:' "$OUT/control_fast_$ex.txt" | sed "s/^/   control fast $ex: /"
    done
    timed 200 python3 run.py benchmark haxpy --submission tests/corpus/simple_correct --quick \
        > "$OUT/control_naive_haxpy.txt" 2>&1
    grep -E '268435455' "$OUT/control_naive_haxpy.txt" | sed "s/^/   control naive haxpy: /"
    python3 tests/gpu/check_corpus.py "$OUT/corpus" ${CORPUS:-} | tee "$OUT/corpus_hostile.txt"
    note "hostile: $(tail -1 "$OUT/corpus_hostile.txt")"
fi
if step sanitize; then
    timed 400 python3 run.py test haxpy --solutions --sanitize > "$OUT/sanitize_solution.txt" 2>&1
    note "sanitize solution haxpy: exit $? $(grep -E 'cases passed|passed' "$OUT/sanitize_solution.txt" | head -3 | tr '\n' ' ')"
    # Every corpus entry with "sanitize": true, under its tool, then checked:
    # reads_past_end must fail memcheck, api_error_ignored pass it with a note.
    mkdir -p "$OUT/sanitize"
    for d in tests/corpus/*/; do
        e=$(basename "$d")
        read -r ex tool < <(python3 -c "import json; d=json.load(open('$d/expect.json')); print(d['exercise'], d.get('sanitizer', '')) if d.get('sanitize') else print('- -')")
        [ "$ex" = "-" ] && continue
        timed 300 python3 run.py test "$ex" --submission "$d" --sanitizer "$tool" --json "$OUT/sanitize/$e.json" > "$OUT/sanitize/$e.txt" 2>&1
        note "sanitize $e: exit $? $(grep -E 'passed' "$OUT/sanitize/$e.txt" | head -2 | tr '\n' ' ')"
    done
    python3 tests/gpu/check_corpus.py --sanitize "$OUT/sanitize" | tee "$OUT/sanitize_check.txt"
    note "sanitize corpus: $(tail -1 "$OUT/sanitize_check.txt")"
fi
if step handout_zero; then
    # Every .cu of a freshly packed student handout, graded as a submission
    # (run.py test EXERCISE --all --submission, four at once as in `corpus`;
    # entries marked "alone" by themselves): none may earn a correctness point.
    timed 590 python3 tests/gpu/handout_zero.py "$OUT/handout_zero" --jobs 4 > "$OUT/handout_zero.txt" 2>&1
    rc=$?
    sed 's/^/   /' "$OUT/handout_zero.txt"
    note "$(grep -E '^handout_zero:' "$OUT/handout_zero.txt" || echo 'handout_zero: no summary') (exit $rc)"
fi
if step bench; then
    timed 500 python3 run.py benchmark --solutions --peers --json "$OUT/bench1.json" > "$OUT/bench1.txt" 2>&1
    note "bench run 1: exit $?"
    cp "$OUT/bench1.json" "$PACK/bench1.json" 2>/dev/null   # for tests/gpu/bench_tables.py
fi
if step bench2; then
    # Two more runs back to back: do they agree within 1% at the largest size?
    timed 200 python3 run.py benchmark --solutions --json "$OUT/bench2.json" > "$OUT/bench2.txt" 2>&1
    timed 200 python3 run.py benchmark --solutions --json "$OUT/bench3.json" > "$OUT/bench3.txt" 2>&1
    note "bench runs 2 and 3: $(python3 - "$OUT/bench2.json" "$OUT/bench3.json" <<'PY'
import json, sys
def big(path):
    d = json.load(open(path))["exercises"]
    return {(ex, r["offset"]): r["gbs"] for ex, labels in d.items() for doc in labels.values()
            for r in doc["rows"] if r["n"] == 268435455}
a, b = big(sys.argv[1]), big(sys.argv[2])
print("; ".join(f"{k[0]} off {k[1]}: {a[k]} vs {b[k]} GB/s ({100 * (b[k] - a[k]) / a[k]:+.2f}%)" for k in sorted(a)))
PY
)"
fi
if step probe; then
    timed 300 bash tests/gpu/probe_call_overhead.sh > "$OUT/probe.txt" 2>&1
    note "probe: exit $?"; cat "$OUT/probe.txt"
fi
if step bulk; then
    timed 300 bash tests/gpu/sweep_bulk_tiles.sh > "$OUT/bulk.txt" 2>&1
    note "bulk tiles: exit $?"; cat "$OUT/bulk.txt"
fi
if step crosscheck; then
    # Every figure against ncu: the solutions and their peers (cub, cuBLAS),
    # the naive control and the corpus entries marked "crosscheck" (code that
    # settles state on its first call, or loads with bulk copies).
    # SIZES / OFFSETS narrow it (default: crosscheck's own, the headline sizes).
    cc_args=()
    [ -n "${SIZES:-}" ] && cc_args+=(--sizes "$SIZES")
    [ -n "${OFFSETS:-}" ] && cc_args+=(--offsets "$OFFSETS")
    timed 580 python3 run.py crosscheck --solutions --peers "${cc_args[@]}" \
        --json "$OUT/crosscheck_solutions.json" > "$OUT/crosscheck_solutions.txt" 2>&1
    note "crosscheck solutions and peers: exit $?"
    grep -E 'rows agree|^crosscheck:' "$OUT/crosscheck_solutions.txt" | sed 's/^/   /'
    for d in tests/corpus/simple_correct $(grep -l '"crosscheck": true' tests/corpus/*/expect.json | xargs -n1 dirname); do
        e=$(basename "$d")
        ex=$(python3 -c "import json; print(json.load(open('$d/expect.json'))['exercise'])")
        timed 300 python3 run.py crosscheck "$ex" --submission "$d" "${cc_args[@]}" \
            --json "$OUT/crosscheck_$e.json" > "$OUT/crosscheck_$e.txt" 2>&1
        note "crosscheck $e: exit $?"
        grep -E 'rows agree' "$OUT/crosscheck_$e.txt" | sed "s/^/   $e: /"
    done
fi
if step grade; then
    # A batch like a class's: the solutions, the stubs and broken submissions,
    # on a secret seed (hidden cases included).
    export BWLAB_SECRET_SEED=${BWLAB_SECRET_SEED:-90210123456789}
    timed 560 python3 run.py grade solutions exercises tests/corpus/simple_correct \
        tests/corpus/off_by_one_write tests/corpus/ignored_tail tests/corpus/crashes \
        tests/corpus/noop tests/corpus/truncates --jobs 8 --out "$OUT/grades" > "$OUT/grade.txt" 2>&1
    note "grade: exit $?"; tail -25 "$OUT/grade.txt"; cat "$OUT/grades/gradebook.csv"
fi
if step grade_mix; then
    # The hostile corpus (expect.json "hostile": true) and the controls in one
    # batch; `grade_alone` then grades the controls alone and compares. The
    # results stay in build/ (kept between device calls).
    export BWLAB_SECRET_SEED=${BWLAB_SECRET_SEED:-90210123456789}
    HOSTILE=$(grep -l '"hostile": true' tests/corpus/*/expect.json | xargs -n1 dirname \
              | grep -v -e /simple_correct -e /extra_sources)
    rm -rf build/grades_mix
    timed 590 python3 run.py grade solutions tests/corpus/simple_correct tests/corpus/extra_sources \
        $HOSTILE --jobs 8 --out build/grades_mix > "$OUT/grade_mix.txt" 2>&1
    note "grade mix: exit $? ($(echo $HOSTILE | wc -w) hostile entries and 3 controls)"
    cp build/grades_mix/gradebook.csv "$OUT/gradebook_mix.csv" 2>/dev/null; cat build/grades_mix/gradebook.csv
fi
if step grade_alone; then
    export BWLAB_SECRET_SEED=${BWLAB_SECRET_SEED:-90210123456789}
    rm -rf build/grades_alone
    timed 300 python3 run.py grade solutions tests/corpus/simple_correct tests/corpus/extra_sources \
        --jobs 3 --out build/grades_alone > "$OUT/grade_alone.txt" 2>&1
    note "grade alone: exit $?"
    python3 - build/grades_mix/gradebook.csv build/grades_alone/gradebook.csv <<'PY' | tee "$OUT/grade_mix_compare.txt"
import csv, sys
mix = {r["id"]: r for r in csv.DictReader(open(sys.argv[1]))}
alone = {r["id"]: r for r in csv.DictReader(open(sys.argv[2]))}
cols = [c for c in next(iter(alone.values())).keys() if c not in ("id", "notes")]
same = True
for sid, r in sorted(alone.items()):
    m = mix.get(sid, {})
    diff = [c for c in cols if m.get(c) != r.get(c)]
    same &= not diff
    print(f"{sid}: alone {[r.get(c) for c in cols]} mixed {[m.get(c) for c in cols]}"
          + (f" DIFFER in {diff}" if diff else " same"))
print("mixed batch vs alone:", "same scores" if same else "SCORES DIFFER")
PY
    note "$(grep 'mixed batch vs alone' "$OUT/grade_mix_compare.txt")"
fi
if step e2e; then
    timed 500 python3 -m unittest discover -s tests/python -p 'test_e2e*' -v > "$OUT/e2e.txt" 2>&1
    note "python GPU e2e: $(grep -E '^(OK|FAILED)' "$OUT/e2e.txt")"
fi
if step profile; then
    timed 400 bash tests/gpu/capture_ncu.sh > "$OUT/capture_ncu.txt" 2>&1
    note "ncu capture: exit $?"
    cp tests/data/*h100* tests/data/asm_haxpy_solution_sm90.txt "$OUT/" 2>/dev/null
fi
if step selftest; then
    timed 500 python3 run.py selftest > "$OUT/selftest.txt" 2>&1
    note "selftest: $(tail -1 "$OUT/selftest.txt")"
fi
printf '%s\n' "${SUMMARY[@]}" > "$OUT/summary.txt"
tar czf "$PACK/gpu-logs.tar.gz" -C "$OUT" .
echo
echo "==================== summary"
printf '%s\n' "${SUMMARY[@]}"

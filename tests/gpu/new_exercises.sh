#!/usr/bin/env bash
# Issue 26 on a GPU, step by step (each step fits one device call with build):
#
#   bash tests/gpu/new_exercises.sh STEP...      logs in $OUT/newex (or /tmp)
#   build      cmake + build into build/ (Release, warnings as errors)
#   verdicts   haxpy's and vector_sum's verdicts (solutions, stubs, their corpus)
#              against tests/data/verdicts/h200_public_seed.json
#   solutions  saxpy, reduce_sum and transpose: the solutions through every case
#              (--all), then the stubs
#   corpus     their corpus entries against each expect.json (check_corpus.py),
#              with the benchmark of the entries that have a "bench" part
#   bench      each solution against its peer (saxpy and reduce_sum at
#              2^26+5 and 2^28-1, offsets 0, 1, 7; transpose on its largest
#              square and an odd tall shape), beside the same run's copy
#   oldbench   haxpy and vector_sum, solutions and peers, --quick
#   forge      corpus forges_timing (vetting bypassed): still refused by the clock
#   crosscheck run.py crosscheck for the three, solutions and peers (offset 0;
#              XOFFSETS=0,1 for more)
#   probe      tests/gpu/new_exercises_probe.sh: the solutions' knobs
#   template   docs/exercise_template's recipe in a scratch copy of the kit
#              (as tests/python/test_exercise_template.py does on the CPU),
#              then the new exercise's solution and stub on this GPU
# The last lines printed are a summary.
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${OUT:-/tmp}/newex
mkdir -p "$LOG"
export PATH="$PATH:/usr/local/cuda/bin" PYTHONUNBUFFERED=1
unset BWLAB_SEED
NEW="saxpy reduce_sum transpose"
SUMMARY=()
note() { SUMMARY+=("$1"); echo "== $1"; }
timed() { local lim=$1; shift; local t0=$SECONDS; timeout -k 5 "$lim" "$@"; local rc=$?; echo "   ($((SECONDS - t0)) s, exit $rc)" >&2; return $rc; }
last() { grep -E "^[0-9]+ exercises?:" "$1" | tail -1; }

for step in "$@"; do
case $step in
build)
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.mem --format=csv,noheader | tee "$LOG/gpu.txt"
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBW_WERROR=ON > "$LOG/configure.log" 2>&1 &&
        timed 400 cmake --build build -j "$(nproc)" > "$LOG/build.log" 2>&1
    rc=$?
    note "build: exit $rc"
    [ $rc -ne 0 ] && grep -E -m 10 "error|Error" "$LOG/build.log"
    ;;
verdicts)
    EXERCISES="haxpy vector_sum" timed 560 bash tests/gpu/record_verdicts.sh "$LOG/v" > "$LOG/verdicts.txt" 2>&1
    tail -4 "$LOG/verdicts.txt"
    python3 tests/gpu/record_verdicts.py compare tests/data/verdicts/h200_public_seed.json \
        "$LOG/v/verdicts.json" > "$LOG/compare.txt" 2>&1
    cat "$LOG/compare.txt"
    note "verdicts against the H200 record: $(tail -1 "$LOG/compare.txt")"
    ;;
solutions)
    timed 500 python3 run.py test $NEW --all --solutions --json "$LOG/solutions.json" > "$LOG/solutions.txt" 2>&1
    note "solutions --all: $(last "$LOG/solutions.txt")"
    grep -E "cases passed|failed|skipped" "$LOG/solutions.txt" | head -12
    timed 120 python3 run.py test $NEW --json "$LOG/stubs.json" > "$LOG/stubs.txt" 2>&1
    note "stubs: $(last "$LOG/stubs.txt")"
    ;;
corpus)
    R="$LOG/corpus"; mkdir -p "$R"; entries=()
    for d in tests/corpus/*/; do
        ex=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['exercise'])" "$d/expect.json")
        case " $NEW " in *" $ex "*) entries+=("$(basename "$d")") ;; esac
    done
    one='ex=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"exercise\"])" tests/corpus/{}/expect.json);
         timeout 300 python3 run.py test $ex --submission tests/corpus/{} --json "$0/{}.json" > "$0/{}.txt" 2>&1;
         if grep -q "\"bench\"" tests/corpus/{}/expect.json; then
             timeout 200 python3 run.py benchmark $ex --quick --no-why --submission tests/corpus/{} --json "$0/{}.bench.json" > "$0/{}.bench.txt" 2>&1; fi'
    printf '%s\n' "${entries[@]}" | timed 560 xargs -P 4 -I{} sh -c "$one" "$R"
    python3 tests/gpu/check_corpus.py "$R" "${entries[@]}" > "$LOG/corpus_check.txt" 2>&1
    tail -n 30 "$LOG/corpus_check.txt"
    note "corpus: $(tail -1 "$LOG/corpus_check.txt")"
    ;;
bench)
    timed 300 python3 run.py benchmark saxpy reduce_sum --solutions --peers --no-why \
        --sizes 67108869,268435455 --offsets 0,1,7 --json "$LOG/bench_sum.json" > "$LOG/bench_sum.txt" 2>&1
    timed 200 python3 run.py benchmark transpose --solutions --no-why \
        --sizes 46340x46340,1048579x1001 --offsets 0,1,7 --json "$LOG/bench_t.json" > "$LOG/bench_t.txt" 2>&1
    for f in bench_sum bench_t; do python3 tests/gpu/bench_tables.py "$LOG/$f.json"; done 2>&1 |
        tee "$LOG/bench_tables.txt" | tail -40
    grep -h -E "not_recomputed|timing_mismatch|impossible|wrong" "$LOG"/bench_*.txt | head -5
    note "bench: see above"
    ;;
oldbench)
    # haxpy and vector_sum through the same benchmark (its per-call hash changed)
    timed 200 python3 run.py benchmark haxpy vector_sum --solutions --peers --quick --no-why \
        --json "$LOG/bench_old.json" > "$LOG/bench_old.txt" 2>&1
    python3 tests/gpu/bench_tables.py "$LOG/bench_old.json" 2>&1 | tail -16
    note "oldbench: $(grep -c ' ok$' "$LOG/bench_old.txt") rows ok, $(grep -c -E 'timing_mismatch|not_recomputed|impossible' "$LOG/bench_old.txt") refused"
    ;;
forge)
    # the clock's retry must not let a forged timing through (corpus forges_timing)
    BWLAB_UNSAFE_SKIP_VET=1 timed 200 python3 run.py benchmark haxpy --quick --no-why \
        --submission tests/corpus/forges_timing --json "$LOG/forge.json" > "$LOG/forge.txt" 2>&1
    grep -E "timing_mismatch|grader's own clock|first time" "$LOG/forge.txt" | head -6
    note "forge: $(grep -c timing_mismatch "$LOG/forge.txt") timing_mismatch lines"
    ;;
crosscheck)
    timed 560 python3 run.py crosscheck $NEW --solutions --peers --offsets ${XOFFSETS:-0} \
        --json "$LOG/crosscheck.json" > "$LOG/crosscheck.txt" 2>&1
    grep -E "rows agree|crosscheck:|ratio" "$LOG/crosscheck.txt" | tail -12
    note "crosscheck: $(tail -1 "$LOG/crosscheck.txt")"
    ;;
template)
    T=$(mktemp -d "${TMPDIR:-/tmp}/bwlab-template.XXXXXX")
    tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C "$T"
    awk '/exercise-template-recipe/ {on=1; next} on && /^```sh/ {inside=1; next}
         inside && /^```/ {exit} inside' docs/exercise_template/README.md |
        sed 's/^name=my_exercise$/name=toy_scale/' > "$T/recipe.sh"
    ( cd "$T" && bash -eu recipe.sh && rm recipe.sh &&
      timed 300 python3 run.py test toy_scale --all --solutions > "$LOG/template.txt" 2>&1
      timed 120 python3 run.py test toy_scale >> "$LOG/template.txt" 2>&1 )
    grep -E "^[0-9]+ exercises?:" "$LOG/template.txt"
    note "template: $(grep -E '^[0-9]+ exercises?:' "$LOG/template.txt" | tr '\n' ';')"
    rm -rf "$T"
    ;;
probe)
    timed 540 bash tests/gpu/new_exercises_probe.sh "$LOG/probe" > "$LOG/probe.txt" 2>&1
    tail -n 45 "$LOG/probe.txt"
    note "probe: done"
    ;;
*) echo "unknown step $step"; exit 2 ;;
esac
done
( cd "$LOG/.." && tar czf newex-logs.tar.gz newex ) 2>/dev/null
echo "---- summary"
printf '%s\n' "${SUMMARY[@]}"

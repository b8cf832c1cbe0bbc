#!/usr/bin/env bash
# Every case's verdict for the solutions, the stubs and every corpus entry
# (run.py test --all, the public seed), recorded by record_verdicts.py into
# OUT/verdicts.json: the baseline a redesign of the grader's core must keep.
#   bash tests/gpu/record_verdicts.sh OUT
#   EXERCISES="haxpy vector_sum" bash tests/gpu/record_verdicts.sh OUT   (only these)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-/tmp/verdicts}; RAW=$(mktemp -d /tmp/verdicts-raw.XXXXXX)
mkdir -p "$OUT"
export PATH="$PATH:/usr/local/cuda/bin" PYTHONUNBUFFERED=1
unset BWLAB_SEED
EXERCISES=${EXERCISES:-}
timeout 400 python3 run.py test $EXERCISES --all --solutions --json "$RAW/solutions.json" > "$RAW/solutions.txt" 2>&1
timeout 400 python3 run.py test $EXERCISES --all --json "$RAW/stubs.json" > "$RAW/stubs.txt" 2>&1
# The corpus entries of the chosen exercises (all of them without EXERCISES).
entries() {
    for d in tests/corpus/*/; do
        ex=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['exercise'])" "$d/expect.json")
        [ -z "$EXERCISES" ] || case " $EXERCISES " in *" $ex "*) ;; *) continue ;; esac
        if grep -q '"alone": true' "$d/expect.json"; then [ "$1" = alone ] && echo "${d%/}"
        else [ "$1" = shared ] && echo "${d%/}"; fi
    done
}
one='e=$(basename {}); ex=$(python3 -c "import json; print(json.load(open(\"{}/expect.json\"))[\"exercise\"])");
     timeout 300 python3 run.py test $ex --all --submission {} --json "$0/$e.json" > "$0/$e.txt" 2>&1'
entries shared | xargs -P 4 -I{} sh -c "$one" "$RAW"
entries alone | xargs -P 1 -I{} sh -c "$one" "$RAW"
python3 tests/gpu/record_verdicts.py record "$RAW" "$OUT/verdicts.json"
echo "recorded $(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$OUT/verdicts.json") reports from $(ls "$RAW"/*.json | wc -l) runs"
grep -h -E "^[0-9]+ exercises?:" "$RAW"/*.txt | sort | uniq -c | sort -rn | head -5

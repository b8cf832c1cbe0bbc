#!/usr/bin/env bash
# Grading time of the hostile corpus as one batch, with this kit and with an
# older one unpacked in .old/ (git archive of the commit to compare with):
#   bash tests/gpu/hostile_batch_time.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-/tmp/hostile}; mkdir -p "$OUT"
seed=/tmp/hostile.seed
python3 -c 'print(4611686018427387905 + 777)' > "$seed"
entries=$(cd .old && for d in tests/corpus/*/; do
    python3 -c "import json,sys; d=json.load(open('$d/expect.json')); print('$d'.split('/')[2]) if d.get('hostile') else None"; done)
echo "hostile entries: $(echo $entries | wc -w)"
for kit in old new; do
    dir=$([ $kit = old ] && echo .old || echo .)
    subs=$(for e in $entries; do echo "$PWD/.old/tests/corpus/$e"; done)
    t=$SECONDS
    (cd $dir && timeout 580 python3 run.py grade $subs --seed-file "$seed" --out "$OUT/$kit" -q > "$OUT/$kit.txt" 2>&1)
    echo "$kit kit: exit $? in $((SECONDS - t)) s; $(grep -E '^time:' "$OUT/$kit.txt" | head -1)"
done

#!/usr/bin/env bash
# Grade integrity on the GPU (issue 24), as root: the raw-syscall entries
# refused; with vetting bypassed on purpose, contained by bwgrade --contain
# (--sandbox none) and by bubblewrap; the timing forgery refused by the
# grader's clock in both modes; the honest controls scored alike in both.
#   bash tests/gpu/integrity_check.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-/tmp/integrity}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
seed=/tmp/integrity.seed
python3 -c 'print(4611686018427387905 + 12345)' > "$seed"

echo "-- vetted: refused before running"
mkdir -p "$OUT/vetted"
for e in raw_fork raw_open_write raw_kill forges_reply forges_skip forges_timing; do
    timeout 300 python3 run.py test haxpy --submission tests/corpus/$e --json "$OUT/vetted/$e.json" > "$OUT/vetted/$e.txt" 2>&1
done
python3 tests/gpu/check_corpus.py --tests-only "$OUT/vetted" raw_fork raw_open_write raw_kill forges_reply forges_skip forges_timing | grep -E "^(OK|BAD)|^corpus"

for sb in none bwrap; do
    echo "-- vetting bypassed, --sandbox $sb"
    # On a machine of one GPU there is no other node to hide; keep its node
    # anyway, so that bwgrade's narrowing (trusted_device.h) runs and shows.
    [ $sb = bwrap ] && export BWLAB_KEEP_GPU=1
    cp grader/instructor/policy.ini /tmp/policy.before
    rm -f /tmp/bwlab_raw_open_write
    t=$SECONDS
    BWLAB_UNSAFE_SKIP_VET=1 timeout 900 python3 run.py grade tests/corpus/raw_fork tests/corpus/raw_open_write \
        tests/corpus/raw_kill tests/corpus/forges_timing tests/corpus/forges_skip tests/corpus/simple_correct \
        --sandbox $sb --seed-file "$seed" --out "$OUT/unvetted_$sb" -q > "$OUT/unvetted_$sb.txt" 2>&1
    echo "grade exit $? in $((SECONDS - t)) s"
    sleep 2
    pgrep -a -f bwlab_raw_fork && echo "SURVIVOR" || echo "no survivor"
    cmp -s grader/instructor/policy.ini /tmp/policy.before && echo "policy.ini unchanged" || { echo "POLICY CHANGED"; cp /tmp/policy.before grader/instructor/policy.ini; }
    [ -e /tmp/bwlab_raw_open_write ] && echo "/tmp/bwlab_raw_open_write exists (owner $(stat -c %U /tmp/bwlab_raw_open_write))" || echo "no /tmp/bwlab_raw_open_write"
    python3 - "$OUT/unvetted_$sb" <<'PY'
import csv, json, sys, pathlib
d = pathlib.Path(sys.argv[1])
m = json.loads((d / "manifest.json").read_text())
print("manifest: vetting", m.get("vetting"), "| containment", m.get("containment"), "| sandbox", m.get("sandbox"))
for row in csv.DictReader(open(d / "gradebook.csv")):
    print(f"  {row.get('id'):16} total {row.get('total'):>6}  haxpy {row.get('haxpy_total'):>6}  "
          f"containment {row.get('containment')}  notes {(row.get('notes') or '')[:160]}")
for sub in ("forges_timing", "simple_correct"):
    p = d / f"{sub}.json"
    if p.exists():
        for e in json.loads(p.read_text()).get("exercises", []):
            rows = ((e.get("bench") or {}).get("rows") or [])
            for r in rows:
                c = r.get("clock_check") or {}
                print(f"  {sub} {e.get('exercise')} bench n={r.get('n')} {r.get('status')} worker {r.get('ms_median')} ms, "
                      f"clock {c.get('charged_ms')} ms, pct_copy {r.get('pct_copy')}")
PY
    pkill -f bwlab_raw_fork 2>/dev/null
done

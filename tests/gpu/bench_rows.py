"""Prints a bwgrade bench JSON's rows and copies on one line each (for
tests/gpu/witness_check.sh)."""
import json
import sys

d = json.load(open(sys.argv[1]))
for r in d.get("rows", []):
    c = r.get("clock_check") or {}
    print(f"  n={r['n']} off={r['offset']} {r['status']:16s} ms={r.get('ms_median')} "
          f"gbs={r.get('gbs')} pct_copy={r.get('pct_copy')} pct_memcpy={r.get('pct_memcpy')} "
          f"clock_ms={c.get('clock_ms')} charged={c.get('charged_ms')} "
          f"span={c.get('span_ms')}/{c.get('baseline_span_ms')} "
          f"prep={c.get('prep_ms')}/{c.get('baseline_prep_ms')}")
    if r.get("detail"):
        print(f"     {r['detail']}")
for c in d.get("copies") or [d.get("copy") or {}]:
    if c:
        print(f"  copy {c.get('method', 'memcpy')}: {c.get('ms_median')} ms {c.get('gbs')} GB/s "
              f"{c.get('status')}")

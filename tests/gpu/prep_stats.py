"""Each benchmark row's preparation (the rotation and hash between calls)
in the student's worker and in the baseline's, from run.py benchmark
--json files: the excess is what the clock check charges beyond its slack
(grader/supervisor/bench_witness.c). Usage: prep_stats.py FILE.json..."""
import json, sys
def walk(o):
    if isinstance(o, dict):
        if o.get('mode') == 'bench' and isinstance(o.get('rows'), list):
            yield o
        for v in o.values():
            yield from walk(v)
    elif isinstance(o, list):
        for v in o:
            yield from walk(v)
for f in sys.argv[1:]:
    for b in walk(json.load(open(f))):
        for r in b['rows']:
            c = r.get('clock_check') or {}
            p, bp = c.get('prep_ms'), c.get('baseline_prep_ms')
            print(f"{b['exercise']:10} {b['label']:8} {r['n']:>10} {r['offset']} {r['status']:16} "
                  f"ms {r.get('ms_median') or 0:.4f} prep {p or 0:.3f} base {bp or 0:.3f} "
                  f"excess {(p or 0) - (bp or 0):+.3f} retried {c.get('retried')}")
            if c.get('first_refusal'):
                print(f"    first time: {c['first_refusal'][:300]}")

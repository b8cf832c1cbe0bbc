#!/usr/bin/env python3
"""A stand-in for bwgrade (run.py grade --bwgrade PATH) that needs no GPU.

It answers `test` and `bench` with the JSON bwgrade writes (docs/ARCHITECTURE.md),
decided by a marker that the submission compiled into its worker:

    __attribute__((used)) static const char marker[] = "BWLAB_STAND_IN FAIL=large PCT=63";

FAIL=G1,G2: those case groups fail; PCT=N: the benchmark row reaches N % of
the copy (default 80). Reading the marker from the worker it was handed, not
from a table of ids, means a result can only land in a submission's row if
that submission's own code was built and graded.

It insists on what run.py grade must pass with a secret seed (the seed on
standard input, --hidden) and exits 2 otherwise, as bwgrade does on a bad
command line. Without a marker it behaves like a correct, 80 %-of-copy kernel.
"""
import json
import re
import sys

GROUPS = ("small", "medium", "large", "special", "huge")


def marker(worker):
    with open(worker, "rb") as f:
        m = re.search(rb"BWLAB_STAND_IN([ A-Za-z0-9=,._]*)", f.read())
    fields = dict(kv.split("=", 1) for kv in (m.group(1).decode().split() if m else []) if "=" in kv)
    fail = [g for g in fields.get("FAIL", "").split(",") if g]
    return fail, float(fields.get("PCT", "80"))


def main(argv):
    if len(argv) < 2 or argv[0] not in ("test", "bench") or "--worker" not in argv or "--json" not in argv:
        print(f"stand-in bwgrade: unexpected command line: {argv}", file=sys.stderr)
        return 2
    mode, exercise = argv[0], argv[1]
    worker = argv[argv.index("--worker") + 1]
    out = argv[argv.index("--json") + 1]
    fail, pct = marker(worker)
    device = {"name": "stand-in (no GPU)", "cc": "9.0"}
    if mode == "test":
        if "--seed" not in argv or argv[argv.index("--seed") + 1] != "-" or "--hidden" not in argv:
            print("stand-in bwgrade: grading must pass the secret seed on stdin and --hidden",
                  file=sys.stderr)
            return 2
        seed = sys.stdin.readline().strip()
        if not seed.isdigit():
            print("stand-in bwgrade: no seed on standard input", file=sys.stderr)
            return 2
        groups = GROUPS
        if "--groups" in argv:
            groups = [g for g in GROUPS if g in argv[argv.index("--groups") + 1].split(",")]
        cases = [{"index": i, "group": g, "n": 1000 + i, "offset": i % 3,
                  "outcome": "wrong" if g in fail else "pass", "max_ulps": 0.0,
                  "mismatches": 1 if g in fail else 0, "student_output": None, "seconds": 0.001}
                 for i, g in enumerate(groups)]
        failed = sum(c["outcome"] != "pass" for c in cases)
        doc = {"tool": "bwgrade", "mode": "test", "exercise": exercise, "hidden": True,
               "device": device, "status": "fail" if failed else "pass",
               "passed": len(cases) - failed, "failed": failed, "skipped": 0, "total": len(cases),
               "diagnoses": [], "cases": cases}
        code = 1 if failed else 0
    else:
        doc = {"tool": "bwgrade", "mode": "bench", "exercise": exercise, "label": "student",
               "device": device, "copy": {"bytes": 1, "ms_median": 1.0, "gbs": 3000.0, "pct_peak": 90.0},
               "rows": [{"n": (1 << 28) - 1, "offset": 0, "bytes": 3 << 28, "status": "ok",
                         "pct_copy": pct}]}
        code = 0
    with open(out, "w") as f:
        json.dump(doc, f)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

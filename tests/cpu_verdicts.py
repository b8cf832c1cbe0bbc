"""bwgrade's verdicts on kernels written in C, through the CPU stand-in worker
(tests/unit/cpu_worker.c): every case's outcome and findings, every
diagnosis and the text report, with the hidden cases, for a set of correct
and broken kernels. A recorded set is the CPU half of the proof that a
redesign of the grader's core leaves haxpy's and vector_sum's verdicts as
they were (issue 26); tests/gpu/record_verdicts.sh is the GPU half.

    python3 tests/cpu_verdicts.py record BUILD_DIR OUT.json
    python3 tests/cpu_verdicts.py compare BUILD_DIR RECORDED.json
        exit 1 and one line per difference (the first differing case of each run)
"""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

GROUPS = "small,medium,large,special"
# (exercise, kernel, extra bwgrade arguments)
RUNS = [(ex, k, []) for ex in ("haxpy", "vector_sum") for k in (
    "right", "chop", "no_tail", "no_head", "past_end", "before_start", "input_changed",
    "nothing", "ftz", "grid_limited", "nan_drop", "fault_misaligned", "racy")]
RUNS += [("haxpy", "product_rounded", []),
         ("haxpy", "no_tail", ["--fail-fast"]), ("vector_sum", "no_head", ["--fail-fast"])]
DROPPED = ("seconds",)
TEXT_HEAD = 12   # lines of the text report kept to read; all of it is in the hash


def case_verdict(c: dict) -> str:
    """A case in short: its outcome and its counts, to read where two records
    part; every field of every case is in the record's hash."""
    keys = ("outcome", "mismatches", "unwritten", "guard_bad_bytes", "guard_array",
            "input_changed", "input_array", "nothing_written", "nondeterministic")
    return "|".join(str(c.get(k)) for k in keys)


def run_key(ex: str, kernel: str, extra: list[str]) -> str:
    return "/".join([ex, kernel] + extra)


def one_run(build: Path, ex: str, kernel: str, extra: list[str]) -> dict:
    env = dict(os.environ, CUDA_FAKE_KERNEL=f"{ex}.{kernel}")
    env.pop("BWLAB_SEED", None)
    p = subprocess.run([str(build / "bwgrade"), "test", ex, "--worker", str(build / "tests" / "cpu_worker"),
                        "--hidden", "--groups", GROUPS, "--json", "-"] + extra,
                       capture_output=True, text=True, env=env, timeout=600)
    rep = json.loads(p.stdout)
    cases = sorted(rep.get("cases") or [], key=lambda c: c["index"])
    full = json.dumps([{k: v for k, v in c.items() if k not in DROPPED} for c in cases], sort_keys=True)
    runs: list[list] = []
    for v in (case_verdict(c) for c in cases):
        if runs and runs[-1][0] == v:
            runs[-1][1] += 1
        else:
            runs.append([v, 1])
    return {"exit": p.returncode, "status": rep.get("status"),
            "counts": [rep.get(k) for k in ("passed", "failed", "skipped", "total")],
            "diagnoses": [[d.get("code"), d.get("text")] for d in rep.get("diagnoses") or []],
            "cases": runs, "cases_sha256": hashlib.sha256(full.encode()).hexdigest(),
            "text_head": p.stderr.splitlines()[:TEXT_HEAD],
            "text_sha256": hashlib.sha256(p.stderr.encode()).hexdigest()}


def record(build: Path) -> dict:
    return {run_key(*r): one_run(build, *r) for r in RUNS}


def expand(runs: list) -> list:
    return [v for v, k in runs for _ in range(k)]


def compare(old: dict, new: dict) -> list[str]:
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a is None or b is None:
            out.append(f"{key}: only in the {'new' if a is None else 'old'} record")
            continue
        for part in ("exit", "status", "counts", "diagnoses", "text_head", "text_sha256",
                     "cases_sha256"):
            if a[part] != b[part]:
                out.append(f"{key}: {part} differs:\n  old {a[part]}\n  new {b[part]}")
        ca, cb = expand(a["cases"]), expand(b["cases"])
        if ca != cb:
            first = next((i for i, (x, y) in enumerate(zip(ca, cb)) if x != y), min(len(ca), len(cb)))
            out.append(f"{key}: cases differ from position {first}:\n  old "
                       f"{ca[first] if first < len(ca) else '-'}\n  new {cb[first] if first < len(cb) else '-'}")
    return out


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "record":
        Path(argv[2]).write_text(json.dumps(record(Path(argv[1])), indent=0, sort_keys=True) + "\n")
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        diffs = compare(json.loads(Path(argv[2]).read_text()), record(Path(argv[1])))
        for d in diffs:
            print(d)
        print(f"cpu verdicts: {len(RUNS)} runs, {len(diffs)} differences")
        return 1 if diffs else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Grade every .cu file of a freshly packed student handout as a submission,
and expect no correctness point for any of them.

    python3 tests/gpu/handout_zero.py RESULTS_DIR [--jobs N]

Packs the handout (`run.py handout`) into a temporary folder and extracts it.
For every .cu file in it, and the exercise(s) its expectation names
(expectations_for: the corpus entry's expect.json, tests/gpu/handout_sources.json,
or the stub's own exercise), writes a submission holding that file as
exercises/EX/EX.cu and runs `run.py test EX --all --submission DIR --json
RESULTS_DIR/N.json` (every case, as grading runs them). The points are the
course policy's (scoring.score_correctness on the plain test: memcheck could
only take points away), and a case group without a failure counts as earned
under any policy, so both must be zero.

Prints one line per file and exercise, then
`handout_zero: N files, M with 0 correctness points`; exits 1 unless M == N
(a point earned, or a run that gave no verdict). A verdict other than the
expected one is shown on the file's line but costs nothing here
(check_corpus.py judges the corpus's verdicts).

expectations_for and is_stub are also what tests/python/test_handout_pack.py
checks on the CPU: every .cu the handout would hold has an expectation that
earns nothing.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bwlab import exercises, scoring  # noqa: E402
from check_corpus import check_test, groups_passed  # noqa: E402

SOURCES = "tests/gpu/handout_sources.json"
SOURCE_SUFFIXES = (".cu", ".cuh")
# Verdicts of `run.py test`; anything else (not_run, error) proves nothing.
VERDICTS = ("pass", "fail", "not_implemented", "refused", "build_error")
TIMEOUT = 600


def _code(text: str) -> str:
    """The text without C/C++ comments (string literals are not special-cased:
    a stub has none that matter)."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)


def is_stub(text: str) -> bool:
    """Code that declares no kernel, launches none and calls no CUDA function
    or inline assembly cannot change the output arrays: submitted, it is
    reported "not implemented" and earns nothing."""
    code = _code(text)
    return not ("__global__" in code or "<<<" in code
                or re.search(r"\bcuda\w*\s*\(|\basm\b|\b__asm__\b", code))


def load_sources(root: Path = ROOT) -> dict[str, list[dict]]:
    """tests/gpu/handout_sources.json: the kit's own sources' expectations."""
    try:
        return json.loads((root / SOURCES).read_text(encoding="utf-8"))["sources"]
    except (OSError, ValueError, KeyError):
        return {}


def expectations_for(kit: Path, rel: str, names: list[str],
                     sources: dict[str, list[dict]]) -> list[tuple[str, dict | None, str]]:
    """For one source file of the handout (rel, relative to kit, the kit or
    an extracted handout): a list of (exercise to submit it as, the expected
    verdict or None when nothing says what it scores, where that came from).
    sources: load_sources()."""
    parts = rel.split("/")
    if rel.startswith("tests/corpus/") and len(parts) > 3:
        entry = "/".join(parts[:3])
        try:
            exp = json.loads((kit / entry / "expect.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            exp = {}
        ex = exp.get("exercise")
        if ex in names and rel == f"{entry}/exercises/{ex}/{ex}.cu":
            return [(ex, exp, f"{entry}/expect.json")]
        # Another file of an entry (an adapter beside it, say): expect.json
        # speaks of the entry's student file only.
        return [(e, None, "") for e in ([ex] if ex in names else names)]
    if rel in sources:
        return [(e["exercise"], e, SOURCES) for e in sources[rel]]
    for ex in names:
        if rel == f"exercises/{ex}/{ex}.cu":
            stub = is_stub((kit / rel).read_text(encoding="utf-8", errors="replace"))
            return [(ex, {"exercise": ex, "status": "not_implemented"} if stub else None,
                     "the stub" if stub else "")]
    guessed = [ex for ex in names if ex in parts or parts[-1].startswith(ex)]
    return [(ex, None, "") for ex in (guessed or names)]


def pack_handout(dest: Path) -> Path:
    """run.py handout into dest, extracted; returns the extracted kit."""
    tarball = dest / "handout.tar.gz"
    r = subprocess.run([sys.executable, str(ROOT / "run.py"), "handout", "--out", str(tarball)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"handout_zero: run.py handout failed (exit {r.returncode}):\n{r.stdout}{r.stderr}")
    with tarfile.open(tarball, "r:gz") as tf:
        if sys.version_info >= (3, 12):
            tf.extractall(dest / "x", filter="data")
        else:
            tf.extractall(dest / "x")
    return dest / "x" / "bwlab"


def correctness(policy: scoring.Policy, ex: str, r: dict) -> tuple[float, list[str]]:
    """(points under the course policy, case groups with no failure)."""
    status = r.get("status")
    if status == "refused":
        result = {"state": "refused", "reason": r.get("detail")}
    elif status == "build_error":
        result = {"state": "build_failed"}
    else:
        result = {"test": r}
    got = scoring.score_correctness(policy.for_exercise(ex), result)
    # A stub, a refusal or a build error earns nothing under any policy.
    return got["score"], (groups_passed(r) if status in ("pass", "fail") else [])


def grade_one(job: dict, results: Path) -> dict:
    sub = Path(job["work"]) / "sub"
    (sub / "exercises" / job["ex"]).mkdir(parents=True)
    shutil.copyfile(job["file"], sub / "exercises" / job["ex"] / f"{job['ex']}.cu")
    out = results / f"{job['name']}.json"
    log = results / f"{job['name']}.txt"
    with open(log, "w") as f:
        try:
            subprocess.run([sys.executable, str(ROOT / "run.py"), "test", job["ex"], "--all",
                            "--submission", str(sub), "--json", str(out)],
                           cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            pass
    try:
        return json.loads(out.read_text())["exercises"][job["ex"]]
    except (OSError, ValueError, KeyError):
        return {"status": "no report", "detail": f"see {log}"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="folder for each run's JSON and output")
    ap.add_argument("--jobs", type=int, default=4, help="runs at once (default 4)")
    args = ap.parse_args()
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    names = exercises.names(ROOT)
    policy = scoring.find_policy(ROOT, None)
    sources = load_sources()
    with tempfile.TemporaryDirectory(prefix="bwlab-handout-zero-") as tmp:
        kit = pack_handout(Path(tmp))
        files = sorted(p.relative_to(kit).as_posix() for p in kit.rglob("*")
                       if p.is_file() and p.name.endswith(SOURCE_SUFFIXES))
        jobs = []
        for rel in files:
            for ex, exp, where in expectations_for(kit, rel, names, sources):
                name = re.sub(r"[^A-Za-z0-9_.-]", "_", rel) + f".{ex}"
                jobs.append({"rel": rel, "ex": ex, "exp": exp, "where": where, "name": name,
                             "file": str(kit / rel), "work": str(Path(tmp) / "w" / name),
                             "alone": bool(exp and exp.get("alone"))})
        # Entries that take the whole GPU (expect.json "alone") run by themselves, after.
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            got = list(pool.map(lambda j: grade_one(j, results), [j for j in jobs if not j["alone"]]))
        got += [grade_one(j, results) for j in jobs if j["alone"]]
        jobs = [j for j in jobs if not j["alone"]] + [j for j in jobs if j["alone"]]
    earned: dict[str, bool] = {}
    for job, r in zip(jobs, got):
        status = r.get("status")
        if status in VERDICTS:
            pts, groups = correctness(policy, job["ex"], r)
            zero = pts == 0 and not groups
            what = f"{scoring.fmt_points(pts)} correctness points" + (f", groups passed {groups}" if groups else "")
        else:
            zero, what = False, f"no verdict ({status}: {r.get('detail') or '?'})"
        note = ""
        if job["exp"] is None:
            note = "; no expectation says what it scores"
        elif status in VERDICTS:
            diff = check_test(job["exp"], r)
            note = f"; as {job['where']} expects" if not diff else f"; differs from {job['where']}: {'; '.join(diff)}"
        line = f"{'OK ' if zero else 'BAD'} {job['rel']} as {job['ex']}: {status} {r.get('passed', 0)}/{r.get('total', 0)}, {what}{note}"
        print(line, flush=True)
        earned[job["rel"]] = earned.get(job["rel"], False) or not zero
    n_zero = sum(1 for bad in earned.values() if not bad)
    print(f"handout_zero: {len(earned)} files, {n_zero} with 0 correctness points")
    return 0 if earned and n_zero == len(earned) else 1


if __name__ == "__main__":
    sys.exit(main())

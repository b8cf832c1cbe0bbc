"""What the tests of instructor-side grading share (test_grading_*.py, and
test_vet_hooks.py): synthetic bwgrade documents, a fake runner that stands
in for bwgrade and the build, driven by markers in the submitted files (so
nothing needs nvcc or a GPU), and a batch of submissions to grade with it.
(Not in the student handout: handout_files.DENY leaves it out.)

Markers a fake submission file may hold (one per exercise file):
    COMPILE_ERROR   the build fails        BUILD_HANG   the build times out
    STUB            not implemented        FAIL:GROUP   that group's cases fail
    TEST_HANG       bwgrade test times out GRADER_EXIT3 bwgrade exits 3 (device seen)
    PCT=NN          pct_copy of the benchmark row (default 95)
    NO_DEVICE       bwgrade exits 3 without a device
"""
import argparse
import contextlib
import csv
import io
import os
import re
import sys
import tarfile
import tempfile
import threading
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import cmd_grade, cmd_merge, exercises, policy_file  # noqa: E402
from bwlab.grade_runner import Built, Outcome  # noqa: E402

EXERCISES = ["haxpy", "vector_sum"]   # the records, policies and submissions made here
# Every exercise of the kit: what run.py grade grades unless --exercises says
# otherwise, and so what the fake runner builds, as KitRunner builds those it is given.
TABLE = exercises.names(ROOT)
SECRET = 0x5EC12E75EED0BEEF   # a test seed, far from the public one
GROUP_SIZES = {"small": 3, "medium": 3, "large": 2, "special": 2, "huge": 1}


# --------------------------------------------------------------------------
# Synthetic bwgrade documents


def test_doc(exercise, fail_groups=(), status=None, seed=1, hidden=False, skipped_groups=()):
    cases, idx = [], 0
    sizes = dict(GROUP_SIZES)
    if hidden:
        sizes["medium"] += 2   # the hidden extra cases
    for group, count in sizes.items():
        for _ in range(count):
            outcome = "pass"
            if group in fail_groups:
                outcome = "wrong"
            elif group in skipped_groups:
                outcome = "skipped"
            cases.append({"index": idx, "group": group, "n": 1000 + idx, "offset": idx % 3,
                          "outcome": outcome, "max_ulps": 0.0, "mismatches": 0,
                          "student_output": None, "seconds": 0.001})
            idx += 1
    failed = sum(c["outcome"] not in ("pass", "skipped") for c in cases)
    if status is None:
        status = "pass" if failed == 0 else "fail"
    return {"tool": "bwgrade", "mode": "test", "exercise": exercise, "seed": seed, "hidden": hidden,
            "device": {"name": "Fake GPU", "cc": "9.0"}, "status": status,
            "passed": sum(c["outcome"] == "pass" for c in cases), "failed": failed,
            "skipped": sum(c["outcome"] == "skipped" for c in cases), "total": len(cases),
            "diagnoses": [{"code": "replay", "text": f"replay with --seed {seed}"}], "cases": cases}


def bench_doc(exercise, pct, status="ok", spread=None):
    """spread: the kernel's and the copy's quartiles lie this fraction either
    side of their medians (None: no quartiles, as in older reports)."""
    doc = {"tool": "bwgrade", "mode": "bench", "exercise": exercise, "label": "student",
           "device": {"name": "Fake GPU"}, "copy": {"bytes": 1, "ms_median": 1, "gbs": 3000, "pct_peak": 90},
           "rows": [{"n": 1 << 20, "offset": 0, "bytes": 6 << 20, "status": "ok", "pct_copy": 10.0},
                    {"n": (1 << 28) - 1, "offset": 3, "bytes": 3 << 28, "status": "ok", "pct_copy": 5.0},
                    {"n": (1 << 28) - 1, "offset": 0, "bytes": 3 << 28, "status": status,
                     "pct_copy": pct}]}
    if spread is not None:
        for part in (doc["copy"], doc["rows"][-1]):
            part.update(ms_median=1.0, ms_q1=1.0 - spread, ms_q3=1.0 + spread)
    return doc


# What a case's detail holds when memcheck finds a read past the end (the
# shape of compute-sanitizer 2025's log, as bwgrade passes it on).
MEMCHECK_DETAIL = (
    "cudaErrorLaunchFailure: unspecified launch failure (in the student's call)\n"
    "========= COMPUTE-SANITIZER\n"
    "========= Invalid __global__ read of size 2 bytes\n"
    "=========     at haxpy_kernel(long long, float, const __nv_bfloat16 *, __nv_bfloat16 *)+0x160 "
    "in haxpy.cu:19\n"
    "=========     by thread (0,0,0) in block (0,0,0)\n"
    "=========     Access to 0x7fbd64800202 is out of bounds\n"
    "========= ERROR SUMMARY: 1 error\n")


# A case's sanitizer_note when the code ignored a failed CUDA call (the corpus
# entry api_error_ignored): bwgrade keeps it apart from the detail, and the
# case passes.
API_ERROR_NOTE = (
    "========= Program hit cudaErrorInvalidValue (error 1) due to \"invalid argument\" on CUDA API "
    "call to cudaDeviceSetLimit.\n"
    "=========     Saved host backtrace up to driver entry point at error\n"
    "=========         Host Frame: cudaDeviceSetLimit [0x4a3c1] in libcudart.so.13\n"
    "=========\n")


# --------------------------------------------------------------------------
# The fake runner


class FakeRunner:
    """Stands in for KitRunner: reads submissions for real (submission.py),
    'builds' and 'runs' by looking at markers in the student files."""

    def __init__(self):
        self.calls = []
        self.lock = threading.Lock()
        self._markers = {}      # fake worker path -> the student file's bytes

    def setup(self, timeout):
        pass

    def load(self, path):
        from bwlab import submission
        return submission.load(path, TABLE)

    def build(self, sub, sid, timeout):
        b = Built()
        b.found_at = dict(sub.found_at)
        for ex in TABLE:
            data = sub.files.get(ex)
            if data is None:
                b.build[ex] = {"state": "missing", "reason": sub.missing.get(ex, "missing")}
            elif b"COMPILE_ERROR" in data:
                b.build[ex] = {"state": "build_failed", "seconds": 0.1,
                               "log_tail": f"exercises/{ex}/{ex}.cu(3): error: \x1b[31mexpected a ';'\x1b[0m"}
                b.logs[f"build_{ex}"] = "full log\n"
            elif b"BUILD_HANG" in data:
                b.build[ex] = {"state": "build_timeout", "seconds": timeout}
            else:
                b.build[ex] = {"state": "ok", "seconds": 0.1}
                b.workers[ex] = Path(f"/fake/{sid}/{ex}")
                with self.lock:
                    self._markers[str(b.workers[ex])] = data
        return b

    def cleanup(self, built):
        pass

    def _data(self, worker):
        with self.lock:
            return self._markers[str(worker)]

    def test(self, exercise, worker, seed, env, timeout, json_path):
        data = self._data(worker)
        with self.lock:
            self.calls.append(("test", exercise, str(worker), seed, dict(env)))
        if b"TEST_HANG" in data:
            return Outcome(None, None, "", timed_out=True, seconds=timeout)
        if b"SAYS_NO_DEVICE" in data:
            # A student's worker printed the words; bwgrade's own did not say so.
            doc = {"status": "error", "no_device": False,
                   "error": "the worker did not start: --- its output --- no CUDA device driver"}
            return Outcome(3, doc, "bwgrade: no CUDA device driver\n", seconds=0.1)
        if b"NO_DEVICE" in data:
            doc = {"status": "error", "error": "no CUDA device found", "no_device": True}
            return Outcome(3, doc, "bwgrade: no CUDA device found\n", seconds=0.1)
        if b"GRADER_EXIT3" in data:
            doc = {"status": "error", "device": {"name": "Fake GPU"},
                   "diagnoses": [{"code": "worker", "text": "the worker would not start"}]}
            return Outcome(3, doc, "worker would not start", seconds=0.1)
        seed_value = seed.value if seed.value is not None else 0x62776C6162
        if b"STUB" in data:
            doc = test_doc(exercise, fail_groups=tuple(GROUP_SIZES), status="not_implemented",
                           seed=seed_value, hidden=seed.hidden)
            for c in doc["cases"]:
                c["outcome"] = "not_implemented"
            return Outcome(1, doc, seconds=0.1)
        fails = tuple(m.decode() for m in re.findall(rb"FAIL:(\w+)", data))
        hangs = tuple(m.decode() for m in re.findall(rb"TIMEOUT:(\w+)", data))
        doc = test_doc(exercise, fail_groups=fails + hangs, seed=seed_value, hidden=seed.hidden)
        for c in doc["cases"]:
            if c["group"] in hangs:
                c["outcome"] = "timeout"
        return Outcome(0 if doc["status"] == "pass" else 1, doc, seconds=0.1)

    def memcheck(self, exercise, worker, seed, env, timeout, json_path, groups, case_limit=None):
        data = self._data(worker)
        with self.lock:
            self.calls.append(("memcheck", exercise, str(worker), seed, dict(env), tuple(groups),
                               case_limit))
        if b"MEMCHECK_HANG" in data:
            return Outcome(None, None, "", timed_out=True, seconds=timeout)
        if b"MEMCHECK_BROKEN" in data:
            return Outcome(3, None, "compute-sanitizer: cannot start\n", seconds=0.1)
        bad = tuple(m.decode() for m in re.findall(rb"MEMERR:(\w+)", data))
        fails = tuple(m.decode() for m in re.findall(rb"FAIL:(\w+)", data))
        doc = test_doc(exercise, fail_groups=bad + fails, hidden=seed.hidden)
        doc["sanitize"] = ["memcheck"]
        doc["cases"] = [c for c in doc["cases"] if c["group"] in groups]
        for c in doc["cases"]:
            if c["group"] in bad:
                c.update(outcome="cuda_error", detail=MEMCHECK_DETAIL)
            elif b"API_NOTE" in data:
                c["sanitizer_note"] = API_ERROR_NOTE
        doc["status"] = "fail" if any(c["outcome"] != "pass" for c in doc["cases"]) else "pass"
        return Outcome(1 if doc["status"] == "fail" else 0, doc, seconds=0.5)

    def bench(self, exercise, worker, env, timeout, json_path):
        data = self._data(worker)
        with self.lock:
            self.calls.append(("bench", exercise, str(worker), None, dict(env)))
        m = re.search(rb"PCT=([0-9.]+)", data)
        pct = float(m.group(1)) if m else 95.0
        m = re.search(rb"SPREAD=([0-9.]+)", data)
        return Outcome(0, bench_doc(exercise, pct, spread=float(m.group(1)) if m else None), seconds=0.1)


def write_sub(folder, files, wrap=None):
    """A submission directory with exercises/EX/EX.cu holding the given text."""
    base = Path(folder) / wrap if wrap else Path(folder)
    for ex, text in files.items():
        p = base / "exercises" / ex / f"{ex}.cu"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return Path(folder)


def grade_args(*argv):
    parser = argparse.ArgumentParser()
    cmd_grade.add_arguments(parser)
    return parser.parse_args(list(argv))


def run_grade(runner, *argv):
    """cmd_grade.run with a fake runner; returns (exit code, printed text)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cmd_grade.run(grade_args(*argv), runner=runner)
    return code, out.getvalue() + err.getvalue()


def run_merge(*argv):
    parser = argparse.ArgumentParser()
    cmd_merge.add_arguments(parser)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cmd_merge.run(parser.parse_args(list(argv)))
    return code, out.getvalue() + err.getvalue()


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def policy(text=""):
    return policy_file.parse_policy(text, "<test>")


# --------------------------------------------------------------------------
# Batches with the fake runner


GOOD = {"haxpy": "// PCT=97\n", "vector_sum": "// PCT=80\n"}


class BatchCase:
    """A batch of submissions in a temporary folder, graded with the fake
    runner and the shipped policy; mixed into the batch tests' classes
    (test_grading_batch.py, test_grading_isolation.py, test_grading_lanes.py)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.dir = Path(self.tmp.name)
        self.subs = self.dir / "subs"
        self.seed_file = self.dir / "secret_seed"
        self.seed_file.write_text(f"# test seed\n{SECRET}\n")
        self.env = mock_env({"BWLAB_SECRET_SEED": None, "BWLAB_SEED": "777"})
        self.env.__enter__()
        self.addCleanup(self.env.__exit__, None, None, None)

    def make_batch(self):
        s = self.subs
        paths = [
            write_sub(s / "alice", GOOD),                                            # a directory
            self._tar("carol", {"haxpy": "// PCT=60\n", "vector_sum": "// FAIL:medium\n"}),
            self._zip("dave", {"haxpy": "// COMPILE_ERROR\n", "vector_sum": "// PCT=91\n"}),
            write_sub(s / "erin", {"haxpy": "// TEST_HANG\n"}),                     # vector_sum missing
            write_sub(s / "frank", {"haxpy": "// STUB\n", "vector_sum": "// STUB\n"}),
            write_sub(s / "gina", {"haxpy": "// BUILD_HANG\n", "vector_sum": "// PCT=30\n"}, wrap="top"),
        ]
        return [str(p) for p in paths]

    def _tar(self, sid, files):
        src = write_sub(self.dir / "src" / sid, files)
        path = self.subs / f"{sid}.tar.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(path, "w:gz") as tf:
            tf.add(src / "exercises", arcname="exercises")
        return path

    def _zip(self, sid, files):
        src = write_sub(self.dir / "src" / sid, files)
        path = self.subs / f"{sid}.zip"
        path.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(path, "w") as zf:
            for f in sorted((src / "exercises").rglob("*.cu")):
                zf.write(f, f.relative_to(src).as_posix())
        return path

    def grade(self, *extra, runner=None, out="out"):
        runner = runner or FakeRunner()
        code, text = run_grade(runner, *self.make_batch(), "--out", str(self.dir / out),
                               "--seed-file", str(self.seed_file), "--policy",
                               str(ROOT / "grader" / "instructor" / "policy.ini"), *extra)
        return code, text, runner


def strip_times(el):
    """An element as nested tuples, without time attributes."""
    attrs = tuple(sorted((k, v) for k, v in el.attrib.items() if k != "time"))
    return (el.tag, attrs, (el.text or "").strip(), tuple(strip_times(c) for c in el))


class mock_env:
    """Set (value) or remove (None) environment variables for a block."""

    def __init__(self, changes):
        self.changes = changes
        self.saved = {}

    def __enter__(self):
        for k, v in self.changes.items():
            self.saved[k] = os.environ.get(k)
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


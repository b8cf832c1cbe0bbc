"""Instructor-side grading: scoring policy, output formats, batch grading,
shards and merge. CPU only: bwgrade and the build are replaced by a fake
runner driven by markers in the submitted files, so nothing needs nvcc or a
GPU. (Not in the student handout: cmd_handout leaves this file out.)

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
import json
import os
import re
import sys
import tarfile
import tempfile
import threading
import time
import unittest
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import (child_run, cmd_grade, cmd_merge, exercises, grade_batch, grade_runner,  # noqa: E402
                   gradebook, policy_file, sandbox, scoring, seeds, submission_ids)
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
        if b"NO_DEVICE" in data:
            return Outcome(3, None, "bwgrade: no CUDA device found\n", seconds=0.1)
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
# Scoring


class ScoringTests(unittest.TestCase):
    def setUp(self):
        self.pol = policy().for_exercise("haxpy")

    def score(self, test=None, bench=None, pol=None, **extra):
        res = {"state": "ok", "test": test, "bench": bench, **extra}
        return scoring.score_exercise(pol or self.pol, res)

    def test_defaults_match_the_shipped_policy_file(self):
        shipped = policy_file.load_policy(ROOT / "grader" / "instructor" / "policy.ini")
        self.assertEqual(shipped.base, policy_file.default_policy().base)
        self.assertEqual(shipped.limits, policy_file.default_policy().limits)

    def test_full_pass_and_fast_gets_everything(self):
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 97.0))
        self.assertEqual(s["correctness"]["score"], 70)
        self.assertEqual(s["performance"]["score"], 30)
        self.assertEqual(s["total"], 100)
        self.assertIn("all 11 cases passed", s["correctness"]["reason"])
        self.assertIn("at or above the top threshold (90%)", s["performance"]["reason"])

    def test_steps_are_inclusive_and_pick_the_highest_reached(self):
        steps = policy("[all]\nperformance_scale = steps\n").for_exercise("haxpy")
        for pct, expected in ((90.0, 30), (89.99, 22.5), (75.0, 22.5), (50.0, 15), (49.9, 7.5),
                              (25.0, 7.5), (24.99, 0), (140.0, 30)):
            with self.subTest(pct=pct):
                s = self.score(test_doc("haxpy"), bench_doc("haxpy", pct), pol=steps)
                self.assertEqual(s["performance"]["score"], expected)
                self.assertEqual(s["performance"]["pct_copy"], round(pct, 2))
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 10.0), pol=steps)
        self.assertIn("below the lowest threshold", s["performance"]["reason"])

    def test_linear_scale_joins_the_origin_and_the_thresholds(self):
        # The default: (0,0), (25,.25), (50,.5), (75,.75), (90,1), flat above.
        # Catches steps (a jump at each threshold) and a missing origin.
        for pct, expected in ((0.0, 0), (10.0, 3), (24.99, 7.5), (25.0, 7.5), (49.9, 14.97),
                              (50.0, 15), (60.0, 18), (80.0, 25), (89.99, 29.99), (90.0, 30),
                              (140.0, 30)):
            with self.subTest(pct=pct):
                s = self.score(test_doc("haxpy"), bench_doc("haxpy", pct))
                self.assertEqual(s["performance"]["score"], expected)
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 60.0))
        self.assertIn("between 50% and 75%, on the linear scale 18 of 30 points",
                      s["performance"]["reason"])
        # A threshold with fraction 0 is a floor: nothing below it.
        floor = policy("[all]\nthresholds = 90:1, 40:0\n").for_exercise("haxpy")
        for pct, expected in ((39.9, 0), (40.0, 0), (65.0, 15), (90.0, 30)):
            with self.subTest(floor=pct):
                s = self.score(test_doc("haxpy"), bench_doc("haxpy", pct), pol=floor)
                self.assertEqual(s["performance"]["score"], expected)

    def test_a_tenth_of_a_percent_moves_a_linear_score_by_hundredths(self):
        # The measured case: the naive control at 50.23% and 50.35% of copy.
        # Under steps 49.9 vs 50.1 differ by 7.5 points; linear, by 0.06.
        steps = policy("[all]\nperformance_scale = steps\n").for_exercise("haxpy")
        a, b = (self.score(test_doc("haxpy"), bench_doc("haxpy", p))["performance"]["score"]
                for p in (49.9, 50.1))
        self.assertLessEqual(abs(a - b), 0.07)
        a, b = (self.score(test_doc("haxpy"), bench_doc("haxpy", p), pol=steps)["performance"]["score"]
                for p in (49.9, 50.1))
        self.assertEqual(b - a, 7.5)

    def test_the_scored_row_is_the_largest_aligned_one(self):
        # bench_doc's largest offset-0 row is the last one (pct given); the
        # others carry 10 and 5.
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 80.0))
        self.assertEqual(s["performance"]["pct_copy"], 80.0)
        self.assertEqual(s["performance"]["n"], (1 << 28) - 1)
        small = policy("[all]\nbench_row = smallest\n").for_exercise("haxpy")
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 80.0), pol=small)
        self.assertEqual(s["performance"]["pct_copy"], 10.0)

    def test_a_bad_benchmark_row_gives_no_performance_points(self):
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 99.0, status="crash"))
        self.assertEqual(s["performance"]["score"], 0)
        self.assertIn("crash", s["performance"]["reason"])

    def test_per_group_partial_credit_and_no_performance(self):
        s = self.score(test_doc("haxpy", fail_groups=("medium",)), bench_doc("haxpy", 99.0))
        corr = s["correctness"]
        # weights 10/15/20/15/10 of 70 points; medium (15) fails
        self.assertEqual(corr["score"], 55)
        self.assertFalse(corr["passed"])
        self.assertEqual(corr["groups"]["medium"]["points"], 0)
        self.assertEqual(corr["groups"]["large"]["points"], 20)
        self.assertIn("medium (3 of 3 failed", corr["reason"])
        self.assertEqual(s["performance"]["score"], 0)
        self.assertIn("only once correctness passes", s["performance"]["reason"])

    def test_a_group_that_did_not_run_shares_its_weight(self):
        doc = test_doc("haxpy", skipped_groups=("huge",))
        s = self.score(doc)
        self.assertTrue(s["correctness"]["passed"])
        self.assertEqual(s["correctness"]["score"], 70)
        g = s["correctness"]["groups"]
        self.assertEqual(g["huge"]["max"], 0)
        self.assertAlmostEqual(g["small"]["max"], round(70 * 10 / 60, 2))
        doc = test_doc("haxpy", fail_groups=("small",), skipped_groups=("huge",))
        self.assertAlmostEqual(self.score(doc)["correctness"]["score"], round(70 - 70 * 10 / 60, 2),
                               places=1)

    def test_cases_not_run_after_crashes_count_as_failed(self):
        # bwgrade stops after repeated crashes and marks the rest "not run";
        # those groups must not pass (nor hand their weight to the others).
        doc = test_doc("haxpy", skipped_groups=("special", "huge"))
        for c in doc["cases"]:
            if c["outcome"] == "skipped":
                c["detail"] = "not run: 32 cases already crashed or hung; fix those first"
        s = self.score(doc)
        g = s["correctness"]["groups"]
        self.assertFalse(s["correctness"]["passed"])
        self.assertEqual(g["huge"]["max"], 10 * 70 / 70)
        self.assertEqual(g["special"]["points"], 0)
        self.assertEqual(g["huge"]["points"], 0)
        self.assertAlmostEqual(s["correctness"]["score"], 70 * 45 / 70, places=1)

    def test_all_or_nothing(self):
        pol = policy("[exercise haxpy]\ncorrectness_mode = all_or_nothing\n").for_exercise("haxpy")
        s = self.score(test_doc("haxpy", fail_groups=("special",)), pol=pol)
        self.assertEqual(s["correctness"]["score"], 0)
        self.assertIn("2 of 11 cases failed", s["correctness"]["reason"])
        self.assertIn("special", s["correctness"]["reason"])
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 60), pol=pol)
        self.assertEqual((s["correctness"]["score"], s["performance"]["score"]), (70, 18))

    def test_not_implemented_and_build_states(self):
        doc = test_doc("haxpy", fail_groups=tuple(GROUP_SIZES), status="not_implemented")
        s = self.score(doc)
        self.assertEqual(s["total"], 0)
        self.assertIn("not implemented", s["correctness"]["reason"])
        for state, word in (("missing", "missing"), ("build_failed", "compile error"),
                            ("build_timeout", "longer than 600"), ("test_timeout", "longer than 5")):
            s = scoring.score_exercise(self.pol, {"state": state, "build_timeout": 600, "test_timeout": 5,
                                                  "student_file": "exercises/haxpy/haxpy.cu"})
            self.assertEqual(s["total"], 0)
            self.assertIn(word, s["correctness"]["reason"])

    def test_overrides_apply_to_one_exercise(self):
        p = policy("[all]\nperformance_points = 10\n[exercise vector_sum]\nperformance_points = 50\n"
                   "correctness_points = 50\n")
        self.assertEqual(p.for_exercise("haxpy").max_points, 80)
        self.assertEqual(p.for_exercise("vector_sum").max_points, 100)
        p.check_exercises(EXERCISES)
        with self.assertRaises(policy_file.PolicyError):
            policy("[exercise nosuch]\nperformance_points = 1\n").check_exercises(EXERCISES)

    def test_noise_band_and_the_flag_near_a_threshold(self):
        # Quartiles 1% either side for kernel and copy: pct_copy spans about
        # +-2%. 50.5% holds the 50% threshold in its band: flagged, with the
        # points the band spans; 60% is clear of every threshold.
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 50.5, spread=0.01))["performance"]
        lo, hi = 50.5 * 0.99 / 1.01, 50.5 * 1.01 / 0.99
        self.assertEqual(s["band"], [round(lo, 2), round(hi, 2)])
        self.assertEqual(s["noise"], round((hi - lo) / 2, 2))
        self.assertEqual(s["near_threshold"], 50)
        self.assertAlmostEqual(s["points_at_stake"], 30 * (hi - lo) / 100, places=1)
        self.assertIn("within the noise of the 50% threshold", s["reason"])
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 60.0, spread=0.01))["performance"]
        self.assertNotIn("near_threshold", s)
        self.assertAlmostEqual(s["noise"], 1.2, places=1)
        # Under steps the same band puts a whole step at stake.
        steps = policy("[all]\nperformance_scale = steps\n").for_exercise("haxpy")
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 50.5, spread=0.01), pol=steps)["performance"]
        self.assertEqual((s["near_threshold"], s["points_at_stake"]), (50, 7.5))
        # No quartiles in the report: no band, no flag, the score stands.
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 50.5))["performance"]
        self.assertNotIn("noise", s)
        self.assertNotIn("near_threshold", s)
        self.assertEqual(s["score"], 15.15)

    def test_malformed_policies_are_refused_with_the_place(self):
        bad = {
            "[all]\ncorrectness_mode = most\n": "correctness_mode",
            "[all]\nbogus = 1\n": "unknown key 'bogus'",
            "[everything]\n": "unknown section",
            "[all]\nthresholds = 90:1.5\n": "above 1",
            "[all]\ngroups = tiny:3\n": "unknown group",
            "[all]\nperformance_points = lots\n": "not a number",
            "[limits]\ntest_timeout = 0\n": "above 0",
            "[all]\nperformance_scale = smooth\n": "performance_scale",
            "[all]\nthresholds = 90:0.5, 50:0.75\n": "may not fall",
            "[all]\nthresholds = 50:0.5, 50:0.75\n": "twice",
            "[all]\nmemcheck = small, tiny\n": "unknown group 'tiny'",
            "[all]\nmemcheck = small, small\n": "twice",
            "[all\n": "<test>",
        }
        for text, needle in bad.items():
            with self.subTest(text=text):
                with self.assertRaises(policy_file.PolicyError) as cm:
                    policy(text)
                self.assertIn(needle, str(cm.exception))


def memcheck_doc(exercise, bad=(), groups=("small", "medium", "special")):
    """bwgrade's report of a memcheck run over groups; the cases of bad fail
    with a sanitizer finding in their detail."""
    doc = test_doc(exercise)
    doc["cases"] = [c for c in doc["cases"] if c["group"] in groups]
    for c in doc["cases"]:
        if c["group"] in bad:
            c.update(outcome="cuda_error", detail=MEMCHECK_DETAIL)
    doc["status"] = "fail" if bad else "pass"
    return doc


class MemcheckScoringTests(unittest.TestCase):
    """grade's memcheck run: a memory error fails its group."""

    def setUp(self):
        self.pol = policy().for_exercise("haxpy")

    def score(self, memcheck=None, state="ok", pol=None, test=None, **extra):
        res = {"state": "ok", "test": test or test_doc("haxpy"), "bench": bench_doc("haxpy", 99.0),
               "memcheck_state": state, "memcheck": memcheck, **extra}
        return scoring.score_exercise(pol or self.pol, res)

    def test_the_default_policy_checks_small_medium_and_special(self):
        self.assertEqual(self.pol.memcheck, ("small", "medium", "special"))
        self.assertEqual(policy("[all]\nmemcheck = none\n").for_exercise("haxpy").memcheck, ())

    def test_a_memory_error_fails_its_group_with_the_sanitizer_line(self):
        # What the corpus entry reads_past_end does: every plain case passes,
        # memcheck reports an out-of-bounds read in the small cases.
        s = self.score(memcheck_doc("haxpy", bad=("small",)))
        corr = s["correctness"]
        self.assertFalse(corr["passed"])
        self.assertEqual(corr["score"], 60)                 # small's 10 of 70 lost
        self.assertEqual(corr["groups"]["small"]["points"], 0)
        self.assertEqual(corr["groups"]["medium"]["points"], 15)
        self.assertIn("small (memcheck: 3 failed; first: case 0 n=1000 cuda_error: "
                      "Invalid __global__ read of size 2 bytes at haxpy_kernel(", corr["reason"])
        self.assertIn("in haxpy.cu:19", corr["reason"])
        self.assertEqual(corr["memcheck"]["failed"], 3)
        self.assertEqual(s["performance"]["score"], 0)      # correctness did not pass in full
        # all_or_nothing: nothing
        aon = policy("[all]\ncorrectness_mode = all_or_nothing\n").for_exercise("haxpy")
        s = self.score(memcheck_doc("haxpy", bad=("small",)), pol=aon)
        self.assertEqual(s["correctness"]["score"], 0)
        self.assertIn("memcheck found memory errors", s["correctness"]["reason"])

    def test_cases_not_run_after_the_groups_first_failure_fail_it_too(self):
        # What bwgrade --group-fail-fast reports: the first small case fails,
        # the others are "not run". Counting those as passed would let a
        # group through on one run case.
        doc = memcheck_doc("haxpy", bad=("small",))
        small = [c for c in doc["cases"] if c["group"] == "small"]
        for c in small[1:]:
            c.update(outcome="skipped", detail="not run: an earlier small case failed, which already "
                                              "fails the group (--group-fail-fast)")
        corr = self.score(doc)["correctness"]
        self.assertEqual(corr["groups"]["small"]["points"], 0)
        self.assertEqual(corr["score"], 60)
        self.assertIn("small (memcheck: 1 failed, 2 not run; first: case 0 n=1000", corr["reason"])
        self.assertEqual(corr["memcheck"]["failed"], 1)
        # a group none of whose memcheck cases failed, only "not run" (after
        # crashes elsewhere), fails as well, without a first failure to show
        for c in small:
            c.update(outcome="skipped", detail="not run: the 8 cases before it all crashed or hung")
        corr = self.score(doc)["correctness"]
        self.assertEqual(corr["groups"]["small"]["points"], 0)
        self.assertIn("small (memcheck: 0 failed, 3 not run)", corr["reason"])

    def test_a_clean_memcheck_run_costs_nothing_and_is_said(self):
        s = self.score(memcheck_doc("haxpy"))
        self.assertEqual(s["total"], 100)
        self.assertIn("memcheck clean on 8 of them", s["correctness"]["reason"])

    def test_a_memcheck_run_past_its_limit_fails_the_groups_it_was_to_check(self):
        s = self.score(None, state="timeout", memcheck_timeout=300)
        corr = s["correctness"]
        self.assertEqual(corr["score"], 70 - 10 - 15 - 15)
        self.assertIn("memcheck did not finish within 300 s", corr["reason"])
        self.assertEqual(corr["groups"]["large"]["points"], 20)

    def test_a_cuda_api_error_the_code_got_back_costs_nothing_and_is_noted(self):
        # api_error_ignored: every memcheck case passes, each with a note.
        doc = memcheck_doc("haxpy")
        for c in doc["cases"]:
            c["sanitizer_note"] = API_ERROR_NOTE
        s = self.score(doc)
        self.assertEqual(s["total"], 100)
        corr = s["correctness"]
        self.assertEqual(corr["memcheck"]["api_errors"], 8)
        self.assertIn("it noted 8 CUDA API error(s) your code got back, which cost nothing; "
                      "first: case 0 n=1000 pass: Program hit cudaErrorInvalidValue (error 1) due "
                      "to \"invalid argument\" on CUDA API call to cudaDeviceSetLimit.",
                      corr["reason"])
        self.assertEqual(corr["memcheck"]["errors"], 0)

    def test_a_timeout_fails_only_the_groups_memcheck_ran(self):
        # groups skipped because the plain test failed them are not charged twice
        s = self.score(None, state="timeout", memcheck_timeout=300, memcheck_groups=["medium"],
                       memcheck_skipped={"small": "failed the plain test (3 of 3 cases)"},
                       test=test_doc("haxpy", fail_groups=("small",)))
        corr = s["correctness"]
        self.assertEqual(corr["score"], 70 - 10 - 15)
        self.assertEqual(corr["groups"]["special"]["points"], 15)
        self.assertEqual(corr["memcheck"]["skipped"], {"small": "failed the plain test (3 of 3 cases)"})

    def test_the_graders_own_trouble_costs_the_student_nothing(self):
        s = self.score(None, state="error", memcheck_reason="memcheck could not run (bwgrade exit 3)")
        self.assertEqual(s["total"], 100)
        self.assertEqual(s["correctness"]["memcheck"]["state"], "error")

    def test_sanitizer_line(self):
        self.assertEqual(scoring.sanitizer_line(MEMCHECK_DETAIL),
                         "Invalid __global__ read of size 2 bytes at haxpy_kernel(long long, float, "
                         "const __nv_bfloat16 *, __nv_bfloat16 *)+0x160 in haxpy.cu:19")
        self.assertIsNone(scoring.sanitizer_line("wrong at index 3: expected 0x3f80, got 0x0000"))
        self.assertIsNone(scoring.sanitizer_line(None))
        only = "========= Program hit cudaErrorLaunchFailure on CUDA API call to cudaDeviceSynchronize.\n"
        self.assertEqual(scoring.sanitizer_line(only),
                         "Program hit cudaErrorLaunchFailure on CUDA API call to cudaDeviceSynchronize.")
        self.assertLessEqual(len(scoring.sanitizer_line("========= " + "x" * 1000)), 300)


# --------------------------------------------------------------------------
# Output formats, from hand-made records


def make_record(sid, scores, problems=(), seconds=1.0):
    """scores: exercise -> (test doc or state string, bench pct or None)."""
    pol = policy_file.default_policy()
    exs = []
    for ex in EXERCISES:
        test, pct = scores[ex]
        res = {"exercise": ex, "seconds": 0.5}
        if isinstance(test, str):
            res.update(state=test, build={"state": test, "log_tail": "a.cu(1): error: \x1b[1mboom\x07"})
        else:
            res.update(state="ok", test=test, bench=bench_doc(ex, pct) if pct is not None else None)
        res["score"] = scoring.score_exercise(pol.for_exercise(ex), res)
        exs.append(res)
    return {"kind": gradebook.RECORD_KIND, "format": 1, "id": sid, "exercises": exs,
            "total": scoring.pts(sum(e["score"]["total"] for e in exs)),
            "max_total": scoring.pts(sum(e["score"]["max"] for e in exs)),
            "notes": [], "problems": list(problems), "seconds": seconds}


class FormatTests(unittest.TestCase):
    def setUp(self):
        self.records = [
            make_record("zed", {"haxpy": (test_doc("haxpy"), 80.0), "vector_sum": ("build_failed", None)}),
            make_record("amy", {"haxpy": (test_doc("haxpy"), 95.0), "vector_sum": (test_doc("vector_sum"), 50.0)}),
            make_record("bob, \"the\" <x>", {"haxpy": (test_doc("haxpy", fail_groups=("large",)), None),
                                            "vector_sum": ("missing", None)}, problems=["archive odd"]),
        ]

    def test_csv_rows_are_sorted_and_carry_the_numbers(self):
        text = gradebook.gradebook_csv(self.records, EXERCISES)
        rows = list(csv.reader(io.StringIO(text)))
        per = ["correctness", "performance", "total", "pct_copy", "noise", "copy_gbs"]
        self.assertEqual(rows[0], ["id", *[f"haxpy_{c}" for c in per], *[f"vector_sum_{c}" for c in per],
                                   "total", "gpu", "sandbox", "containment", "flags", "notes"])
        self.assertEqual([r[0] for r in rows[1:]], ["amy", "bob, \"the\" <x>", "zed"])
        amy, bob, zed = csv.DictReader(io.StringIO(text))
        cols = ["haxpy_correctness", "haxpy_performance", "haxpy_total", "vector_sum_correctness",
                "vector_sum_performance", "vector_sum_total", "total"]
        self.assertEqual([amy[c] for c in cols], ["70", "30", "100", "70", "15", "85", "185"])
        self.assertEqual([bob[c] for c in cols], ["50", "0", "50", "0", "0", "0", "50"])
        self.assertEqual([zed[c] for c in cols], ["70", "25", "95", "0", "0", "0", "95"])
        self.assertEqual((amy["haxpy_pct_copy"], amy["vector_sum_pct_copy"], zed["vector_sum_pct_copy"]),
                         ("95", "50", ""))
        self.assertEqual((amy["haxpy_copy_gbs"], amy["gpu"]), ("3000", "Fake GPU"))
        self.assertIn("PROBLEM: archive odd", bob["notes"])
        self.assertIn("large", bob["notes"])
        self.assertIn("vector_sum: compile error", zed["notes"])
        self.assertNotIn("\x1b", "".join(zed.values()))

    def test_gradescope_results(self):
        doc = gradebook.gradescope_results(self.records[0])
        json.loads(json.dumps(doc))
        self.assertEqual(doc["score"], 95)
        names = [t["name"] for t in doc["tests"]]
        self.assertEqual(names, ["haxpy: correctness", "haxpy: performance",
                                 "vector_sum: correctness", "vector_sum: performance"])
        self.assertAlmostEqual(sum(t["score"] for t in doc["tests"]), doc["score"])
        for t in doc["tests"]:
            self.assertEqual(set(t), {"name", "score", "max_score", "output", "status"})
            self.assertIn(t["status"], ("passed", "failed"))
        self.assertEqual(doc["tests"][0]["status"], "passed")
        self.assertEqual(doc["tests"][1]["status"], "failed")
        self.assertIn("boom", doc["tests"][2]["output"])
        self.assertNotIn("\x1b", doc["tests"][2]["output"])

    def test_junit_is_well_formed_with_the_right_counts(self):
        root = ET.fromstring(gradebook.junit_xml(self.records))
        self.assertEqual(root.tag, "testsuites")
        suites = root.findall("testsuite")
        self.assertEqual([s.get("name") for s in suites], ["amy", "bob, \"the\" <x>", "zed"])
        amy, bob, zed = suites
        self.assertEqual(amy.get("tests"), "4")
        self.assertEqual(amy.get("failures"), "1")        # vector_sum performance 15/30
        props = {p.get("name"): p.get("value") for p in amy.find("properties")}
        self.assertEqual(props, {"score": "185", "max_score": "200"})
        cases = {c.get("name"): c for c in bob.findall("testcase")}
        self.assertEqual(set(cases), {"haxpy.correctness", "haxpy.performance",
                                      "vector_sum.correctness", "vector_sum.performance"})
        fail = cases["haxpy.correctness"].find("failure")
        self.assertIn("50/70 points", fail.get("message"))
        self.assertIn("large", fail.get("message"))
        self.assertIsNotNone(cases["haxpy.performance"].find("skipped"))
        self.assertEqual(bob.get("skipped"), "2")
        self.assertIn("archive odd", bob.find("system-err").text)
        zfail = {c.get("name"): c for c in zed.findall("testcase")}["vector_sum.correctness"].find("failure")
        self.assertIn("boom", zfail.text)
        total = sum(int(s.get("tests")) for s in suites)
        self.assertEqual(root.get("tests"), str(total))
        self.assertEqual(root.get("failures"), str(sum(int(s.get("failures")) for s in suites)))

    def test_files_written_by_write_outputs(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            for r in self.records:
                gradebook.write_record(out, r)
            gradebook.write_outputs(out, self.records, EXERCISES)
            self.assertEqual(len(read_csv(out / "gradebook.csv")), 3)
            ET.parse(out / "junit.xml")
            gs = json.loads((out / "gradescope" / "zed" / "results.json").read_text())
            self.assertEqual(gs["score"], 95)
            again = gradebook.load_record(out / "amy.json")
            self.assertEqual(again["total"], 185)


# --------------------------------------------------------------------------
# Batches with the fake runner


GOOD = {"haxpy": "// PCT=97\n", "vector_sum": "// PCT=80\n"}


class BatchTests(unittest.TestCase):
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

    def test_a_batch_grades_everyone_and_each_failure_costs_only_its_exercise(self):
        code, text, runner = self.grade()
        self.assertEqual(code, 0, text)
        out = self.dir / "out"
        rows = {r["id"]: r for r in read_csv(out / "gradebook.csv")}
        self.assertEqual(list(rows), ["alice", "carol", "dave", "erin", "frank", "gina"])
        expect = {  # haxpy_total, vector_sum_total, total
            "alice": ("100", "95", "195"),       # 80% -> 25 of 30 (linear between 75% and 90%)
            "carol": ("88", "55", "143"),        # 60% -> 18 of 30; medium fails: 55 of 70
            "dave": ("0", "100", "100"),         # compile error in haxpy only
            "erin": ("0", "0", "0"),             # test hang; missing file
            "frank": ("0", "0", "0"),
            "gina": ("0", "79", "79"),           # build hang; 30% -> 9
        }
        # No submission holds the table's other exercises: each is graded
        # (run.py grade's default is every exercise), missing, and costs only
        # its own points.
        others = [ex for ex in TABLE if ex not in EXERCISES]
        for sid, (h, v, t) in expect.items():
            with self.subTest(sid=sid):
                r = rows[sid]
                self.assertEqual((r["haxpy_total"], r["vector_sum_total"], r["total"]), (h, v, t))
                for ex in others:
                    self.assertEqual(r[f"{ex}_total"], "0")
                    self.assertIn(f"{ex}: missing", r["notes"])
        self.assertIn("compile error", rows["dave"]["notes"])
        self.assertIn("vector_sum: missing", rows["erin"]["notes"])
        self.assertNotIn("vector_sum: missing", rows["alice"]["notes"])
        self.assertIn("longer than", rows["erin"]["notes"])
        self.assertIn("not implemented", rows["frank"]["notes"])
        self.assertIn("medium", rows["carol"]["notes"])
        # progress lines: k/N, elapsed and time left; out of 100 points an exercise (policy.ini)
        self.assertRegex(text, r"\[6/6\] \w+: [0-9.]+/%d +\(elapsed \d+s, about \d+s left\)"
                         % (100 * len(TABLE)))
        # every output parses
        ET.parse(out / "junit.xml")
        for sid in expect:
            rec = json.loads((out / f"{sid}.json").read_text())
            self.assertEqual(rec["id"], sid)
            gs = json.loads((out / "gradescope" / sid / "results.json").read_text())
            self.assertAlmostEqual(gs["score"], float(expect[sid][2]))
        alice = json.loads((out / "alice.json").read_text())
        hx = alice["exercises"][0]
        self.assertEqual(hx["test"]["tool"], "bwgrade")          # the full bwgrade report is kept
        self.assertEqual(hx["bench"]["mode"], "bench")
        self.assertTrue(alice["seed"]["hidden"])

    def test_the_secret_seed_is_used_hidden_on_and_never_written(self):
        code, text, runner = self.grade()
        tests = [c for c in runner.calls if c[0] == "test"]
        self.assertTrue(tests)
        for _kind, _ex, _w, seed, env in tests:
            self.assertEqual(seed.value, SECRET)
            self.assertTrue(seed.hidden)
            self.assertNotIn("BWLAB_SEED", env)          # a student's setting cannot leak in
            self.assertNotIn("BWLAB_SECRET_SEED", env)
        needles = [str(SECRET).encode(), hex(SECRET).encode(), hex(SECRET)[2:].encode()]
        for path in (self.dir / "out").rglob("*"):
            if path.is_file():
                data = path.read_bytes().lower()
                for n in needles:
                    self.assertNotIn(n.lower(), data, f"{path} holds the secret seed")
        self.assertNotIn(str(SECRET), text)
        alice = json.loads((self.dir / "out" / "alice.json").read_text())
        self.assertEqual(alice["exercises"][0]["test"]["seed"], seeds.REDACTED)
        self.assertRegex(alice["seed"]["fingerprint"], r"^[0-9a-f]{12}$")

    def test_the_sandbox_used_is_passed_on_hides_the_secrets_and_is_recorded(self):
        seen = {}

        def choose(mode, hide):
            seen["mode"], seen["hide"] = mode, [str(h) for h in hide]
            return sandbox.Sandbox("bwrap", bwrap="/opt/bwrap", hide=seen["hide"])

        with mock.patch.object(cmd_grade.sandbox, "choose", choose):
            code, text, runner = self.grade("--sandbox", "bwrap")
        self.assertEqual(code, 0, text)
        self.assertEqual(seen["mode"], "bwrap")
        out = (self.dir / "out").resolve()
        for must in (str(ROOT / "grader" / "instructor"), str(self.seed_file.resolve()), str(out)):
            self.assertIn(must, seen["hide"])
        self.assertEqual(runner.sandbox_args[:2], ("--sandbox", "/opt/bwrap"))
        self.assertIn(str(self.seed_file.resolve()), runner.sandbox_args[3].split(":"))
        self.assertIn("inside bubblewrap", text)
        manifest = json.loads((out / "manifest.json").read_text())
        self.assertEqual(manifest["sandbox"]["kind"], "bwrap")
        rows = read_csv(out / "gradebook.csv")
        self.assertTrue(rows and all(r["sandbox"] == "bwrap" for r in rows), rows)
        self.assertEqual(json.loads((out / "alice.json").read_text())["sandbox"], "bwrap")

    def test_memcheck_runs_the_policys_groups_and_a_memory_error_costs_its_group(self):
        s = self.subs
        paths = [write_sub(s / "leaky", {"haxpy": "// MEMERR:small PCT=97\n", "vector_sum": "// PCT=97\n"}),
                 write_sub(s / "stub", {"haxpy": "// STUB\n", "vector_sum": "// PCT=50.5 SPREAD=0.01\n"}),
                 write_sub(s / "odd", {"haxpy": "// MEMCHECK_BROKEN\n", "vector_sum": "// MEMCHECK_HANG\n"})]
        runner = FakeRunner()
        code, text = run_grade(runner, *map(str, paths), "--out", str(self.dir / "m"),
                               "--seed-file", str(self.seed_file), "--memcheck-timeout", "42")
        self.assertEqual(code, 1, text)      # odd: memcheck could not run, a PROBLEM
        runs = [c for c in runner.calls if c[0] == "memcheck"]
        self.assertEqual({c[5] for c in runs}, {("small", "medium", "special")})
        self.assertEqual({c[3].value for c in runs}, {SECRET})
        # the stub's haxpy is not implemented: no memcheck run for it
        self.assertNotIn("/fake/stub/haxpy", [c[2] for c in runs])
        rows = {r["id"]: r for r in read_csv(self.dir / "m" / "gradebook.csv")}
        leaky = rows["leaky"]
        self.assertEqual((leaky["haxpy_correctness"], leaky["haxpy_performance"]), ("60", "0"))
        self.assertIn("Invalid __global__ read of size 2 bytes", leaky["notes"])
        self.assertIn("haxpy: memcheck error (Invalid __global__ read", leaky["flags"])
        self.assertEqual(leaky["vector_sum_total"], "100")
        # a score within noise of a threshold is flagged, and the noise recorded
        stub = rows["stub"]
        self.assertIn("vector_sum: 50.5% is within noise of the 50% threshold", stub["flags"])
        self.assertEqual(stub["vector_sum_pct_copy"], "50.5")
        self.assertEqual(stub["vector_sum_noise"], "1.01")
        self.assertEqual((stub["vector_sum_copy_gbs"], stub["gpu"]), ("3000", "Fake GPU"))
        # the grader's trouble costs nothing; a run past its limit fails the groups
        odd = rows["odd"]
        self.assertEqual(odd["haxpy_total"], "100")
        self.assertIn("PROBLEM: haxpy: memcheck could not run (bwgrade exit 3)", odd["notes"])
        self.assertEqual(odd["vector_sum_correctness"], "30")
        self.assertIn("memcheck did not finish within 42 s", odd["notes"])
        self.assertIn("vector_sum: memcheck timed out", odd["flags"])
        # memcheck time is reported apart
        self.assertRegex(text, r"time: tests [0-9.]+ s \(6 runs.*; memcheck [0-9.]+ s \(5 runs, "
                               r"[0-9.]+ s on average, at most 42\.0 s\); benchmarks")
        rec = json.loads((self.dir / "m" / "leaky.json").read_text())
        self.assertEqual(rec["exercises"][0]["memcheck_seconds"], 0.5)

    def test_memcheck_runs_only_the_groups_that_passed_the_plain_test(self):
        s = self.subs
        paths = [write_sub(s / "half", {"haxpy": "// FAIL:small\n", "vector_sum": "// PCT=97\n"}),
                 write_sub(s / "none", {"haxpy": "// FAIL:small FAIL:medium FAIL:special\n",
                                        "vector_sum": "// TIMEOUT:large\n"})]
        runner = FakeRunner()
        code, text = run_grade(runner, *map(str, paths), "--out", str(self.dir / "g"),
                               "--seed-file", str(self.seed_file))
        self.assertEqual(code, 0, text)
        runs = {c[2]: c for c in runner.calls if c[0] == "memcheck"}
        self.assertEqual(runs["/fake/half/haxpy"][5], ("medium", "special"))
        self.assertIsNone(runs["/fake/half/haxpy"][6])
        self.assertEqual(runs["/fake/half/vector_sum"][5], ("small", "medium", "special"))
        # every group it checks failed the plain test: memcheck is not run, and the record says why
        self.assertNotIn("/fake/none/haxpy", runs)
        half = json.loads((self.dir / "g" / "half.json").read_text())["exercises"][0]
        self.assertEqual(half["memcheck_skipped"], {"small": "failed the plain test (3 of 3 cases)"})
        self.assertEqual(half["score"]["correctness"]["memcheck"]["skipped"],
                         {"small": "failed the plain test (3 of 3 cases)"})
        none = json.loads((self.dir / "g" / "none.json").read_text())["exercises"]
        self.assertEqual(none[0]["memcheck_state"], "not_run")
        self.assertIn("every group it checks already failed the plain test", none[0]["memcheck_reason"])
        self.assertEqual(none[0]["score"]["correctness"]["score"], 20 + 10)
        # a plain test that saw a hang (large, not memchecked): each memcheck case gets 10 s at most
        self.assertEqual(runs["/fake/none/vector_sum"][5], ("small", "medium", "special"))
        self.assertEqual(runs["/fake/none/vector_sum"][6], 10)
        self.assertEqual(none[1]["memcheck_case_limit"], 10)

    def test_a_cuda_api_error_memcheck_noted_keeps_the_points_and_the_benchmark(self):
        sub = write_sub(self.subs / "ignores", {"haxpy": "// API_NOTE PCT=95\n", "vector_sum": "// PCT=97\n"})
        runner = FakeRunner()
        code, text = run_grade(runner, str(sub), "--out", str(self.dir / "a"),
                               "--seed-file", str(self.seed_file))
        self.assertEqual(code, 0, text)
        row = read_csv(self.dir / "a" / "gradebook.csv")[0]
        self.assertEqual(row["haxpy_total"], "100")
        self.assertIn("haxpy memcheck noted a CUDA API error the code got back (costs nothing): "
                      "case 0 n=1000 pass: Program hit cudaErrorInvalidValue", row["notes"])
        self.assertNotIn("memcheck error", row["flags"])
        self.assertIn(("bench", "haxpy"), [c[:2] for c in runner.calls])

    def test_without_memcheck_in_the_policy_none_runs(self):
        pol = self.dir / "nomem.ini"
        pol.write_text("[all]\nmemcheck = none\n")
        sub = write_sub(self.subs / "leaky", {"haxpy": "// MEMERR:small\n", "vector_sum": "// PCT=97\n"})
        runner = FakeRunner()
        code, text = run_grade(runner, str(sub), "--out", str(self.dir / "n"),
                               "--seed-file", str(self.seed_file), "--policy", str(pol))
        self.assertEqual(code, 0, text)
        self.assertFalse([c for c in runner.calls if c[0] == "memcheck"])
        self.assertIn("memcheck: none", text)

    def test_no_compute_sanitizer_stops_before_grading_when_the_policy_needs_it(self):
        runner = FakeRunner()
        runner.sanitizer_missing = lambda env: "compute-sanitizer was not found on PATH"
        code, text = run_grade(runner, *map(str, [write_sub(self.subs / "a", GOOD)]),
                               "--out", str(self.dir / "s"), "--seed-file", str(self.seed_file))
        self.assertEqual(code, 5, text)     # a missing optional tool: its own exit code
        # Every exercise graded (all of the table), in table order.
        self.assertIn("compute-sanitizer was not found, and the policy's memcheck "
                      f"({', '.join(TABLE)}) needs it; it is part of the CUDA Toolkit", text)
        self.assertIn("memcheck = none", text)
        self.assertEqual(runner.calls, [])
        self.assertFalse((self.dir / "s").exists())     # nothing written either

    def test_no_sandbox_is_recorded_and_warned_about(self):
        with mock.patch.object(cmd_grade.sandbox.shutil, "which", lambda *_a, **_k: None):
            code, text, runner = self.grade("--sandbox", "auto", out="nobox")
        self.assertEqual(code, 0, text)
        self.assertIn("WITHOUT a sandbox", text)
        self.assertEqual(runner.sandbox_args, ())
        out = self.dir / "nobox"
        self.assertIn("not installed", json.loads((out / "manifest.json").read_text())["sandbox"]["warning"])
        self.assertTrue(all(r["sandbox"] == "none" for r in read_csv(out / "gradebook.csv")))
        with mock.patch.object(cmd_grade.sandbox.shutil, "which", lambda *_a, **_k: None):
            code, text, _ = self.grade("--sandbox", "bwrap", out="refused")
        self.assertEqual(code, 2, text)
        self.assertIn("not installed", text)

    def test_containment_is_copied_from_bwgrade(self):
        """bwgrade says what confined the workers; run.py copies it into each
        record, the gradebook's containment column and the manifest. Catches
        run.py writing its own guess, or dropping bwgrade's word."""
        said = {"user": "nobody", "pid_namespace": True, "subreaper": False, "sandbox": "none"}

        class Contained(FakeRunner):
            def test(self, *a):
                out = super().test(*a)
                if out.doc is not None:
                    out.doc["containment"] = dict(said)
                return out

            def bench(self, *a):
                out = super().bench(*a)
                if b"OTHER_CONTAINMENT" in self._data(a[1]):
                    out.doc["containment"] = {**said, "pid_namespace": False, "subreaper": True}
                else:
                    out.doc["containment"] = dict(said)
                return out

        runner = Contained()
        marked = {**GOOD, "haxpy": GOOD["haxpy"] + "// OTHER_CONTAINMENT\n"}
        code, text = run_grade(runner, str(write_sub(self.subs / "alice", GOOD)),
                               str(write_sub(self.subs / "bob", marked)), "--out", str(self.dir / "cont"),
                               "--seed-file", str(self.seed_file))
        self.assertEqual(code, 0, text)
        out = self.dir / "cont"
        alice = json.loads((out / "alice.json").read_text())
        self.assertEqual(alice["containment"], said)
        bob = json.loads((out / "bob.json").read_text())
        self.assertEqual(len(bob["containment"]), 2, bob["containment"])
        rows = {r["id"]: r for r in read_csv(out / "gradebook.csv")}
        self.assertEqual(rows["alice"]["containment"], "nobody, pid namespace")
        self.assertEqual(rows["bob"]["containment"], "nobody, pid namespace | nobody, subreaper")
        manifest = json.loads((out / "manifest.json").read_text())
        self.assertEqual(manifest["containment"][0], said)
        self.assertEqual(len(manifest["containment"]), 2)

    def test_kit_runner_asks_bwgrade_for_containment(self):
        """Every bwgrade run of run.py grade passes --contain (bwgrade leaves it
        out of a bubblewrap sandbox itself). Catches it being dropped."""
        runner = grade_runner.KitRunner(ROOT, self.dir, EXERCISES, bwgrade=Path("/bin/true"))
        runner.sandbox_args = ("--sandbox", "/opt/bwrap")
        seen = []

        def fake_run(cmd, timeout, env=None, stdin_text=None):
            seen.append(cmd)
            return mock.Mock(rc=1, output="", timed_out=False, seconds=0.0)
        with mock.patch.object(grade_runner, "run_limited", fake_run):
            runner.bench("haxpy", Path("/w"), {}, 5.0, self.dir / "b.json")
            runner.test("haxpy", Path("/w"), mock.Mock(value=None, hidden=False), {}, 5.0,
                        self.dir / "t.json")
        self.assertEqual(len(seen), 2)
        for cmd in seen:
            self.assertIn("--contain", cmd)
            self.assertIn("--sandbox", cmd)

    def test_built_worker_is_reachable_by_the_worker_user(self):
        """A build under umask 077 leaves 0700 folders and a 0700 executable:
        as nobody the worker could not start. _reachable opens the path to
        it for searching and the file for running, nothing else."""
        top = self.dir / "sub-x"
        exe = top / "build" / "exercises" / "haxpy" / "bw_worker_haxpy"
        exe.parent.mkdir(parents=True)
        exe.write_text("")
        for p in (exe, exe.parent, exe.parent.parent, exe.parent.parent.parent, top):
            p.chmod(0o700)
        grade_runner._reachable(exe, top)
        self.assertEqual(exe.stat().st_mode & 0o777, 0o755)
        self.assertEqual(exe.parent.stat().st_mode & 0o777, 0o711)
        self.assertEqual((top / "build").stat().st_mode & 0o777, 0o711)
        self.assertEqual(top.stat().st_mode & 0o777, 0o700)   # the caller's (0711 in build())

    @unittest.skipUnless(hasattr(os, "geteuid") and os.geteuid() == 0,
                         "skipped: the outputs and the seed are tightened only when grading as root")
    def test_outputs_and_seed_are_kept_from_the_worker_user(self):
        """As root the workers run as nobody: the output folder and the seed
        file lose every permission of other users. Catches an output folder
        left 0755 (other students' grades readable) or a 0644 seed file."""
        out = self.dir / "open_out"
        out.mkdir(mode=0o755)
        out.chmod(0o755)
        self.seed_file.chmod(0o644)
        code, text, _ = self.grade(out="open_out")
        self.assertEqual(code, 0, text)
        self.assertEqual(out.stat().st_mode & 0o777, 0o700)
        self.assertEqual(self.seed_file.stat().st_mode & 0o777, 0o600)
        self.assertIn("must not read it", text)

    def test_public_mode_is_explicit_and_has_no_hidden_cases(self):
        runner = FakeRunner()
        code, text = run_grade(runner, str(write_sub(self.subs / "alice", GOOD)), "--out",
                               str(self.dir / "pub"), "--public")
        self.assertEqual(code, 0, text)
        self.assertIn("PUBLIC", text)
        for _kind, _ex, _w, seed, _env in [c for c in runner.calls if c[0] == "test"]:
            self.assertIsNone(seed.value)
            self.assertFalse(seed.hidden)
        rec = json.loads((self.dir / "pub" / "alice.json").read_text())
        self.assertEqual(rec["seed"]["kind"], "public")

    def test_no_seed_means_no_grading(self):
        with tempfile.TemporaryDirectory() as fake_root:
            with self.assertRaises(seeds.SeedError) as cm:
                seeds.find_seed(Path(fake_root), None, False, environ={})
            self.assertIn("--public", str(cm.exception))
        code, text = run_grade(FakeRunner(), str(self.subs), "--out", str(self.dir / "x"),
                               "--seed-file", str(self.dir / "nonexistent"))
        self.assertEqual(code, 2)
        for bad in ("12345", "0x62776c6162", "banana"):   # short, the public seed, not a number
            self.seed_file.write_text(bad + "\n")
            with self.assertRaises(seeds.SeedError):
                seeds.find_seed(ROOT, str(self.seed_file), False, environ={})
        seed = seeds.find_seed(ROOT, None, False, environ={"BWLAB_SECRET_SEED": hex(SECRET)})
        self.assertEqual((seed.value, seed.hidden), (SECRET, True))

    def test_problems_give_exit_1_but_the_others_are_graded(self):
        s = self.subs
        paths = [write_sub(s / "good", GOOD),
                 write_sub(s / "odd", {"haxpy": "// GRADER_EXIT3\n", "vector_sum": "// PCT=99\n"})]
        corrupt = s / "broken.zip"
        corrupt.write_bytes(b"PK\x03\x04 this is not really a zip")
        code, text = run_grade(FakeRunner(), *map(str, paths), str(corrupt), "--out", str(self.dir / "p"),
                               "--seed-file", str(self.seed_file))
        self.assertEqual(code, 1, text)
        rows = {r["id"]: r for r in read_csv(self.dir / "p" / "gradebook.csv")}
        self.assertEqual(rows["good"]["total"], "195")
        self.assertEqual(rows["odd"]["vector_sum_total"], "100")
        self.assertEqual(rows["odd"]["haxpy_total"], "0")
        self.assertIn("PROBLEM", rows["odd"]["notes"])
        self.assertIn("exit 3", rows["odd"]["notes"])
        self.assertEqual(rows["broken"]["total"], "0")
        self.assertIn("PROBLEM: the submission could not be read", rows["broken"]["notes"])
        junit = ET.parse(self.dir / "p" / "junit.xml").getroot()
        suites = {x.get("name"): x for x in junit.findall("testsuite")}
        self.assertEqual(suites["odd"].get("errors"), "1")
        # nothing could be built: every exercise's correctness is the grader's error
        self.assertEqual(suites["broken"].get("errors"), str(len(TABLE)))
        self.assertEqual(suites["good"].get("errors"), "0")

    def test_no_device_stops_with_exit_3(self):
        s = self.subs
        paths = [write_sub(s / "a", GOOD), write_sub(s / "b", {"haxpy": "// NO_DEVICE\n"})]
        code, text = run_grade(FakeRunner(), *map(str, paths), "--out", str(self.dir / "nd"),
                               "--seed-file", str(self.seed_file))
        self.assertEqual(code, 3, text)
        self.assertFalse((self.dir / "nd" / "b.json").exists())

    def test_the_grader_builds_while_submissions_build_but_before_any_run(self):
        """Catches the grader's build delaying the first submission's build
        (the batch's fixed cost), and a lane running bwgrade before it exists."""
        class SlowSetup(FakeRunner):
            def __init__(self):
                super().__init__()
                self.builds_during_setup = threading.Event()
                self.setup_over = threading.Event()
                self.early_runs = 0

            def setup(self, timeout):
                # Returns once a build has started, so a serial setup would wait here
                # for ever; the 30 s bound keeps a broken version from hanging the suite.
                self.builds_during_setup.wait(30)
                time.sleep(0.05)
                self.setup_over.set()

            def build(self, sub, sid, timeout):
                self.builds_during_setup.set()
                return super().build(sub, sid, timeout)

            def test(self, *args):
                self.early_runs += not self.setup_over.is_set()
                return super().test(*args)

        runner = SlowSetup()
        t0 = time.monotonic()
        code, text, _ = self.grade("--gpus", "0,1", runner=runner, out="overlap")
        self.assertEqual(code, 0, text)
        self.assertLess(time.monotonic() - t0, 20, "the grader's build waited for the builds")
        self.assertTrue(runner.setup_over.is_set())
        self.assertEqual(runner.early_runs, 0)
        self.assertRegex(text, r"time: batch [0-9.]+ s wall \(bwgrade built in [0-9.]+ s alongside "
                               r"the first builds, first run after [0-9.]+ s\); 2 lanes busy")

    def test_each_lane_holds_a_context_on_its_gpu_while_it_works(self):
        """One held context per lane, on that lane's GPU, taken after the
        grader is built and before the lane's first run, closed when the
        batch ends. Catches a lane without one, a context on the wrong GPU,
        one taken per submission, and one left open after the batch."""
        class Holding(FakeRunner):
            def __init__(self):
                super().__init__()
                self.setup_over = False
                self.holds = []    # [gpu, taken after setup, runs before it, closed]

            def setup(self, timeout):
                time.sleep(0.05)
                self.setup_over = True

            def hold_context(self, env):
                runner = self
                with self.lock:
                    runs = sum(1 for c in self.calls if c[4].get("CUDA_VISIBLE_DEVICES")
                               == env.get("CUDA_VISIBLE_DEVICES"))
                    rec = [env.get("CUDA_VISIBLE_DEVICES"), self.setup_over, runs, False]
                    self.holds.append(rec)

                class Hold:
                    def close(self):
                        with runner.lock:
                            rec[3] = True
                return Hold()

        runner = Holding()
        code, text, _ = self.grade("--gpus", "0,1", runner=runner, out="hold")
        self.assertEqual(code, 0, text)
        self.assertEqual(sorted(h[0] for h in runner.holds), ["0", "1"])
        for gpu, after_setup, runs_before, closed in runner.holds:
            self.assertTrue(after_setup, f"GPU {gpu}: held before bwhold was built")
            self.assertEqual(runs_before, 0, f"GPU {gpu}: held after the lane's first run")
            self.assertTrue(closed, f"GPU {gpu}: still held after the batch")

    def test_a_grader_that_does_not_build_stops_the_batch_with_exit_4(self):
        class BrokenKit(FakeRunner):
            def setup(self, timeout):
                raise grade_runner.build.KitError("the grader did not build (exit 2)", ["grader/modes/main.c:1: error"])

        code, text, runner = self.grade(runner=BrokenKit(), out="broken_kit")
        self.assertEqual(code, 4, text)
        self.assertIn("the grader did not build (exit 2)", text)
        self.assertIn("grader/modes/main.c:1: error", text)
        self.assertFalse([c for c in runner.calls if c[0] == "test"])
        self.assertEqual([p.name for p in (self.dir / "broken_kit").glob("*.json")], ["manifest.json"])

    def test_usage_errors(self):
        good = str(write_sub(self.subs / "alice", GOOD))
        other = self.dir / "elsewhere" / "alice.tar.gz"
        other.parent.mkdir()
        other.write_bytes(b"")
        common = ["--out", str(self.dir / "u"), "--seed-file", str(self.seed_file)]
        for argv in ([good, str(other)],                  # one id twice
                     [str(self.dir / "nope")],            # does not exist
                     [good, "--shard", "0/3"],            # shards are 1-based
                     [good, "--shard", "4/3"],
                     [good, "--gpus", "0,0"],
                     [good, "--policy", str(self.dir / "nope.ini")],
                     []):
            with self.subTest(argv=argv):
                code, text = run_grade(FakeRunner(), *argv, *common)
                self.assertEqual(code, 2, text)

    def test_show_policy(self):
        code, text = run_grade(FakeRunner(), "--show-policy", "--policy",
                               str(ROOT / "grader" / "instructor" / "policy.ini"))
        self.assertEqual(code, 0)
        self.assertIn("haxpy: correctness 70 (per_group", text)
        self.assertIn(">=90%: 1", text)

    def test_ids(self):
        self.assertEqual(submission_ids.submission_id("x/alice.tar.gz"), "alice")
        self.assertEqual(submission_ids.submission_id("x/bob.tgz"), "bob")
        self.assertEqual(submission_ids.submission_id("x/carol.zip"), "carol")
        self.assertEqual(submission_ids.submission_id("x/d.v2.zip"), "d.v2")
        d = self.dir / "erin.tar.gz"
        d.mkdir()
        self.assertEqual(submission_ids.submission_id(d), "erin.tar.gz")    # a folder keeps its name
        self.assertEqual(submission_ids.submission_id(str(self.dir / "frank") + "/"), "frank")

    def test_shard_selection_is_one_based_and_covers_everyone_once(self):
        ids = [f"s{i:02d}" for i in range(10)][::-1]
        self.assertEqual(submission_ids.shard_select(ids, (1, 3)), ["s00", "s03", "s06", "s09"])
        self.assertEqual(submission_ids.shard_select(ids, (3, 3)), ["s02", "s05", "s08"])
        union = sum((submission_ids.shard_select(ids, (k, 4)) for k in range(1, 5)), [])
        self.assertEqual(sorted(union), sorted(ids))
        self.assertEqual(submission_ids.parse_shard("2/5"), (2, 5))
        for bad in ("0/1", "2/1", "1", "a/b", "1/0"):
            with self.assertRaises(ValueError):
                submission_ids.parse_shard(bad)

    def test_shards_merge_into_exactly_the_unsharded_gradebook(self):
        code, text, _ = self.grade(out="all")
        self.assertEqual(code, 0, text)
        folders = []
        for k in (1, 2, 3, 4):
            code, text, _ = self.grade("--shard", f"{k}/4", out=f"shard{k}")
            self.assertEqual(code, 0, text)
            folders.append(str(self.dir / f"shard{k}"))
        # one of them is empty: 6 submissions in 4 shards
        self.assertEqual(len(read_csv(self.dir / "shard4" / "gradebook.csv")), 1)
        code, text = run_merge(*folders, "--out", str(self.dir / "merged"))
        self.assertEqual(code, 0, text)
        a = (self.dir / "all" / "gradebook.csv").read_bytes()
        b = (self.dir / "merged" / "gradebook.csv").read_bytes()
        self.assertEqual(a, b)
        ja, jb = (strip_times(ET.parse(self.dir / d / "junit.xml").getroot()) for d in ("all", "merged"))
        self.assertEqual(ja, jb)
        for sid in ("alice", "gina"):
            self.assertEqual((self.dir / "all" / "gradescope" / sid / "results.json").read_text(),
                             (self.dir / "merged" / "gradescope" / sid / "results.json").read_text())
        # a missing shard is reported (exit 1), a shard given twice is refused
        code, text = run_merge(*folders[:3], "--out", str(self.dir / "m2"))
        self.assertEqual(code, 1)
        self.assertIn("missing shards: 4/4", text)
        code, text = run_merge(folders[0], folders[0], "--out", str(self.dir / "m3"))
        self.assertEqual(code, 2)
        code, text = run_merge(str(self.dir / "all"), folders[0], "--out", str(self.dir / "m4"))
        self.assertEqual(code, 2, text)     # the same submission in two folders

    def test_merge_refuses_mixed_seeds(self):
        self.grade("--shard", "1/2", out="s1")
        other = self.dir / "other_seed"
        other.write_text(f"{SECRET + 2}\n")
        code, text = run_grade(FakeRunner(), *self.make_batch(), "--out", str(self.dir / "s2"),
                               "--seed-file", str(other), "--shard", "2/2")
        code, text = run_merge(str(self.dir / "s1"), str(self.dir / "s2"), "--out", str(self.dir / "m"))
        self.assertEqual(code, 2)
        self.assertIn("seed", text)

    def test_gpus_run_in_parallel_lanes_with_the_same_results(self):
        code, text, runner = self.grade("--gpus", "0,1,2", "--jobs", "3", out="gpus")
        self.assertEqual(code, 0, text)
        seen = {c[4].get("CUDA_VISIBLE_DEVICES") for c in runner.calls}
        self.assertTrue(seen <= {"0", "1", "2"} and seen, seen)
        code, text, _ = self.grade(out="serial")
        self.assertEqual((self.dir / "gpus" / "gradebook.csv").read_bytes(),
                         (self.dir / "serial" / "gradebook.csv").read_bytes())
        recs = [json.loads(p.read_text()) for p in (self.dir / "gpus").glob("*.json")
                if p.name != "manifest.json"]
        self.assertTrue(all(r["gpu"] in ("0", "1", "2") for r in recs))

    def test_a_solutions_style_folder_is_a_submission(self):
        sol = self.subs / "solutions"
        for ex in EXERCISES:
            (sol / ex).mkdir(parents=True)
            (sol / ex / f"{ex}.cu").write_text("// PCT=99\n")
        code, text = run_grade(FakeRunner(), str(sol), "--out", str(self.dir / "sol"),
                               "--seed-file", str(self.seed_file))
        self.assertEqual(code, 0, text)
        self.assertEqual(read_csv(self.dir / "sol" / "gradebook.csv")[0]["total"], "200")

    def test_suspicious_includes_are_noted(self):
        notes = grade_batch.include_notes({"haxpy": b'#include "../../solutions/haxpy/haxpy.cu"\n'
                                                  b'#include <cuda_bf16.h>\n#include "haxpy.h"\n'})
        self.assertEqual(len(notes), 1)
        self.assertIn("solutions", notes[0])


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


# --------------------------------------------------------------------------
# Time limits


class RunLimitedTests(unittest.TestCase):
    def test_a_hang_is_killed_with_its_whole_process_group(self):
        with tempfile.TemporaryDirectory() as tmp:
            pidfile = Path(tmp) / "child.pid"
            script = f"sleep 60 & echo $! > {pidfile}; echo started; wait"
            t0 = time.monotonic()
            r = child_run.run_limited(["sh", "-c", script], timeout=1.0)
            self.assertTrue(r.timed_out)
            self.assertIsNone(r.rc)
            self.assertLess(time.monotonic() - t0, 30)
            self.assertIn("started", r.output)
            pid = int(pidfile.read_text())
            for _ in range(50):
                if not _alive(pid):
                    break
                time.sleep(0.1)
            self.assertFalse(_alive(pid), "the background child survived")

    def test_exit_code_and_output(self):
        r = child_run.run_limited(["sh", "-c", "echo out; echo err >&2; exit 7"], timeout=30)
        self.assertEqual((r.rc, r.timed_out), (7, False))
        self.assertIn("out", r.output)
        self.assertIn("err", r.output)
        r = child_run.run_limited(["/nonexistent/tool"], timeout=5)
        self.assertIsNone(r.rc)


class ContextHoldTests(unittest.TestCase):
    """KitRunner.hold_context with a stand-in bwhold beside a stand-in
    bwgrade: it starts with the lane's environment and ends when closed.
    Catches a holder that outlives its lane (closing without ending it) or
    runs on another GPU, and a missing bwhold stopping the batch."""

    def test_the_holder_runs_on_the_lanes_gpu_until_closed(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            log = tmp / "log"
            fake = tmp / "bwhold"
            fake.write_text(f"#!/bin/sh\necho \"held $CUDA_VISIBLE_DEVICES\" >> {log}\n"
                            f"cat > /dev/null\necho released >> {log}\n")
            fake.chmod(0o755)
            (tmp / "bwgrade").write_text("")
            runner = grade_runner.KitRunner(ROOT, tmp, EXERCISES, bwgrade=tmp / "bwgrade")
            hold = runner.hold_context({**os.environ, "CUDA_VISIBLE_DEVICES": "1"})
            self.assertIsNotNone(hold)
            proc = hold.proc
            for _ in range(100):
                if log.exists() and "held" in log.read_text():
                    break
                time.sleep(0.05)
            self.assertEqual(log.read_text(), "held 1\n")
            self.assertIsNone(proc.poll(), "bwhold ended before it was closed")
            hold.close()
            self.assertEqual(proc.returncode, 0)
            self.assertEqual(log.read_text(), "held 1\nreleased\n")
            hold.close()   # twice is harmless

            fake.unlink()
            self.assertIsNone(runner.hold_context(dict(os.environ)))

    def test_a_holder_that_gives_up_is_reported_once_the_lane_ends(self):
        """bwhold refuses an exclusive compute mode (or finds no context): the
        batch goes on, and the instructor is told why it ran slower. Catches
        the reason being dropped."""
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            fake = tmp / "bwhold"
            fake.write_text("#!/bin/sh\necho 'bwhold: the GPU is not in the default compute mode "
                            "(mode 3); holding no context' >&2\nexit 1\n")
            fake.chmod(0o755)
            (tmp / "bwgrade").write_text("")
            runner = grade_runner.KitRunner(ROOT, tmp, EXERCISES, bwgrade=tmp / "bwgrade")
            hold = runner.hold_context(dict(os.environ))
            hold.proc.wait(timeout=30)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                hold.close()
            self.assertIn("not in the default compute mode (mode 3)", out.getvalue())
            self.assertIn("started without a held context", out.getvalue())


class SecretSeedTests(unittest.TestCase):
    """KitRunner.test with a stand-in bwgrade that records its command line
    and standard input. Catches the secret seed going back onto the command
    line, where /proc/PID/cmdline shows it to every process of the user."""

    def test_secret_seed_goes_on_stdin_not_argv(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            log = tmp / "log.json"
            fake = tmp / "bwgrade"
            fake.write_text(
                f"#!{sys.executable}\n"
                "import json, sys\n"
                f"json.dump({{'argv': sys.argv[1:], 'stdin': sys.stdin.read()}}, open({str(log)!r}, 'w'))\n"
                "out = sys.argv[sys.argv.index('--json') + 1]\n"
                "json.dump({'tool': 'bwgrade', 'mode': 'test', 'status': 'pass'}, open(out, 'w'))\n")
            fake.chmod(0o755)
            runner = grade_runner.KitRunner(ROOT, tmp, EXERCISES, bwgrade=fake)
            seed = seeds.Seed(SECRET, "secret", "test", True)
            out = runner.test("haxpy", tmp / "worker", seed, dict(os.environ), 30, tmp / "r.json")
            self.assertEqual(out.rc, 0, out.output)
            got = json.loads(log.read_text())
            self.assertNotIn(str(SECRET), " ".join(got["argv"]))
            i = got["argv"].index("--seed")
            self.assertEqual(got["argv"][i + 1], "-")
            self.assertEqual(got["stdin"].strip(), str(SECRET))
            self.assertIn("--hidden", got["argv"])


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False



class ExercisesOption(unittest.TestCase):
    """grade --exercises: a course grades the exercises it handed out."""

    def test_an_unknown_name_is_refused_before_anything_runs(self):
        # Catches the list not checked (a typo would grade nothing, silently).
        with tempfile.TemporaryDirectory() as tmp:
            code, text = run_grade(FakeRunner(), tmp, "--public", "--exercises", "haxpy,nope",
                                   "--out", str(Path(tmp) / "out"))
        self.assertEqual(code, 2, text)
        self.assertIn("unknown exercise 'nope'", text)

    def test_an_empty_item_or_list_is_a_usage_error(self):
        # The same rule and words as run.py handout --exercises (one parser).
        for bad, says in (("haxpy,", "has an empty item"), ("", "names no exercise")):
            with self.subTest(bad=bad), tempfile.TemporaryDirectory() as tmp:
                code, text = run_grade(FakeRunner(), tmp, "--public", "--exercises", bad,
                                       "--out", str(Path(tmp) / "out"))
                self.assertEqual(code, 2, text)
                self.assertIn(says, text)

    def test_the_batch_grades_only_the_exercises_named(self):
        # Catches --exercises parsed but ignored: the gradebook would hold
        # every exercise's columns.
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            sub = tmp / "subs" / "alice" / "exercises" / "vector_sum"
            sub.mkdir(parents=True)
            (sub / "vector_sum.cu").write_text("// mine\n")
            code, text = run_grade(FakeRunner(), str(tmp / "subs"), "--public", "--exercises",
                                   "vector_sum", "--out", str(tmp / "out"))
            header = (tmp / "out" / "gradebook.csv").read_text().splitlines()[0]
        self.assertIn("vector_sum_total", header, text)
        self.assertNotIn("haxpy", header)

if __name__ == "__main__":
    unittest.main()

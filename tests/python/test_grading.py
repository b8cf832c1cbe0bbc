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

from bwlab import (child_run, cmd_grade, cmd_merge, grade_batch, grade_runner, gradebook,  # noqa: E402
                   sandbox, scoring, seeds, submission_ids)
from bwlab.grade_runner import Built, Outcome  # noqa: E402

EXERCISES = ["haxpy", "vector_sum"]
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


def bench_doc(exercise, pct, status="ok"):
    return {"tool": "bwgrade", "mode": "bench", "exercise": exercise, "label": "student",
            "device": {"name": "Fake GPU"}, "copy": {"bytes": 1, "ms_median": 1, "gbs": 3000, "pct_peak": 90},
            "rows": [{"n": 1 << 20, "offset": 0, "bytes": 6 << 20, "status": "ok", "pct_copy": 10.0},
                     {"n": (1 << 28) - 1, "offset": 3, "bytes": 3 << 28, "status": "ok", "pct_copy": 5.0},
                     {"n": (1 << 28) - 1, "offset": 0, "bytes": 3 << 28, "status": status,
                      "pct_copy": pct}]}


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
        return submission.load(path, EXERCISES)

    def build(self, sub, sid, timeout):
        b = Built()
        b.found_at = dict(sub.found_at)
        for ex in EXERCISES:
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
        doc = test_doc(exercise, fail_groups=fails, seed=seed_value, hidden=seed.hidden)
        return Outcome(0 if doc["status"] == "pass" else 1, doc, seconds=0.1)

    def bench(self, exercise, worker, env, timeout, json_path):
        data = self._data(worker)
        with self.lock:
            self.calls.append(("bench", exercise, str(worker), None, dict(env)))
        m = re.search(rb"PCT=([0-9.]+)", data)
        pct = float(m.group(1)) if m else 95.0
        return Outcome(0, bench_doc(exercise, pct), seconds=0.1)


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
    return scoring.parse_policy(text, "<test>")


# --------------------------------------------------------------------------
# Scoring


class ScoringTests(unittest.TestCase):
    def setUp(self):
        self.pol = policy().for_exercise("haxpy")

    def score(self, test=None, bench=None, pol=None, **extra):
        res = {"state": "ok", "test": test, "bench": bench, **extra}
        return scoring.score_exercise(pol or self.pol, res)

    def test_defaults_match_the_shipped_policy_file(self):
        shipped = scoring.load_policy(ROOT / "grader" / "instructor" / "policy.ini")
        self.assertEqual(shipped.base, scoring.default_policy().base)
        self.assertEqual(shipped.limits, scoring.default_policy().limits)

    def test_full_pass_and_fast_gets_everything(self):
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 97.0))
        self.assertEqual(s["correctness"]["score"], 70)
        self.assertEqual(s["performance"]["score"], 30)
        self.assertEqual(s["total"], 100)
        self.assertIn("all 11 cases passed", s["correctness"]["reason"])
        self.assertIn(">= 90%", s["performance"]["reason"])

    def test_thresholds_are_inclusive_and_pick_the_highest_reached(self):
        for pct, expected in ((90.0, 30), (89.99, 22.5), (75.0, 22.5), (50.0, 15), (49.9, 7.5),
                              (25.0, 7.5), (24.99, 0), (140.0, 30)):
            with self.subTest(pct=pct):
                s = self.score(test_doc("haxpy"), bench_doc("haxpy", pct))
                self.assertEqual(s["performance"]["score"], expected)
                self.assertEqual(s["performance"]["pct_copy"], round(pct, 2))
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 10.0))
        self.assertIn("below the lowest threshold", s["performance"]["reason"])

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
        self.assertEqual((s["correctness"]["score"], s["performance"]["score"]), (70, 15))

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
        with self.assertRaises(scoring.PolicyError):
            policy("[exercise nosuch]\nperformance_points = 1\n").check_exercises(EXERCISES)

    def test_malformed_policies_are_refused_with_the_place(self):
        bad = {
            "[all]\ncorrectness_mode = most\n": "correctness_mode",
            "[all]\nbogus = 1\n": "unknown key 'bogus'",
            "[everything]\n": "unknown section",
            "[all]\nthresholds = 90:1.5\n": "above 1",
            "[all]\ngroups = tiny:3\n": "unknown group",
            "[all]\nperformance_points = lots\n": "not a number",
            "[limits]\ntest_timeout = 0\n": "above 0",
            "[all\n": "<test>",
        }
        for text, needle in bad.items():
            with self.subTest(text=text):
                with self.assertRaises(scoring.PolicyError) as cm:
                    policy(text)
                self.assertIn(needle, str(cm.exception))


# --------------------------------------------------------------------------
# Output formats, from hand-made records


def make_record(sid, scores, problems=(), seconds=1.0):
    """scores: exercise -> (test doc or state string, bench pct or None)."""
    pol = scoring.default_policy()
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
        rows = list(csv.reader(io.StringIO(gradebook.gradebook_csv(self.records, EXERCISES))))
        self.assertEqual(rows[0], ["id", "haxpy_correctness", "haxpy_performance", "haxpy_total",
                                   "vector_sum_correctness", "vector_sum_performance", "vector_sum_total",
                                   "total", "sandbox", "notes"])
        self.assertEqual([r[0] for r in rows[1:]], ["amy", "bob, \"the\" <x>", "zed"])
        amy, bob, zed = rows[1:]
        self.assertEqual(amy[1:8], ["70", "30", "100", "70", "15", "85", "185"])
        self.assertEqual(bob[1:8], ["50", "0", "50", "0", "0", "0", "50"])
        self.assertEqual(zed[1:8], ["70", "22.5", "92.5", "0", "0", "0", "92.5"])
        self.assertIn("PROBLEM: archive odd", bob[9])
        self.assertIn("large", bob[9])
        self.assertIn("vector_sum: compile error", zed[9])
        self.assertNotIn("\x1b", "".join(zed))

    def test_gradescope_results(self):
        doc = gradebook.gradescope_results(self.records[0])
        json.loads(json.dumps(doc))
        self.assertEqual(doc["score"], 92.5)
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
            self.assertEqual(gs["score"], 92.5)
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
            "alice": ("100", "92.5", "192.5"),
            "carol": ("85", "55", "140"),        # 60% -> 15 of 30; medium fails: 55 of 70
            "dave": ("0", "100", "100"),         # compile error in haxpy only
            "erin": ("0", "0", "0"),             # test hang; missing file
            "frank": ("0", "0", "0"),
            "gina": ("0", "77.5", "77.5"),       # build hang; 30% -> 7.5
        }
        for sid, (h, v, t) in expect.items():
            with self.subTest(sid=sid):
                r = rows[sid]
                self.assertEqual((r["haxpy_total"], r["vector_sum_total"], r["total"]), (h, v, t))
        self.assertIn("compile error", rows["dave"]["notes"])
        self.assertIn("missing", rows["erin"]["notes"])
        self.assertIn("longer than", rows["erin"]["notes"])
        self.assertIn("not implemented", rows["frank"]["notes"])
        self.assertIn("medium", rows["carol"]["notes"])
        # progress lines: k/N, elapsed and time left
        self.assertRegex(text, r"\[6/6\] \w+: [0-9.]+/200 +\(elapsed \d+s, about \d+s left\)")
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

    def test_no_sandbox_is_recorded_and_warned_about(self):
        with mock.patch.object(cmd_grade.sandbox.shutil, "which", lambda _: None):
            code, text, runner = self.grade("--sandbox", "auto", out="nobox")
        self.assertEqual(code, 0, text)
        self.assertIn("WITHOUT a sandbox", text)
        self.assertEqual(runner.sandbox_args, ())
        out = self.dir / "nobox"
        self.assertIn("not installed", json.loads((out / "manifest.json").read_text())["sandbox"]["warning"])
        self.assertTrue(all(r["sandbox"] == "none" for r in read_csv(out / "gradebook.csv")))
        with mock.patch.object(cmd_grade.sandbox.shutil, "which", lambda _: None):
            code, text, _ = self.grade("--sandbox", "bwrap", out="refused")
        self.assertEqual(code, 2, text)
        self.assertIn("not installed", text)

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
        self.assertEqual(rows["good"]["total"], "192.5")
        self.assertEqual(rows["odd"]["vector_sum_total"], "100")
        self.assertEqual(rows["odd"]["haxpy_total"], "0")
        self.assertIn("PROBLEM", rows["odd"]["notes"])
        self.assertIn("exit 3", rows["odd"]["notes"])
        self.assertEqual(rows["broken"]["total"], "0")
        self.assertIn("PROBLEM: the submission could not be read", rows["broken"]["notes"])
        junit = ET.parse(self.dir / "p" / "junit.xml").getroot()
        suites = {x.get("name"): x for x in junit.findall("testsuite")}
        self.assertEqual(suites["odd"].get("errors"), "1")
        self.assertEqual(suites["broken"].get("errors"), "2")     # nothing could be built
        self.assertEqual(suites["good"].get("errors"), "0")

    def test_no_device_stops_with_exit_3(self):
        s = self.subs
        paths = [write_sub(s / "a", GOOD), write_sub(s / "b", {"haxpy": "// NO_DEVICE\n"})]
        code, text = run_grade(FakeRunner(), *map(str, paths), "--out", str(self.dir / "nd"),
                               "--seed-file", str(self.seed_file))
        self.assertEqual(code, 3, text)
        self.assertFalse((self.dir / "nd" / "b.json").exists())

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


if __name__ == "__main__":
    unittest.main()

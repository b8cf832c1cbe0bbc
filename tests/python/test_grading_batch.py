"""Instructor-side grading, a batch: run.py grade over submissions of every
kind with the fake runner (grading_fixtures.py): each failure costs only its
exercise, memcheck's runs and what they cost, problems and usage errors,
submission ids, and --exercises. CPU only. (Not in the student handout:
handout_files.DENY leaves it out.)"""
import json
import os
import shutil
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

from grading_fixtures import (EXERCISES, GOOD, ROOT, SECRET, TABLE, BatchCase, FakeRunner, read_csv,
                              run_grade, write_sub)
from bwlab import grade_batch, submission_ids


class BatchTests(BatchCase, unittest.TestCase):
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

    def test_a_workers_no_device_words_do_not_stop_the_batch(self):
        # Before, any exit 3 whose output said "device" stopped the batch, so
        # a worker that printed it left every later submission ungraded.
        s = self.subs
        paths = [write_sub(s / "a", {"haxpy": "// SAYS_NO_DEVICE\n"}), write_sub(s / "b", GOOD)]
        code, text = run_grade(FakeRunner(), *map(str, paths), "--out", str(self.dir / "sd"),
                               "--seed-file", str(self.seed_file))
        self.assertNotEqual(code, 3, text)
        rows = {r["id"]: r for r in read_csv(self.dir / "sd" / "gradebook.csv")}
        self.assertEqual(rows["a"]["haxpy_total"], "0")
        self.assertIn("haxpy: bwgrade could not run the worker", rows["a"]["notes"])
        self.assertEqual((rows["b"]["haxpy_total"], rows["b"]["vector_sum_total"]), ("100", "95"))

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

    def test_two_names_never_share_an_id(self):
        # Catches an id that is not one-to-one: a name spelt like another's
        # escape got the same id, and collect refused the whole batch.
        pairs = [("g\\x1bh", "g\x1bh"),                  # the text \x1b, an ESC
                 ("z\\xeb", os.fsdecode(b"z\xeb")),      # the text \xeb, a byte not UTF-8
                 ("k\\", "k\\\\")]                       # one backslash, two
        for a, b in pairs:
            with self.subTest(a=a, b=b):
                paths = []
                for name in (a, b):
                    d = self.dir / "ids" / name
                    d.mkdir(parents=True)
                    paths.append(str(d))
                ids = submission_ids.collect(paths)
                self.assertEqual(len(ids), 2, ids)
                for sid in ids:   # still printable: no ESC reaches a report
                    self.assertNotIn("\x1b", sid)
                shutil.rmtree(self.dir / "ids")
        self.assertEqual(submission_ids.submission_id("x/back\\slash.zip"), "back\\\\slash")
        # The refusal of a true duplicate prints the names escaped too.
        d = self.dir / "esc\x1b[2J"
        d.mkdir()
        with self.assertRaises(ValueError) as cm:
            submission_ids.collect([str(d), str(d) + "/"])
        self.assertNotIn("\x1b", str(cm.exception))
        self.assertIn("esc\\x1b[2J", str(cm.exception))

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

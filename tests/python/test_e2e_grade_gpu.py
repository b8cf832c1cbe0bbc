"""run.py grade end to end (instructor-side; left out of the handout).

GpuGradeTests: a real batch on a real GPU: the solutions, the stubs, two
broken submissions from tests/corpus and the entries whose expect.json has a
"grade" part (groups that must lose their points in grade, such as
reads_past_end, which passes a plain test and fails memcheck; or none, with
a memcheck note and a scored benchmark, as api_error_ignored). Skips with "no CUDA device" where there
is none (or bwgrade says exit 3), and without solutions/ or a CUDA toolkit.

KitBuildTests (only with BWLAB_SLOW_TESTS=1; needs cmake and nvcc, no GPU):
real builds against the pristine kit copy with a stand-in bwgrade, to check
that a compile error costs one exercise and that a submission cannot
#include the instructor's solutions.
"""
import csv
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import exercises, policy_file, scoring  # noqa: E402

PREFERRED_BROKEN = ("off_by_one_write", "ignored_tail", "overwrites_input", "reads_past_end")
SLOW_ENTRIES = ("hangs",)   # fine, but they cost minutes


def toolkit_missing():
    if not shutil.which("cmake"):
        return "cmake not found"
    if not (shutil.which("nvcc") or Path("/usr/local/cuda/bin/nvcc").exists()):
        return "nvcc not found"
    return None


def clean_env():
    return {k: v for k, v in os.environ.items()
            if k not in ("BWLAB_SECRET_SEED", "BWLAB_SEED", "BWLAB_ROOT", "CUDA_VISIBLE_DEVICES")}


def new_seed_file(folder):
    path = Path(folder) / "secret_seed"
    path.write_text(f"{secrets.randbits(63) | 1 << 62}\n")
    return path


def read_rows(out):
    with open(Path(out) / "gradebook.csv", newline="", encoding="utf-8") as f:
        return {r["id"]: r for r in csv.DictReader(f)}


def broken_entries(count=2):
    """Corpus entries that expect a failure, preferring quick ones."""
    corpus = ROOT / "tests" / "corpus"
    found = []
    for entry in sorted(corpus.iterdir()) if corpus.is_dir() else []:
        expect = entry / "expect.json"
        if not expect.is_file() or entry.name in SLOW_ENTRIES:
            continue
        try:
            doc = json.loads(expect.read_text())
        except ValueError:
            continue
        if doc.get("status") == "fail" and doc.get("exercise"):
            found.append((entry, doc))
    found.sort(key=lambda e: (PREFERRED_BROKEN.index(e[0].name) if e[0].name in PREFERRED_BROKEN
                              else len(PREFERRED_BROKEN), e[0].name))
    return found[:count]


def grade_entries():
    """Corpus entries with a "grade" expectation: (entry, expect)."""
    corpus = ROOT / "tests" / "corpus"
    found = []
    for entry in sorted(corpus.iterdir()) if corpus.is_dir() else []:
        expect = entry / "expect.json"
        if expect.is_file():
            doc = json.loads(expect.read_text())
            if doc.get("grade"):
                found.append((entry, doc))
    return found


def grade(argv, timeout, path_first=None):
    env = clean_env()
    if path_first:
        env["PATH"] = f"{path_first}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([sys.executable, str(ROOT / "run.py"), "grade", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, env=env)


class GpuGradeTests(unittest.TestCase):
    def test_solutions_stubs_and_broken_submissions(self):
        if not (ROOT / "solutions").is_dir():
            self.skipTest("no solutions/ in this copy of the kit")
        why = toolkit_missing()
        if why:
            self.skipTest(why)
        smi = shutil.which("nvidia-smi")
        if not smi or subprocess.run([smi, "-L"], capture_output=True, timeout=60).returncode != 0:
            self.skipTest("no CUDA device")
        broken = broken_entries()
        graded = [(e, d) for e, d in grade_entries() if e not in [b for b, _ in broken]]
        names = exercises.names(ROOT)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "grades"
            subs = [ROOT / "solutions", ROOT / "exercises"] + [e for e, _ in broken] + [e for e, _ in graded]
            r = grade([*map(str, subs), "--out", str(out), "--seed-file", str(new_seed_file(tmp)),
                       "--work", str(Path(tmp) / "work")], timeout=3000)
            if r.returncode == 3:
                self.skipTest("no CUDA device")
            self.assertEqual(r.returncode, 0, (r.stdout + r.stderr)[-6000:])
            rows = read_rows(out)
            self.assertEqual(list(rows), sorted(p.name for p in subs))
            policy = policy_file.load_policy(ROOT / "grader" / "instructor" / "policy.ini") \
                if (ROOT / "grader" / "instructor" / "policy.ini").is_file() else policy_file.default_policy()
            for ex in names:
                full = scoring.fmt_points(policy.for_exercise(ex).correctness_points)
                self.assertEqual(rows["solutions"][f"{ex}_correctness"], full,
                                 f"solution of {ex}: {rows['solutions']['notes']}")
            self.assertEqual(rows["exercises"]["total"], "0", rows["exercises"]["notes"])
            for entry, expect in broken:
                ex = expect["exercise"]
                row = rows[entry.name]
                full = scoring.fmt_points(policy.for_exercise(ex).correctness_points)
                self.assertNotEqual(row[f"{ex}_correctness"], full, f"{entry.name}: {row['notes']}")
                self.assertEqual(row[f"{ex}_performance"], "0")
            for entry, expect in graded:
                ex, want = expect["exercise"], expect["grade"]
                rec = json.loads((out / f"{entry.name}.json").read_text())
                corr = [e for e in rec["exercises"] if e["exercise"] == ex][0]["score"]["correctness"]
                for g, s in corr["groups"].items():
                    if not s.get("max"):
                        continue
                    lost = g in want.get("groups_lost", [])
                    self.assertEqual(s["points"], 0 if lost else s["max"],
                                     f"{entry.name}: group {g}: {corr['reason']}")
                if want.get("flag"):
                    self.assertIn(want["flag"], rows[entry.name]["flags"], entry.name)
                if want.get("memcheck_note"):
                    # noted without cost (a CUDA API error the code got back)
                    self.assertIn(want["memcheck_note"], corr.get("memcheck", {}).get("note") or "",
                                  f"{entry.name}: {corr['reason']}")
                    self.assertNotIn("memcheck error", rows[entry.name]["flags"], entry.name)
                if want.get("performance") == "scored":
                    perf = [e for e in rec["exercises"] if e["exercise"] == ex][0]["score"]["performance"]
                    self.assertTrue(perf.get("scored"), f"{entry.name}: {perf.get('reason')}")
            # every report is there and well formed
            ET.parse(out / "junit.xml")
            for sid in rows:
                rec = json.loads((out / f"{sid}.json").read_text())
                self.assertTrue(rec["seed"]["hidden"])
                json.loads((out / "gradescope" / sid / "results.json").read_text())
            solution = json.loads((out / "solutions.json").read_text())
            for ex in solution["exercises"]:
                self.assertTrue(ex["test"]["hidden"])
                self.assertEqual(ex["test"]["status"], "pass")


FAKE_BWGRADE = r'''#!/usr/bin/env python3
# A stand-in for bwgrade: every case passes, the benchmark reaches 80% of copy.
import json, sys
a = sys.argv[1:]
mode, ex = a[0], a[1]
if mode == "test":
    doc = {"tool": "bwgrade", "mode": "test", "exercise": ex, "status": "pass", "passed": 1,
           "failed": 0, "skipped": 0, "total": 1, "hidden": "--hidden" in a,
           "cases": [{"index": 0, "group": "small", "n": 1, "offset": 0, "outcome": "pass"}]}
else:
    doc = {"tool": "bwgrade", "mode": "bench", "exercise": ex,
           "rows": [{"n": 1000, "offset": 0, "bytes": 6000, "status": "ok", "pct_copy": 80.0}]}
with open(a[a.index("--json") + 1], "w") as f:
    json.dump(doc, f)
'''


@unittest.skipUnless(os.environ.get("BWLAB_SLOW_TESTS") == "1",
                     "slow (builds with nvcc): set BWLAB_SLOW_TESTS=1")
class KitBuildTests(unittest.TestCase):
    def test_real_builds_with_a_stand_in_grader(self):
        why = toolkit_missing()
        if why:
            self.skipTest(why)
        names = exercises.names(ROOT)
        if "haxpy" not in names:
            self.skipTest("the kit has no haxpy")
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            fake = tmp / "bwgrade"
            fake.write_text(FAKE_BWGRADE)
            fake.chmod(0o755)
            # The default policy runs memcheck, and grade checks that
            # compute-sanitizer is on PATH before it starts (CI's CUDA has
            # none); the stand-in grader never calls it.
            tools = tmp / "tools"
            tools.mkdir()
            (tools / "compute-sanitizer").write_text("#!/bin/sh\nexit 1\n")
            (tools / "compute-sanitizer").chmod(0o755)
            # good: the kit's stubs compile (the stand-in grader passes them)
            good = tmp / "good"
            shutil.copytree(ROOT / "exercises", good / "exercises")
            broken = tmp / "broken"
            shutil.copytree(ROOT / "exercises", broken / "exercises")
            (broken / "exercises" / "haxpy" / "haxpy.cu").write_text(
                '#include "haxpy.h"\nint not_valid(void) { return undefined_name; }\n')
            cheat = tmp / "cheat"
            shutil.copytree(ROOT / "exercises", cheat / "exercises")
            (cheat / "exercises" / "haxpy" / "haxpy.cu").write_text(
                '#include "../../solutions/haxpy/haxpy.cu"\n')
            out = tmp / "out"
            r = grade([str(good), str(broken), str(cheat), "--out", str(out), "--bwgrade", str(fake),
                       "--seed-file", str(new_seed_file(tmp)), "--work", str(tmp / "work")], timeout=3000,
                      path_first=tools)
            self.assertEqual(r.returncode, 0, (r.stdout + r.stderr)[-6000:])
            rows = read_rows(out)
            for ex in names:
                self.assertNotEqual(rows["good"][f"{ex}_total"], "0", rows["good"]["notes"])
            self.assertEqual(rows["broken"]["haxpy_total"], "0")
            for ex in names:
                if ex != "haxpy":
                    self.assertEqual(rows["broken"][f"{ex}_total"], rows["good"][f"{ex}_total"])
            rec = json.loads((out / "broken.json").read_text())
            hx = [e for e in rec["exercises"] if e["exercise"] == "haxpy"][0]
            self.assertEqual(hx["state"], "build_failed")
            self.assertIn("exercises/haxpy/haxpy.cu", hx["build"]["log_tail"])
            self.assertIn("undefined_name", hx["build"]["log_tail"])
            # the pristine copy has no solutions/: the include cannot be found
            self.assertEqual(rows["cheat"]["haxpy_total"], "0")
            self.assertIn("suspicious #include", rows["cheat"]["notes"])
            self.assertTrue((out / "logs" / "broken" / "build_haxpy.log").is_file())


if __name__ == "__main__":
    unittest.main()

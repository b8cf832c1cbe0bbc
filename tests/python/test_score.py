"""run.py score on the CPU: a stand-in bwgrade (a Python script that writes
the JSON the real one would) in place of the GPU, and a made-up build plan.

Catches: score running something other than what grade runs (the seed, the
hidden cases, the memcheck run, the benchmark only after full correctness),
the policy not being the course's, a build problem not costing its exercise,
and the estimate line not adding up."""
import argparse
import contextlib
import io
import json
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import build, cmd_score  # noqa: E402

# Every call is logged (argv) to $LOG. A worker whose path holds "leak" has
# a memory error in the small cases; "slow" benchmarks at 30% of copy.
FAKE_BWGRADE = r'''#!/usr/bin/env python3
import json, os, sys
a = sys.argv[1:]
with open(os.environ["LOG"], "a") as f:
    f.write(json.dumps(a) + "\n")
mode, ex, worker = a[0], a[1], a[a.index("--worker") + 1]
groups = a[a.index("--groups") + 1].split(",") if "--groups" in a else ["small", "medium", "large", "special"]
cases = [{"index": i, "group": g, "n": 100 + i, "offset": 0, "outcome": "pass"}
         for i, g in enumerate(["small", "medium", "large", "special"]) if g in groups]
dev = {"name": "Stand-in GPU"}
if mode == "test":
    if "--sanitize" in a and "leak" in worker:
        for c in cases:
            if c["group"] == "small":
                c.update(outcome="cuda_error",
                         detail="========= Invalid __global__ read of size 2 bytes\n=========     at k()+0x10 in x.cu:7\n")
    bad = any(c["outcome"] != "pass" for c in cases)
    doc = {"tool": "bwgrade", "mode": "test", "exercise": ex, "status": "fail" if bad else "pass",
           "device": dev, "passed": len(cases), "failed": 0, "skipped": 0, "total": len(cases), "cases": cases}
    code = 1 if bad else 0
else:
    pct = 30.0 if "slow" in worker else 96.0
    doc = {"tool": "bwgrade", "mode": "bench", "exercise": ex, "device": dev,
           "copy": {"gbs": 3000.0, "ms_median": 1.0, "ms_q1": 0.999, "ms_q3": 1.001},
           "rows": [{"n": 268435455, "offset": 0, "bytes": 1, "status": "ok", "pct_copy": pct,
                     "ms_median": 1.0, "ms_q1": 0.999, "ms_q3": 1.001}]}
    code = 0
with open(a[a.index("--json") + 1], "w") as f:
    json.dump(doc, f)
sys.exit(code)
'''


class ScoreCommand(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.dir = Path(self.tmp.name)
        self.fake = self.dir / "bwgrade"
        self.fake.write_text(FAKE_BWGRADE)
        self.fake.chmod(0o755)
        self.log = self.dir / "calls.log"

    def score(self, workers, *argv, course=False):
        """Scored under the built-in defaults (an empty policy file), so the
        numbers hold whatever the course's policy says; course=True: no
        --policy, the course's is looked up."""
        plan = build.Plan(self.dir, bwgrade=self.fake, workers=workers)
        names = [w.exercise for w in workers]
        parser = argparse.ArgumentParser()
        cmd_score.add_arguments(parser)
        if not course and "--policy" not in argv:
            (self.dir / "defaults.ini").write_text("")
            argv = (*argv, "--policy", str(self.dir / "defaults.ini"))
        args = parser.parse_args([*names, *argv])
        out = io.StringIO()
        # compute-sanitizer "found": the stand-in bwgrade plays its part too.
        with mock.patch.object(cmd_score, "prepare", return_value=(names, "student", plan)), \
                mock.patch.object(cmd_score.optional_tools, "sanitizer_on", return_value=True), \
                mock.patch.dict("os.environ", {"LOG": str(self.log), "BWLAB_SEED": "12345"}), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = cmd_score.run(args)
        calls = [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []
        return code, out.getvalue(), calls

    def worker(self, ex, path, status="ok", message=""):
        return build.Worker(ex, "student", f"bw_worker_{ex}", Path(path) if path else None, status, message)

    def test_what_grade_runs_on_the_public_cases_and_the_estimate(self):
        report = self.dir / "score.json"
        code, out, calls = self.score(
            [self.worker("haxpy", "/w/haxpy"),
             self.worker("vector_sum", None, "build_error", "vector_sum (student) did not compile")],
            "--json", str(report))
        self.assertEqual(code, 0, out)
        # haxpy: test, memcheck over the policy's groups, then the benchmark;
        # the public cases: no seed on the command line (and $BWLAB_SEED is
        # not passed on), no --hidden
        self.assertEqual([c[0] for c in calls], ["test", "test", "bench"])
        self.assertEqual(calls[1][calls[1].index("--sanitize"):][:5],
                         ["--sanitize", "memcheck", "--groups", "small,medium,special", "--group-fail-fast"])
        for c in calls:
            self.assertNotIn("--seed", c)
            self.assertNotIn("--hidden", c)
        self.assertIn("--quick", calls[2])
        self.assertRegex(out, r"haxpy +70/70 +30/30 +96% of copy +100/100")
        self.assertRegex(out, r"vector_sum +0/70 +0/30 +- +0/100")
        self.assertIn("vector_sum correctness: compile error", out)
        self.assertIn("estimated total: 100/200 points (an estimate: the public cases on Stand-in GPU; "
                      "grading adds hidden cases and may use another GPU)", out)
        doc = json.loads(report.read_text())
        self.assertEqual((doc["total"], doc["max"], doc["estimate"]), (100, 200, True))
        self.assertEqual(doc["exercises"]["haxpy"]["memcheck_state"], "ok")

    def test_a_memory_error_and_a_slow_kernel_cost_what_grade_takes(self):
        code, out, calls = self.score([self.worker("haxpy", "/w/leak/haxpy"),
                                       self.worker("vector_sum", "/w/slow/vector_sum")])
        self.assertEqual(code, 0, out)
        # the stand-in has no huge case: small's weight is 10 of 60, 11.67 of 70 points
        self.assertRegex(out, r"haxpy +58.33/70 +0/30 +- +58.33/100")
        self.assertIn("memcheck: 1 failed; first: case 0 n=100 cuda_error: Invalid __global__ read of "
                      "size 2 bytes at k()+0x10 in x.cu:7", out)
        # no benchmark for haxpy: correctness did not pass in full
        self.assertEqual([c[0] for c in calls if "/w/leak/haxpy" in c], ["test", "test"])
        # vector_sum at 30% of copy: linear, 9 of 30
        self.assertRegex(out, r"vector_sum +70/70 +9/30 +30% of copy +79/100")
        self.assertIn("estimated total: 137.33/200", out)

    def test_the_course_policy_is_used_without_policy(self):
        # The kit with instructor files uses grader/instructor/policy.ini; the
        # student handout, the copy run.py handout packs as handout/policy.ini.
        code, out, _ = self.score([self.worker("haxpy", "/w/haxpy")], course=True)
        self.assertEqual(code, 0, out)
        expected = next((rel for rel in cmd_score.POLICY_FALLBACKS if (ROOT / rel).is_file()),
                        "(built-in defaults)")
        self.assertIn(f"policy: {expected}\n", out)

    def test_another_policy(self):
        pol = self.dir / "p.ini"
        pol.write_text("[all]\nperformance_points = 50\nmemcheck = none\n")
        code, out, calls = self.score([self.worker("haxpy", "/w/leak/haxpy")], "--policy", str(pol))
        self.assertEqual(code, 0, out)
        self.assertEqual([c[0] for c in calls], ["test", "bench"])     # no memcheck run
        self.assertRegex(out, r"haxpy +70/70 +50/50 +96% of copy +120/120")
        bad = self.dir / "bad.ini"
        bad.write_text("[all]\nmemcheck = everything\n")
        code, out, _ = self.score([self.worker("haxpy", "/w/haxpy")], "--policy", str(bad))
        self.assertEqual(code, 2)
        self.assertIn("unknown group 'everything'", out)


if __name__ == "__main__":
    unittest.main()

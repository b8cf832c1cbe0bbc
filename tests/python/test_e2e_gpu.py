"""End to end on a GPU: solutions pass, stubs are "not implemented", and every
corpus entry (tests/corpus/ENTRY/expect.json) gets its expected verdict.

Whether there is a GPU is asked of the grader itself: the stub worker is built
and run on one case; bwgrade's exit code 3 with a device message means none.
Without one, every test here is skipped with the reason "no CUDA device"
(the selftest summary lists them)."""
import contextlib
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import build, exercises  # noqa: E402
from bwlab.cmd_test import reports_no_device  # noqa: E402

TIMEOUT = 3600
_probe = {}


def probe():
    """(state, detail): state is 'gpu', 'none' (no CUDA device) or 'tools' (cannot build)."""
    if _probe:
        return _probe["state"], _probe["detail"]
    if not shutil.which("cmake"):
        state, detail = "tools", "cmake not found"
    elif not (shutil.which("nvcc") or Path("/usr/local/cuda/bin/nvcc").exists()):
        state, detail = "tools", "nvcc not found"
    else:
        first = exercises.names(ROOT)[0]
        with contextlib.redirect_stdout(io.StringIO()) as out:
            plan = build.prepare([first], "student", root=ROOT)
        w = plan.workers[0]
        if not w.ok:
            raise AssertionError(f"the stub of {first} did not build:\n{out.getvalue()}")
        p = subprocess.run([str(plan.bwgrade), "test", first, "--worker", str(w.path), "--case", "0",
                            "--quiet", "--json", "-"], capture_output=True, text=True, timeout=600)
        text = p.stderr.strip()
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = None
        if reports_no_device(p.returncode, doc):
            state, detail = "none", text
        elif p.returncode == 3:
            raise AssertionError(f"bwgrade could not run the worker (exit 3), and not for want of a device:\n{text}")
        else:
            state, detail = "gpu", text
    _probe.update(state=state, detail=detail)
    return state, detail


def run_py(*args):
    """run.py with a --json report; returns (exit code, report or None, output)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        p = subprocess.run([sys.executable, str(ROOT / "run.py"), *args, "--json", str(report)],
                           capture_output=True, text=True, cwd=ROOT, timeout=TIMEOUT)
        doc = json.loads(report.read_text()) if report.exists() else None
        return p.returncode, doc, (p.stdout + p.stderr)[-6000:]


def corpus_entries():
    base = ROOT / "tests" / "corpus"
    return sorted(d for d in base.iterdir() if (d / "expect.json").is_file()) if base.is_dir() else []


class GpuEndToEnd(unittest.TestCase):
    def setUp(self):
        state, detail = probe()
        if state == "none":
            self.skipTest("no CUDA device")
        if state == "tools":
            self.skipTest(detail)

    def test_solutions_pass_every_case(self):
        names = [n for n in exercises.names(ROOT) if build.has_solution(ROOT, n)]
        if not names:
            self.skipTest("no solutions/ in this copy of the kit")
        rc, doc, out = run_py("test", *names, "--solutions")
        self.assertIsNotNone(doc, out)
        for name in names:
            entry = doc["exercises"][name]
            with self.subTest(exercise=name):
                self.assertEqual(entry["status"], "pass", out)
                self.assertEqual(entry["failed"], 0)
                self.assertGreater(entry["total"], 0)
                self.assertEqual(entry["passed"], entry["total"] - entry.get("skipped", 0))
        self.assertEqual(rc, 0, out)

    def test_the_solutions_score_full_marks(self):
        # run.py score runs what grade runs (test, memcheck, bench --quick)
        # on the public cases: the solutions must get every point.
        names = [n for n in exercises.names(ROOT) if build.has_solution(ROOT, n)]
        if not names:
            self.skipTest("no solutions/ in this copy of the kit")
        rc, doc, out = run_py("score", *names, "--solutions")
        self.assertEqual(rc, 0, out)
        self.assertEqual(doc["total"], doc["max"], out)
        for name in names:
            self.assertEqual(doc["exercises"][name]["memcheck_state"], "ok", out)
        self.assertIn("estimated total", out)

    def test_the_benchmark_names_the_cause_and_not_for_the_solutions(self):
        # Corpus entries with a "why" expectation get a cause line holding
        # it; the solutions (above 80% of the copy) get none.
        entries = [(e, json.loads((e / "expect.json").read_text())) for e in corpus_entries()]
        entries = [(e, d) for e, d in entries if d.get("why")]
        if not entries:
            self.skipTest("no corpus entry expects a cause line")
        for entry, expect in entries:
            with self.subTest(entry=entry.name):
                rc, doc, out = run_py("benchmark", expect["exercise"], "--submission", str(entry), "--quick")
                self.assertEqual(rc, 0, out)
                why = [line for line in out.splitlines() if line.startswith("why ")]
                self.assertEqual(len(why), 1, out)
                self.assertIn(expect["why"], why[0])
        names = [n for n in exercises.names(ROOT) if build.has_solution(ROOT, n)]
        if names:
            rc, doc, out = run_py("benchmark", *names, "--solutions", "--quick")
            self.assertEqual(rc, 0, out)
            self.assertFalse([line for line in out.splitlines() if line.startswith("why ")], out)

    def test_the_benchmark_check_kernels_match_the_cpu(self):
        # The benchmark rewrites every array rotated before each call and
        # hashes it after (grader/worker/sample_check.cu, 16-byte accesses
        # shifted in registers). Its probe checks both against the CPU, bit
        # for bit, over lengths 1 to 2^20 + 3, offsets 0 to 7 and matrices:
        # a wrong shift, a lost partial vector at either end or a hash
        # index off by one fails here, not as every benchmark row's
        # "wrong output".
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        with tempfile.TemporaryDirectory() as tmp:
            exe = str(Path(tmp) / "sample_check_probe")
            p = subprocess.run([nvcc, "-O2", "-std=c++17", "-Igrader/protocol", "-Igrader/worker",
                                "tests/gpu/probes/sample_check_probe.cu", "grader/worker/sample_check.cu",
                                "-o", exe], capture_output=True, text=True, cwd=ROOT, timeout=600)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            p = subprocess.run([exe, "check"], capture_output=True, text=True, timeout=600)
        m = re.search(r"CHECK sample_check pass (\d+) of (\d+)", p.stdout)
        self.assertIsNotNone(m, p.stdout[-3000:] + p.stderr)
        self.assertEqual(m[1], m[2], p.stdout[-3000:])
        self.assertGreater(int(m[2]), 1000)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:])

    def test_a_profiled_run_without_copies_starts_no_baseline_worker(self):
        # Under ncu a second CUDA process, even an idle one, slowed the
        # profiled kernel (grader/modes/bench_mode.c), so `run.py crosscheck`'s
        # profiled run (--profile-calls, --no-copy) must start no baseline
        # worker: one that cannot start is no error there. With the copies
        # it is needed, and its failure is reported.
        if not build.has_solution(ROOT, "haxpy"):
            self.skipTest("no solutions/ in this copy of the kit")
        ex = "haxpy"   # a vector: --sizes takes one count
        with contextlib.redirect_stdout(io.StringIO()) as out:
            plan = build.prepare([ex], "solution", root=ROOT)
        w = plan.workers[0]
        self.assertTrue(w.ok, out.getvalue())
        base = [str(plan.bwgrade), "bench", ex, "--worker", str(w.path), "--quick", "--sizes",
                "4099", "--offsets", "1", "--profile-calls", "1",
                "--baseline-worker", "/nonexistent/bw_worker_baseline", "--json", "-"]
        p = subprocess.run(base + ["--no-copy"], capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        self.assertEqual([r["status"] for r in json.loads(p.stdout)["rows"]], ["ok"], p.stdout[-3000:])
        p = subprocess.run(base, capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 3, p.stdout[-3000:] + p.stderr[-3000:])
        self.assertIn("the baseline worker /nonexistent/bw_worker_baseline would not start", p.stderr)

    def test_stubs_report_not_implemented(self):
        stubs = [n for n in exercises.names(ROOT)
                 if "TODO" in (ROOT / "exercises" / n / f"{n}.cu").read_text(errors="replace")]
        if not stubs:
            self.skipTest("exercises/ no longer holds the stubs")
        rc, doc, out = run_py("test", *stubs)
        self.assertIsNotNone(doc, out)
        for name in stubs:
            with self.subTest(exercise=name):
                self.assertEqual(doc["exercises"][name]["status"], "not_implemented", out)
        self.assertEqual(rc, 1, out)

    def test_corpus_verdicts(self):
        entries = corpus_entries()
        if not entries:
            self.skipTest("no tests/corpus/*/expect.json")
        for entry in entries:
            expect = json.loads((entry / "expect.json").read_text())
            ex = expect["exercise"]
            with self.subTest(entry=entry.name):
                rc, doc, out = run_py("test", ex, "--submission", str(entry))
                self.assertIsNotNone(doc, out)
                got = doc["exercises"][ex]
                if got.get("not_run") and isinstance(expect.get("fail_fast"), dict):
                    expect = {**expect, **expect["fail_fast"]}   # it stopped early
                self.assertEqual(got["status"], expect["status"], f"{entry.name}:\n{out}")
                codes = {d.get("code") for d in got.get("diagnoses", [])}
                for code in expect.get("diagnoses", []):
                    self.assertIn(code, codes, f"{entry.name}: diagnosis '{code}' missing:\n{out}")
                outcomes = {c.get("outcome") for c in got.get("cases", [])}
                for outcome in expect.get("outcomes", []):
                    self.assertIn(outcome, outcomes, f"{entry.name}: no case with outcome '{outcome}':\n{out}")
                self.assertEqual(rc, 0 if expect["status"] == "pass" else 1, out)


if __name__ == "__main__":
    unittest.main()

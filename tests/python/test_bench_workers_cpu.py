"""bwgrade bench on the CPU stand-in (tests/unit/cpu_worker.c): which workers
a run needs. The stand-in answers HELLO and refuses BENCH, so no row is
timed (each fails); what is checked is whether bwgrade starts the baseline worker (no
student code), given one that cannot start.

It times the copies and calibrates the grader's clock; a profiled run
without copies (how `run.py crosscheck` runs) needs it for neither, and must
not start it: under ncu an idle second CUDA process slowed the profiled
kernel (grader/modes/bench_mode.c, docs/BENCHMARKS.md)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import build  # noqa: E402

NO_BASELINE = "/nonexistent/bw_worker_baseline"
WOULD_NOT_START = f"the baseline worker {NO_BASELINE} would not start"


class BaselineWorkerOnTheCpu(unittest.TestCase):
    def setUp(self):
        d = build.build_dir(ROOT)
        self.exe, self.worker = d / "bwgrade", d / "tests" / "cpu_worker"
        if not (self.exe.is_file() and self.worker.is_file()):
            self.skipTest("bwgrade or tests/cpu_worker is not built (run.py selftest builds both)")

    def bench(self, *extra):
        """(exit code, JSON report, stderr) of one row of haxpy."""
        env = dict(os.environ, CUDA_FAKE_KERNEL="haxpy.right")
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "bench.json"
            p = subprocess.run([str(self.exe), "bench", "haxpy", "--worker", str(self.worker),
                                "--sizes", "4099", "--offsets", "1", "--baseline-worker",
                                NO_BASELINE, *extra, "--json", str(report)],
                               capture_output=True, text=True, env=env, timeout=120)
            doc = json.loads(report.read_text()) if report.exists() else None
        return p.returncode, doc, p.stdout + p.stderr

    def test_a_profiled_run_without_copies_starts_none(self):
        rc, doc, out = self.bench("--profile-calls", "1", "--no-copy")
        self.assertNotIn("baseline worker", out)
        # The row reached the (stand-in) worker, which refused to time it:
        # a refusal the kit's worker never makes, so the row fails (runner.h).
        self.assertEqual(rc, 1, out)
        self.assertEqual(doc["status"], "fail", out)
        [row] = doc["rows"]
        self.assertEqual(row["status"], "crash", out)
        self.assertIn("only HELLO and RUN", row["detail"])

    def test_the_grader_clock_needs_it(self):
        rc, doc, out = self.bench("--no-copy")
        self.assertEqual(rc, 3, out)
        self.assertIn(WOULD_NOT_START, out)
        self.assertEqual(doc["rows"], [], out)

    def test_profiled_copies_need_it(self):
        rc, doc, out = self.bench("--profile-calls", "1")
        self.assertEqual(rc, 3, out)
        self.assertIn(WOULD_NOT_START, out)


if __name__ == "__main__":
    unittest.main()

"""Which cases fit the GPU is the word of a worker with no student code,
started before the student's (grader/supervisor/trusted_device.h).

A student's static constructors run before their worker answers HELLO, so
memory they take there used to shrink the free memory bwgrade sized cases
by: the cases that catch a 32-bit index were then skipped, not failed
(corpus entry hog_skips_huge). Here the CPU stand-in plays both workers;
started under a name with "hog" in it, it reports 100 MiB free
(tests/unit/cpu_worker.c), so the large group's cases (0.1-0.2 GiB each) fit
only by the trusted worker's word."""
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


class TrustedDevice(unittest.TestCase):
    def setUp(self):
        d = build.build_dir(ROOT)
        self.exe, self.worker = d / "bwgrade", d / "tests" / "cpu_worker"
        if not (self.exe.is_file() and self.worker.is_file()):
            self.skipTest("bwgrade and tests/cpu_worker are not built")
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.hog = Path(tmp.name) / "hog_worker"
        self.hog.symlink_to(self.worker)

    def grade(self, baseline: Path, *which: str, worker: Path | None = None) -> tuple[dict, str]:
        env = dict(os.environ, CUDA_FAKE_KERNEL="haxpy.right")
        env.pop("BWLAB_SEED", None)
        p = subprocess.run([str(self.exe), "test", "haxpy", "--worker", str(worker or self.hog),
                            *(which or ("--groups", "large")), "--baseline-worker", str(baseline),
                            "--json", "-"], capture_output=True, text=True, env=env, timeout=300)
        return json.loads(p.stdout), p.stderr

    def test_cases_fit_by_the_trusted_workers_word(self):
        rep, _ = self.grade(self.worker)
        self.assertEqual((rep["status"], rep["skipped"]), ("pass", 0))
        self.assertEqual(rep["passed"], len(rep["cases"]))

    def test_the_answer_comes_from_the_baseline_worker(self):
        # The same run with the "hog" as the baseline: now its 100 MiB decide,
        # and the large cases are skipped. Without this, the test above would
        # pass for a bwgrade that ignored free memory altogether.
        rep, _ = self.grade(self.hog)
        self.assertGreater(rep["skipped"], 0)
        self.assertEqual(rep["passed"] + rep["skipped"], len(rep["cases"]))

    def test_one_case_too(self):
        # run.py test --case K: the first case is measured against the free
        # memory whatever its size (the shared memory is still empty).
        rep, _ = self.grade(self.worker, "--case", "0")
        self.assertEqual((rep["passed"], rep["skipped"]), (1, 0))

    def test_only_the_file_name_makes_a_hog(self):
        # A checkout under /home/shogun/... must not turn the stand-in into one.
        d = self.hog.parent / "hogwarts"
        d.mkdir()
        (d / "worker").symlink_to(self.worker)
        rep, _ = self.grade(d / "worker", worker=d / "worker")
        self.assertEqual(rep["skipped"], 0)

    def test_without_a_baseline_worker_it_says_whose_word_it_took(self):
        rep, err = self.grade(Path("/nonexistent/bw_worker_baseline"))
        self.assertIn("decided on the free memory the student's worker reports", err)
        self.assertGreater(rep["skipped"], 0)


if __name__ == "__main__":
    unittest.main()

"""A worker's reply is not a verdict: code in the student's process can write
any reply on the worker's channel, and bwgrade once took two of them as a
case skipped, which costs nothing (scoring.py's NEUTRAL_OUTCOMES): every case
"skipped" scored full marks and a clean memcheck run.

The kit's worker never says "no CUDA device" once its HELLO found one (it
keeps that device), and refuses only a malformed request, which bwgrade does
not send; so after HELLO either reply fails the case. The CPU stand-in
(tests/unit/cpu_worker.c) plays the forger by its file name: "liar" answers
every RUN with NO_DEVICE, "refuser" with BAD_REQUEST. On the GPU, corpus
entry forges_skip does the same from inside a real worker."""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import build, scoring  # noqa: E402


class ForgedReplies(unittest.TestCase):
    def setUp(self):
        d = build.build_dir(ROOT)
        self.exe, self.worker = d / "bwgrade", d / "tests" / "cpu_worker"
        if not (self.exe.is_file() and self.worker.is_file()):
            self.skipTest("bwgrade and tests/cpu_worker are not built")
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        for name in ("liar", "refuser"):
            (self.tmp / f"{name}_worker").symlink_to(self.worker)

    def bwgrade(self, mode: str, worker: str, *extra: str) -> tuple[int, dict]:
        env = dict(os.environ, CUDA_FAKE_KERNEL="haxpy.right")
        env.pop("BWLAB_SEED", None)
        p = subprocess.run([str(self.exe), mode, "haxpy", "--worker",
                            str(self.tmp / f"{worker}_worker"), "--baseline-worker",
                            str(self.worker), *extra, "--json", "-"],
                           capture_output=True, text=True, env=env, timeout=300)
        return p.returncode, json.loads(p.stdout)

    def assert_every_case_failed(self, worker: str, words: str) -> None:
        rc, rep = self.bwgrade("test", worker, "--groups", "small,special")
        self.assertEqual((rc, rep["status"], rep["passed"]), (1, "fail", 0))
        # The first cases crash; the rest are not run after them (test_mode.c
        # gives up), which scoring counts as failed.
        crashed = [c for c in rep["cases"] if c["outcome"] == "crash"]
        self.assertTrue(crashed)
        for c in rep["cases"]:
            self.assertTrue(c["outcome"] == "crash" or c["detail"].startswith("not run:"), c)
        self.assertIn(words, crashed[0]["detail"])
        self.assertIn("the case counts as failed", crashed[0]["detail"])
        # The first line names it, without the kernel-fault hints of a crash.
        first = rep["diagnoses"][0]["text"]
        self.assertTrue(first.startswith(f"{len(crashed)} cases failed on a reply the kit's "
                                         "worker never sends"), first)
        self.assertNotIn("illegal", first)
        # Scoring sees a failed run, not one with nothing to judge.
        stats = scoring.group_stats(rep)
        self.assertEqual({g: s["passed"] + s["skipped"] for g, s in stats.items()},
                         {"small": 0, "special": 0})

    def test_no_device_after_hello_fails_the_case(self):
        self.assert_every_case_failed("liar", 'answered "no CUDA device" (cannot use CUDA '
                                              "device 0: lost) after its first answer had "
                                              "found one")

    def test_a_refused_request_fails_the_case(self):
        self.assert_every_case_failed("refuser", "the worker refused bwgrade's request "
                                                 "(cpu stand-in: an image lies past shm_bytes)")


if __name__ == "__main__":
    unittest.main()

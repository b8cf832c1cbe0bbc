"""Whose fault a worker that will not start is: bwgrade asks its own worker
(no student code; grader/supervisor/trusted_device.h), never the words of the
student's.

Two attacks this settles, each a corpus entry on the GPU: a worker that prints
"no CUDA device" and exits before HELLO made run.py grade stop the whole batch
(fakes_no_device), and one that exits only under compute-sanitizer made the
memcheck run an `error` that cost nothing (quits_under_sanitizer). Here the CPU
stand-in (tests/unit/cpu_worker.c) plays every worker, by its file name:
"dies" exits before HELLO, "sanquit" exits under the (fake) sanitizer, "nodev"
answers HELLO as a machine without a GPU does; "takesgpu" and "busy" play a GPU
another process takes meanwhile. And a worker's reply after HELLO is no
verdict either ("liar", "refuser": ForgedReplies)."""
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import build, scoring  # noqa: E402

# compute-sanitizer's part here: two of the variables the real one adds to
# its target's environment (CUDA 13.0 on the H200), then the worker (the last
# argument) run as itself.
FAKE_SANITIZER = """#!/bin/sh
for a; do last=$a; done
NV_SANITIZER_INJECTION_PORT_BASE=49152 NVTX_INJECTION64_PATH=libsanitizer-collection.so exec "$last"
"""
BROKEN_SANITIZER = """#!/bin/sh
echo "compute-sanitizer: the driver could not be loaded" >&2
exit 1
"""


class StandIns(unittest.TestCase):
    """bwgrade with the CPU stand-in playing each worker by its file name."""

    def setUp(self):
        d = build.build_dir(ROOT)
        self.exe, self.worker = d / "bwgrade", d / "tests" / "cpu_worker"
        if not (self.exe.is_file() and self.worker.is_file()):
            self.skipTest("bwgrade and tests/cpu_worker are not built")
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        for name in ("dies", "sanquit", "nodev", "takesgpu", "busy", "liar", "refuser"):
            (self.tmp / f"{name}_worker").symlink_to(self.worker)
        for folder, text in (("san", FAKE_SANITIZER), ("broken", BROKEN_SANITIZER)):
            (self.tmp / folder).mkdir()
            tool = self.tmp / folder / "compute-sanitizer"
            tool.write_text(text)
            tool.chmod(0o755)

    def bwgrade(self, mode: str, worker: str, baseline: str, *extra: str,
                sanitizer: str = "san", env_more: dict | None = None,
                preexec=None) -> tuple[int, dict, str]:
        env = dict(os.environ, CUDA_FAKE_KERNEL="haxpy.right",
                   PATH=f"{self.tmp / sanitizer}:{os.environ.get('PATH', '')}", **(env_more or {}))
        env.pop("BWLAB_SEED", None)
        path = lambda w: str(self.worker if w == "plain" else self.tmp / f"{w}_worker")  # noqa: E731
        p = subprocess.run([str(self.exe), mode, "haxpy", "--worker", path(worker),
                            "--baseline-worker", path(baseline), *extra, "--json", "-"],
                           capture_output=True, text=True, env=env, timeout=300,
                           preexec_fn=preexec)
        return p.returncode, json.loads(p.stdout), p.stderr


class BlameStart(StandIns):
    def assert_students_fault(self, rc: int, rep: dict, words: str) -> None:
        self.assertEqual((rc, rep["status"], rep["no_device"]), (1, "fail", False))
        self.assertEqual(rep["passed"], 0)
        first = rep["diagnoses"][0]["text"]
        self.assertTrue(first.startswith("No case ran: your worker ended or hung before it answered"
                                         + words), first)
        self.assertIn("the kit's worker without your code started", first)
        # Every case fails: the first ones crash, the rest are not run after
        # them, which scoring.py counts as failed.
        for c in rep["cases"]:
            self.assertTrue(c["outcome"] == "crash" or c["detail"].startswith("not run:"), c)

    def test_a_worker_that_dies_before_hello_fails_its_cases(self):
        rc, rep, _ = self.bwgrade("test", "dies", "plain", "--groups", "small")
        self.assert_students_fault(rc, rep, " bwgrade's first request, where")
        # What it printed is shown to its author, and proves nothing.
        self.assertIn("no CUDA device: cudaGetDeviceCount", rep["diagnoses"][0]["text"])

    def test_no_device_is_the_baseline_workers_word(self):
        rc, rep, _ = self.bwgrade("test", "dies", "nodev", "--groups", "small")
        self.assertEqual((rc, rep["status"], rep["no_device"]), (3, "error", True))
        self.assertIn("this machine has no GPU", rep["error"])   # the baseline's own message

    def test_a_baseline_without_a_device_does_not_stop_a_worker_that_has_one(self):
        # The CPU tests: the real baseline worker finds no GPU, the stand-in
        # plays one. The trusted word is used only to settle a failed start.
        rc, rep, _ = self.bwgrade("test", "plain", "nodev", "--groups", "small")
        self.assertEqual((rc, rep["status"], rep["no_device"]), (0, "pass", False))

    def test_without_a_baseline_nobody_is_blamed(self):
        rc, rep, _ = self.bwgrade("test", "dies", "dies", "--groups", "small")
        self.assertEqual((rc, rep["status"], rep["no_device"]), (3, "error", False))

    def test_a_gpu_taken_meanwhile_blames_nobody(self):
        # The baseline found the GPU; then the student's worker would not
        # start because another process (another lane's worker, here the
        # stand-in itself) took the GPU's memory. bwgrade asks its own worker
        # again, which fails too: the grader's error, not the student's.
        busy = {"CUDA_FAKE_BUSY": str(self.tmp / "taken")}
        for mode, extra in (("test", ("--groups", "small")), ("bench", ("--quick",))):
            (self.tmp / "taken").unlink(missing_ok=True)
            rc, rep, _ = self.bwgrade(mode, "takesgpu", "busy", *extra, env_more=busy)
            self.assertEqual((rc, rep["status"], rep["no_device"]), (3, "error", False), mode)
            self.assertIn("nor did the kit's worker without student code start just after",
                          rep["error"], mode)
            self.assertIn("cudaErrorMemoryAllocation", rep["error"], mode)   # its own word

    def test_quitting_under_the_sanitizer_fails_the_memcheck_run(self):
        rc, rep, _ = self.bwgrade("test", "sanquit", "plain", "--groups", "small")
        self.assertEqual((rc, rep["status"]), (0, "pass"))   # it passes without the sanitizer
        rc, rep, _ = self.bwgrade("test", "sanquit", "plain", "--groups", "small",
                                  "--sanitize", "memcheck")
        self.assert_students_fault(rc, rep, " bwgrade's first request under compute-sanitizer "
                                            "memcheck, where")
        rc, rep, _ = self.bwgrade("test", "plain", "plain", "--groups", "small",
                                  "--sanitize", "memcheck")
        self.assertEqual((rc, rep["status"]), (0, "pass"))   # the fake sanitizer is fair

    def test_a_broken_sanitizer_is_the_graders_error(self):
        rc, rep, _ = self.bwgrade("test", "sanquit", "plain", "--groups", "small",
                                  "--sanitize", "memcheck", sanitizer="broken")
        self.assertEqual((rc, rep["status"], rep["no_device"]), (3, "error", False))
        self.assertIn("nor did the kit's worker without student code start under "
                      "compute-sanitizer memcheck", rep["error"])

    def test_bench_says_whose_fault_it_is(self):
        rc, rep, _ = self.bwgrade("bench", "dies", "plain", "--quick")
        # The student's fault is a failed benchmark (exit 1), as test makes it
        # failed cases: exit 3 ("nothing could run") made run.py grade write a
        # PROBLEM line asking the instructor to look at it.
        self.assertEqual((rc, rep["status"], rep["no_device"]), (1, "fail", False))
        self.assertTrue(rep["rows"])
        for row in rep["rows"]:
            self.assertEqual((row["status"], row["detail"]), ("crash", rep["error"]))
        # The words test gives the same student (review F6: bench spoke of
        # "the student's worker", and gave no hint where to look).
        self.assertTrue(rep["error"].startswith("your worker ended or hung before it answered "
                                                "bwgrade's first request, where the kit's worker "
                                                "without your code started"), rep["error"])
        self.assertIn("a global object's constructor", rep["error"])
        rc, rep, _ = self.bwgrade("bench", "dies", "nodev", "--quick")
        self.assertEqual((rc, rep["no_device"]), (3, True))


class ForgedReplies(StandIns):
    """A worker's reply is not a verdict: code in the student's process can
    write any reply on the worker's channel, and bwgrade once took two of them
    as a case skipped, which costs nothing (scoring.py's NEUTRAL_OUTCOMES):
    every case "skipped" scored full marks and a clean memcheck run. The kit's
    worker never says "no CUDA device" once its HELLO found one, and refuses
    only a malformed request, which bwgrade does not send; so after HELLO
    either reply fails the case. "liar" answers every RUN with NO_DEVICE,
    "refuser" with BAD_REQUEST; on the GPU, corpus entry forges_skip does the
    same from inside a real worker."""

    def assert_every_case_failed(self, worker: str, words: str) -> None:
        # "large": a case's first chunk takes long enough to fill that the
        # worker has answered and exited before bwgrade sends it, which read
        # as "exited before replying" with the answer unread in the channel.
        rc, rep, _ = self.bwgrade("test", worker, "plain", "--groups", "small,special,large")
        self.assertEqual((rc, rep["status"], rep["passed"]), (1, "fail", 0))
        # The first cases crash; the rest are not run after them (test_mode.c
        # gives up), which scoring counts as failed.
        crashed = [c for c in rep["cases"] if c["outcome"] == "crash"]
        self.assertTrue(crashed)
        for c in rep["cases"]:
            self.assertTrue(c["outcome"] == "crash" or c["detail"].startswith("not run:"), c)
        for c in crashed:
            self.assertIn(words, c["detail"])
        self.assertIn("the case counts as failed", crashed[0]["detail"])
        # The first line names it, without the kernel-fault hints of a crash.
        first = rep["diagnoses"][0]["text"]
        self.assertTrue(first.startswith(f"{len(crashed)} cases failed on a reply the kit's "
                                         "worker never sends"), first)
        self.assertNotIn("illegal", first)
        # Scoring sees a failed run, not one with nothing to judge.
        stats = scoring.group_stats(rep)
        self.assertEqual({g: s["passed"] + s["skipped"] for g, s in stats.items()},
                         {"small": 0, "special": 0, "large": 0})

    def test_no_device_after_hello_fails_the_case(self):
        self.assert_every_case_failed("liar", 'answered "no CUDA device" (cannot use CUDA '
                                              "device 0: lost) after its first answer had "
                                              "found one")

    def test_a_refused_request_fails_the_case(self):
        self.assert_every_case_failed("refuser", "the worker refused bwgrade's request "
                                                 "(cpu stand-in: an image lies past shm_bytes)")


def _files_up_to_64_mib() -> None:
    """In bwgrade's process (before exec): no file may grow past 64 MiB, so
    its shared memory (a 256 MiB ring a case) cannot grow; SIGXFSZ ignored,
    so that ftruncate fails with EFBIG instead of killing bwgrade."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))


class GradersOwnTrouble(StandIns):
    """Shared memory bwgrade cannot reserve is its own trouble, not the
    case's: each such case used to count as skipped, which moves a group's
    weight to the others, so a run could pass with cases never judged. Now
    the run ends as an error (exit 3), with no figure and no pass."""

    def test_no_shared_memory_ends_the_test_run(self):
        rc, rep, err = self.bwgrade("test", "plain", "plain", "--groups", "small",
                                    preexec=_files_up_to_64_mib)
        self.assertEqual((rc, rep["status"], rep["no_device"]), (3, "error", False))
        self.assertIn("bwgrade could not reserve 268435456 bytes of shared memory", rep["error"])
        self.assertIn("File too large", rep["error"])
        self.assertEqual(rep["passed"], 0)
        self.assertFalse([c for c in rep["cases"] if c["outcome"] in ("pass", "skipped")])

    def test_no_shared_memory_ends_the_benchmark(self):
        rc, rep, _ = self.bwgrade("bench", "plain", "plain", "--quick",
                                  preexec=_files_up_to_64_mib)
        self.assertEqual((rc, rep["status"]), (3, "error"))
        self.assertIn("could not reserve", rep["error"])
        self.assertFalse([r for r in rep["rows"] if r["status"] == "ok"])


if __name__ == "__main__":
    unittest.main()

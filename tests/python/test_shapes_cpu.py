"""Every shape end to end on the CPU: bwgrade test, with the hidden cases,
runs correct and broken kernels written in C (tests/unit/cpu_shapes.c)
through the CPU stand-in worker for saxpy (fp32), reduce_sum (a reduction)
and transpose (a matrix). The correct ones pass every case of every group
but the largest; each broken one gets the diagnosis a student should read
first. Also: the race re-run of a reduction forgives what the order of
float additions changes, and nothing more."""
import json
import os
import subprocess
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import build  # noqa: E402

# A correct kernel runs every group but the largest (huge needs a GPU's
# memory); a broken one shows its pattern without the large group, which
# costs the most CPU time here.
ALL_GROUPS = "small,medium,large,special"
GROUPS = "small,medium,special"

# (exercise, kernel): the status and the first diagnosis (None: passes).
EXPECT = {
    ("saxpy", "right"): ("pass", None),
    ("saxpy", "nothing"): ("not_implemented", "not_implemented"),
    ("saxpy", "no_tail"): ("fail", "tail"),
    ("saxpy", "past_end"): ("fail", "tail"),
    ("saxpy", "ftz"): ("fail", "special_values"),
    ("reduce_sum", "right"): ("pass", None),
    ("reduce_sum", "nothing"): ("not_implemented", "not_implemented"),
    ("reduce_sum", "bf16_acc"): ("fail", "precision"),
    ("reduce_sum", "lost_tail"): ("fail", "lost_elements"),
    ("reduce_sum", "twice_first"): ("fail", "counted_twice"),
    ("reduce_sum", "not_zeroed"): ("fail", "not_zeroed"),
    ("reduce_sum", "lost_block"): ("fail", "lost_elements"),
    ("reduce_sum", "racy"): ("fail", "race"),
    ("transpose", "right"): ("pass", None),
    ("transpose", "nothing"): ("not_implemented", "not_implemented"),
    ("transpose", "copy"): ("fail", "copied"),
    ("transpose", "swapped"): ("fail", "dims_swapped"),
    ("transpose", "edge32"): ("fail", "edge_tiles"),
}


def tools() -> tuple[Path, Path] | None:
    d = build.build_dir(ROOT)
    exe, worker = d / "bwgrade", d / "tests" / "cpu_worker"
    return (exe, worker) if exe.is_file() and worker.is_file() else None


_RUNS: dict[tuple[str, str], dict] = {}


def run(exe: Path, worker: Path, ex: str, kernel: str) -> dict:
    """bwgrade test's JSON for one kernel (each kernel runs once per process)."""
    if (ex, kernel) not in _RUNS:
        env = dict(os.environ, CUDA_FAKE_KERNEL=f"{ex}.{kernel}")
        env.pop("BWLAB_SEED", None)
        groups = ALL_GROUPS if kernel == "right" else GROUPS
        p = subprocess.run([str(exe), "test", ex, "--worker", str(worker), "--hidden", "--groups",
                            groups, "--json", "-"], capture_output=True, text=True, env=env,
                           timeout=600)
        _RUNS[(ex, kernel)] = json.loads(p.stdout)
    return _RUNS[(ex, kernel)]


@unittest.skipUnless(os.environ.get("BWLAB_SLOW_TESTS") == "1",
                     "slow (about a minute of bwgrade on the CPU stand-in): set BWLAB_SLOW_TESTS=1")
class ShapesOnTheCpu(unittest.TestCase):
    def setUp(self):
        t = tools()
        if t is None:
            self.skipTest("bwgrade or tests/cpu_worker is not built (run.py selftest builds both)")
        self.exe, self.worker = t

    def test_each_kernel_gets_its_verdict_and_first_diagnosis(self):
        for (ex, kernel), (status, first) in EXPECT.items():
            with self.subTest(exercise=ex, kernel=kernel):
                rep = run(self.exe, self.worker, ex, kernel)
                codes = [d["code"] for d in rep.get("diagnoses") or []]
                self.assertEqual(rep["status"], status, codes)
                self.assertEqual(codes[0] if codes else None, first, codes)
                if status == "pass":
                    self.assertEqual(rep["passed"], rep["total"])

    def test_a_reduction_names_the_lost_element(self):
        # The spike cases make the difference exact: the diagnosis says which
        # index went missing, here the tail's (n - 1 is always a spike).
        rep = run(self.exe, self.worker, "reduce_sum", "lost_tail")
        text = rep["diagnoses"][0]["text"]
        self.assertIn("was not added", text)
        self.assertIn("in the tail", text)

    def test_atomics_reordering_is_no_race_but_a_lost_block_is(self):
        # The correct kernel adds its blocks in a scrambled order: a second run
        # can differ in the last bits, within the bound. racy loses a block's
        # sum on every other run: far more than the bound.
        self.assertFalse(any(c.get("nondeterministic") for c in
                             run(self.exe, self.worker, "reduce_sum", "not_zeroed")["cases"]))
        racy = run(self.exe, self.worker, "reduce_sum", "racy")
        self.assertTrue(any(c.get("nondeterministic") for c in racy["cases"]))

    def test_a_matrix_case_reports_its_shape(self):
        rep = run(self.exe, self.worker, "transpose", "copy")
        case = next(c for c in rep["cases"] if c["outcome"] == "fail")
        self.assertEqual(case["rows"] * case["cols"], case["n"])
        self.assertEqual(case["copy_like"], case["mismatches"])


if __name__ == "__main__":
    unittest.main()

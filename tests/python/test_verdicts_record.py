"""The recorded verdicts (tests/data/verdicts): today's case tables are the
recorded ones, and record_verdicts.py's comparison finds a changed verdict."""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))
sys.path.insert(0, str(ROOT / "tests" / "gpu"))

from bwlab import build  # noqa: E402

DATA = ROOT / "tests" / "data" / "verdicts"


def bwgrade() -> Path | None:
    exe = build.executable(build.build_dir(ROOT), "bwgrade")
    return exe if exe is not None and exe.is_file() else None


@unittest.skipUnless(DATA.is_dir() and (ROOT / "tests" / "gpu").is_dir(),
                     "no recorded verdicts in this copy of the kit (the student handout)")
class Record(unittest.TestCase):
    def test_case_tables_are_the_recorded_ones(self):
        # Catches any change to the cases a seed gives (sizes, offsets,
        # alphas, value kinds, groups), hidden ones included.
        exe = bwgrade()
        if exe is None:
            self.skipTest("bwgrade is not built (run.py selftest builds it)")
        env = {k: v for k, v in os.environ.items() if k != "BWLAB_SEED"}
        for ex in ("haxpy", "vector_sum"):
            with self.subTest(exercise=ex):
                out = subprocess.run([str(exe), "cases", ex, "--hidden"], capture_output=True,
                                     text=True, env=env, check=True).stdout
                self.assertEqual(out, (DATA / f"cases_{ex}.txt").read_text())

    def test_the_comparison_sees_one_changed_case(self):
        import record_verdicts
        old = json.loads((DATA / "h100_public_seed.json").read_text())
        self.assertGreater(len(old), 40)
        self.assertEqual(record_verdicts.compare(old, old), [])
        new = json.loads(json.dumps(old))
        runs = new["off_by_one_write/haxpy"]["cases"]
        runs[0][0] = runs[0][0].replace("fail", "pass", 1)
        self.assertEqual(record_verdicts.compare(old, new), ["off_by_one_write/haxpy: cases differs"])
        del new["stubs/haxpy"]
        self.assertIn("stubs/haxpy: only in the old record", record_verdicts.compare(old, new))

    def test_recording_reads_run_py_reports(self):
        import record_verdicts
        rep = {"exercises": {"haxpy": {"status": "fail", "diagnoses": [{"code": "tail", "text": "t"}],
                                       "cases": [{"index": 1, "outcome": "fail"},
                                                 {"index": 0, "outcome": "pass"},
                                                 {"index": 2, "outcome": "fail"}]}}}
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "e.json").write_text(json.dumps(rep))
            doc = record_verdicts.record(Path(tmp))
        self.assertEqual(doc["e/haxpy"]["diagnoses"], [["tail", "t"]])
        self.assertEqual([n for _, n in doc["e/haxpy"]["cases"]], [1, 2])   # sorted by index, runs


@unittest.skipUnless(os.environ.get("BWLAB_SLOW_TESTS") == "1",
                     "slow (about a minute: 29 runs of bwgrade test on the CPU stand-in worker): "
                     "set BWLAB_SLOW_TESTS=1")
@unittest.skipUnless((DATA / "cpu_stand_in.json").is_file(),
                     "no recorded verdicts in this copy of the kit (the student handout)")
class CpuVerdicts(unittest.TestCase):
    def test_the_judge_gives_the_recorded_verdicts(self):
        # Every case's outcome and findings, every diagnosis and the text
        # report of bwgrade test (hidden cases included) for correct and
        # broken kernels written in C: any change to cases, inputs, checks,
        # diagnoses or reports of haxpy and vector_sum shows here.
        exe = bwgrade()
        worker = build.build_dir(ROOT) / "tests" / "cpu_worker"
        if exe is None or not worker.is_file():
            self.skipTest("bwgrade or tests/cpu_worker is not built (run.py selftest builds both)")
        sys.path.insert(0, str(ROOT / "tests"))
        import cpu_verdicts
        old = json.loads((DATA / "cpu_stand_in.json").read_text())
        diffs = cpu_verdicts.compare(old, cpu_verdicts.record(exe.parent))
        self.assertEqual(diffs, [], "\n".join(diffs[:5]))

    def test_the_comparison_sees_a_changed_case(self):
        sys.path.insert(0, str(ROOT / "tests"))
        import cpu_verdicts
        old = json.loads((DATA / "cpu_stand_in.json").read_text())
        new = json.loads(json.dumps(old))
        new["haxpy/no_tail"]["cases_sha256"] = "0" * 64
        self.assertEqual(len(cpu_verdicts.compare(old, new)), 1)


if __name__ == "__main__":
    unittest.main()

"""Instructor-side grading, the batch's machinery: the grader built beside
the first builds, lanes on several GPUs each holding a CUDA context, shards
and their merge, and the time limits of the processes it runs. CPU only,
with the fake runner (grading_fixtures.py) or stand-in programs. (Not in the
student handout: handout_files.DENY leaves it out.)"""
import contextlib
import io
import json
import os
import tempfile
import threading
import time
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

from grading_fixtures import (EXERCISES, ROOT, SECRET, BatchCase, FakeRunner, read_csv, run_grade,
                              run_merge, strip_times)
from bwlab import child_run, grade_runner, submission_ids


class BatchLaneTests(BatchCase, unittest.TestCase):
    def test_the_grader_builds_while_submissions_build_but_before_any_run(self):
        """Catches the grader's build delaying the first submission's build
        (the batch's fixed cost), and a lane running bwgrade before it exists."""
        class SlowSetup(FakeRunner):
            def __init__(self):
                super().__init__()
                self.builds_during_setup = threading.Event()
                self.setup_over = threading.Event()
                self.early_runs = 0

            def setup(self, timeout):
                # Returns once a build has started, so a serial setup would wait here
                # for ever; the 30 s bound keeps a broken version from hanging the suite.
                self.builds_during_setup.wait(30)
                time.sleep(0.05)
                self.setup_over.set()

            def build(self, sub, sid, timeout):
                self.builds_during_setup.set()
                return super().build(sub, sid, timeout)

            def test(self, *args):
                self.early_runs += not self.setup_over.is_set()
                return super().test(*args)

        runner = SlowSetup()
        t0 = time.monotonic()
        code, text, _ = self.grade("--gpus", "0,1", runner=runner, out="overlap")
        self.assertEqual(code, 0, text)
        self.assertLess(time.monotonic() - t0, 20, "the grader's build waited for the builds")
        self.assertTrue(runner.setup_over.is_set())
        self.assertEqual(runner.early_runs, 0)
        self.assertRegex(text, r"time: batch [0-9.]+ s wall \(bwgrade built in [0-9.]+ s alongside "
                               r"the first builds, first run after [0-9.]+ s\); 2 lanes busy")

    def test_each_lane_holds_a_context_on_its_gpu_while_it_works(self):
        """One held context per lane, on that lane's GPU, taken after the
        grader is built and before the lane's first run, closed when the
        batch ends. Catches a lane without one, a context on the wrong GPU,
        one taken per submission, and one left open after the batch."""
        class Holding(FakeRunner):
            def __init__(self):
                super().__init__()
                self.setup_over = False
                self.holds = []    # [gpu, taken after setup, runs before it, closed]

            def setup(self, timeout):
                time.sleep(0.05)
                self.setup_over = True

            def hold_context(self, env):
                runner = self
                with self.lock:
                    runs = sum(1 for c in self.calls if c[4].get("CUDA_VISIBLE_DEVICES")
                               == env.get("CUDA_VISIBLE_DEVICES"))
                    rec = [env.get("CUDA_VISIBLE_DEVICES"), self.setup_over, runs, False]
                    self.holds.append(rec)

                class Hold:
                    def close(self):
                        with runner.lock:
                            rec[3] = True
                return Hold()

        runner = Holding()
        code, text, _ = self.grade("--gpus", "0,1", runner=runner, out="hold")
        self.assertEqual(code, 0, text)
        self.assertEqual(sorted(h[0] for h in runner.holds), ["0", "1"])
        for gpu, after_setup, runs_before, closed in runner.holds:
            self.assertTrue(after_setup, f"GPU {gpu}: held before bwhold was built")
            self.assertEqual(runs_before, 0, f"GPU {gpu}: held after the lane's first run")
            self.assertTrue(closed, f"GPU {gpu}: still held after the batch")

    def test_a_grader_that_does_not_build_stops_the_batch_with_exit_4(self):
        class BrokenKit(FakeRunner):
            def setup(self, timeout):
                raise grade_runner.build.KitError("the grader did not build (exit 2)", ["grader/modes/main.c:1: error"])

        code, text, runner = self.grade(runner=BrokenKit(), out="broken_kit")
        self.assertEqual(code, 4, text)
        self.assertIn("the grader did not build (exit 2)", text)
        self.assertIn("grader/modes/main.c:1: error", text)
        self.assertFalse([c for c in runner.calls if c[0] == "test"])
        self.assertEqual([p.name for p in (self.dir / "broken_kit").glob("*.json")], ["manifest.json"])

    def test_gpus_run_in_parallel_lanes_with_the_same_results(self):
        code, text, runner = self.grade("--gpus", "0,1,2", "--jobs", "3", out="gpus")
        self.assertEqual(code, 0, text)
        seen = {c[4].get("CUDA_VISIBLE_DEVICES") for c in runner.calls}
        self.assertTrue(seen <= {"0", "1", "2"} and seen, seen)
        code, text, _ = self.grade(out="serial")
        self.assertEqual((self.dir / "gpus" / "gradebook.csv").read_bytes(),
                         (self.dir / "serial" / "gradebook.csv").read_bytes())
        recs = [json.loads(p.read_text()) for p in (self.dir / "gpus").glob("*.json")
                if p.name != "manifest.json"]
        self.assertTrue(all(r["gpu"] in ("0", "1", "2") for r in recs))


class ShardTests(BatchCase, unittest.TestCase):
    def test_shard_selection_is_one_based_and_covers_everyone_once(self):
        ids = [f"s{i:02d}" for i in range(10)][::-1]
        self.assertEqual(submission_ids.shard_select(ids, (1, 3)), ["s00", "s03", "s06", "s09"])
        self.assertEqual(submission_ids.shard_select(ids, (3, 3)), ["s02", "s05", "s08"])
        union = sum((submission_ids.shard_select(ids, (k, 4)) for k in range(1, 5)), [])
        self.assertEqual(sorted(union), sorted(ids))
        self.assertEqual(submission_ids.parse_shard("2/5"), (2, 5))
        for bad in ("0/1", "2/1", "1", "a/b", "1/0"):
            with self.assertRaises(ValueError):
                submission_ids.parse_shard(bad)

    def test_shards_merge_into_exactly_the_unsharded_gradebook(self):
        code, text, _ = self.grade(out="all")
        self.assertEqual(code, 0, text)
        folders = []
        for k in (1, 2, 3, 4):
            code, text, _ = self.grade("--shard", f"{k}/4", out=f"shard{k}")
            self.assertEqual(code, 0, text)
            folders.append(str(self.dir / f"shard{k}"))
        # one of them is empty: 6 submissions in 4 shards
        self.assertEqual(len(read_csv(self.dir / "shard4" / "gradebook.csv")), 1)
        code, text = run_merge(*folders, "--out", str(self.dir / "merged"))
        self.assertEqual(code, 0, text)
        a = (self.dir / "all" / "gradebook.csv").read_bytes()
        b = (self.dir / "merged" / "gradebook.csv").read_bytes()
        self.assertEqual(a, b)
        ja, jb = (strip_times(ET.parse(self.dir / d / "junit.xml").getroot()) for d in ("all", "merged"))
        self.assertEqual(ja, jb)
        for sid in ("alice", "gina"):
            self.assertEqual((self.dir / "all" / "gradescope" / sid / "results.json").read_text(),
                             (self.dir / "merged" / "gradescope" / sid / "results.json").read_text())
        # a missing shard is reported (exit 1), a shard given twice is refused
        code, text = run_merge(*folders[:3], "--out", str(self.dir / "m2"))
        self.assertEqual(code, 1)
        self.assertIn("missing shards: 4/4", text)
        code, text = run_merge(folders[0], folders[0], "--out", str(self.dir / "m3"))
        self.assertEqual(code, 2)
        code, text = run_merge(str(self.dir / "all"), folders[0], "--out", str(self.dir / "m4"))
        self.assertEqual(code, 2, text)     # the same submission in two folders

    def test_merge_refuses_mixed_seeds(self):
        self.grade("--shard", "1/2", out="s1")
        other = self.dir / "other_seed"
        other.write_text(f"{SECRET + 2}\n")
        code, text = run_grade(FakeRunner(), *self.make_batch(), "--out", str(self.dir / "s2"),
                               "--seed-file", str(other), "--shard", "2/2")
        code, text = run_merge(str(self.dir / "s1"), str(self.dir / "s2"), "--out", str(self.dir / "m"))
        self.assertEqual(code, 2)
        self.assertIn("seed", text)


# --------------------------------------------------------------------------
# Time limits


class RunLimitedTests(unittest.TestCase):
    def test_a_hang_is_killed_with_its_whole_process_group(self):
        with tempfile.TemporaryDirectory() as tmp:
            pidfile = Path(tmp) / "child.pid"
            script = f"sleep 60 & echo $! > {pidfile}; echo started; wait"
            t0 = time.monotonic()
            r = child_run.run_limited(["sh", "-c", script], timeout=1.0)
            self.assertTrue(r.timed_out)
            self.assertIsNone(r.rc)
            self.assertLess(time.monotonic() - t0, 30)
            self.assertIn("started", r.output)
            pid = int(pidfile.read_text())
            for _ in range(50):
                if not _alive(pid):
                    break
                time.sleep(0.1)
            self.assertFalse(_alive(pid), "the background child survived")

    def test_exit_code_and_output(self):
        r = child_run.run_limited(["sh", "-c", "echo out; echo err >&2; exit 7"], timeout=30)
        self.assertEqual((r.rc, r.timed_out), (7, False))
        self.assertIn("out", r.output)
        self.assertIn("err", r.output)
        r = child_run.run_limited(["/nonexistent/tool"], timeout=5)
        self.assertIsNone(r.rc)


class ContextHoldTests(unittest.TestCase):
    """KitRunner.hold_context with a stand-in bwhold beside a stand-in
    bwgrade: it starts with the lane's environment and ends when closed.
    Catches a holder that outlives its lane (closing without ending it) or
    runs on another GPU, and a missing bwhold stopping the batch."""

    def test_the_holder_runs_on_the_lanes_gpu_until_closed(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            log = tmp / "log"
            fake = tmp / "bwhold"
            fake.write_text(f"#!/bin/sh\necho \"held $CUDA_VISIBLE_DEVICES\" >> {log}\n"
                            f"cat > /dev/null\necho released >> {log}\n")
            fake.chmod(0o755)
            (tmp / "bwgrade").write_text("")
            runner = grade_runner.KitRunner(ROOT, tmp, EXERCISES, bwgrade=tmp / "bwgrade")
            hold = runner.hold_context({**os.environ, "CUDA_VISIBLE_DEVICES": "1"})
            self.assertIsNotNone(hold)
            proc = hold.proc
            for _ in range(100):
                if log.exists() and "held" in log.read_text():
                    break
                time.sleep(0.05)
            self.assertEqual(log.read_text(), "held 1\n")
            self.assertIsNone(proc.poll(), "bwhold ended before it was closed")
            hold.close()
            self.assertEqual(proc.returncode, 0)
            self.assertEqual(log.read_text(), "held 1\nreleased\n")
            hold.close()   # twice is harmless

            fake.unlink()
            self.assertIsNone(runner.hold_context(dict(os.environ)))

    def test_a_holder_that_gives_up_is_reported_once_the_lane_ends(self):
        """bwhold refuses an exclusive compute mode (or finds no context): the
        batch goes on, and the instructor is told why it ran slower. Catches
        the reason being dropped."""
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            fake = tmp / "bwhold"
            fake.write_text("#!/bin/sh\necho 'bwhold: the GPU is not in the default compute mode "
                            "(mode 3); holding no context' >&2\nexit 1\n")
            fake.chmod(0o755)
            (tmp / "bwgrade").write_text("")
            runner = grade_runner.KitRunner(ROOT, tmp, EXERCISES, bwgrade=tmp / "bwgrade")
            hold = runner.hold_context(dict(os.environ))
            hold.proc.wait(timeout=30)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                hold.close()
            self.assertIn("not in the default compute mode (mode 3)", out.getvalue())
            self.assertIn("started without a held context", out.getvalue())


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


if __name__ == "__main__":
    unittest.main()

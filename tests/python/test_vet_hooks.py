"""vet.py's hooks in build.py, grade_runner.py and scoring.py (mocked: no
nvcc), and the unsafe switch that bypasses vetting.

Each test names the broken vetting it would catch."""
import json
import os
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import build, scoring, vet  # noqa: E402


class SkipSwitchTests(unittest.TestCase):
    """BWLAB_UNSAFE_SKIP_VET: vetting off on purpose, loudly, and recorded."""

    def test_switch_values(self):
        for v in ("1", "yes", "ON", "true"):
            self.assertTrue(vet.skip_requested({vet.SKIP_ENV: v}), v)
        for v in ("", "0", "no", "off"):
            self.assertFalse(vet.skip_requested({vet.SKIP_ENV: v}), v)
        self.assertFalse(vet.skip_requested({}))
        self.assertIn("UNSAFE", vet.SKIP_ENV)

    def test_test_runs_unvetted_and_says_so(self):
        # Catches a switch that run.py test ignores, or that is quiet.
        bad = vet.Refusal("x", "system_call", "syscall")
        w = build.Worker("haxpy", "submission", "bw_worker_haxpy")
        with mock.patch.dict(os.environ, {vet.SKIP_ENV: "1"}), \
                mock.patch.object(build, "build_target", return_value=(True, [])), \
                mock.patch.object(build, "executable", return_value=Path("/x/w")), \
                mock.patch.object(vet, "vet_built", return_value=bad) as vb, \
                mock.patch.object(build.console, "warn") as warn, \
                mock.patch.object(build.console, "say"):
            build._build_worker(w, Path("/x"), False, {})
        vb.assert_not_called()
        self.assertEqual(w.status, "ok")
        said = " ".join(c.args[0] for c in warn.call_args_list)
        self.assertIn("UNSAFE", said)
        self.assertIn(vet.SKIP_ENV, said)
        self.assertIn("NOT vetted", said)
        with mock.patch.dict(os.environ, {vet.SKIP_ENV: "1"}), \
                mock.patch.object(vet, "find_object") as fo:
            self.assertFalse(build._object_refused(w, Path("/x"), 0.0))
        fo.assert_not_called()

    def test_grade_runs_unvetted_and_records_it(self):
        # Catches run.py grade ignoring the switch, or grading with it
        # without the manifest, every gradebook row and the console saying so.
        from bwlab import grade_runner
        here = Path(__file__).resolve().parent
        if not (here / "grading_fixtures.py").is_file():
            self.skipTest("no grading_fixtures.py (its fake runner) in this copy of the kit (the student handout)")
        sys.path.insert(0, str(here))
        import grading_fixtures as tg
        with mock.patch.dict(os.environ, {vet.SKIP_ENV: "1"}), \
                mock.patch.object(vet, "vet_built") as vb:
            self.assertIsNone(grade_runner._vet(Path("/x"), "bw_worker_haxpy", "haxpy"))
        vb.assert_not_called()
        for skip in (False, True):
            with self.subTest(skip=skip), tempfile.TemporaryDirectory() as tmp, \
                    mock.patch.dict(os.environ, {vet.SKIP_ENV: "1" if skip else "0"}), \
                    tg.mock_env({"BWLAB_SECRET_SEED": None, "BWLAB_SEED": None}):
                d = Path(tmp)
                (d / "seed").write_text(f"{tg.SECRET}\n")
                sub = tg.write_sub(d / "subs" / "amy", tg.GOOD)
                code, text = tg.run_grade(tg.FakeRunner(), str(sub), "--out", str(d / "out"),
                                          "--seed-file", str(d / "seed"), "--sandbox", "none")
                self.assertEqual(code, 0, text)
                manifest = json.loads((d / "out" / "manifest.json").read_text())
                notes = tg.read_csv(d / "out" / "gradebook.csv")[0]["notes"]
                if skip:
                    self.assertEqual(manifest["vetting"], f"SKIPPED ({vet.SKIP_ENV}=1)")
                    self.assertIn("UNSAFE: graded without vetting", notes)
                    self.assertIn(f"UNSAFE: {vet.SKIP_ENV}", text)
                else:
                    self.assertEqual(manifest["vetting"], "on")
                    self.assertNotIn("UNSAFE", notes + text)


class HookTests(unittest.TestCase):
    """build.py vets student and submission workers, and only those."""

    def run_build(self, label, refusal):
        w = build.Worker("haxpy", label, "bw_worker_haxpy")
        with mock.patch.object(build, "build_target", return_value=(True, [])), \
                mock.patch.object(build, "executable", return_value=Path("/x/bw_worker_haxpy")), \
                mock.patch.object(vet, "vet_built", return_value=refusal) as vb, \
                mock.patch.object(build.console, "say"):
            build._build_worker(w, Path("/x"), False, {})
        return w, vb

    def test_student_refused(self):
        # Catches a hook that is never called, or that leaves the worker runnable.
        bad = vet.Refusal("exit", "interposition", "your file defines exit")
        for label in ("student", "submission"):
            w, vb = self.run_build(label, bad)
            vb.assert_called_once()
            self.assertEqual(w.status, "refused")
            self.assertFalse(w.ok)
            self.assertIsNone(w.path)
            self.assertIn("defines exit", w.message)

    def test_kit_workers_not_vetted(self):
        # Catches vetting the kit's own peers (the CUB peer would be refused).
        bad = vet.Refusal("x", "library", "uses CUB")
        for label in ("solution", "cub", "cublas"):
            w, vb = self.run_build(label, bad)
            vb.assert_not_called()
            self.assertEqual(w.status, "ok")

    def test_test_warns_without_objdump(self):
        # Catches run.py test dropping vet.py's warning (the student would not
        # know the system call rule was skipped), or refusing for it.
        w = build.Worker("haxpy", "student", "bw_worker_haxpy")

        def fake(*a, warnings=None, strict=True, **k):
            self.assertFalse(strict)
            warnings.append("was not checked for system call instructions")
            return None

        with mock.patch.object(build, "build_target", return_value=(True, [])), \
                mock.patch.object(build, "executable", return_value=Path("/x/w")), \
                mock.patch.object(vet, "vet_built", side_effect=fake), \
                mock.patch.object(build.console, "warn") as warn, \
                mock.patch.object(build.console, "say"):
            build._build_worker(w, Path("/x"), False, {})
        self.assertEqual(w.status, "ok")
        self.assertIn("system call", warn.call_args.args[0])

    def test_grade_is_strict(self):
        # Catches run.py grade grading a file it could not disassemble.
        from bwlab import grade_runner
        with mock.patch.object(vet, "vet_built", return_value=None) as vb:
            grade_runner._vet(Path("/x"), "bw_worker_haxpy", "haxpy")
        self.assertTrue(vb.call_args.kwargs.get("strict"))
        with mock.patch.object(vet, "vet_built", side_effect=vet.DisassemblerMissing("objdump was not found")):
            self.assertIn("could not be checked (objdump", grade_runner._vet(Path("/x"), "t", "haxpy"))

    def test_vet_error_fails_closed(self):
        w = build.Worker("haxpy", "student", "bw_worker_haxpy")
        with mock.patch.object(build, "build_target", return_value=(True, [])), \
                mock.patch.object(build, "executable", return_value=Path("/x/w")), \
                mock.patch.object(vet, "vet_built", side_effect=vet.VetError("nm was not found")), \
                mock.patch.object(build.console, "say"):
            build._build_worker(w, Path("/x"), False, {})
        self.assertEqual(w.status, "refused")
        self.assertIn("nm was not found", w.lines)

    def test_grade_hook_reason(self):
        # Catches run.py grade running a refused worker or losing the reason.
        from bwlab import grade_runner
        with mock.patch.object(vet, "vet_built", return_value=None):
            self.assertIsNone(grade_runner._vet(Path("/x"), "bw_worker_haxpy", "haxpy"))
        bad = vet.Refusal("exit", "interposition", "your file defines exit")
        with mock.patch.object(vet, "vet_built", return_value=bad):
            self.assertEqual(grade_runner._vet(Path("/x"), "bw_worker_haxpy", "haxpy"),
                             "refused: your file defines exit")
        with mock.patch.object(vet, "vet_built", side_effect=vet.VetError("no nm")):
            self.assertIn("could not be checked", grade_runner._vet(Path("/x"), "t", "haxpy"))

    def test_refused_scores_zero_with_reason(self):
        reason = scoring._unrunnable_reason({"state": "refused", "reason": "refused: defines exit"})
        self.assertEqual(reason, "refused: defines exit")


if __name__ == "__main__":
    unittest.main()

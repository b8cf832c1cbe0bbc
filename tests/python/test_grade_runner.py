"""KitRunner for real: CMake and nvcc build the grader's tree and three
submissions (the handout's stubs, a compile error, a link error) against it (no GPU needed; skipped without nvcc or cmake).

The kit's worker code (bwworker, bwref, the adapters) is built once, in the
grader's tree, while the first submissions configure; each submission then
compiles only its own files. Each test names the broken build it catches."""
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import build, exercises  # noqa: E402
from bwlab.grade_runner import KitRunner  # noqa: E402

TABLE = exercises.names(ROOT)   # every exercise: the runner builds them all

# haxpy as declared, but with alpha a double: compiles, cannot link.
WRONG_SIGNATURE = """\
#include "haxpy.h"
void haxpy(int n, double alpha, const nv_bfloat16 *x, nv_bfloat16 *y) {}
"""


def _tools_missing() -> str | None:
    path = build.tool_env().get("PATH")
    for tool in ("nvcc", "cmake", "nm"):
        if shutil.which(tool, path=path) is None:
            return f"{tool} not found"
    return None


class PrebuiltKitCode(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = _tools_missing()
        if why:
            raise unittest.SkipTest(why)
        cls.tmp = Path(tempfile.mkdtemp(prefix="bwlab-runner-test-"))
        subs = cls.tmp / "subs"
        broken = subs / "broken" / "exercises"
        (broken / "haxpy").mkdir(parents=True)   # the handout's stub: it compiles
        shutil.copy(ROOT / "exercises" / "haxpy" / "haxpy.cu", broken / "haxpy" / "haxpy.cu")
        (broken / "vector_sum").mkdir(parents=True)
        (broken / "vector_sum" / "vector_sum.cu").write_text('#include "vector_sum.h"\n#error a typo\n')
        (subs / "unlinkable" / "exercises" / "haxpy").mkdir(parents=True)
        (subs / "unlinkable" / "exercises" / "haxpy" / "haxpy.cu").write_text(WRONG_SIGNATURE)
        (cls.tmp / "work").mkdir()   # run.py grade's mkdtemp
        cls.runner = KitRunner(ROOT, cls.tmp / "work", TABLE, build_jobs=2)
        cls.runner._archs, cls.runner._archs_read = "90", True   # no GPU to ask
        # As run.py grade does: the grader's tree builds while submissions configure.
        setup_error = []

        def setup():
            try:
                cls.runner.setup(900)
            except Exception as e:  # noqa: BLE001 - reported by the tests
                setup_error.append(e)

        t = threading.Thread(target=setup)
        t.start()
        cls.built = {}
        for sid, path in (("stubs", ROOT / "exercises"), ("broken", subs / "broken"),
                          ("unlinkable", subs / "unlinkable")):
            cls.built[sid] = cls.runner.build(cls.runner.load(path), sid, 900)
        t.join()
        cls.setup_error = setup_error
        # run.py grade --exercises haxpy: a runner for a subset, on the same
        # grader tree (its set-up built every adapter already).
        sub = KitRunner(ROOT, cls.tmp / "work", ["haxpy"], build_jobs=2)
        sub._archs, sub._archs_read = "90", True
        sub._prebuilt, sub.bwgrade = cls.runner._prebuilt, cls.runner.bwgrade
        sub._prebuilt_done.set()
        cls.built["subset"] = sub.build(sub.load(ROOT / "exercises"), "subset", 900)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_grader_builds_bwgrade_and_the_shared_worker_code(self):
        self.assertEqual(self.setup_error, [])
        tree = self.tmp / "work" / "grader" / "build"
        self.assertTrue(self.runner.bwgrade and self.runner.bwgrade.is_file())
        for lib in ("libbwworker.a", "libbwref.a", *(f"libbw_adapter_{ex}.a" for ex in TABLE)):
            self.assertTrue((tree / lib).is_file(), lib)

    def test_a_submission_compiles_only_its_own_files(self):
        # Catches BW_PREBUILT_DIR being ignored: the kit's worker code built again
        # in every submission's tree (four nvcc runs more each).
        b = self.built["stubs"]
        self.assertEqual(sorted(b.workers), sorted(TABLE), b.build)   # every stub compiles
        cmake_files = b.workdir / "build" / "CMakeFiles"
        for d in ("bwworker.dir", "bwref.dir", "bwjudge.dir", *(f"bw_adapter_{ex}.dir" for ex in TABLE)):
            self.assertFalse((cmake_files / d).exists(), d)
        for ex in TABLE:
            self.assertTrue((cmake_files / f"bw_worker_{ex}.dir").is_dir(), ex)
        # The adapter and the worker's main come from the grader's libraries.
        out = subprocess.run(["nm", "-C", str(b.workers["haxpy"])], capture_output=True,
                             text=True, check=True, env=build.tool_env()).stdout
        defined = {line.split(" ", 2)[2] for line in out.splitlines() if " T " in line}
        self.assertIn("bw_student_call", defined)
        self.assertIn("main", defined)

    def test_a_subset_of_the_exercises_builds(self):
        # CMake configures every exercise of the table: the ones not graded
        # need placeholders too, or the configure step failed for everyone.
        b = self.built["subset"]
        self.assertEqual(b.problems, [])
        self.assertEqual(b.build["haxpy"]["state"], "ok", b.build)
        self.assertEqual(sorted(b.build), ["haxpy"])

    def test_a_compile_error_costs_only_its_exercise(self):
        b = self.built["broken"]
        self.assertEqual(b.build["haxpy"]["state"], "ok")
        self.assertEqual(b.build["vector_sum"]["state"], "build_failed")
        self.assertIn("exercises/vector_sum/vector_sum.cu", b.build["vector_sum"]["log_tail"])

    def test_a_link_error_names_no_grader_path(self):
        # The linker names the adapter's archive in the grader's tree; the
        # student sees the kit-relative name. Catches that path left unmapped.
        info = self.built["unlinkable"].build["haxpy"]
        self.assertEqual(info["state"], "build_failed", info)
        self.assertIn("undefined reference", info["log_tail"])
        self.assertIn("libbw_adapter_haxpy.a", info["log_tail"])
        self.assertNotIn(str(self.tmp), info["log_tail"])


if __name__ == "__main__":
    unittest.main()

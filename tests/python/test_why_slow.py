"""The benchmark's "why slow" line (why_slow.py, cmd_benchmark.why_line) on
recorded facts: SASS of a scalar and of a vectorized kernel
(tests/data/asm), and an ncu capture of a scalar grid-stride kernel on the
H100 (tests/data/ncu_haxpy_scalar_h100.csv: 1,024 blocks x 256, 0.97 waves).

Catches: a cause named without its evidence (the solution or a full grid
blamed), a cause missed (16-bit accesses, a tiny grid, one element per
thread), and a line that guesses when a fact could not be had."""
import argparse
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import cmd_asm, cmd_benchmark, ncu, sass, why_slow  # noqa: E402

DATA = ROOT / "tests" / "data"
N = (1 << 28) - 1


def kernels(name):
    funcs = sass.parse_sass((DATA / "asm" / name).read_text())
    for f in funcs:
        f.entry = True
    return funcs


class Causes(unittest.TestCase):
    def test_narrow_accesses_are_named_and_the_solution_is_not(self):
        got = why_slow.code_causes(kernels("scalar_haxpy.sm_90.cuobjdump.sass"))
        self.assertEqual(len(got), 1, got)
        self.assertIn("16-bit loads and 16-bit stores", got[0])
        self.assertIn("not vectorized", got[0])
        # a vectorized kernel (kept in the handout, unlike the solution's SASS)
        self.assertEqual(why_slow.code_causes(kernels("vectorized.sm_90.cuobjdump.sass")), [])

    def test_a_recorded_launch_that_fills_the_gpu_is_not_blamed(self):
        launches = why_slow.read_launches((DATA / "ncu_haxpy_scalar_h100.csv").read_text())
        self.assertEqual([(k.grid, k.block, k.waves) for k in launches], [(1024, 256, 0.97)])
        self.assertEqual(why_slow.launch_causes(launches, N), [])

    def test_a_tiny_grid_and_one_element_per_thread(self):
        tiny = why_slow.Launch("haxpy_kernel(long long, ...)", 16, 256, 0.015)
        got = why_slow.launch_causes([tiny], N)
        self.assertEqual(len(got), 1)
        self.assertIn("haxpy_kernel's grid is too small: 16 blocks of 256 threads fill 2% of what the "
                      "GPU runs at once", got[0])
        per = why_slow.Launch("k(long long)", 1048576, 256, 248.2)
        self.assertEqual(why_slow.launch_causes([per], N),
                         ["k handles one element per thread (268,435,456 threads for n = 268,435,455)"])
        grid_stride = why_slow.Launch("k(long long)", 8448, 256, 2.0)
        self.assertEqual(why_slow.launch_causes([grid_stride], N), [])

    def test_the_line_says_what_was_not_checked(self):
        self.assertEqual(why_slow.line(64.2, ["a", "b"], []),
                         f"why 64% of copy: a; b -- see {why_slow.GUIDE}")
        text = why_slow.line(70, [], ["the launch (ncu not found)"])
        self.assertIn("no cause found in what could be checked", text)
        self.assertIn("(not checked: the launch (ncu not found))", text)
        self.assertIn("no cause found in the compiled code or the launch", why_slow.line(70, [], []))


FAKE_NCU = """#!{python}
import shutil, sys
a = sys.argv[1:]
assert a[a.index("--metrics") + 1] == "launch__grid_size,launch__block_size,launch__waves_per_multiprocessor", a
assert "--print-metric-instances" not in a, a
if "{mode}" == "denied":
    print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters")
    sys.exit(1)
shutil.copy("{csv}", a[a.index("--log-file") + 1])
"""


class ProfilingTheLaunch(unittest.TestCase):
    """profile_launches through ncu.run_profile, with a stand-in ncu that
    checks its command line and writes the recorded H100 capture."""

    def launches(self, mode):
        with tempfile.TemporaryDirectory() as tmp:
            fake = Path(tmp) / "ncu"
            fake.write_text(FAKE_NCU.format(python=sys.executable, mode=mode,
                                            csv=DATA / "ncu_haxpy_scalar_h100.csv"))
            fake.chmod(0o755)
            return why_slow.profile_launches(str(fake), ["/b", "once", "haxpy", "--n", "5"])

    def test_the_launch_metrics_are_read(self):
        launches, why = self.launches("ok")
        self.assertEqual(why, "")
        self.assertEqual([(k.grid, k.block, k.waves) for k in launches], [(1024, 256, 0.97)])

    def test_no_permission_is_said(self):
        launches, why = self.launches("denied")
        self.assertIsNone(launches)
        self.assertIn("ERR_NVGPUCTRPERM", why)


class BenchmarkHook(unittest.TestCase):
    def doc(self, pct):
        return {"device": {"name": "H100", "cc": "9.0"},
                "rows": [{"n": N, "offset": 0, "bytes": 6 * N, "status": "ok", "pct_copy": pct}]}

    def why(self, pct, launches=None, ncu_path=None):
        args = argparse.Namespace(solutions=False, submission=None)
        funcs = kernels("scalar_haxpy.sm_90.cuobjdump.sass")
        with mock.patch.object(cmd_asm, "read_source", return_value=(b"", "exercises/haxpy/haxpy.cu")), \
                mock.patch.object(cmd_asm, "find_cuda_tool", return_value="/usr/bin/nvcc"), \
                mock.patch.object(cmd_asm, "compile_functions", return_value=(funcs, {})) as comp, \
                mock.patch.object(ncu, "find_ncu", return_value=ncu_path), \
                mock.patch.object(why_slow, "profile_launches", return_value=(launches, "")) as prof:
            text = cmd_benchmark.why_line(args, "haxpy", Path("/w"), Path("/b"), self.doc(pct))
        return text, comp, prof

    def test_at_80_percent_and_above_there_is_no_line(self):
        text, comp, prof = self.why(80.0)
        self.assertIsNone(text)
        comp.assert_not_called()
        prof.assert_not_called()

    def test_below_it_the_code_and_the_launch_are_asked(self):
        text, comp, prof = self.why(64.2, [why_slow.Launch("haxpy_kernel(long long)", 16, 256, 0.015)],
                                    ncu_path="/usr/bin/ncu")
        self.assertTrue(text.startswith("why 64% of copy: haxpy_kernel's grid is too small"), text)
        self.assertIn("not vectorized", text)
        self.assertEqual(comp.call_args.args[3], "sm_90")
        self.assertEqual(prof.call_args.args[1], ["/b", "once", "haxpy", "--worker", "/w", "--n", str(N)])

    def test_without_ncu_it_says_the_launch_was_not_checked(self):
        text, _, prof = self.why(50.0)
        prof.assert_not_called()
        self.assertIn("not vectorized", text)
        self.assertIn("(not checked: the launch (ncu not found))", text)


if __name__ == "__main__":
    unittest.main()

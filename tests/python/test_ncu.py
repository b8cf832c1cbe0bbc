"""run.py profile and its ncu CSV parser (bwlab.ncu), without a GPU.

Recorded data: tests/data/ncu_haxpy_solution_h100.csv (real, captured on an
H100 by tests/data/capture_ncu.sh) and tests/data/ncu_haxpy_solution_sample.csv
(written by hand in the same layout, for machines without the real one).
Every recorded file present is checked; at least one must be.
"""
import argparse
import contextlib
import io
import os
import stat
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import build, cmd_profile, exercises, ncu  # noqa: E402

DATA = ROOT / "tests" / "data"
REAL = DATA / "ncu_haxpy_solution_h100.csv"
SAMPLE = DATA / "ncu_haxpy_solution_sample.csv"
N = (1 << 28) - 1      # the size capture_ncu.sh profiles


def recorded_files():
    return [p for p in (REAL, SAMPLE) if p.is_file()]


class Recorded(unittest.TestCase):
    def test_some_recording_exists(self):
        self.assertTrue(recorded_files(), "neither the H100 capture nor the sample is present")

    def check_file(self, path: Path):
        ks = ncu.read_file(path)
        haxpy = [k for k in ks if "haxpy" in k.name]
        self.assertEqual(len(haxpy), 1, f"{path.name}: one haxpy kernel, got {[k.name for k in ks]}")
        k = haxpy[0]
        for m in ncu.CORE_METRICS:
            self.assertIsNotNone(k.get(m), f"{path.name}: {m} missing or unreadable: {k.raw.get(m)!r}")
        s = ncu.summarize(k, N)
        # The solution reads 4 and writes 2 bytes per element (writes may still
        # sit partly in the L2 when the kernel ends).
        self.assertAlmostEqual(s.bytes_read / N, 4.0, delta=0.2)
        self.assertGreater(s.bytes_written / N, 1.5)
        self.assertLess(s.bytes_written / N, 2.2)
        self.assertGreater(s.duration_ns, 1e5)             # ~0.5 ms on an H100
        self.assertTrue(500 < s.bandwidth_gbs < 5000, s.bandwidth_gbs)
        self.assertTrue(0 < s.dram_pct <= 100)
        self.assertTrue(0 < s.occupancy <= 100)
        self.assertGreater(s.registers, 0)
        self.assertGreater(s.cycles, 0)
        self.assertGreater(s.instructions / N, 0.01)
        self.assertIn(k.units["gpu__time_duration.sum"], ("nsecond",))
        self.assertIn(k.units["dram__bytes_read.sum"], ("byte",))
        if s.global_loads is not None:
            # Vectorized: one 16-byte load per 8 elements and thread -> 2/256 per element.
            self.assertLess(s.global_loads / N, 1 / 64)
        if ncu.OPCODE_METRIC in k.raw:
            ops = dict(s.opcodes)
            self.assertTrue(ops, f"{path.name}: per-opcode cell not understood: "
                                 f"{k.raw[ncu.OPCODE_METRIC][:200]!r}")
            self.assertTrue(any(op.startswith("LDG") for op in ops), ops)
            self.assertTrue(any(op.startswith("STG") for op in ops), ops)

    def test_recorded(self):
        for path in recorded_files():
            with self.subTest(file=path.name):
                self.check_file(path)


class Values(unittest.TestCase):
    def test_numbers(self):
        self.assertEqual(ncu.parse_number('"1,073,741,824"'), 1073741824.0)
        self.assertEqual(ncu.parse_number("88.41"), 88.41)
        self.assertEqual(ncu.parse_number("1.5e3"), 1500.0)
        for bad in ("", "n/a", "N/A", None, "(256, 1, 1)", "12 34"):
            self.assertIsNone(ncu.parse_number(bad), bad)

    def test_units(self):
        self.assertEqual(ncu.to_base(1.5, "Mbyte"), (1.5e6, "byte"))
        self.assertEqual(ncu.to_base(2.0, "Gbyte"), (2e9, "byte"))
        self.assertEqual(ncu.to_base(540.8, "usecond"), (540800.0, "nsecond"))
        self.assertEqual(ncu.to_base(1.2, "msecond"), (1.2e6, "nsecond"))
        self.assertEqual(ncu.to_base(861.5, "Kcycle"), (861500.0, "cycle"))
        self.assertEqual(ncu.to_base(1.59, "cycle/nsecond"), (1.59e9, "cycle/second"))
        self.assertEqual(ncu.to_base(2.9, "Tbyte/second"), (2.9e12, "byte/second"))
        self.assertEqual(ncu.to_base(1.98, "Ghz"), (1.98e9, "hz"))
        self.assertEqual(ncu.to_base(88.4, "%"), (88.4, "%"))
        self.assertEqual(ncu.to_base(32, "register/thread"), (32, "register/thread"))

    def test_instances(self):
        want = {"FFMA": 1024.0, "LDG": 3.0, "IMAD.WIDE": 2000000.0}
        for cell in ("FFMA: 1,024; LDG: 3; IMAD.WIDE: 2,000,000",
                     "FFMA=1024, LDG=3, IMAD.WIDE=2000000",
                     "FFMA 1,024  LDG 3  IMAD.WIDE 2,000,000",
                     "(FFMA: 1024) (LDG: 3) (IMAD.WIDE: 2000000)"):
            self.assertEqual(ncu.parse_instances(cell), want, cell)
        self.assertEqual(ncu.parse_instances("12,345"), {})
        self.assertEqual(ncu.parse_instances(""), {})


RAW_SCALED = textwrap.dedent('''\
    ==PROF== Connected to process 1 (/x/bwgrade)
    some output of the program
    "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","gpu__time_duration.sum","sass__inst_executed_per_opcode","smsp__inst_executed.sum"
    "","","","","","","","","","","","Gbyte","usecond","inst","Minst"
    "0","12","bw_worker_haxpy","127.0.0.1","k1(int, float *)","1","7","(256, 1, 1)","(4, 1, 1)","0","9.0","1.07","540.83","12,345 (FFMA: 12,000; LDG: 345)","86.25"
    "1","12","bw_worker_haxpy","127.0.0.1","k2(int, float *)","1","7","(128, 1, 1)","(1, 1, 1)","0","9.0","0.00","2.10","n/a","0.01"
    ==PROF== Disconnected from process 1
    ''')

LONG = textwrap.dedent('''\
    "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
    "0","9","app","host","k(float*)","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","Mbyte","536.87"
    "0","9","app","host","k(float*)","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","180.22"
    "1","9","app","host","k(float*)","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","1,000"
    ''')


class Parsing(unittest.TestCase):
    def test_raw_scaled_units(self):
        ks = ncu.parse_csv(RAW_SCALED)
        self.assertEqual([k.name for k in ks], ["k1(int, float *)", "k2(int, float *)"])
        k1 = ks[0]
        self.assertEqual(k1.block, "(256, 1, 1)")
        self.assertEqual(k1.grid, "(4, 1, 1)")
        self.assertAlmostEqual(k1.get("dram__bytes_read.sum"), 1.07e9, delta=1)
        self.assertAlmostEqual(k1.get("gpu__time_duration.sum"), 540830.0, delta=1e-3)
        self.assertAlmostEqual(k1.get("smsp__inst_executed.sum"), 86.25e6, delta=1e-3)
        self.assertEqual(k1.instances[ncu.OPCODE_METRIC], {"FFMA": 12000.0, "LDG": 345.0})
        self.assertEqual(k1.get(ncu.OPCODE_METRIC), 12345.0)
        self.assertIsNone(ks[1].get(ncu.OPCODE_METRIC))

    def test_long_layout(self):
        ks = ncu.parse_csv(LONG)
        self.assertEqual(len(ks), 2)
        self.assertAlmostEqual(ks[0].get("dram__bytes_read.sum"), 536.87e6, delta=1e-3)
        self.assertAlmostEqual(ks[0].get("gpu__time_duration.sum"), 180220.0, delta=1e-3)
        self.assertEqual(ks[1].get("gpu__time_duration.sum"), 1000.0)

    def test_no_csv(self):
        self.assertEqual(ncu.parse_csv("==ERROR== something\n"), [])
        self.assertEqual(ncu.parse_csv(""), [])


class Diagnosis(unittest.TestCase):
    def test_permission(self):
        text = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access "
                "NVIDIA GPU Performance Counters on the target device 0.")
        msg = ncu.diagnose(text)
        self.assertIn("ERR_NVGPUCTRPERM", msg)
        self.assertIn("NVreg_RestrictProfilingToAdminUsers=0", msg)

    def test_no_kernels(self):
        self.assertIn("no kernel", ncu.diagnose("==WARNING== No kernels were profiled."))
        self.assertIsNone(ncu.diagnose("all fine"))

    def test_unknown_option_and_metric(self):
        self.assertEqual(ncu.unknown_option("==ERROR== unrecognised option '--print-metric-instances'"),
                         "--print-metric-instances")
        self.assertIsNone(ncu.unknown_option("fine"))
        bad = ncu.unknown_metrics("==ERROR== Failed to find metric sass__inst_executed_per_opcode",
                                  ncu.METRICS)
        self.assertEqual(bad, ["sass__inst_executed_per_opcode"])

    def test_command(self):
        cmd = ncu.command("ncu", ["bwgrade", "once", "haxpy", "--worker", "w", "--n", "5"], "/t/o.csv")
        self.assertEqual(cmd[:3], ["ncu", "--target-processes", "all"])
        for opt in ("--csv", "--print-units", "--print-metric-instances", "--log-file"):
            self.assertIn(opt, cmd)
        self.assertEqual(cmd[cmd.index("--page") + 1], "raw")
        self.assertEqual(cmd[cmd.index("--metrics") + 1].split(","), ncu.METRICS)
        self.assertEqual(cmd[-7:], ["bwgrade", "once", "haxpy", "--worker", "w", "--n", "5"])


class Expected(unittest.TestCase):
    def test_bytes_per_element(self):
        table = {e.name: e for e in exercises.load(ROOT)}
        self.assertEqual(cmd_profile.expected_bytes(table["haxpy"], 10), (40, 20))
        self.assertEqual(cmd_profile.expected_bytes(table["vector_sum"], 10), (40, 20))


# ---------------------------------------------------------------------------
# The command, with a stand-in for ncu and no build

FAKE_NCU = '''\
#!{python}
import os, shutil, sys
args = sys.argv[1:]
log = args[args.index("--log-file") + 1]
mode = os.environ.get("FAKE_NCU_MODE", "")
with open(os.environ["FAKE_NCU_ARGS"], "w") as f:
    f.write("\\n".join(args))
if mode == "perm":
    open(log, "w").write("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to "
                         "access NVIDIA GPU Performance Counters on the target device 0.\\n")
    sys.exit(1)
if mode == "nometric" and "sass__inst_executed_per_opcode" in ",".join(args):
    open(log, "w").write("==ERROR== Failed to find metric sass__inst_executed_per_opcode\\n")
    sys.exit(1)
print("bwgrade once: haxpy: pass")
shutil.copy(os.environ["FAKE_NCU_CSV"], log)
'''


class ProfileCommand(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = Path(self.tmp.name)
        fake = d / "ncu"
        fake.write_text(FAKE_NCU.format(python=sys.executable))
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
        self.fake = str(fake)
        self.argsfile = d / "args.txt"
        self.env = {"FAKE_NCU_CSV": str(recorded_files()[0]), "FAKE_NCU_ARGS": str(self.argsfile)}

    def tearDown(self):
        self.tmp.cleanup()

    def run_profile(self, argv, mode="", ncu_path="default"):
        parser = argparse.ArgumentParser()
        cmd_profile.add_arguments(parser)
        args = parser.parse_args(argv)

        def fake_prepare(a, peers=False):
            plan = build.Plan(build_dir=Path(self.tmp.name), bwgrade=Path("/kit/build/bwgrade"))
            plan.workers.append(build.Worker(a.exercise[0], "solution", "t",
                                             Path("/kit/build/bw_worker_haxpy_solution"), "ok"))
            return a.exercise, "solution", plan

        out, err = io.StringIO(), io.StringIO()
        env = dict(self.env, FAKE_NCU_MODE=mode)
        with mock.patch.dict(os.environ, env), \
                mock.patch("bwlab.cmd_test.prepare", fake_prepare), \
                mock.patch.object(ncu, "find_ncu",
                                  return_value=self.fake if ncu_path == "default" else ncu_path), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cmd_profile.run(args)
        return rc, out.getvalue(), err.getvalue()

    def test_table(self):
        rc, out, err = self.run_profile(["haxpy", "--solutions"])
        self.assertEqual(rc, 0, out + err)
        for label in ("executed instructions (warp)", "DRAM throughput", "DRAM bytes read",
                      "DRAM bytes written", "duration", "elapsed cycles", "registers per thread",
                      "achieved occupancy", "effective bandwidth", "most executed opcodes",
                      "B/element"):
            self.assertIn(label, out)
        self.assertIn("bwgrade once: haxpy: pass", out)
        args = self.argsfile.read_text().splitlines()
        self.assertEqual(args[-7:], ["/kit/build/bwgrade", "once", "haxpy", "--worker",
                                     "/kit/build/bw_worker_haxpy_solution", "--n", str(N)])
        self.assertIn("--target-processes", args)

    def test_n_and_offset_passed(self):
        rc, out, err = self.run_profile(["haxpy", "--n", "1000", "--offset", "3", "--seed", "7"])
        args = self.argsfile.read_text().splitlines()
        self.assertEqual(args[-6:], ["--n", "1000", "--offset", "3", "--seed", "7"])

    def test_permission(self):
        rc, out, err = self.run_profile(["haxpy"], mode="perm")
        self.assertEqual(rc, 3)
        self.assertIn("ERR_NVGPUCTRPERM", err)
        self.assertNotIn("Traceback", out + err)

    def test_metric_dropped(self):
        rc, out, err = self.run_profile(["haxpy"], mode="nometric")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("does not know sass__inst_executed_per_opcode", out)
        self.assertNotIn("sass__inst_executed_per_opcode", self.argsfile.read_text())

    def test_no_ncu(self):
        rc, out, err = self.run_profile(["haxpy"], ncu_path=None)
        self.assertEqual(rc, 3)
        self.assertIn("ncu not found: install Nsight Compute or add it to PATH", err)

    def test_bad_n(self):
        rc, out, err = self.run_profile(["haxpy", "--n", "0"])
        self.assertEqual(rc, 2)


if __name__ == "__main__":
    unittest.main()

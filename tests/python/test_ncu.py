"""run.py profile and its ncu CSV parser (bwlab.ncu), without a GPU.

Recorded data, all but the sample captured on one H100 (ncu 2025.3.1) by
tests/gpu/capture_ncu.sh:
  ncu_haxpy_solution_h100.csv          the solution, --print-metric-instances values
                                       (opcode counts without names)
  ncu_haxpy_scalar_h100.csv            a scalar haxpy, same layout
  ncu_haxpy_solution_h100_opcodes.txt  the solution, --print-metric-instances details
                                       (the layout run.py profile now asks for)
  ncu_haxpy_solution_sample.csv        written by hand, for machines without the real ones
The generic checks run on every full capture present; the exact values are
those of the real files.
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
SCALAR = DATA / "ncu_haxpy_scalar_h100.csv"
OPCODES = DATA / "ncu_haxpy_solution_h100_opcodes.txt"
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
            # Named (details) or, in an older capture, counts without names (values).
            ops = dict(s.opcodes)
            self.assertTrue(ops or s.opcode_unnamed, f"{path.name}: per-opcode cell not understood: "
                                                     f"{k.raw[ncu.OPCODE_METRIC][:200]!r}")
            if ops:
                self.assertTrue(any(op.startswith("LDG") for op in ops), ops)
                self.assertTrue(any(op.startswith("STG") for op in ops), ops)

    def test_recorded(self):
        for path in recorded_files():
            with self.subTest(file=path.name):
                self.check_file(path)


def one_kernel(path: Path) -> ncu.KernelResult:
    ks = ncu.read_file(path)
    if len(ks) != 1:
        raise AssertionError(f"{path.name}: one kernel expected, got {[k.name for k in ks]}")
    return ks[0]


@unittest.skipUnless(REAL.is_file() and SCALAR.is_file() and OPCODES.is_file(),
                     "the H100 captures are not here")
class RealH100(unittest.TestCase):
    """Exact values of the committed H100 captures (n = 2^28 - 1)."""

    # Opcode counts of the solution, from ncu_haxpy_solution_h100_opcodes.txt.
    TOP = [("IMAD", 11_010_069), ("FFMA", 8_388_617), ("LOP3", 8_388_616), ("ULDC", 4_194_316),
           ("F2FP", 4_194_309), ("UIADD3", 3_670_032), ("USHF", 3_145_744), ("IADD3", 3_145_734)]

    def test_solution_values_layout(self):
        k = one_kernel(REAL)
        self.assertIn("haxpy_kernel", k.name)
        self.assertEqual((k.grid, k.block, k.cc), ("(65536, 1, 1)", "(256, 1, 1)", "9.0"))
        self.assertEqual(k.raw["launch__registers_per_thread"], "32 (32)")
        s = ncu.summarize(k, N)
        self.assertEqual(s.registers, 32)
        self.assertEqual(s.occupancy_max, 100)             # '100 (100)'
        self.assertAlmostEqual(s.dram_pct, 90.51)
        self.assertAlmostEqual(s.occupancy, 81.01)
        self.assertEqual(s.duration_ns, 524_384)
        self.assertEqual(s.cycles, 832_376)
        self.assertEqual(s.bytes_read, 1_073_756_928)
        self.assertEqual(s.bytes_written, 517_255_680)
        self.assertEqual(s.instructions, 60_293_271)
        self.assertEqual(s.global_loads, 2_097_156)
        self.assertEqual(s.global_stores, 1_048_578)
        self.assertAlmostEqual(s.sm_hz, 1_584_339_622.27, delta=0.01)
        self.assertAlmostEqual(s.bandwidth_gbs, 3034.1, delta=0.05)
        # values layout: the aggregate and 25 counts, but no names.
        self.assertEqual(k.get(ncu.OPCODE_METRIC), 60_293_271)
        counts = k.unnamed[ncu.OPCODE_METRIC]
        self.assertEqual(len(counts), 25)
        self.assertEqual(counts[:3], [11_010_069, 8_388_617, 8_388_616])
        self.assertEqual(sum(counts), 60_293_271)
        self.assertEqual(s.opcodes, [])
        self.assertEqual(s.opcode_unnamed, 25)
        self.assertEqual(s.opcode_raw, "")

    def test_solution_details_layout(self):
        k = one_kernel(OPCODES)
        self.assertEqual(k.raw["launch__registers_per_thread"], "32 (0: 32)")
        s = ncu.summarize(k, N)
        self.assertEqual(s.registers, 32)
        self.assertEqual(s.occupancy_max, 100)             # '100 (0: 100)'
        self.assertEqual(s.duration_ns, 525_056)
        self.assertEqual(s.instructions, 60_293_271)
        self.assertNotIn("launch__registers_per_thread", k.instances)   # "0: 32" is no name
        ops = dict(s.opcodes)
        self.assertEqual(len(ops), 25)
        self.assertEqual(s.opcodes[:8], self.TOP)
        self.assertEqual(sum(ops.values()), 60_293_271)
        # The global loads and stores agree with the counters of the main capture.
        self.assertEqual(ops["LDG"], 2_097_156)
        self.assertEqual(ops["STG"], 1_048_578)
        self.assertEqual(ops["EXIT"], 524_297)
        # Per element: one FFMA per 32 elements (one warp instruction, 32 threads), as vectorized.
        self.assertAlmostEqual(ops["FFMA"] / N, 1 / 32, delta=1e-6)
        # The same kernel as the values capture: its unnamed counts are these, sorted.
        self.assertEqual(sorted(ops.values(), reverse=True),
                         one_kernel(REAL).unnamed[ncu.OPCODE_METRIC])
        # The other opcode metrics carry names too.
        cats = k.instances["sass__inst_executed_per_opcode_category"]
        self.assertEqual(cats["Load/Store"], 3_670_022)
        self.assertEqual(cats["Uniform Datapath"], 13_107_244)

    def test_scalar_against_solution(self):
        sol = ncu.summarize(one_kernel(REAL), N)
        k = one_kernel(SCALAR)
        self.assertIn("haxpy_scalar_kernel", k.name)
        sc = ncu.summarize(k, N)
        self.assertEqual(sc.registers, 16)
        self.assertEqual(sc.instructions, 151_175_169)
        self.assertEqual(sc.global_loads, 16_777_216)      # 2 per 32 elements: 16-bit loads
        self.assertEqual(sc.global_stores, 8_388_608)
        self.assertAlmostEqual(sc.dram_pct, 52.95)
        self.assertEqual(sc.duration_ns, 899_360)
        self.assertEqual(len(k.unnamed[ncu.OPCODE_METRIC]), 17)
        self.assertEqual(k.unnamed[ncu.OPCODE_METRIC][0], 50_331_648)
        # Same bytes, far more instructions and a slower kernel.
        self.assertAlmostEqual(sc.bytes_read / N, 4.0, delta=0.01)
        self.assertAlmostEqual(sc.instructions / N, 0.5632, delta=1e-4)
        self.assertAlmostEqual(sol.instructions / N, 0.2246, delta=1e-4)
        self.assertGreater(sc.instructions / sol.instructions, 2.5)
        self.assertEqual(sc.global_loads / sol.global_loads, 16_777_216 / 2_097_156)
        self.assertGreater(sc.global_loads / sol.global_loads, 7.9)
        self.assertGreater(sc.duration_ns / sol.duration_ns, 1.7)


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
        # ncu's layouts: details names the instances, values does not.
        self.assertEqual(ncu.parse_instances("1,030 (IMAD: 1,000; LDG.E.128: 30)"),
                         {"IMAD": 1000.0, "LDG.E.128": 30.0})
        self.assertEqual(ncu.parse_instances("1,030 (1,000; 30)"), {})

    def test_cells(self):
        c = ncu.parse_cell("60,293,271 (IMAD: 11,010,069; Load/Store: 3; Uniform Datapath: 2)")
        self.assertEqual(c.value, 60293271.0)
        self.assertEqual(c.named, {"IMAD": 11010069.0, "Load/Store": 3.0, "Uniform Datapath": 2.0})
        self.assertEqual(c.unnamed, [])
        c = ncu.parse_cell("60,293,271 (11,010,069; 8,388,617)")
        self.assertEqual((c.value, c.named, c.unnamed), (60293271.0, {}, [11010069.0, 8388617.0]))
        self.assertEqual(ncu.parse_cell("32 (0: 32)").named, {"0": 32.0})
        self.assertEqual(ncu.parse_cell("32 (32)").unnamed, [32.0])
        for other in ("32", "(256, 1, 1)", "n/a", "", None, "1 (x: y)"):
            self.assertIsNone(ncu.parse_cell(other), other)

    def test_single_instance_cells(self):
        for cell in ("32 (32)", "32 (0: 32)"):
            k = ncu.KernelResult(id="0", name="k")
            ncu._set_metric(k, "launch__registers_per_thread", "register/thread", cell)
            self.assertEqual(k.get("launch__registers_per_thread"), 32.0, cell)
            self.assertEqual(k.instances, {}, cell)


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
        # details: instanced metrics (the opcodes) come with their names.
        self.assertEqual(cmd[cmd.index("--print-metric-instances") + 1], "details")
        self.assertEqual(cmd[cmd.index("--page") + 1], "raw")
        self.assertEqual(cmd[cmd.index("--metrics") + 1].split(","), ncu.METRICS)
        self.assertEqual(cmd[-7:], ["bwgrade", "once", "haxpy", "--worker", "w", "--n", "5"])
        cmd = ncu.command("ncu", ["t"], "/t/o.csv", instances="values")
        self.assertEqual(cmd[cmd.index("--print-metric-instances") + 1], "values")
        self.assertNotIn("--print-metric-instances", ncu.command("ncu", ["t"], "/t/o.csv",
                                                                 instances="none"))

    def test_instance_mode_rejected(self):
        self.assertTrue(ncu.rejects_instance_mode(
            "==ERROR== Invalid value 'details' for option --print-metric-instances", "details"))
        self.assertTrue(ncu.rejects_instance_mode(
            "==ERROR== unrecognised option '--print-metric-instances'", "values"))
        self.assertFalse(ncu.rejects_instance_mode("==PROF== Disconnected from process 1", "details"))


MATRIX = exercises.parse_declaration(
    'BW_SUMMARY("m")\nBW_SHAPE(MATRIX)\nBW_ARRAY(a, BF16, IN, ROWS_COLS)\nBW_ARRAY(b, BF16, OUT, COLS_ROWS)\n',
    "mat")
REDUCTION = exercises.parse_declaration(
    'BW_SUMMARY("r")\nBW_SHAPE(REDUCTION)\nBW_ARRAY(x, BF16, IN, N)\nBW_ARRAY(s, F32, OUT, ONE)\n', "red")


class Expected(unittest.TestCase):
    def test_bytes_per_element(self):
        # From each exercise's declaration: catches a fixed element size or
        # "every array but the last is read".
        read = lambda name: exercises.read(name, ROOT)  # noqa: E731
        self.assertEqual(cmd_profile.expected_bytes(read("haxpy"), 10), (40, 20))
        self.assertEqual(cmd_profile.expected_bytes(read("vector_sum"), 10), (40, 20))
        self.assertEqual(cmd_profile.expected_bytes(REDUCTION, 10), (20, 4))
        self.assertEqual(cmd_profile.expected_bytes(MATRIX, 15, 3, 5), (30, 30))


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
if mode == "nodetails" and "details" in args:
    print("==ERROR== Invalid value 'details' for option --print-metric-instances")
    sys.exit(1)
print("bwgrade once: haxpy: pass")
src = os.environ["FAKE_NCU_CSV"]
if "details" in args and os.environ.get("FAKE_NCU_DETAILS_CSV"):
    src = os.environ["FAKE_NCU_DETAILS_CSV"]
shutil.copy(src, log)
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
        if OPCODES.is_file():
            # What ncu writes for run.py profile's command (details), where it is recorded.
            self.env["FAKE_NCU_DETAILS_CSV"] = str(OPCODES)

    def tearDown(self):
        self.tmp.cleanup()

    def run_profile(self, argv, mode="", ncu_path="default", env=None, exercise=None):
        """cmd_profile.run(argv) with ncu faked and no build; exercise: an
        Exercise that stands for the one argv names (else the kit's)."""
        parser = argparse.ArgumentParser()
        cmd_profile.add_arguments(parser)
        args = parser.parse_args(argv)

        def fake_prepare(a, peers=False, before_build=None):
            if before_build is not None:
                before_build()
            plan = build.Plan(build_dir=Path(self.tmp.name), bwgrade=Path("/kit/build/bwgrade"))
            plan.workers.append(build.Worker(a.exercise[0], "solution", "t",
                                             Path("/kit/build/bw_worker_haxpy_solution"), "ok"))
            return a.exercise, "solution", plan

        out, err = io.StringIO(), io.StringIO()
        env = dict(self.env, FAKE_NCU_MODE=mode, **(env or {}))
        select = (lambda names, root=None: [exercise]) if exercise else exercises.select
        with mock.patch.dict(os.environ, env), \
                mock.patch.object(exercises, "select", select), \
                mock.patch("bwlab.cmd_test.prepare", fake_prepare), \
                mock.patch.object(ncu, "find_ncu",
                                  return_value=self.fake if ncu_path == "default" else ncu_path), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cmd_profile.run(args)
        return rc, out.getvalue(), err.getvalue()

    def test_table(self):
        rc, out, err = self.run_profile(["haxpy", "--solutions"], env={"FAKE_NCU_DETAILS_CSV": ""})
        self.assertEqual(rc, 0, out + err)
        for label in ("executed instructions (warp)", "DRAM throughput", "DRAM bytes read",
                      "DRAM bytes written", "duration", "elapsed cycles", "registers per thread",
                      "achieved occupancy", "effective bandwidth", "B/element"):
            self.assertIn(label, out)
        self.assertNotIn("could not read", out)
        self.assertIn("bwgrade once: haxpy: pass", out)
        args = self.argsfile.read_text().splitlines()
        self.assertEqual(args[-7:], ["/kit/build/bwgrade", "once", "haxpy", "--worker",
                                     "/kit/build/bw_worker_haxpy_solution", "--n", str(N)])
        self.assertIn("--target-processes", args)

    @unittest.skipUnless(REAL.is_file(), "the H100 capture is not here")
    def test_table_real_h100(self):
        self.env["FAKE_NCU_CSV"] = str(REAL)
        rc, out, err = self.run_profile(["haxpy", "--solutions"], env={"FAKE_NCU_DETAILS_CSV": ""})
        self.assertEqual(rc, 0, out + err)
        line = lambda label: next(l for l in out.splitlines() if l.strip().startswith(label))
        self.assertIn("32", line("registers per thread"))
        self.assertIn("theoretical 100.0 %", line("achieved occupancy"))
        self.assertIn("90.5 %", line("DRAM throughput"))
        self.assertIn("524.4 us", line("duration"))
        self.assertIn("ncu printed 25 counts without opcode names", out)

    @unittest.skipUnless(OPCODES.is_file(), "the H100 details capture is not here")
    def test_opcode_table(self):
        rc, out, err = self.run_profile(["haxpy", "--solutions"])
        self.assertEqual(rc, 0, out + err)
        args = self.argsfile.read_text().splitlines()
        self.assertEqual(args[args.index("--print-metric-instances") + 1], "details")
        self.assertIn("most executed opcodes, top 8 of 25", out)
        rows = [l.split() for l in out.splitlines()
                if l.startswith("    ") and l.endswith(tuple("0123456789"))]
        self.assertEqual([r[0] for r in rows], [op for op, _ in RealH100.TOP])
        self.assertEqual(rows[1], ["FFMA", "8,388,617", "13.9", "%", "0.0313"])
        self.assertIn("(17 more opcodes: 14,155,834 warp instructions, among them:", out)
        # LDG and STG are not in the top 8 but are listed after it.
        mem = [l.split()[:3] for l in out.splitlines() if "(global memory)" in l]
        self.assertEqual(mem, [["LDG", "2,097,156", "3.5"], ["STG", "1,048,578", "1.7"]])

    @unittest.skipUnless(OPCODES.is_file(), "the H100 details capture is not here")
    def test_no_details(self):
        rc, out, err = self.run_profile(["haxpy"], mode="nodetails")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("no --print-metric-instances details", out)
        args = self.argsfile.read_text().splitlines()
        self.assertEqual(args[args.index("--print-metric-instances") + 1], "values")

    def test_n_and_offset_passed(self):
        rc, out, err = self.run_profile(["haxpy", "--n", "1000", "--offset", "3", "--seed", "7"])
        args = self.argsfile.read_text().splitlines()
        self.assertEqual(args[-6:], ["--n", "1000", "--offset", "3", "--seed", "7"])

    def test_matrix_shape_passed(self):
        # A MATRIX exercise: bwgrade once gets --rows and --cols, never --n,
        # and the bytes needed are its declaration's at rows * cols.
        rc, out, err = self.run_profile(["mat", "--shape", "3x5"], exercise=MATRIX,
                                        env={"FAKE_NCU_DETAILS_CSV": ""})
        args = self.argsfile.read_text().splitlines()
        self.assertEqual(args[-9:], ["/kit/build/bwgrade", "once", "mat", "--worker",
                                     "/kit/build/bw_worker_haxpy_solution", "--rows", "3", "--cols", "5"])
        self.assertIn("3 x 5 (15 elements)", out)
        self.assertIn("needed: 30 (2 B/element)", out)
        rc, out, err = self.run_profile(["mat"], exercise=MATRIX, env={"FAKE_NCU_DETAILS_CSV": ""})
        self.assertEqual(self.argsfile.read_text().splitlines()[-4:], ["--rows", "16384", "--cols", "16384"])

    def test_size_option_the_exercise_does_not_take(self):
        rc, out, err = self.run_profile(["mat", "--n", "100"], exercise=MATRIX)
        self.assertEqual(rc, 2)
        self.assertEqual(err.strip().splitlines(), [
            "run.py: error: --n: mat is a MATRIX exercise, sized rows x cols: give --shape RxC instead "
            "(default 16384x16384)"])
        self.assertFalse(self.argsfile.exists(), "ncu ran")
        rc, out, err = self.run_profile(["haxpy", "--shape", "4x4"])
        self.assertEqual(rc, 2)
        self.assertIn("--shape: haxpy is sized by an element count, not rows x cols: give --n N", err)
        self.assertEqual(len(err.strip().splitlines()), 1)
        self.assertFalse(self.argsfile.exists(), "ncu ran")

    def test_reduction_needs_one_element_written(self):
        rc, out, err = self.run_profile(["red", "--n", "1000"], exercise=REDUCTION,
                                        env={"FAKE_NCU_DETAILS_CSV": ""})
        self.assertEqual(self.argsfile.read_text().splitlines()[-2:], ["--n", "1000"])
        written = next(l for l in out.splitlines() if "DRAM bytes written" in l)
        self.assertTrue(written.rstrip().endswith("needed: 4"), written)    # no "0 B/element"
        self.assertIn("needed: 2,000 (2 B/element)", out)
        self.assertRegex(out, r"B moved for 2,004 B needed: \d")

    def test_bad_shape(self):
        with self.assertRaises(SystemExit) as e, contextlib.redirect_stderr(io.StringIO()):
            self.run_profile(["mat", "--shape", "46341x46341"], exercise=MATRIX)
        self.assertEqual(e.exception.code, 2)

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
        self.assertEqual(rc, 5)
        self.assertIn("ncu was not found, and `run.py profile` needs it; it is Nsight Compute", err)

    def test_bad_n(self):
        with self.assertRaises(SystemExit) as e, contextlib.redirect_stderr(io.StringIO()):
            self.run_profile(["haxpy", "--n", "0"])     # refused while parsing
        self.assertEqual(e.exception.code, 2)


if __name__ == "__main__":
    unittest.main()

"""run.py asm and its parsers (bwlab.sass).

Three layers:
  - recorded tool output in tests/data/asm/ (always runs: no CUDA needed);
  - real compiles with nvcc (PTX and ptxas's resource report), of a scalar
    and a vectorized haxpy and of the kit's solution: need nvcc only;
  - real SASS through cuobjdump: skipped where cuobjdump is not installed.
"""
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import cmd_asm, sass  # noqa: E402

DATA = ROOT / "tests" / "data" / "asm"
RUN_PY = ROOT / "run.py"
NVCC = cmd_asm.find_cuda_tool("nvcc")
CUOBJDUMP = cmd_asm.find_cuda_tool("cuobjdump")
# cuobjdump runs nvdisasm to print SASS.
NVDISASM = cmd_asm.find_cuda_tool("nvdisasm")
SOLUTION = ROOT / "solutions" / "haxpy" / "haxpy.cu"


def kernels(funcs):
    return [f for f in funcs if f.entry is not False]


def compile_to(src: Path, mode: str, tmp: str) -> tuple[str, str]:
    """(listing or '', ptxas report) of src compiled alone for sm_90."""
    work = Path(tmp) / "haxpy.cu"
    work.write_bytes(src.read_bytes())
    out = Path(tmp) / ("haxpy." + mode)
    cmd = cmd_asm.nvcc_command(NVCC, work, out, "sm_90", mode, "haxpy")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"nvcc failed on {src}:\n{proc.stderr}")
    text = out.read_text(errors="replace") if mode == "ptx" else ""
    return text, proc.stderr + proc.stdout


# ---------------------------------------------------------------------------
# Recorded output


class RecordedSass(unittest.TestCase):
    def test_vectorized_cuobjdump(self):
        funcs = sass.parse_sass((DATA / "vectorized.sm_90.cuobjdump.sass").read_text())
        self.assertEqual(len(funcs), 1)
        fn = funcs[0]
        self.assertEqual(fn.name, "_Z16haxpy_vec_kernelifPK13__nv_bfloat16PS_")
        counts = dict(sass.access_counts(fn))
        self.assertEqual(counts.get("LDG.E.128"), 2)
        self.assertEqual(counts.get("STG.E.128"), 1)
        self.assertGreaterEqual(counts.get("LDG.E.U16", 0), 2)
        self.assertEqual(len(fn.loops), 1)
        looped = {a.op for a in fn.accesses if a.in_loop}
        self.assertEqual(looped, {"LDG.E.128", "STG.E.128"})
        v = sass.verdict(fn)
        self.assertEqual(v.state, "yes")
        self.assertEqual((v.load_width, v.store_width), (128, 128))
        self.assertIn("128-bit loads and stores", v.text)
        # The binary encodings are left out of the listing, and so is the padding.
        self.assertFalse(any("0x000" in l and "/* 0x" in l for l in fn.lines))
        self.assertFalse(fn.lines[-1].strip().endswith("NOP ;"))

    def test_scalar_cuobjdump(self):
        funcs = sass.parse_sass((DATA / "scalar_haxpy.sm_90.cuobjdump.sass").read_text())
        fn = funcs[0]
        counts = dict(sass.access_counts(fn))
        self.assertEqual(counts, {"LDG.E.U16": 2, "STG.E.U16": 1})
        v = sass.verdict(fn, "handout/page.md, 'Move 16 bytes per access'")
        self.assertEqual(v.state, "no")
        self.assertIn("only 16-bit loads and stores", v.text)
        self.assertTrue(v.text.endswith(" -- see handout/page.md, 'Move 16 bytes per access'"), v.text)
        # No guide given: the verdict names none (no exercise's page by default).
        self.assertNotIn("see", sass.verdict(fn).text)

    @unittest.skipUnless((DATA / "haxpy_solution.sm_90.cuobjdump.sass").is_file(),
                         "the solution's SASS is not in the student handout")
    def test_solution_cuobjdump(self):
        # The reference solution as recorded (solutions/haxpy/haxpy.cu, CUDA 13, sm_90).
        funcs = sass.parse_sass((DATA / "haxpy_solution.sm_90.cuobjdump.sass").read_text())
        (fn,) = kernels(funcs)
        wide = [a for a in fn.accesses if a.space == "global" and a.width == 128]
        self.assertTrue(any(a.kind == "load" for a in wide))
        self.assertTrue(any(a.kind == "store" for a in wide))
        self.assertTrue(all(a.in_loop for a in wide))
        v = sass.verdict(fn)
        self.assertEqual((v.state, v.basis, v.load_width, v.store_width), ("yes", "loops", 128, 128))

    def test_self_branch_is_not_a_loop(self):
        # The trailing "BRA self" after EXIT must not count; the grid-stride loop must.
        fn = sass.parse_sass((DATA / "scalar_haxpy.sm_90.cuobjdump.sass").read_text())[0]
        self.assertEqual(len(fn.loops), 1)
        lo, hi = fn.loops[0]
        self.assertLess(lo, hi)

    def test_nvdisasm_labels(self):
        funcs = sass.parse_sass((DATA / "vectorized.sm_90.nvdisasm.sass").read_text())
        self.assertEqual(len(funcs), 1)
        fn = funcs[0]
        self.assertTrue(fn.entry)          # nvdisasm marks kernels STO_CUDA_ENTRY
        self.assertEqual(len(fn.loops), 1)  # branch targets are labels there
        self.assertEqual(sass.verdict(fn).state, "yes")

    def test_res_usage(self):
        res = sass.parse_res_usage((DATA / "vectorized.sm_90.res-usage.txt").read_text())
        r = res["_Z16haxpy_vec_kernelifPK13__nv_bfloat16PS_"]
        self.assertEqual((r.registers, r.stack, r.shared, r.local), (31, 0, 0, 0))

    def test_ptxas_info(self):
        res = sass.parse_ptxas_info((DATA / "vectorized.sm_90.ptxas.txt").read_text())
        r = res["_Z16haxpy_vec_kernelifPK13__nv_bfloat16PS_"]
        self.assertEqual((r.registers, r.stack, r.spill_stores, r.spill_loads), (31, 0, 0, 0))
        self.assertTrue(r.entry)

    def test_ptxas_info_spills_and_device_function(self):
        text = (
            "ptxas info    : 0 bytes gmem\n"
            "ptxas info    : Function properties for _Z6helperPf\n"
            "    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
            "ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90'\n"
            "ptxas info    : Function properties for _Z1kPf\n"
            "    40 bytes stack frame, 36 bytes spill stores, 28 bytes spill loads\n"
            "ptxas info    : Used 16 registers, 1024 bytes smem, 368 bytes cmem[0]\n")
        res = sass.parse_ptxas_info(text)
        k = res["_Z1kPf"]
        self.assertEqual((k.registers, k.stack, k.spill_stores, k.spill_loads, k.shared),
                         (16, 40, 36, 28, 1024))
        self.assertTrue(k.entry)
        self.assertFalse(res["_Z6helperPf"].entry)
        self.assertEqual(res["_Z6helperPf"].stack, 8)


class SassOpcodes(unittest.TestCase):
    def test_widths(self):
        cases = {
            "LDG.E.128": ("load", "global", 128), "LDG.E.EF.128": ("load", "global", 128),
            "LDG.E.64.CONSTANT": ("load", "global", 64), "LDG.E": ("load", "global", 32),
            "LDG.E.U16": ("load", "global", 16), "LDG.E.S8": ("load", "global", 8),
            "LDG.E.LTC128B": ("load", "global", 32), "LDG.E.LTC128B.128": ("load", "global", 128),
            "LDG.E.ENL2.256": ("load", "global", 256),
            "STG.E.128": ("store", "global", 128), "STG.E.U16": ("store", "global", 16),
            "LD.E.128": ("load", "generic", 128), "STL.64": ("store", "local", 64),
            "LDS.U16": ("load", "shared", 16), "LDGSTS.E.BYPASS.128": ("load", "global", 128),
            "RED.E.ADD.F32.FTZ.RN.STRONG.GPU": ("atomic", "global", 32),
            "UBLKCP.S.G": ("load", "bulk", 0), "UBLKCP.G.S": ("store", "bulk", 0),
            "UTMALDG.2D": ("load", "bulk", 0), "UTMASTG.2D": ("store", "bulk", 0),
        }
        for op, want in cases.items():
            self.assertEqual(sass.classify_sass(op), want, op)
        for op in ("FFMA", "LDC", "ULDC.64", "BRA", "IMAD.WIDE"):
            self.assertIsNone(sass.classify_sass(op), op)

    def test_partly_vectorized(self):
        text = """
        Function : _Z1kv
        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0010*/                   STG.E.U16 desc[UR4][R2.64], R4 ;
        /*0020*/              @!P0 BRA 0x0 ;
        /*0030*/                   EXIT ;
        """
        fn = sass.parse_sass(text)[0]
        v = sass.verdict(fn)
        self.assertEqual(v.state, "partly")
        self.assertIn("128-bit loads but 16-bit stores", v.text)

    def test_no_loop_uses_whole_kernel(self):
        text = """
        Function : _Z1kv
        /*0000*/                   LDG.E.64 R4, desc[UR4][R2.64] ;
        /*0010*/                   STG.E.64 desc[UR4][R2.64], R4 ;
        /*0020*/                   EXIT ;
        /*0030*/                   BRA 0x30;
        """
        v = sass.verdict(sass.parse_sass(text)[0])
        self.assertEqual((v.state, v.basis), ("yes", "whole function"))
        self.assertIn("64-bit", v.text)

    def test_loop_decides_over_head_and_tail(self):
        # 128-bit accesses outside the loop, 16-bit inside: the loop is the hot path.
        text = """
        Function : _Z1kv
        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0010*/                   STG.E.128 desc[UR4][R2.64], R4 ;
        /*0020*/                   LDG.E.U16 R4, desc[UR4][R2.64] ;
        /*0030*/                   STG.E.U16 desc[UR4][R2.64], R4 ;
        /*0040*/              @!P0 BRA 0x20 ;
        /*0050*/                   EXIT ;
        """
        v = sass.verdict(sass.parse_sass(text)[0])
        self.assertEqual((v.state, v.basis), ("no", "loops"))

    def test_no_memory(self):
        fn = sass.parse_sass("Function : _Z1kv\n        /*0000*/   EXIT ;\n")[0]
        self.assertEqual(sass.verdict(fn).state, "none")


class PtxText(unittest.TestCase):
    SAMPLE = """
.extern .func  (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;
.func _Z6helperPKt(
	.param .b64 _Z6helperPKt_param_0
)
{
	ld.param.u64 	%rd1, [_Z6helperPKt_param_0];
	ld.global.nc.v2.u32 	{%r1, %r2}, [%rd1];
	ret;
}
.visible .entry _Z1kiPK6__halfPS_(
	.param .u32 _Z1kiPK6__halfPS__param_0
)
{
	.reg .b32 	%r<9>;
$L__BB0_1:
	ld.global.v4.u32 	{%r1, %r2, %r3, %r4}, [%rd4];
	ld.global.L1::no_allocate.b16 	%rs1, [%rd5];
	cp.async.cg.shared.global [%r5], [%rd6], 16;
	st.global.v4.u32 	[%rd4], {%r5, %r6, %r7, %r8};
	@%p1 bra 	$L__BB0_1;
	st.global.u16 	[%rd5], %rs1;
	atom.global.add.u32 	%r9, [%rd7], 1;
	ret;
}
"""

    def test_functions(self):
        funcs = sass.parse_ptx(self.SAMPLE)
        self.assertEqual([(f.name, f.entry) for f in funcs],
                         [("_Z6helperPKt", False), ("_Z1kiPK6__halfPS_", True)])

    def test_accesses(self):
        helper, k = sass.parse_ptx(self.SAMPLE)
        self.assertEqual([(a.op, a.width) for a in helper.accesses],
                         [("ld.global.nc.v2.u32", 64)])
        got = [(a.op, a.kind, a.space, a.width, a.in_loop) for a in k.accesses]
        self.assertEqual(got, [
            ("ld.global.v4.u32", "load", "global", 128, True),
            ("ld.global.L1::no_allocate.b16", "load", "global", 16, True),
            ("cp.async.cg.shared.global", "load", "global", 128, True),
            ("st.global.v4.u32", "store", "global", 128, True),
            ("st.global.u16", "store", "global", 16, False),
            ("atom.global.add.u32", "atomic", "global", 0, False),
        ])
        self.assertEqual(sass.verdict(k).state, "yes")

    def test_classify(self):
        self.assertIsNone(sass.classify_ptx("ld.param.u64"))
        self.assertEqual(sass.classify_ptx("ld.v2.f32"), ("load", "generic", 64))
        self.assertEqual(sass.classify_ptx("st.global.cs.v4.u32"), ("store", "global", 128))
        self.assertEqual(sass.classify_ptx("ld.global.nc.v2.bf16x2"), ("load", "global", 64))
        self.assertEqual(sass.classify_ptx("st.local.u32"), ("store", "local", 32))

    def test_classify_bulk_copies(self):
        # The destination's space gives the direction; a classifier that
        # called every bulk copy a load would see a staged kernel store only
        # 16-bit values (its head and tail) and call it "partly" vectorized.
        load = ("load", "bulk", 0)
        store = ("store", "bulk", 0)
        cases = {
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes": load,
            "cp.async.bulk.global.shared::cta.bulk_group": store,
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes": load,
            "cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group": store,
            "cp.async.bulk.prefetch.L2.global": load,
        }
        for op, want in cases.items():
            self.assertEqual(sass.classify_ptx(op), want, op)
        for op in ("cp.async.bulk.commit_group", "cp.async.bulk.wait_group.read",
                   "cp.async.bulk.wait_group"):
            self.assertIsNone(sass.classify_ptx(op), op)


# ---------------------------------------------------------------------------
# Real compiles (nvcc)


@unittest.skipUnless(NVCC, "nvcc not found")
class CompiledPtx(unittest.TestCase):
    def kernels_of(self, src: Path, count: int):
        with tempfile.TemporaryDirectory() as tmp:
            ptx, report = compile_to(src, "ptx", tmp)
            _, report = compile_to(src, "cubin", tmp)
        ks = kernels(sass.parse_ptx(ptx))
        self.assertEqual(len(ks), count, f"{count} kernel(s) expected in {src.name}")
        res = sass.parse_ptxas_info(report)
        for k in ks:
            self.assertIn(k.name, res, "ptxas reported on the kernel")
            r = res[k.name]
            self.assertGreater(r.registers or 0, 0)
            self.assertEqual((r.spill_stores, r.spill_loads), (0, 0))
        return ks

    def verdict_of(self, src: Path):
        k = self.kernels_of(src, 1)[0]
        return k, sass.verdict(k)

    @unittest.skipUnless((DATA / "scalar_haxpy.cu").is_file(), "scalar_haxpy.cu is not in the student handout")
    def test_scalar(self):
        fn, v = self.verdict_of(DATA / "scalar_haxpy.cu")
        self.assertEqual(v.state, "no", v.text)
        self.assertEqual({a.width for a in fn.accesses if a.space == "global"}, {16})

    @unittest.skipUnless((DATA / "vectorized.cu").is_file(), "vectorized.cu is not in the student handout")
    def test_vectorized(self):
        fn, v = self.verdict_of(DATA / "vectorized.cu")
        self.assertEqual(v.state, "yes", v.text)
        self.assertEqual((v.load_width, v.store_width), (128, 128))

    @unittest.skipUnless(SOLUTION.is_file(), "no solutions/haxpy/haxpy.cu in this copy")
    def test_solution(self):
        # Two kernels: the register one (16-byte loads and stores) and the
        # staged one (bulk copies in and out, BW_STAGING=2).
        ks = {("staged" if "staged" in k.name else "registers"): k
              for k in self.kernels_of(SOLUTION, 2)}
        self.assertEqual(set(ks), {"staged", "registers"})
        for k in ks.values():
            self.assertEqual(sass.verdict(k).state, "yes", sass.verdict(k).text)
        fn = ks["registers"]
        loads = [a for a in fn.accesses if a.kind == "load" and a.width == 128 and a.space == "global"]
        stores = [a for a in fn.accesses if a.kind == "store" and a.width == 128 and a.space == "global"]
        self.assertTrue(loads and stores)
        bulk = {a.kind for a in ks["staged"].accesses if a.space == "bulk"}
        self.assertEqual(bulk, {"load", "store"})


@unittest.skipUnless(NVCC, "nvcc not found")
@unittest.skipUnless(CUOBJDUMP and NVDISASM, "cuobjdump or nvdisasm not installed")
class CompiledSass(unittest.TestCase):
    def sass_of(self, src: Path, count: int = 1):
        with tempfile.TemporaryDirectory() as tmp:
            compile_to(src, "cubin", tmp)
            out = subprocess.run([CUOBJDUMP, "-sass", str(Path(tmp) / "haxpy.cubin")],
                                 capture_output=True, text=True, check=True).stdout
        ks = kernels(sass.parse_sass(out))
        self.assertEqual(len(ks), count)
        return ks[0] if count == 1 else ks

    @unittest.skipUnless((DATA / "scalar_haxpy.cu").is_file(), "scalar_haxpy.cu is not in the student handout")
    def test_scalar(self):
        fn = self.sass_of(DATA / "scalar_haxpy.cu")
        self.assertEqual(sass.verdict(fn).state, "no")
        self.assertTrue(all(a.op.endswith("U16") for a in fn.accesses if a.space == "global"))

    @unittest.skipUnless((DATA / "vectorized.cu").is_file(), "vectorized.cu is not in the student handout")
    def test_vectorized(self):
        fn = self.sass_of(DATA / "vectorized.cu")
        counts = dict(sass.access_counts(fn))
        self.assertTrue(any(op.startswith("LDG") and op.endswith(".128") for op in counts), counts)
        self.assertTrue(any(op.startswith("STG") and op.endswith(".128") for op in counts), counts)
        self.assertEqual(sass.verdict(fn).state, "yes")

    @unittest.skipUnless(SOLUTION.is_file(), "no solutions/haxpy/haxpy.cu in this copy")
    def test_solution(self):
        for fn in self.sass_of(SOLUTION, 2):
            self.assertEqual(sass.verdict(fn).state, "yes", (fn.name, sass.verdict(fn).text))
            if "staged" in fn.name:
                self.assertEqual({a.kind for a in fn.accesses if a.space == "bulk"},
                                 {"load", "store"}, fn.name)


# ---------------------------------------------------------------------------
# The command


@unittest.skipUnless(NVCC, "nvcc not found")
class AsmCommand(unittest.TestCase):
    def run_py(self, *args):
        env = dict(os.environ)
        env.pop("BWLAB_ROOT", None)
        return subprocess.run([sys.executable, str(RUN_PY), "asm", *args], capture_output=True,
                              text=True, env=env, cwd=str(ROOT), timeout=600)

    @unittest.skipUnless((DATA / "scalar_haxpy.cu").is_file(), "scalar_haxpy.cu is not in the student handout")
    def test_scalar_submission(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp) / "haxpy"
            d.mkdir()
            (d / "haxpy.cu").write_bytes((DATA / "scalar_haxpy.cu").read_bytes())
            p = self.run_py("haxpy", "--submission", tmp, "--ptx")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("haxpy_scalar_kernel", p.stdout)
        self.assertIn("ld.global.u16", p.stdout)          # the listing is printed
        self.assertIn("hot path vectorized: no", p.stdout)
        self.assertIn("registers", p.stdout)
        self.assertIn("heuristic:", p.stdout)

    @unittest.skipUnless(SOLUTION.is_file(), "no solutions/haxpy/haxpy.cu in this copy")
    def test_solution_summary(self):
        p = self.run_py("haxpy", "--solutions", "--summary")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("hot path vectorized: yes (128-bit loads and stores", p.stdout)
        # The staged kernel: PTX keeps its bulk store outside any loop ("loads
        # and stores in the kernel"); in SASS the copies sit in a retry loop
        # and the verdict reads "bulk (TMA) loads in its loops".
        self.assertIn("hot path vectorized: yes (bulk (TMA) loads", p.stdout)
        self.assertNotIn("Traceback", p.stdout + p.stderr)

    def test_compile_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "haxpy.cu").write_text(
                '#include "haxpy.h"\n'
                "__global__ void k(nv_bfloat16* y) { y[0] = undefined_thing; }\n"
                "void haxpy(int n, float a, const nv_bfloat16* x, nv_bfloat16* y) {}\n")
            p = self.run_py("haxpy", "--submission", tmp, "--ptx")
        self.assertEqual(p.returncode, 1)
        self.assertIn("does not compile", p.stdout)
        self.assertIn("undefined_thing", p.stdout)
        self.assertNotIn("Traceback", p.stdout + p.stderr)
        self.assertNotIn("bwlab-asm-", p.stdout)     # the scratch path is not shown

    def test_stub_has_no_kernel(self):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "haxpy.cu").write_bytes((ROOT / "exercises" / "haxpy" / "haxpy.cu").read_bytes())
            p = self.run_py("haxpy", "--submission", tmp, "--ptx")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("no kernel", p.stdout)

    def test_missing_tools_message(self):
        # Neither nvcc nor cuobjdump reachable: a clear message, exit 4, no traceback.
        import argparse
        import contextlib
        import io
        from unittest import mock
        parser = argparse.ArgumentParser()
        cmd_asm.add_arguments(parser)
        err, out = io.StringIO(), io.StringIO()
        with mock.patch.object(cmd_asm, "find_cuda_tool", return_value=None), \
                contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            rc = cmd_asm.run(parser.parse_args(["haxpy"]))
        self.assertEqual(rc, 4)
        self.assertIn("nvcc not found", err.getvalue())
        # nvcc present but no cuobjdump: --sass is refused (exit 5) with a hint, the default falls back to PTX.
        real = cmd_asm.find_cuda_tool
        only_nvcc = lambda name: real(name) if name == "nvcc" else None  # noqa: E731
        with mock.patch.object(cmd_asm, "find_cuda_tool", side_effect=only_nvcc), \
                contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            rc = cmd_asm.run(parser.parse_args(["haxpy", "--sass"]))
        self.assertEqual(rc, 5)     # a missing optional tool, with how to get it
        self.assertIn("cuobjdump was not found", err.getvalue())
        self.assertIn("pip install nvidia-cuda-cuobjdump", err.getvalue())
        self.assertIn("--ptx", err.getvalue())

    def test_unknown_exercise(self):
        p = self.run_py("no_such_exercise")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown exercise", p.stderr)


class Guide(unittest.TestCase):
    def test_points_into_the_handout(self):
        for ex in ("haxpy", "vector_sum"):
            g = cmd_asm.guide_for(ex)
            path, _, title = g.partition(", ")
            page = ROOT / path
            if not page.is_file():
                self.skipTest(f"{path} not in this copy")
            self.assertIn(title.strip("'"), page.read_text(), g)


class ArchNames(unittest.TestCase):
    def test_normalize(self):
        self.assertEqual(cmd_asm.normalize_arch("90"), "sm_90")
        self.assertEqual(cmd_asm.normalize_arch("sm_90a"), "sm_90a")
        self.assertEqual(cmd_asm.normalize_arch("sm100"), "sm_100")
        self.assertIsNone(cmd_asm.normalize_arch("hopper"))


if __name__ == "__main__":
    unittest.main()

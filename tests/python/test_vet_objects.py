"""vet.py on real nvcc objects (needs nvcc, no GPU): the symbol rules and
the system call rule on the stubs, the solutions, the peers and small files
each breaking one rule. CorpusVetTests (BWLAB_SLOW_TESTS=1, which CI sets)
compiles every tests/corpus entry and holds it to its expect.json. The
rules on hand-written lists are test_vet_rules.py, the hooks and the unsafe
switch test_vet_hooks.py.

Each test names the broken vetting it would catch."""
import json
import os
import shutil
import sys
import tempfile
import textwrap
import unittest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import build, vet  # noqa: E402

HAXPY_INC = [ROOT / "exercises" / "haxpy", ROOT / "grader" / "protocol"]
VSUM_INC = [ROOT / "exercises" / "vector_sum", ROOT / "grader" / "protocol"]

# Small student files, each breaking one rule (compiled, never linked or run).
BAD = {
    "event_timer": """\
        #include "haxpy.h"
        extern "C" cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
            *ms = 0.001f;
            return cudaSuccess;
        }
        void haxpy(int, float, const nv_bfloat16*, nv_bfloat16*) {}
        """,
    "exit_override": """\
        #include "haxpy.h"
        extern "C" void exit(int) { for (;;) {} }
        void haxpy(int, float, const nv_bfloat16*, nv_bfloat16*) {}
        """,
    "grader_override": """\
        #include "haxpy.h"
        extern "C" int bw_student_call(long long, float, void**) { return 0; }
        void haxpy(int, float, const nv_bfloat16*, nv_bfloat16*) {}
        """,
    "cublas_call": """\
        #include "haxpy.h"
        extern "C" int cublasAxpyEx(void*, int, const void*, int, const void*, int, int,
                                    void*, int, int, int);
        void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y) {
            cublasAxpyEx(nullptr, n, &alpha, 0, x, 0, 1, y, 0, 1, 0);
        }
        """,
    "std_thread": """\
        #include <thread>
        #include "haxpy.h"
        void haxpy(int, float, const nv_bfloat16*, nv_bfloat16*) {
            std::thread t([] {});
            t.detach();
        }
        """,
    "channel_write": """\
        #include <unistd.h>
        #include "haxpy.h"
        void haxpy(int, float, const nv_bfloat16*, nv_bfloat16*) {
            char fake[16] = {0};
            (void)!write(3, fake, sizeof fake);
        }
        """,
    "dlsym_runtime": """\
        #include <dlfcn.h>
        #include "haxpy.h"
        void haxpy(int, float, const nv_bfloat16*, nv_bfloat16*) {
            (void)dlsym(RTLD_DEFAULT, "cudaMemcpy");
        }
        """,
    # System calls made directly, each spelled another way (rule D).
    "asm_syscall": """\
        #include "haxpy.h"
        void haxpy(int, float, const nv_bfloat16*, nv_bfloat16*) {
            long ret;
            asm volatile("syscall" : "=a"(ret) : "a"(39L) : "rcx", "r11", "memory");
        }
        """,
    "asm_sysenter": """\
        #include "haxpy.h"
        void haxpy(int, float, const nv_bfloat16*, nv_bfloat16*) {
            asm volatile("sysenter" ::: "memory");
        }
        """,
    "asm_int80": """\
        #include "haxpy.h"
        void haxpy(int, float, const nv_bfloat16*, nv_bfloat16*) {
            long ret;
            asm volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
        }
        """,
    "asm_bytes": """\
        #include "haxpy.h"
        void haxpy(int, float, const nv_bfloat16*, nv_bfloat16*) {
            asm volatile(".byte 0x66, 0x0f, 0x05" ::: "rcx", "r11", "memory");
        }
        """,
    # In a host helper of its own (kept out of line), not in haxpy itself.
    "asm_helper": """\
        #include "haxpy.h"
        __attribute__((noinline)) static long sneaky_helper(long nr) {
            long ret;
            asm volatile("syscall" : "=a"(ret) : "a"(nr) : "rcx", "r11", "memory");
            return ret;
        }
        __global__ void k(int n, nv_bfloat16* y) { if (threadIdx.x < n) y[threadIdx.x] = y[0]; }
        void haxpy(int n, float, const nv_bfloat16*, nv_bfloat16* y) {
            if (sneaky_helper(39) > 0) k<<<1, 32>>>(n, y);
        }
        """,
    # Allowed: what honest students call (printing, exiting on error, heap).
    "honest_calls": """\
        #include <cstdio>
        #include <cstdlib>
        #include <iostream>
        #include <vector>
        #include "haxpy.h"
        void haxpy(int n, float, const nv_bfloat16*, nv_bfloat16*) {
            std::vector<int> v(4);
            std::cout << "n = " << n << std::endl;
            printf("%d\\n", (int)v.size());
            fprintf(stderr, "x\\n");
            cudaError_t e = cudaDeviceSynchronize();
            if (e != cudaSuccess) { fprintf(stderr, "%s\\n", cudaGetErrorString(e)); exit(1); }
            if (n < 0) abort();
        }
        """,
    # Allowed: helpers kept out of the global C namespace.
    "static_helpers": """\
        #include "haxpy.h"
        static int helper(int n) { return n + 1; }
        namespace { int other(int n) { return n * 2; } }
        int cube_function(int n) { return helper(other(n)); }
        void haxpy(int n, float, const nv_bfloat16*, nv_bfloat16*) { (void)cube_function(n); }
        """,
}


CORPUS = ROOT / "tests" / "corpus"
# The corpus entries that make system calls with inline assembly (haxpy).
RAW_SYSCALL_ENTRIES = ("forges_reply", "forges_skip", "raw_fork", "raw_open_write", "raw_kill")


def _no_objdump(real=shutil.which):
    """shutil.which as on a machine without objdump."""
    return lambda name, *a, **k: None if name == "objdump" else real(name, *a, **k)


def _nvcc() -> str | None:
    return shutil.which("nvcc", path=build.tool_env().get("PATH"))


class ObjectTests(unittest.TestCase):
    """Compiles every file once (in parallel), then vets the objects."""

    tmp: tempfile.TemporaryDirectory
    objs: dict[str, Path] = {}

    @classmethod
    def setUpClass(cls):
        if _nvcc() is None:
            raise unittest.SkipTest("nvcc not found")
        cls.tmp = tempfile.TemporaryDirectory(prefix="bwlab-test-vet-")
        base = Path(cls.tmp.name)
        jobs = {
            "stub_haxpy": (ROOT / "exercises/haxpy/haxpy.cu", HAXPY_INC),
            "stub_vector_sum": (ROOT / "exercises/vector_sum/vector_sum.cu", VSUM_INC),
            "peer_cub": (ROOT / "grader/peers/haxpy_cub.cu", HAXPY_INC),
            "peer_cublas": (ROOT / "grader/peers/haxpy_cublas.cu", HAXPY_INC),
            "peer_vector_sum_cub": (ROOT / "grader/peers/vector_sum_cub.cu", VSUM_INC),
        }
        for name in RAW_SYSCALL_ENTRIES:
            cu = CORPUS / name / "exercises" / "haxpy" / "haxpy.cu"
            if cu.is_file():
                jobs[f"corpus_{name}"] = (cu, HAXPY_INC)
        for ex in ("haxpy", "vector_sum"):
            sol = ROOT / "solutions" / ex / f"{ex}.cu"
            if sol.is_file():
                jobs[f"solution_{ex}"] = (sol, HAXPY_INC if ex == "haxpy" else VSUM_INC)
        for name, text in BAD.items():
            src = base / "src" / f"{name}.cu"
            src.parent.mkdir(parents=True, exist_ok=True)
            src.write_text(textwrap.dedent(text))
            jobs[name] = (src, HAXPY_INC)

        def one(item):
            name, (src, incs) = item
            out = base / "obj" / name
            out.mkdir(parents=True)
            return name, vet.compile_object(src, out, incs)

        with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
            cls.objs = dict(pool.map(one, jobs.items()))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def vet(self, name, allow=False):
        return vet.vet_object(self.objs[name], allow_libraries=allow, source=f"{name}.cu")

    def test_stubs_pass(self):
        # Catches an allow-list too narrow for what nvcc emits for a plain file.
        for name in ("stub_haxpy", "stub_vector_sum"):
            self.assertIsNone(self.vet(name), name)

    def test_solutions_pass(self):
        # Catches refusing kernels, device stubs or the exception personality
        # (DW.ref.__gxx_personality_v0) that real solutions define.
        names = [n for n in self.objs if n.startswith("solution_")]
        if not names:
            self.skipTest("no solutions/ in this copy of the kit")
        for name in names:
            self.assertIsNone(self.vet(name), name)

    def test_static_and_anonymous_helpers_pass(self):
        # Catches a rule that flags local symbols, or reads `13cube_function` as CUB.
        self.assertIsNone(self.vet("static_helpers"))

    def test_runtime_interposition_refused(self):
        # Catches an allow-list that lets unmangled names through (e.g. "cuda" prefix).
        r = self.vet("event_timer")
        self.assertIsNotNone(r)
        self.assertEqual((r.symbol, r.rule), ("cudaEventElapsedTime", "interposition"))
        self.assertIn("cudaEventElapsedTime", r.message)

    def test_libc_interposition_refused(self):
        r = self.vet("exit_override")
        self.assertIsNotNone(r)
        self.assertEqual((r.symbol, r.rule), ("exit", "interposition"))

    def test_grader_interposition_refused_even_with_libraries_allowed(self):
        # Catches the library switch also turning off the interposition rule.
        r = self.vet("grader_override", allow=True)
        self.assertIsNotNone(r)
        self.assertEqual((r.symbol, r.rule), ("bw_student_call", "interposition"))

    def test_forbidden_calls_refused(self):
        # Catches Rule C missing a category, or looking at defined symbols only
        # (each of these is an undefined reference in the student's object).
        for name, symbol_part in (("std_thread", "thread"), ("channel_write", "write"),
                                  ("dlsym_runtime", "dlsym")):
            r = self.vet(name, allow=True)
            self.assertIsNotNone(r, name)
            self.assertEqual(r.rule, "forbidden_call", name)
            self.assertIn(symbol_part, r.symbol, name)
            self.assertIn("may not start threads", r.message)

    def test_honest_calls_pass(self):
        # Catches a deny-list that hits printf, iostream, exit, abort or the
        # heap: what honest code and CUDA_CHECK macros use.
        self.assertIsNone(self.vet("honest_calls"))

    def test_cublas_refused_by_policy(self):
        # Catches looking only at defined symbols (a cuBLAS call is undefined here).
        r = self.vet("cublas_call")
        self.assertIsNotNone(r)
        self.assertEqual((r.symbol, r.rule), ("cublasAxpyEx", "library"))
        self.assertIn("cuBLAS", r.message)

    def test_cub_refused_by_policy(self):
        # The real CUB peer (cub::DeviceTransform): catches a CUB pattern that
        # does not match nvcc's mangling, and NVTX symbols counted as interposition.
        r = self.vet("peer_cub")
        self.assertIsNotNone(r)
        self.assertEqual(r.rule, "library")
        self.assertIn("3cub", r.symbol)
        self.assertIn("CUB", r.message)

    def test_libraries_pass_when_allowed(self):
        # Catches a switch that does nothing, or NVTX weak symbols still refused.
        self.assertIsNone(self.vet("cublas_call", allow=True))
        self.assertIsNone(self.vet("peer_cub", allow=True))

    def test_allow_switch_read_from_environment(self):
        with mock.patch.dict(os.environ, {vet.ALLOW_ENV: "1"}):
            self.assertIsNone(vet.vet_object(self.objs["cublas_call"]))
        with mock.patch.dict(os.environ, {vet.ALLOW_ENV: "0"}):
            self.assertIsNotNone(vet.vet_object(self.objs["cublas_call"]))

    def test_system_call_instructions_refused(self):
        # Catches rule D missing (each of these has no forbidden symbol), a
        # spelling it does not know (sysenter, int $0x80, a prefixed
        # syscall), or one that the library switch turns off.
        for name, instruction in (("asm_syscall", "syscall"), ("asm_sysenter", "sysenter"),
                                  ("asm_int80", "int $0x80"), ("asm_bytes", "syscall")):
            r = self.vet(name, allow=True)
            self.assertIsNotNone(r, name)
            self.assertEqual(r.rule, "system_call", name)
            self.assertIn(f"`{instruction}", r.message.replace("data16 ", ""), name)
            self.assertIn("haxpy(int, float", r.symbol, name)     # where: the function
            self.assertRegex(r.symbol, r"\+0x[0-9a-f]+$", name)     # and the offset
            self.assertIn("bypasses those checks", r.message, name)  # and why

    def test_system_call_in_a_helper_is_named_there(self):
        # Catches disassembling only the contract function, or naming the
        # wrong function (the kernel's host stub and haxpy are clean here).
        r = self.vet("asm_helper", allow=True)
        self.assertIsNotNone(r)
        self.assertEqual(r.rule, "system_call")
        self.assertIn("sneaky_helper", r.symbol)
        self.assertIn("sneaky_helper", r.message)

    def test_raw_syscall_corpus_entries_refused(self):
        # Catches rule D missing for the corpus's own raw-syscall attacks
        # (fork + setsid, openat + write, kill of the grader, a forged reply),
        # or naming another place than expect.json says.
        for name in RAW_SYSCALL_ENTRIES:
            if f"corpus_{name}" not in self.objs:
                continue
            exp = json.loads((CORPUS / name / "expect.json").read_text())
            r = self.vet(f"corpus_{name}")
            self.assertIsNotNone(r, name)
            self.assertEqual((r.rule, exp["refused_rule"]), ("system_call", "system_call"), name)
            self.assertIn(exp["refused_symbol"], r.symbol, name)

    def test_peers_have_no_system_calls(self):
        # Catches rule D reading the fatbin (device code in a data section)
        # or library code as instructions: the kit's peers, libraries allowed.
        for name in ("peer_cub", "peer_cublas", "peer_vector_sum_cub"):
            self.assertIsNone(self.vet(name, allow=True), name)
            self.assertEqual(vet.system_call_sites(self.objs[name]), [], name)

    def test_missing_objdump_refuses_when_strict_and_warns_otherwise(self):
        # Catches a missing disassembler passing silently: grade (strict)
        # must not grade the file; test (not strict) must say it was skipped
        # and still apply the symbol rules.
        with mock.patch.object(vet.shutil, "which", _no_objdump()):
            with self.assertRaises(vet.VetError) as cm:
                vet.vet_object(self.objs["asm_syscall"], allow_libraries=False)
            self.assertIn("objdump", str(cm.exception))
            warnings = []
            self.assertIsNone(vet.vet_object(self.objs["asm_syscall"], allow_libraries=False,
                                             strict=False, warnings=warnings))
            self.assertEqual(len(warnings), 1)
            self.assertIn("not checked for system call instructions", warnings[0])
            r = vet.vet_object(self.objs["exit_override"], allow_libraries=False, strict=False)
            self.assertEqual(r.rule, "interposition")

    def test_vet_built_finds_cmake_object(self):
        # Catches find_object looking in the wrong place (vet_built would then
        # fall back and fail on this tree, which has no CMakeCache.txt).
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp) / "CMakeFiles" / "bw_worker_haxpy.dir" / "abs" / "student" / "haxpy"
            d.mkdir(parents=True)
            shutil.copy(self.objs["exit_override"], d / "haxpy.cu.o")
            shutil.copy(self.objs["stub_haxpy"], d / "adapter.cu.o")  # never vetted
            r = vet.vet_built(Path(tmp), "bw_worker_haxpy", "haxpy", allow_libraries=False)
            self.assertIsNotNone(r)
            self.assertEqual(r.symbol, "exit")
            self.assertIn("exercises/haxpy/haxpy.cu", r.message)

    def test_vet_built_compiles_when_object_missing(self):
        # Catches the fallback ignoring BW_STUDENT_DIR (it would vet the stub).
        with tempfile.TemporaryDirectory() as tmp:
            tree, student = Path(tmp) / "build", Path(tmp) / "student" / "haxpy"
            tree.mkdir()
            student.mkdir(parents=True)
            (student / "haxpy.cu").write_text(textwrap.dedent(BAD["exit_override"]))
            (tree / "CMakeCache.txt").write_text(
                f"CMAKE_HOME_DIRECTORY:INTERNAL={ROOT}\nBW_STUDENT_DIR:PATH={student.parent}\n")
            r = vet.vet_built(tree, "bw_worker_haxpy", "haxpy", allow_libraries=False)
            self.assertIsNotNone(r)
            self.assertEqual(r.symbol, "exit")


@unittest.skipUnless(os.environ.get("BWLAB_SLOW_TESTS") == "1",
                     "slow (compiles every corpus entry with nvcc): set BWLAB_SLOW_TESTS=1")
class CorpusVetTests(unittest.TestCase):
    """Every tests/corpus entry's own file (alone, as the grader takes it),
    compiled as CMake does for the H100 (sm_90; bulk_copy_tiles needs it):
    an entry expected to run passes vetting, a refused one is refused by the
    rule and at the symbol its expect.json names. Catches rule D (or any
    rule) refusing honest code, and an entry whose expectation went stale."""

    def test_every_entry_vetted_as_expected(self):
        if _nvcc() is None:
            self.skipTest("nvcc not found")
        if not CORPUS.is_dir():
            self.skipTest("no tests/corpus/ in this copy of the kit")
        entries = []
        for exp_file in sorted(CORPUS.glob("*/expect.json")):
            exp = json.loads(exp_file.read_text())
            ex = exp["exercise"]
            cu = exp_file.parent / "exercises" / ex / f"{ex}.cu"
            entries.append((exp_file.parent.name, exp, cu, [ROOT / "exercises" / ex, ROOT / "grader" / "protocol"]))
        self.assertTrue(entries)
        with tempfile.TemporaryDirectory(prefix="bwlab-test-vet-corpus-") as tmp:
            def one(item):
                name, exp, cu, incs = item
                out = Path(tmp) / name
                out.mkdir()
                # Alone, so that headers beside it (extra_sources ships its own) are not used.
                shutil.copy(cu, out / cu.name)
                try:
                    obj = vet.compile_object(out / cu.name, out, incs, arch="90")
                except vet.VetError as e:
                    return name, exp, e
                return name, exp, vet.vet_object(obj, allow_libraries=False, source=cu.name)

            with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
                results = list(pool.map(one, entries))
        for name, exp, r in results:
            with self.subTest(entry=name):
                if isinstance(r, vet.VetError):
                    # Only a file that does not link may fail to compile
                    # (uses_cublas compiles; nothing here should not).
                    self.fail(f"{name} did not compile: {r}")
                if exp["status"] != "refused":
                    self.assertIsNone(r, f"{name}: {r and r.message}")
                else:
                    self.assertIsNotNone(r, name)
                    self.assertEqual(r.rule, exp["refused_rule"], name)
                    self.assertIn(exp["refused_symbol"], r.symbol, name)


if __name__ == "__main__":
    unittest.main()

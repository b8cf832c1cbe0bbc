"""vet.py: the symbol rules and the system call rule on real nvcc objects
(needs nvcc, no GPU), on hand-written nm lists and objdump listings, the
hooks in build.py, grade_runner.py and scoring.py, and the unsafe switch that
bypasses vetting. CorpusVetTests (BWLAB_SLOW_TESTS=1, which CI sets)
compiles every tests/corpus entry and holds it to its expect.json.

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

from bwlab import build, scoring, vet  # noqa: E402

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
RAW_SYSCALL_ENTRIES = ("forges_reply", "raw_fork", "raw_open_write", "raw_kill")


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


class RuleTests(unittest.TestCase):
    """check_symbols on nm lists written by hand (no nvcc)."""

    def test_forbidden_call_matches_versioned_and_mangled_names(self):
        # Catches a rule that misses glibc's versioned references or the
        # mangled C++ library calls (std::thread, std::ofstream).
        for name in ("write@GLIBC_2.2.5", "fork", "_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE",
                     "_ZNSt14basic_ofstreamIcSt11char_traitsIcEEC1EPKcSt13_Ios_Openmode"):
            r = vet.check_symbols(["_Z5haxpyifPK13__nv_bfloat16PS_"], [name], allow_libraries=True)
            self.assertIsNotNone(r, name)
            self.assertEqual(r.rule, "forbidden_call", name)
        # Names that merely contain a forbidden word are not calls to it.
        for name in ("printf", "fwrite", "_ZSt4cout", "writev_helper_not_libc", "cudaMemcpy"):
            self.assertIsNone(vet.check_symbols([], [name], allow_libraries=True), name)

    def test_ways_to_run_code_later_or_reach_other_processes_are_refused(self):
        # Catches the ways a reviewer found around the first lists: a timer's
        # thread or a signal handler working while the baseline is timed,
        # pkey_mprotect for mprotect, another process's memory, a descriptor
        # copied by fcntl or written by sendfile.
        for name in ("timer_create", "setitimer", "alarm", "sigaction", "signal@GLIBC_2.2.5",
                     "pkey_mprotect", "process_vm_writev", "tgkill", "pthread_kill", "fcntl",
                     "sendfile", "splice", "execveat", "cudaGetExportTable"):
            r = vet.check_symbols(["_Z5haxpyifPK13__nv_bfloat16PS_"], [name], allow_libraries=True)
            self.assertIsNotNone(r, name)
            self.assertEqual(r.rule, "forbidden_call", name)

    def test_nvtx_loader_calls_are_the_library_rule(self):
        # Catches CUB's NVTX dlopen/dlsym being refused when libraries are allowed.
        defined = ["nvtxGlobals_v3"]
        self.assertIsNone(vet.check_symbols(defined, ["dlopen", "dlsym"], allow_libraries=True))
        self.assertIsNotNone(vet.check_symbols([], ["dlopen"], allow_libraries=True))

    def test_mangled_and_helpers_allowed(self):
        defined = ["_Z5haxpyifPK13__nv_bfloat16PS_", "DW.ref.__gxx_personality_v0",
                   "__fatbinwrap_38_tmpxft_0001_haxpy_cu", "__cudaRegisterLinkedBinary_x"]
        self.assertIsNone(vet.check_symbols(defined, ["cudaMemcpy", "fprintf"], False))

    def test_each_interposer_named(self):
        for s in ("cudaMemcpy", "clock_gettime", "main", "cudaEventRecord"):
            r = vet.check_symbols(["_Z5haxpyv", s], [], True)
            self.assertIsNotNone(r, s)
            self.assertEqual(r.symbol, s)

    def test_interposition_named_before_library_and_count(self):
        # Catches losing the other problems, or naming the library first.
        r = vet.check_symbols(["main", "exit"], ["cublasCreate_v2"], False)
        self.assertEqual((r.symbol, r.rule, r.others), ("main", "interposition", 2))
        self.assertIn("2 more symbols", " ".join(r.lines()))

    def test_cub_pattern_not_fooled_by_lengths(self):
        # `_Z13cube_functionv` holds "3cub" after a digit: not CUB.
        self.assertIsNone(vet.check_symbols(["_Z13cube_functionv", "_Z16thrusters_enginev"],
                                            [], False))
        r = vet.check_symbols([], ["_ZN6thrust23THRUST_300001_SM_900_NS6detail3fooEv"], False)
        self.assertEqual(r.rule, "library")
        self.assertIn("Thrust", r.message)

    def test_nvtx_refused_only_without_libraries(self):
        self.assertIsNone(vet.check_symbols(["nvtxGlobals_v3"], [], True))
        r = vet.check_symbols(["nvtxGlobals_v3"], [], False)
        self.assertEqual(r.rule, "library")

    def test_switch_values(self):
        for v in ("1", "yes", "ON", "true"):
            self.assertTrue(vet.libraries_allowed({vet.ALLOW_ENV: v}), v)
        for v in ("", "0", "no", "off"):
            self.assertFalse(vet.libraries_allowed({vet.ALLOW_ENV: v}), v)
        self.assertFalse(vet.libraries_allowed({}))


# `objdump -d -w -C` output as binutils 2.40 prints it, with the traps rule D
# must not fall into: calls to a function named syscall, a demangled name
# with a type named syscall in it, a comment, a constant whose bytes hold
# 0f 05, int3.
LISTING = """
x.o:     file format elf64-x86-64


Disassembly of section .text:

0000000000000000 <helper(long)>:
   0:\t55                   \tpush   %rbp
   4:\t0f 05                \tsyscall
  10:\te8 00 00 00 00       \tcall   15 <syscall>
  15:\te8 00 00 00 00       \tcall   1a <sysenter_fn(int, long)>\t# 1a <syscall+0x4>
  16:\te8 00 00 00 00       \tcall   1a <use(int, syscall const&)>
  1a:\tcd 80                \tint    0x80
  1c:\tcd 03                \tint    $0x3
  1e:\t66 0f 05             \tdata16 syscall
  21:\tb8 0f 05 00 00       \tmov    $0x50f,%eax
  26:\t67 cd 80             \taddr32 int $0x80
  29:\t2e 0f 05             \t(bad)
  2c:\tcc                   \tint3

Disassembly of section .text.startup:

0000000000000000 <_GLOBAL__sub_I_x>:
   0:\t0f 34                \tsysenter

0000000000000010 <(anonymous namespace)::raw(long) [clone .constprop.0] [clone .isra.0]>:
  1a:\t0f 05                \tsyscall
"""


class DisassemblyTests(unittest.TestCase):
    """parse_disassembly on a listing written by hand (no objdump, no nvcc)."""

    def test_sites_found_and_traps_avoided(self):
        # Catches matching symbol names in branch targets or comments (false
        # refusals of honest code), missing the Intel spelling or a prefixed
        # form, or missing what only the bytes show.
        sites = vet.parse_disassembly(LISTING)
        self.assertEqual([(s.instruction, s.where, s.section) for s in sites], [
            ("syscall", "helper(long)+0x4", ".text"),
            ("int 0x80", "helper(long)+0x1a", ".text"),
            ("data16 syscall", "helper(long)+0x1e", ".text"),
            ("addr32 int $0x80", "helper(long)+0x26", ".text"),
            ("(bad)", "helper(long)+0x29", ".text"),
            ("sysenter", "_GLOBAL__sub_I_x+0x0", ".text.startup"),
            ("syscall", "(anonymous namespace)::raw(long)+0xa", ".text.startup"),
        ])

    def test_each_instruction_alone(self):
        for raw, text, want in (("0f 05", "syscall", True), ("0f 34", "sysenter", True),
                                ("cd 80", "int    $0x80", True), ("48 0f 05", "rex.W syscall", True),
                                ("", "svc    #0x0", True),
                                ("cd 81", "int    $0x81", False), ("e8 00 00 00 00", "call 0 <syscall>", False),
                                ("0f 0b", "ud2", False), ("0f 05 90", "nop", False)):
            self.assertEqual(vet.is_system_call(raw, text), want, text)

    def test_system_call_outranks_forbidden_calls(self):
        # The refusal names the direct system call first, and counts the rest.
        found = vet.system_call_problems(vet.parse_disassembly(LISTING), "f.cu")
        found += vet._symbol_problems([], ["fork"], True, "f.cu")
        r = vet._first(found)
        self.assertEqual((r.rule, r.others), ("system_call", 7))
        self.assertIn("f.cu makes a system call directly", r.message)
        self.assertIn("7 more places", " ".join(r.lines()))


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
        if not (here / "test_grading.py").is_file():
            self.skipTest("no test_grading.py (its fake runner) in this copy of the kit (the student handout)")
        sys.path.insert(0, str(here))
        import test_grading as tg
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

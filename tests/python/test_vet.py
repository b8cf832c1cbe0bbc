"""vet.py: the symbol rules on real nvcc objects (needs nvcc, no GPU), on
hand-written nm lists, and the hooks in build.py and scoring.py.

Each test names the broken vetting it would catch."""
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

HAXPY_INC = [ROOT / "exercises" / "haxpy", ROOT / "grader"]
VSUM_INC = [ROOT / "exercises" / "vector_sum", ROOT / "grader"]

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
        }
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

import contextlib
import io
import json
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

from bwlab import build, submission  # noqa: E402

NVCC_FAIL = """\
[ 12%] Built target bwref
[ 40%] Built target bwworker
[ 45%] Building CUDA object CMakeFiles/bw_worker_haxpy.dir/ROOT/exercises/haxpy/haxpy.cu.o
ROOT/exercises/haxpy/haxpy.cu(2): error: identifier "undefined_thing" is undefined
  __attribute__((global)) void k(int n, nv_bfloat16* y) { y[0] = undefined_thing; }
                                                                ^

ROOT/exercises/haxpy/haxpy.cu(3): error: expected a ";"
  void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y) { k<<<1,1>>>(n, y) }
                                                                                         ^

2 errors detected in the compilation of "ROOT/exercises/haxpy/haxpy.cu".
gmake[3]: *** [CMakeFiles/bw_worker_haxpy.dir/build.make:90: haxpy.cu.o] Error 2
gmake[2]: *** [CMakeFiles/Makefile2:200: CMakeFiles/bw_worker_haxpy.dir/all] Error 2
gmake: *** [Makefile:100: all] Error 2
"""

GCC_FAIL = """\
[ 10%] Building C object CMakeFiles/bwjudge.dir/grader/judge/cases.c.o
ROOT/grader/judge/cases.c: In function 'f':
ROOT/grader/judge/cases.c:1:23: error: expected expression before ';' token
    1 | void f(void){ int x = ; }
      |                       ^
gmake[2]: *** [CMakeFiles/bwjudge.dir/build.make:76: cases.c.o] Error 1
"""

LD_FAIL = """\
[ 90%] Linking CUDA executable bw_worker_vector_sum
/usr/bin/ld: CMakeFiles/bw_worker_vector_sum.dir/adapter.cu.o: in function `bw_student_call':
adapter.cu:(.text+0x5): undefined reference to `vector_sum(int, __nv_bfloat16 const*)'
collect2: error: ld returned 1 exit status
gmake[2]: *** [bw_worker_vector_sum] Error 1
"""


class Trim(unittest.TestCase):
    def test_nvcc_errors_with_context(self):
        lines = build.trim_compiler_output(NVCC_FAIL.replace("ROOT", "/r"), {"/r/": ""})
        self.assertEqual(lines[0], 'exercises/haxpy/haxpy.cu(2): error: identifier "undefined_thing" is undefined')
        self.assertIn('exercises/haxpy/haxpy.cu(3): error: expected a ";"', lines)
        self.assertTrue(any(l.strip() == "^" for l in lines))
        self.assertIn('2 errors detected in the compilation of "exercises/haxpy/haxpy.cu".', lines)
        self.assertFalse(any("gmake" in l or "Built target" in l for l in lines))

    def test_gcc_error_keeps_function_line(self):
        lines = build.trim_compiler_output(GCC_FAIL.replace("ROOT", "/r"), {"/r/": ""})
        self.assertEqual(lines[:2], ["grader/judge/cases.c: In function 'f':",
                                     "grader/judge/cases.c:1:23: error: expected expression before ';' token"])
        self.assertIn("    1 | void f(void){ int x = ; }", lines)

    def test_linker(self):
        lines = build.trim_compiler_output(LD_FAIL)
        self.assertTrue(any("undefined reference to `vector_sum" in l for l in lines))
        self.assertTrue(any("ld returned 1 exit status" in l for l in lines))

    def test_submission_paths_map_back(self):
        text = "/b/submissions/abc/student/haxpy/haxpy.cu(7): error: boom\n"
        lines = build.trim_compiler_output(text, {"/b/submissions/abc/student": "exercises"})
        self.assertEqual(lines, ["exercises/haxpy/haxpy.cu(7): error: boom"])

    def test_fallback_when_nothing_matches(self):
        text = "\n".join(f"line {i}" for i in range(100)) + "\ngmake: *** [all] Error 2\n"
        lines = build.trim_compiler_output(text)
        self.assertEqual(len(lines), 30)
        self.assertEqual(lines[-1], "line 99")

    def test_failed_make_targets(self):
        text = ("gmake[2]: *** [tests/CMakeFiles/t.dir/build.make:103: tests/test_x] Error 1\n"
                "gmake[1]: *** [CMakeFiles/Makefile2:672: tests/CMakeFiles/t.dir/all] Error 2\n"
                "FAILED: CMakeFiles/bwgrade.dir/grader/modes/main.c.o\n")
        self.assertEqual(build.failed_make_targets(text), ["tests/test_x", "CMakeFiles/bwgrade.dir/grader/modes/main.c.o"])

    def test_cap(self):
        text = "".join(f"x.cu({i}): error: e{i}\n" for i in range(200))
        lines = build.trim_compiler_output(text, cap=60)
        self.assertEqual(len(lines), 61)
        self.assertIn("140 more lines", lines[-1])


# A stand-in for cmake: configure writes a cache (with the -D options) and a
# Makefile; --build "builds" each --target into an executable script, except
# the targets named in FAKE_CMAKE_FAIL, which fail with a compiler message.
FAKE_CMAKE = textwrap.dedent("""\
    #!{python}
    import json, os, sys
    args = sys.argv[1:]
    with open(os.environ["FAKE_CMAKE_LOG"], "a") as f:
        f.write(json.dumps(args) + "\\n")
    if "--build" in args:
        bdir = args[args.index("--build") + 1]
        targets = args[args.index("--target") + 1:] if "--target" in args else ["all"]
        for t in targets:
            if t in os.environ.get("FAKE_CMAKE_FAIL", "").split(","):
                print(f"[ 50%] Building CUDA object {{t}}.dir/x.cu.o")
                print(f"{{bdir}}/../student/{{t}}.cu(3): error: this does not compile")
                sys.exit(2)
            p = os.path.join(bdir, t)
            with open(p, "w") as f:
                f.write("#!/bin/sh\\nexit 0\\n")
            os.chmod(p, 0o755)
        sys.exit(0)
    if "-S" in args:
        if os.environ.get("FAKE_CMAKE_CONFIGURE_OUT"):
            print(os.environ["FAKE_CMAKE_CONFIGURE_OUT"])
            sys.exit(1)
        bdir = args[args.index("-B") + 1]
        os.makedirs(bdir, exist_ok=True)
        with open(os.path.join(bdir, "CMakeCache.txt"), "w") as f:
            for a in args:
                if a.startswith("-D"):
                    k, _, v = a[2:].partition("=")
                    f.write(f"{{k}}:STRING={{v}}\\n")
        open(os.path.join(bdir, "Makefile"), "w").close()
        sys.exit(0)
    sys.exit(64)
""")


class FakeCmake(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)
        bindir = self.tmp / "bin"
        bindir.mkdir()
        cmake = bindir / "cmake"
        cmake.write_text(FAKE_CMAKE.format(python=sys.executable))
        cmake.chmod(cmake.stat().st_mode | stat.S_IEXEC)
        self.log = self.tmp / "cmake.log"
        # A minimal kit: the table, a solution for haxpy only, a peer.
        self.root = self.tmp / "kit"
        (self.root / "exercises").mkdir(parents=True)
        (self.root / "exercises" / "exercises.def").write_text(
            'BW_EXERCISE(haxpy, 2, 1, 1, "h")\nBW_EXERCISE(vector_sum, 3, 0, 0, "v")\n')
        (self.root / "solutions" / "haxpy").mkdir(parents=True)
        (self.root / "solutions" / "haxpy" / "haxpy.cu").write_text("// solution\n")
        (self.root / "grader" / "peers").mkdir(parents=True)
        (self.root / "grader" / "peers" / "haxpy_cublas.cu").write_text("// peer\n")
        env = {"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
               "FAKE_CMAKE_LOG": str(self.log), "FAKE_CMAKE_FAIL": "", "FAKE_CMAKE_CONFIGURE_OUT": ""}
        env.pop("BWLAB_BUILD_DIR", None)
        self._env = mock.patch.dict(os.environ, env)
        self._env.start()
        os.environ.pop("BWLAB_BUILD_DIR", None)
        # The fake CMake leaves no object files to vet (test_vet_*.py cover vetting).
        from bwlab import vet
        self._vet = mock.patch.object(vet, "vet_built", return_value=None)
        self._vet.start()

    def tearDown(self):
        self._vet.stop()
        self._env.stop()
        self._tmp.cleanup()

    def calls(self):
        if not self.log.exists():
            return []
        return [json.loads(l) for l in self.log.read_text().splitlines()]

    def prepare(self, *a, **kw):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            plan = build.prepare(*a, root=self.root, all_names=["haxpy", "vector_sum"], **kw)
        return plan, out.getvalue()

    def test_student_workers_built_one_by_one(self):
        os.environ["FAKE_CMAKE_FAIL"] = "bw_worker_vector_sum"
        plan, out = self.prepare(["haxpy", "vector_sum"])
        bdir = self.root / "build"
        self.assertEqual(plan.bwgrade, bdir / "bwgrade")
        h, v = plan.workers
        self.assertTrue(h.ok)
        self.assertEqual(h.path, bdir / "bw_worker_haxpy")
        self.assertEqual(v.status, "build_error")
        self.assertTrue(any("error: this does not compile" in l for l in v.lines))
        calls = self.calls()
        self.assertEqual(calls[0][:5], ["-S", str(self.root), "-B", str(bdir), "-DCMAKE_BUILD_TYPE=Release"])
        # All at once first; that failed, so target by target.
        self.assertEqual(calls[1][-5:], ["--target", "bwgrade", "bwworker", "bw_worker_haxpy",
                                         "bw_worker_vector_sum"])
        self.assertEqual(calls[2][-3:], ["--target", "bwgrade", "bwworker"])
        self.assertEqual(calls[3][-2:], ["--target", "bw_worker_haxpy"])
        self.assertEqual(calls[4][-2:], ["--target", "bw_worker_vector_sum"])
        self.assertIn("-j", calls[3])
        self.assertIn("FAILED", out)

    def test_everything_built_in_one_call_when_it_builds(self):
        plan, out = self.prepare(["haxpy", "vector_sum"])
        builds = [c for c in self.calls() if "--build" in c]
        self.assertEqual(len(builds), 1)
        self.assertEqual(builds[0][-5:], ["--target", "bwgrade", "bwworker", "bw_worker_haxpy",
                                          "bw_worker_vector_sum"])
        self.assertTrue(all(w.ok for w in plan.workers))
        self.assertEqual(plan.workers[1].path, self.root / "build" / "bw_worker_vector_sum")
        self.assertIn("vector_sum", out)

    def test_configure_only_once(self):
        self.prepare(["haxpy"])
        self.prepare(["haxpy"])
        configures = [c for c in self.calls() if "-S" in c]
        self.assertEqual(len(configures), 1)

    def test_reconfigure_when_cache_is_gone_or_option_differs(self):
        bdir = self.root / "build"
        self.prepare(["haxpy"])
        (bdir / "CMakeCache.txt").unlink()
        self.prepare(["haxpy"])
        self.assertEqual(len([c for c in self.calls() if "-S" in c]), 2)
        self.assertFalse(build.needs_configure(bdir, {}))
        self.assertTrue(build.needs_configure(bdir, {"BW_WERROR": "ON"}))
        with contextlib.redirect_stdout(io.StringIO()):
            build.configure(self.root, bdir, {"BW_WERROR": "ON"})
        self.assertFalse(build.needs_configure(bdir, {"BW_WERROR": "1"}))

    def test_build_dir_from_environment(self):
        os.environ["BWLAB_BUILD_DIR"] = "elsewhere"
        plan, _ = self.prepare(["haxpy"])
        self.assertEqual(plan.build_dir, self.root / "elsewhere")
        self.assertTrue((self.root / "elsewhere" / "bw_worker_haxpy").exists())

    def test_solutions_and_peers(self):
        plan, out = self.prepare(["haxpy", "vector_sum"], "solution", peers=True)
        got = [(w.exercise, w.label, w.target, w.status) for w in plan.workers]
        self.assertEqual(got, [("haxpy", "solution", "bw_worker_haxpy_solution", "ok"),
                               ("haxpy", "cublas", "bw_worker_haxpy_cublas", "ok"),
                               ("vector_sum", "solution", "bw_worker_vector_sum_solution", "unavailable")])
        self.assertIn("no solutions/vector_sum/vector_sum.cu", out)

    def test_submission_tree(self):
        src = self.tmp / "sub" / "haxpy"
        src.mkdir(parents=True)
        (src / "haxpy.cu").write_text("// student\n")
        sub = submission.load(self.tmp / "sub", ["haxpy", "vector_sum"])
        plan, _ = self.prepare(["haxpy", "vector_sum"], "submission", sub)
        h, v = plan.workers
        tree = self.root / "build" / "submissions" / sub.digest()
        self.assertEqual(h.path, tree / "build" / "bw_worker_haxpy")
        self.assertEqual((v.status, v.message), ("missing", "missing file exercises/vector_sum/vector_sum.cu"))
        self.assertEqual((tree / "student" / "haxpy" / "haxpy.cu").read_text(), "// student\n")
        # Every exercise needs a file for CMake; an absent one gets a placeholder that is never built.
        self.assertIn("#error", (tree / "student" / "vector_sum" / "vector_sum.cu").read_text())
        sub_configure = [c for c in self.calls() if "-S" in c and str(tree / "build") in c][0]
        self.assertIn(f"-DBW_STUDENT_DIR={tree / 'student'}", sub_configure)
        self.assertIn("-DBW_STUDENT_ONLY=ON", sub_configure)
        self.assertEqual(plan.bwgrade, self.root / "build" / "bwgrade")

    def test_submission_compile_error_is_mapped(self):
        os.environ["FAKE_CMAKE_FAIL"] = "bw_worker_haxpy"
        src = self.tmp / "sub" / "haxpy"
        src.mkdir(parents=True)
        (src / "haxpy.cu").write_text("oops\n")
        sub = submission.load(self.tmp / "sub", ["haxpy", "vector_sum"])
        plan, _ = self.prepare(["haxpy"], "submission", sub)
        self.assertEqual(plan.workers[0].status, "build_error")

    def test_check_missing(self):
        os.environ["FAKE_CMAKE_CONFIGURE_OUT"] = (
            "CMake Error at tests/CMakeLists.txt:9 (message):\n"
            "  Check (the C unit test library) was not found. Install it: apt-get install -y check")
        with self.assertRaises(build.CheckMissing) as cm:
            self.prepare(["haxpy"])
        self.assertIn("apt-get install -y check", cm.exception.message)

    def test_other_configure_failure(self):
        os.environ["FAKE_CMAKE_CONFIGURE_OUT"] = "CMake Error: No CMAKE_CUDA_COMPILER could be found."
        with self.assertRaises(build.KitError) as cm:
            self.prepare(["haxpy"])
        self.assertNotIsInstance(cm.exception, build.CheckMissing)
        self.assertIn("CMAKE_CUDA_COMPILER", "\n".join(cm.exception.lines))

    def test_kit_build_failure_raises(self):
        os.environ["FAKE_CMAKE_FAIL"] = "bwgrade"
        with self.assertRaises(build.KitError):
            self.prepare(["haxpy"])


class EnsureCheck(unittest.TestCase):
    def run_ensure(self, euid, installed, apt_rcs, install=True):
        calls = []
        rcs = list(apt_rcs)

        def fake_run(cmd, env=None):
            calls.append(cmd)
            return mock.Mock(returncode=rcs.pop(0) if cmd[1] == "install" else 0)

        out, err = io.StringIO(), io.StringIO()
        with mock.patch.object(build, "check_installed", side_effect=installed), \
                mock.patch.object(build.os, "geteuid", return_value=euid), \
                mock.patch.object(build.shutil, "which", side_effect=lambda n, path=None: f"/usr/bin/{n}"), \
                mock.patch.object(build.subprocess, "run", side_effect=fake_run), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            ok = build.ensure_check(install=install)
        return ok, calls, out.getvalue(), err.getvalue()

    def test_already_there(self):
        ok, calls, _, _ = self.run_ensure(0, [True], [])
        self.assertTrue(ok)
        self.assertEqual(calls, [])

    def test_root_installs(self):
        ok, calls, out, _ = self.run_ensure(0, [False, True], [0])
        self.assertTrue(ok)
        self.assertEqual(calls, [["apt-get", "install", "-y", "check"]])
        self.assertIn("installing Check: apt-get install -y check", out)

    def test_root_updates_when_install_fails(self):
        ok, calls, _, _ = self.run_ensure(0, [False, True], [100, 0])
        self.assertTrue(ok)
        self.assertEqual(calls, [["apt-get", "install", "-y", "check"], ["apt-get", "update"],
                                 ["apt-get", "install", "-y", "check"]])

    def test_not_root_prints_the_command(self):
        ok, calls, _, err = self.run_ensure(1000, [False], [])
        self.assertFalse(ok)
        self.assertEqual(calls, [])
        self.assertIn("apt-get install -y check", err)

    def test_no_install_flag(self):
        ok, calls, _, err = self.run_ensure(0, [False], [], install=False)
        self.assertFalse(ok)
        self.assertEqual(calls, [])


class ObjectIsCurrent(unittest.TestCase):
    """Which compiled object of a worker that did not link gets vetted (for a
    refusal instead of a bare link error). Catches the rule going back to
    "made by this build only" (a second run of a cuBLAS submission showed the
    linker's message, not the refusal), or to "any object at all" (an old
    object vetted for a file that changed since)."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        base = Path(self._tmp.name)
        self.bdir = base / "build"
        self.bdir.mkdir()
        (self.bdir / "CMakeCache.txt").write_text(f"CMAKE_HOME_DIRECTORY:INTERNAL={base}\n")
        self.src = base / "exercises" / "haxpy" / "haxpy.cu"
        self.src.parent.mkdir(parents=True)
        self.src.write_text("// student\n")
        self.obj = self.bdir / "haxpy.cu.o"
        self.obj.write_bytes(b"\x7fELF")

    def tearDown(self):
        self._tmp.cleanup()

    def current(self, obj_t, src_t, since):
        os.utime(self.obj, (obj_t, obj_t))
        os.utime(self.src, (src_t, src_t))
        return build._object_is_current(self.obj, self.bdir, "haxpy", since)

    def test_made_by_this_build(self):
        self.assertTrue(self.current(2000, 2100, since=2000))

    def test_kept_by_make_because_newer_than_the_file(self):
        self.assertTrue(self.current(1000, 900, since=2000))

    def test_older_than_the_file_says_nothing_about_it(self):
        self.assertFalse(self.current(1000, 1500, since=2000))

    def test_a_submission_tree_looks_at_the_students_copy(self):
        student = Path(self._tmp.name) / "student"
        (student / "haxpy").mkdir(parents=True)
        (student / "haxpy" / "haxpy.cu").write_text("// theirs\n")
        os.utime(student / "haxpy" / "haxpy.cu", (1500, 1500))
        with open(self.bdir / "CMakeCache.txt", "a") as f:
            f.write(f"BW_STUDENT_DIR:PATH={student}\n")
        self.assertFalse(self.current(1000, 900, since=2000))   # the kit's file is older, theirs newer


if __name__ == "__main__":
    unittest.main()

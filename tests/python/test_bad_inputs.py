"""Every command of run.py through the bad values a user can type: each is
refused with one line (run.py: error: ...) that names the option and what it
accepts, with the documented exit code (2 a bad value, 5 a missing optional
tool), and before anything is built or written.

Runs in-process through run.py's entry point (bwlab.cli.main), no GPU, no
build: the build steps are replaced by stand-ins that record being called,
and a tool is "missing" by making its finder find nothing.

Catches: a validation removed or moved after the build (build_called, or the
build folder appears); bwgrade's usage text reaching the user (more than one
line); a wrong exit code (a missing tool reported as 3 or 4, a usage error as
1); a message that does not name the option or file.
"""
import contextlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import (EXIT_TOOL, EXIT_USAGE, build, cli, cmd_asm, cmd_grade, cmd_selftest,  # noqa: E402
                   exercises, ncu, optional_tools)

SIZE_FORMS = re.escape("(N, 2^P, 2^P+K, 2^P-K; 1 to 2^31-1)")
SHAPE_FORMS = re.escape("(RxC, rows and cols from 1, rows*cols at most 2^31-1)")
# The kit's exercises, as its messages list them, and its first MATRIX
# exercise (sized RxC), if it has one.
NAMES = exercises.names(ROOT)
KNOWN = re.escape(", ".join(NAMES))
FILES = re.escape(", ".join(f"exercises/{n}/{n}.cu" for n in NAMES))
MATRIX = next((e.name for e in exercises.load(ROOT) if e.matrix), None)

# (argv, extra environment, tools missing, exit code, regex for the one line).
# In argv, {empty} is an empty folder, {corrupt} a grading folder whose
# manifest.json is not JSON, {badrecord} one whose record is not, {out} a
# folder that must not be created.
ROWS = [
    # test
    (["test", "--case", "-1"], {}, (), 2, r"--case: '-1' is not a case index \(a whole number from 0"),
    (["test", "--case", "abc"], {}, (), 2, r"--case: 'abc' is not a case index"),
    (["test", "--case", "2147483648"], {}, (), 2, r"--case: '2147483648' is not a case index"),
    (["test", "--seed", "-1"], {}, (), 2, r"--seed: '-1' is not a seed \(a non-negative integer"),
    (["test", "--seed", "1.5"], {}, (), 2, r"--seed: '1.5' is not a seed"),
    (["test", "--seed", str(2 ** 64)], {}, (), 2, r"--seed: '18446744073709551616' is not a seed"),
    (["test"], {"BWLAB_SEED": "abc"}, (), 2, r"BWLAB_SEED: 'abc' is not a seed .*unset it"),
    (["test", "haxpy"], {"BWLAB_SEED": "-7"}, (), 2, r"BWLAB_SEED: '-7' is not a seed"),
    (["test", "nosuch"], {}, (), 2, r"unknown exercise 'nosuch' \(this kit has: " + KNOWN + r"\)"),
    (["test", "--submission", "{empty}"], {}, (), 2,
     r"submission .*: none of " + FILES + " is in it"),
    (["test", "--submission", "{empty}/nope"], {}, (), 2, r"submission .*: no such file or directory"),
    (["test", "--sanitizer", "bogus"], {}, (), 2, r"--sanitizer: invalid choice: 'bogus'"),
    (["test", "--frobnicate"], {}, (), 2, r"unrecognized arguments: --frobnicate \(see python3 run.py test --help\)"),
    (["test", "--sanitize"], {}, ("compute-sanitizer",), 5,
     r"compute-sanitizer was not found, and `run.py test --sanitize` needs it; .*"
     r"apt-get install cuda-sanitizer-13-0 .*pip install nvidia-cuda-sanitizer-api"),
    (["test", "--sanitizer", "racecheck"], {}, ("compute-sanitizer",), 5,
     r"`run.py test --sanitizer racecheck` needs it"),
    # benchmark
    (["benchmark", "--sizes", "0"], {}, (), 2, r"--sizes: '0' is not an element count " + SIZE_FORMS),
    (["benchmark", "--sizes", "-5"], {}, (), 2, r"--sizes: '-5' is not an element count"),
    (["benchmark", "--sizes", "99999999999"], {}, (), 2, r"--sizes: '99999999999' is not an element count"),
    (["benchmark", "--sizes", "abc"], {}, (), 2, r"--sizes: 'abc' is not an element count"),
    (["benchmark", "--sizes", "2^31"], {}, (), 2, r"--sizes: '2\^31' is not an element count"),
    (["benchmark", "--sizes", "2^32-1"], {}, (), 2, r"--sizes: '2\^32-1' is not an element count"),
    (["benchmark", "--sizes", "2^4-16"], {}, (), 2, r"--sizes: '2\^4-16' is not an element count"),
    (["benchmark", "--sizes", "1000,,2^20"], {}, (), 2, r"--sizes: '1000,,2\^20' has an empty item"),
    (["benchmark", "--sizes", ""], {}, (), 2, r"--sizes: '' has an empty item"),
    (["benchmark", "--sizes", "2^20", "--sizes", "1e6"], {}, (), 2, r"--sizes: '1e6' is not an element count"),
    (["benchmark", "--offsets", "-1"], {}, (), 2, r"--offsets: '-1' is not an offset \(elements, 0 to 127\)"),
    (["benchmark", "--offsets", "0,128"], {}, (), 2, r"--offsets: '128' is not an offset"),
    (["benchmark", "--plot", "chart.txt"], {}, (), 2, r"--plot: 'chart.txt' is not a file name ending in .png, .svg, .pdf"),
    (["benchmark", "--plot", "chart.png"], {}, ("matplotlib",), 5,
     r"matplotlib was not found, and `run.py benchmark --plot` needs it; pip install matplotlib"),
    (["benchmark"], {"BWLAB_SEED": "abc"}, (), 2, r"BWLAB_SEED: 'abc' is not a seed"),
    (["benchmark", "nosuch"], {}, (), 2, r"unknown exercise 'nosuch'"),
    # selftest
    (["selftest", "--install"], {}, (), 2, r"unrecognized arguments: --install"),
    # asm
    (["asm", "haxpy", "--sass"], {}, ("cuobjdump",), 5,
     r"cuobjdump was not found, and `run.py asm --sass` \(or nvdisasm\) needs it; .*"
     r"pip install nvidia-cuda-cuobjdump .*--ptx` works with nvcc alone"),
    (["asm", "haxpy", "--arch", "nine"], {}, (), 2, r"--arch nine: expected a number such as 90"),
    (["asm", "nosuch"], {}, (), 2, r"unknown exercise 'nosuch'"),
    (["asm"], {}, (), 2, r"the following arguments are required: exercise"),
    (["asm", "haxpy", "--submission", "{empty}"], {}, (), 2, r"missing file exercises/haxpy/haxpy.cu"),
    # profile
    (["profile", "haxpy"], {}, ("ncu",), 5,
     r"ncu was not found, and `run.py profile` needs it; it is Nsight Compute"),
    (["profile", "haxpy", "--n", "0"], {}, (), 2, r"--n: '0' is not an element count " + SIZE_FORMS),
    (["profile", "haxpy", "--n", "2^31"], {}, (), 2, r"--n: '2\^31' is not an element count"),
    (["profile", "haxpy", "--offset", "128"], {}, (), 2, r"--offset: '128' is not an offset"),
    (["profile", "haxpy", "--seed", "-1"], {}, (), 2, r"--seed: '-1' is not a seed"),
    (["profile", "haxpy"], {"BWLAB_SEED": "x"}, ("ncu",), 2, r"BWLAB_SEED: 'x' is not a seed"),
    (["profile", "haxpy", "--submission", "{empty}"], {}, ("ncu",), 2, r"none of exercises/haxpy/haxpy.cu"),
    (["profile", "haxpy", "--clock-control", "max"], {}, (), 2, r"--clock-control: invalid choice: 'max'"),
    (["profile", "haxpy", "--shape", "0x5"], {}, (), 2, r"--shape: '0x5' is not a shape " + SHAPE_FORMS),
    (["profile", "haxpy", "--shape", "46341x46341"], {}, (), 2, r"--shape: '46341x46341' is not a shape"),
    (["profile", "haxpy", "--shape", "4*4"], {}, (), 2, r"--shape: '4\*4' is not a shape"),
    (["profile", "haxpy", "--shape", "4x4"], {}, ("ncu",), 2,
     r"--shape: haxpy is sized by an element count, not rows x cols: give --n N instead"),
    # crosscheck
    (["crosscheck"], {}, ("ncu",), 5, r"ncu was not found, and `run.py crosscheck` needs it"),
    (["crosscheck", "--calls", "0"], {}, (), 2, r"--calls: '0' is not a whole number from 1 to 1000"),
    (["crosscheck", "--calls", "1001"], {}, (), 2, r"--calls: '1001' is not a whole number from 1 to 1000"),
    (["crosscheck", "--sizes", "0"], {}, (), 2, r"--sizes: '0' is not an element count"),
    (["crosscheck", "--offsets", "999"], {}, (), 2, r"--offsets: '999' is not an offset"),
    (["crosscheck", "nosuch"], {}, ("ncu",), 2, r"unknown exercise 'nosuch'"),
    (["crosscheck"], {"BWLAB_SEED": "0x"}, ("ncu",), 2, r"BWLAB_SEED: '0x' is not a seed"),
    # grade
    (["grade", "{empty}", "--public", "--out", "{out}", "--gpus", ""], {}, (), 2,
     r"--gpus: '' is not a list of distinct GPU indices or UUIDs \(like 0,1,2,3\)"),
    (["grade", "{empty}", "--public", "--out", "{out}", "--gpus", "0,,1"], {}, (), 2, r"--gpus: '0,,1' is not a list"),
    (["grade", "{empty}", "--public", "--out", "{out}", "--gpus", "0,0"], {}, (), 2, r"--gpus: '0,0' is not a list of distinct"),
    (["grade", "{empty}", "--public", "--out", "{out}", "--jobs", "0"], {}, (), 2,
     r"--jobs: '0' is not a whole number from 1 or more"),
    (["grade", "{empty}", "--public", "--out", "{out}", "--test-timeout", "0"], {}, (), 2,
     r"--test-timeout: '0' is not a number of seconds above 0"),
    (["grade", "{empty}", "--public", "--out", "{out}", "--build-timeout", "nan"], {}, (), 2,
     r"--build-timeout: 'nan' is not a number of seconds"),
    (["grade", "{empty}", "--public", "--out", "{out}", "--shard", "0/3"], {}, (), 2,
     r"--shard 0/3: K runs from 1 to N \(1-based\)"),
    (["grade", "{empty}", "--public", "--out", "{out}", "--policy", "{empty}/none.ini"], {}, (), 2,
     r"cannot read policy file .*/empty/none.ini"),
    (["grade", "{empty}/nope", "--public", "--out", "{out}"], {}, (), 2, r"no such file or directory: .*/empty/nope"),
    (["grade", "--public", "--out", "{out}"], {}, (), 2, r"no submissions given"),
    (["grade", "{empty}", "--out", "{out}"], {"BWLAB_SECRET_SEED": "12"}, (), 2,
     r"\$BWLAB_SECRET_SEED: a secret seed must lie between 2\^32 and 2\^64-1"),
    (["grade", "{empty}", "--public", "--out", "{out}", "--sandbox", "maybe"], {}, (), 2, r"--sandbox: invalid choice"),
    (["grade", "{empty}", "--public", "--out", "{out}"], {}, ("compute-sanitizer",), 5,
     r"compute-sanitizer was not found, and the policy's memcheck \(" + KNOWN + r"\) needs it; "
     r".*or set memcheck = none in the policy"),
    # merge
    (["merge", "{empty}"], {}, (), 2, r"the following arguments are required: --out"),
    (["merge", "{empty}/nope", "--out", "{out}"], {}, (), 2, r"nope: not a folder"),
    (["merge", "{corrupt}", "--out", "{out}"], {}, (), 2, r"/corrupt: no readable manifest.json \(Expecting"),
    (["merge", "{badrecord}", "--out", "{out}"], {}, (), 2, r"/badrecord/alice.json: Expecting value"),
    # handout
    (["handout", "--prefix", "a/b"], {}, (), 2, r"--prefix must be a plain folder name"),
    (["handout", "--out", "{out}/kit.zip"], {}, (), 2, r"--out should end in .tar.gz"),
    # score
    (["score", "nosuch"], {}, (), 2, r"unknown exercise 'nosuch'"),
    (["score", "--policy", "{empty}/none.ini"], {}, (), 2, r"cannot read policy file .*/empty/none.ini"),
    (["score", "--submission", "{empty}"], {}, (), 2, r"none of exercises/haxpy/haxpy.cu"),
    (["score"], {}, ("compute-sanitizer",), 5,
     r"compute-sanitizer was not found, and the policy's memcheck \(" + KNOWN + r"\) needs it"),
    # report
    (["report", "{empty}/nope"], {}, (), 2, r"nope: not a folder"),
    (["report", "{empty}"], {}, (), 2, r"no manifest.json \(is it run.py grade's --out folder\?\)"),
    (["report", "{corrupt}"], {}, (), 2, r"/corrupt/manifest.json: not readable JSON \(Expecting"),
    (["report", "{badrecord}"], {}, (), 2, r"badrecord/alice.json: not readable JSON"),
    (["report", "{empty}", "--colour"], {}, (), 2, r"unrecognized arguments: --colour"),
]
if MATRIX:
    ROWS.append((["profile", MATRIX, "--n", "1000"], {}, ("ncu",), 2,
                 rf"--n: {MATRIX} is a MATRIX exercise, sized rows x cols: give --shape RxC instead"))


class Built(Exception):
    """Raised by the stand-ins of the build steps: something was about to be built."""


def _refuse_build(*_a, **_k):
    raise Built()


class BadInputs(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self._tmp.cleanup)
        self.tmp = Path(self._tmp.name)
        self.places = {"empty": self.tmp / "empty", "corrupt": self.tmp / "corrupt",
                       "badrecord": self.tmp / "badrecord", "out": self.tmp / "out"}
        self.places["empty"].mkdir()
        self.places["corrupt"].mkdir()
        (self.places["corrupt"] / "manifest.json").write_text("{\n")
        bad = self.places["badrecord"]
        bad.mkdir()
        (bad / "manifest.json").write_text(json.dumps({"kind": "bwlab-grade-run", "ids": ["alice"],
                                                       "exercises": ["haxpy"]}))
        (bad / "alice.json").write_text("{\"kind\": ")
        self.build_dir = self.tmp / "build"

    def invoke(self, argv, env, missing):
        """cli.main(argv) with the build steps replaced; returns (code,
        stdout, stderr, whether a build was started)."""
        argv = [a.format(**self.places) for a in argv]
        real_find = cmd_asm.find_cuda_tool

        def find_cuda_tool(name):
            if name in ("cuobjdump", "nvdisasm"):
                return None if "cuobjdump" in missing else f"/opt/fake/{name}"
            return real_find(name) or f"/opt/fake/{name}"

        out, err = io.StringIO(), io.StringIO()
        built = False
        # The caller's seeds left out: only the row's count.
        environ = {k: v for k, v in os.environ.items() if k not in ("BWLAB_SEED", "BWLAB_SECRET_SEED")}
        environ.update(BWLAB_BUILD_DIR=str(self.build_dir), **env)
        with contextlib.ExitStack() as stack:
            stack.enter_context(mock.patch.dict(os.environ, environ, clear=True))
            for target in ((build, "prepare"), (build, "configure"), (build, "build_kit"),
                           (cmd_selftest.build, "ensure_check"), (cmd_grade, "KitRunner")):
                stack.enter_context(mock.patch.object(*target, side_effect=_refuse_build))
            stack.enter_context(mock.patch.object(cmd_asm, "find_cuda_tool", side_effect=find_cuda_tool))
            stack.enter_context(mock.patch.object(
                ncu, "find_ncu", return_value=None if "ncu" in missing else "/opt/fake/ncu"))
            stack.enter_context(mock.patch.object(
                optional_tools, "sanitizer_on", return_value="compute-sanitizer" not in missing))
            stack.enter_context(mock.patch.object(
                optional_tools, "has_matplotlib", return_value="matplotlib" not in missing))
            stack.enter_context(contextlib.redirect_stdout(out))
            stack.enter_context(contextlib.redirect_stderr(err))
            try:
                code = cli.main(argv)
            except Built:
                code, built = None, True
        return code, out.getvalue(), err.getvalue(), built

    def test_every_row(self):
        for argv, env, missing, code, pattern in ROWS:
            with self.subTest(argv=argv, env=env, missing=missing):
                try:
                    got, out, err, built = self.invoke(argv, env, missing)
                    self.assertFalse(built, f"a build was started: {out}{err}")
                    self.assertEqual(got, code, out + err)
                    self.assertEqual(out, "", "nothing on stdout before the refusal")
                    lines = err.splitlines()
                    self.assertEqual(len(lines), 1, f"one line, not {len(lines)}:\n{err}")
                    self.assertTrue(lines[0].startswith("run.py: error: "), lines[0])
                    self.assertRegex(lines[0], pattern)
                    self.assertFalse(self.build_dir.exists(), "the build folder was created")
                    self.assertFalse(self.places["out"].exists(), "an output folder was created")
                finally:    # one row's leftovers must not fail the next
                    for leftover in (self.build_dir, self.places["out"]):
                        shutil.rmtree(leftover, ignore_errors=True)

    def test_every_command_has_rows(self):
        self.assertEqual({row[0][0] for row in ROWS}, set(cli.COMMANDS))

    def test_the_rows_pass_with_good_values(self):
        """The stand-ins are reached when the values are good: the rows'
        refusals come from the checks, not from the harness."""
        for argv in (["test", "--case", "3", "--seed", "0x2a"],
                     ["benchmark", "--sizes", "2^20+5,1000", "--offsets", "0,127"],
                     ["profile", "haxpy", "--n", "2^28-1", "--offset", "1"],
                     *([["profile", MATRIX, "--shape", "46340x46340"]] if MATRIX else []),
                     ["crosscheck", "--calls", "5"]):
            with self.subTest(argv=argv):
                code, out, err, built = self.invoke(argv, {"BWLAB_SEED": "12"}, ())
                self.assertTrue(built, f"exit {code}: {out}{err}")

    def test_exit_codes_are_documented(self):
        readme = (ROOT / "README.md").read_text()   # the table row of code 5
        self.assertEqual(EXIT_TOOL, 5)
        self.assertIn("| 5 | a tool the command needs is missing", readme, "README: exit code 5")
        self.assertIn("5 a tool this command needs is missing", cli.EXIT_CODES)
        self.assertEqual(EXIT_USAGE, 2)


# A bwgrade that refuses a case index it does not have, as the real one does.
REFUSING_BWGRADE = textwrap.dedent("""\
    #!{python}
    import sys
    ex = sys.argv[2]
    sys.stderr.write(f"bwgrade: there is no case 99999: {{ex}} has cases 0..10 (without --hidden)\\n")
    sys.exit(2)
""")


class BwgradeRefuses(unittest.TestCase):
    """What only bwgrade can check (a --case beyond the table): its one line
    per exercise, and exit 2, not 1."""

    def test_case_beyond_the_table(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            fake = tmp / "bwgrade"
            fake.write_text(REFUSING_BWGRADE.format(python=sys.executable))
            fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
            plan = build.Plan(build_dir=tmp, bwgrade=fake, workers=[
                build.Worker(ex, "student", f"bw_worker_{ex}", path=tmp / ex, status="ok")
                for ex in NAMES])
            out, err = io.StringIO(), io.StringIO()
            with mock.patch.object(build, "prepare", return_value=plan), \
                    contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = cli.main(["test", "--case", "99999"])
        text = out.getvalue() + err.getvalue()
        self.assertEqual(code, 2, text)
        self.assertEqual(text.count("there is no case 99999"), len(NAMES), text)
        self.assertNotIn("usage", text)


BWGRADE = build.build_dir(ROOT) / "bwgrade"   # $BWLAB_BUILD_DIR, else build/


@unittest.skipUnless(BWGRADE.is_file(), "bwgrade not built (run.py selftest builds it first)")
class BwgradeUsage(unittest.TestCase):
    """bwgrade's own refusals are one line each (its usage text only on
    --help), so nothing run.py starts can bury the line under it."""

    def test_one_line_per_refusal(self):
        worker = str(BWGRADE.parent / "bw_worker_haxpy")
        for argv, said in ((["bench", "haxpy", "--worker", worker, "--sizes", "0"], "--sizes takes"),
                           (["test", "haxpy", "--worker", worker, "--seed", "-1"], "--seed needs"),
                           (["bench", "haxpy", "--worker", worker, "--offsets", "128"], "--offsets takes"),
                           (["frobnicate"], "unknown command")):
            with self.subTest(argv=argv):
                env = {k: v for k, v in os.environ.items() if k != "BWLAB_SEED"}
                p = subprocess.run([str(BWGRADE), *argv], capture_output=True, text=True,
                                   timeout=60, env=env)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(p.stdout, "")
                self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
                self.assertIn(said, p.stderr)
                self.assertIn("(bwgrade --help shows the usage)", p.stderr)

    def test_help_still_shows_the_usage(self):
        p = subprocess.run([str(BWGRADE), "--help"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0)
        self.assertIn("bwgrade bench EXERCISE --worker PATH", p.stdout)


if __name__ == "__main__":
    unittest.main()

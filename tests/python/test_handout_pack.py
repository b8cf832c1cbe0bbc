"""run.py handout: the student tarball holds what a student needs and no
solution, no instructor file, no secret seed, and no source that earns a
correctness point when submitted. (Instructor-side: this file is itself left
out of the handout.)

The full check (extract, build, `run.py selftest` on a CPU machine) takes
minutes: it runs only with BWLAB_SLOW_TESTS=1.
"""
import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import cmd_handout, exercises, handout_files, scoring  # noqa: E402

# tests/gpu/handout_zero.py says which expectation covers each source (the GPU
# acceptance step grades them with it); absent where tests/gpu/ is.
ZERO_SCRIPT = ROOT / "tests" / "gpu" / "handout_zero.py"
handout_zero = None
if ZERO_SCRIPT.is_file():
    _spec = importlib.util.spec_from_file_location("handout_zero", ZERO_SCRIPT)
    handout_zero = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(handout_zero)

FAKE_SEED = 7_338_129_044_517_610_923      # a made-up secret for these tests
INSTRUCTOR_TESTS = ("tests/python/test_grading.py", "tests/python/test_handout_pack.py",
                    "tests/python/test_e2e_grade_gpu.py", "tests/python/test_class_report.py")


def quiet(fn, *a, **kw):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        result = fn(*a, **kw)
    return result, out.getvalue()


def extract(tarball, dest):
    with tarfile.open(tarball, "r:gz") as tf:
        for m in tf.getmembers():
            assert not m.name.startswith("/") and ".." not in m.name.split("/"), m.name
            assert m.isfile() or m.isdir(), m.name
        if sys.version_info >= (3, 12):
            tf.extractall(dest, filter="data")
        else:
            tf.extractall(dest)


def files_under(folder):
    return sorted(p.relative_to(folder).as_posix() for p in Path(folder).rglob("*") if p.is_file())


class RuleTests(unittest.TestCase):
    def test_allow_and_deny(self):
        inside = ["run.py", "CMakeLists.txt", "README.md", "exercises/haxpy/haxpy.cu",
                  "grader/main.c", "grader/py/bwlab/cli.py", "grader/py/bwlab/cmd_grade.py",
                  "reference/bf16.h", "handout/haxpy.md", "docs/ARCHITECTURE.md", "docs/SPEED.md",
                  "tests/CMakeLists.txt", "tests/unit/test_cases.c", "tests/python/test_submission.py",
                  "tests/corpus/noop/exercises/haxpy/haxpy.cu"]
        outside = ["solutions/haxpy/haxpy.cu", "grader/instructor/secret_seed",
                   "grader/instructor/policy.ini", "docs/INSTRUCTORS.md", "docs/slurm/grade_array.sbatch",
                   "docs/ci/github-actions-grade.yml", "docs/BENCHMARKS.md", "docs/SPEED_HISTORY.md",
                   "tests/gpu/acceptance.sh", *INSTRUCTOR_TESTS, "build/bwgrade",
                   "grades/gradebook.csv", ".git/config", "grader/py/bwlab/__pycache__/x.pyc",
                   "notes.txt", "submissions/alice.zip", "exercises/haxpy/secret_seed",
                   "exercises/haxpy/haxpy.cu.orig"]
        for p in inside:
            self.assertIsNone(handout_files.verdict(p), p)
        for p in outside:
            self.assertIsNotNone(handout_files.verdict(p), p)


class CorpusRuleTests(unittest.TestCase):
    """Which corpus entries may go into the handout, from expect.json alone."""

    def test_only_verdicts_that_earn_nothing_go_in(self):
        zero = handout_files.corpus_zero_reason
        self.assertIsNone(zero({"status": "refused", "refused_rule": "library"}))
        self.assertIsNone(zero({"status": "not_implemented"}))
        self.assertIsNone(zero({"status": "build_error"}))
        self.assertIsNone(zero({"status": "fail", "outcomes": ["fail"], "groups_passed": []}))
        # Each of these catches a rule that would ship a kernel worth points.
        self.assertIn("pass", zero({"status": "pass", "outcomes": ["pass"]}))
        self.assertIn("cases pass", zero({"status": "fail", "outcomes": ["pass", "crash"], "groups_passed": []}))
        # "outcomes" says what must appear, not all that may: a failing entry
        # must claim outright that every group fails
        self.assertIsNotNone(zero({"status": "fail", "outcomes": ["fail"]}))
        self.assertIsNotNone(zero({"status": "fail", "outcomes": ["fail"], "groups_passed": ["huge"]}))
        # the fail-fast verdict counts as much as the full one
        self.assertIsNotNone(zero({"status": "fail", "outcomes": ["timeout"], "groups_passed": [],
                                   "fail_fast": {"status": "pass"}}))
        self.assertIsNone(zero({"status": "fail", "outcomes": ["timeout"], "groups_passed": [],
                                "fail_fast": {"outcomes": ["timeout"]}}))
        # a refused entry that passes with vetting off holds a working kernel
        # (forges_timing: delete its forgery and the naive kernel is left)
        self.assertIsNotNone(zero({"status": "refused", "when_unvetted": {"status": "pass",
                                                                          "outcomes": ["pass"]}}))
        self.assertIsNone(zero({"status": "refused", "when_unvetted": {"status": "not_implemented",
                                                                       "groups_passed": []}}))

    def test_entries_are_held_back_by_their_expect_json(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            entries = {"works": {"exercise": "haxpy", "status": "pass", "outcomes": ["pass"]},
                       "refused": {"exercise": "haxpy", "status": "refused"},
                       "broken": {"exercise": "haxpy", "status": "fail", "groups_passed": []},
                       "no_expect": None}
            for name, exp in entries.items():
                d = root / "tests" / "corpus" / name
                (d / "exercises" / "haxpy").mkdir(parents=True)
                (d / "exercises" / "haxpy" / "haxpy.cu").write_text("// x\n")
                if exp is not None:
                    (d / "expect.json").write_text(json.dumps(exp))
            files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
            kept, left = handout_files.select(files, root)
        self.assertEqual(sorted({f.split("/")[2] for f in kept}), ["broken", "refused"])
        why = {f.split("/")[2]: w for w, fs in left.items() for f in fs}
        self.assertIn("expected verdict is pass", why["works"])
        self.assertIn("expect.json", why["no_expect"])


@unittest.skipIf(handout_zero is None, "no tests/gpu/handout_zero.py in this copy of the kit")
class NoSourceEarnsAPointTests(unittest.TestCase):
    """Every .cu file the handout would hold (the real packing list), submitted
    as an exercise, is expected to earn no correctness point: a corpus
    entry's expect.json, tests/gpu/handout_sources.json for the kit's own
    sources, or the exercise's stub, shown to be one. On a GPU,
    `bash tests/gpu/acceptance.sh handout_zero` grades them all."""

    @classmethod
    def setUpClass(cls):
        files, _ = handout_files.list_files(ROOT)
        kept, _ = handout_files.select(files, ROOT)
        cls.sources = [f for f in kept if f.endswith(handout_zero.SOURCE_SUFFIXES)]
        cls.names = exercises.names(ROOT)
        cls.expect = handout_zero.load_sources(ROOT)

    def test_every_source_is_expected_to_earn_nothing(self):
        # Catches a packing rule that lets a corpus entry that passes (or any
        # new .cu nobody vouched for) into the handout.
        self.assertTrue(self.sources)
        for rel in self.sources:
            for ex, exp, where in handout_zero.expectations_for(ROOT, rel, self.names, self.expect):
                with self.subTest(source=rel, exercise=ex):
                    self.assertIsNotNone(exp, f"{rel} goes into the handout, but nothing says what it "
                                              f"scores as {ex}: leave it out (handout_files.DENY) or add "
                                              f"its verdict to {handout_zero.SOURCES}")
                    why = handout_files.corpus_zero_reason(exp)
                    self.assertIsNone(why, f"{rel} ({where}) may earn points as {ex}: {why}")

    def test_the_stubs_are_stubs(self):
        # Catches a stub that starts doing work (and would then be checked
        # as nothing more than "a stub").
        for ex in self.names:
            rel = f"exercises/{ex}/{ex}.cu"
            self.assertTrue(handout_zero.is_stub((ROOT / rel).read_text()), rel)
        self.assertFalse(handout_zero.is_stub("__global__ void k(int *p) { *p = 1; }\n"))
        self.assertFalse(handout_zero.is_stub("void f(void *p) { cudaMemset(p, 0, 4); }\n"))
        self.assertFalse(handout_zero.is_stub("void f() { k<<<1, 1>>>(); }\n"))
        self.assertTrue(handout_zero.is_stub("void f() {} // no kernel<<<here>>> and no cudaMemset()\n"))

    def test_every_expectation_is_for_a_source_that_ships(self):
        # A stale entry in handout_sources.json would vouch for nothing.
        for rel in self.expect:
            self.assertIn(rel, self.sources, f"{handout_zero.SOURCES} names {rel}, which is not in the handout")

    @unittest.skipUnless(os.environ.get("BWLAB_SLOW_TESTS") == "1",
                         "slow (a minute): set BWLAB_SLOW_TESTS=1 to build the kit's sources as submissions")
    def test_the_kit_sources_are_refused_or_do_not_build(self):
        # Their verdicts are decided before anything runs, so the CPU can
        # check them: catches a kit source that a submission could use
        # (say a peer once the library rule changes).
        checker = importlib.util.spec_from_file_location("check_corpus", ROOT / "tests" / "gpu" / "check_corpus.py")
        check_corpus = importlib.util.module_from_spec(checker)
        checker.loader.exec_module(check_corpus)
        for rel, exps in self.expect.items():
            for exp in exps:
                if exp["status"] not in ("refused", "build_error"):
                    continue
                ex = exp["exercise"]
                with self.subTest(source=rel, exercise=ex), tempfile.TemporaryDirectory() as tmp:
                    sub = Path(tmp) / "sub" / "exercises" / ex
                    sub.mkdir(parents=True)
                    (sub / f"{ex}.cu").write_bytes((ROOT / rel).read_bytes())
                    report = Path(tmp) / "report.json"
                    env = {k: v for k, v in os.environ.items() if k != "BWLAB_ALLOW_LIBRARIES"}
                    p = subprocess.run([sys.executable, str(ROOT / "run.py"), "test", ex, "--submission",
                                        str(Path(tmp) / "sub"), "--json", str(report)],
                                       cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
                    self.assertTrue(report.is_file(), (p.stdout + p.stderr)[-3000:])
                    got = json.loads(report.read_text())["exercises"][ex]
                    self.assertEqual(check_corpus.check_test(exp, got), [], (p.stdout + p.stderr)[-3000:])


class FakeKitTests(unittest.TestCase):
    """A made-up kit (not a git checkout: the walk is used)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.root = Path(self.tmp.name) / "kit"
        files = {
            "run.py": "print('hi')\n", "CMakeLists.txt": "project(x)\n",
            "exercises/exercises.def": "BW_EXERCISE(haxpy, 2, 1, 1, \"y\")\n",
            "exercises/haxpy/haxpy.cu": "// stub\n", "grader/main.c": "int main(void){return 0;}\n",
            "grader/py/bwlab/__init__.py": "", "grader/py/bwlab/__pycache__/x.cpython-311.pyc": "junk",
            "solutions/haxpy/haxpy.cu": "// the answer\n",
            "grader/instructor/secret_seed": f"{FAKE_SEED}\n",
            "grader/instructor/policy.ini": "[all]\nperformance_points = 40 ; this course\n",
            "tests/python/test_grading.py": "", "tests/python/test_public.py": "",
            "docs/INSTRUCTORS.md": "x", "docs/ARCHITECTURE.md": "y",
            "build/bwgrade": "binary", "grades/alice.json": "{}", "stray.txt": "z",
        }
        for rel, text in files.items():
            p = self.root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        os.chmod(self.root / "run.py", 0o755)
        self.out = Path(self.tmp.name) / "out" / "handout.tar.gz"

    def test_packs_only_the_allowed_files_and_lists_the_rest(self):
        (code, kept, left), text = quiet(cmd_handout.make_handout, self.root, self.out, "bwlab", {})
        self.assertEqual(code, 0, text)
        dest = Path(self.tmp.name) / "x"
        extract(self.out, dest)
        got = files_under(dest / "bwlab")
        self.assertEqual(got, ["CMakeLists.txt", "docs/ARCHITECTURE.md", "exercises/exercises.def",
                               "exercises/haxpy/haxpy.cu", "grader/main.c", "grader/py/bwlab/__init__.py",
                               "handout/policy.ini", "run.py", "tests/python/test_public.py"])
        # the course's policy goes in, byte for byte (so its sha256 is the one
        # grading records), though grader/instructor/ itself stays out
        packed = (dest / "bwlab" / "handout" / "policy.ini").read_bytes()
        self.assertEqual(packed, (self.root / "grader" / "instructor" / "policy.ini").read_bytes())
        self.assertEqual(scoring.parse_policy(packed.decode()).for_exercise("haxpy").performance_points, 40)
        self.assertTrue(os.access(dest / "bwlab" / "run.py", os.X_OK))
        self.assertIn("solutions/", text)
        self.assertIn("grader/instructor/", text)
        self.assertIn("stray.txt", text)
        self.assertFalse(any("build/bwgrade" in v for v in left.values()))   # build/ is never walked

    def test_a_file_holding_the_secret_seed_stops_the_pack(self):
        (self.root / "handout").mkdir()
        (self.root / "handout" / "notes.md").write_text(f"seed used this term: {FAKE_SEED:#x}\n")
        (code, _, _), text = quiet(cmd_handout.make_handout, self.root, self.out, "bwlab", {})
        self.assertEqual(code, 1)
        self.assertIn("handout/notes.md", text)
        self.assertFalse(self.out.exists())
        # the seed from the environment counts too
        (self.root / "handout" / "notes.md").write_text("nothing here\n")
        (self.root / "grader" / "instructor" / "secret_seed").unlink()
        (self.root / "exercises" / "haxpy" / "haxpy.cu").write_text(f"// {FAKE_SEED + 1}\n")
        (code, _, _), _ = quiet(cmd_handout.make_handout, self.root, self.out, "bwlab",
                                {"BWLAB_SECRET_SEED": str(FAKE_SEED + 1)})
        self.assertEqual(code, 1)

    def test_a_broken_policy_is_not_shipped(self):
        (self.root / "grader" / "instructor" / "policy.ini").write_text("[all]\nthresholds = lots\n")
        (code, _, _), text = quiet(cmd_handout.make_handout, self.root, self.out, "bwlab", {})
        self.assertEqual(code, 1)
        self.assertIn("the scoring policy is unusable", text)
        self.assertFalse(self.out.exists())

    def test_the_tarball_is_reproducible(self):
        quiet(cmd_handout.make_handout, self.root, self.out, "bwlab", {})
        a = self.out.read_bytes()
        quiet(cmd_handout.pack, self.root,
              handout_files.select(handout_files.list_files(self.root)[0], self.root)[0],
              self.out, "bwlab", int(tarfile.open(self.out).getmembers()[0].mtime),
              {scoring.HANDOUT_POLICY: cmd_handout.course_policy(self.root)})
        self.assertEqual(a, self.out.read_bytes())


class RealKitTests(unittest.TestCase):
    """Pack this kit, extract it into an empty folder, look at what is there."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = Path(cls.tmp.name)
        tarball = cls.dir / "bwlab-handout.tar.gz"
        env = {"BWLAB_SECRET_SEED": str(FAKE_SEED)}
        (cls.code, cls.kept, cls.left), cls.text = quiet(cmd_handout.make_handout, ROOT, tarball,
                                                         "bwlab", env)
        if cls.code == 0:
            extract(tarball, cls.dir / "x")
        cls.kit = cls.dir / "x" / "bwlab"
        cls.files = files_under(cls.kit) if cls.kit.is_dir() else []

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_it_packs(self):
        self.assertEqual(self.code, 0, self.text)

    def test_no_solution_and_no_instructor_file(self):
        for f in self.files:
            self.assertFalse(f.startswith("solutions/"), f)
            self.assertFalse(f.startswith("grader/instructor/"), f)
            self.assertFalse(f.startswith(("build/", ".git/", "grades/", "docs/ci/", "docs/slurm/")), f)
            self.assertNotIn("__pycache__", f)
            self.assertNotEqual(Path(f).name, "secret_seed")
        for f in INSTRUCTOR_TESTS + ("docs/INSTRUCTORS.md",):
            self.assertNotIn(f, self.files)

    def test_no_file_is_a_solution_in_disguise(self):
        sols = ROOT / "solutions"
        if not sols.is_dir():
            self.skipTest("no solutions/ in this copy of the kit")
        answers = {p.read_bytes() for p in sols.rglob("*") if p.is_file()}
        for f in self.files:
            self.assertNotIn((self.kit / f).read_bytes(), answers, f"{f} is a copy of a solution")

    def test_no_file_holds_a_secret_seed(self):
        needles = [str(FAKE_SEED), hex(FAKE_SEED)]
        seed_file = ROOT / "grader" / "instructor" / "secret_seed"
        if seed_file.is_file():
            from bwlab import seeds
            try:
                needles += seeds.find_seed(ROOT, str(seed_file), False, {}).secrets()
            except seeds.SeedError:
                pass
        for f in self.files:
            data = (self.kit / f).read_bytes().lower()
            for n in needles:
                self.assertNotIn(n.lower().encode(), data, f"{f} holds a secret seed")

    def test_what_a_student_needs_is_there(self):
        must = ["run.py", "CMakeLists.txt", "tests/CMakeLists.txt", "exercises/exercises.def",
                "grader/py/bwlab/cli.py", "grader/py/bwlab/__init__.py", "grader/main.c",
                "reference/ref_kernels.c", "docs/ARCHITECTURE.md"]
        for ex in exercises.names(ROOT):
            must += [f"exercises/{ex}/{ex}.cu", f"exercises/{ex}/{ex}.h", f"exercises/{ex}/adapter.cu"]
            if (ROOT / "handout" / f"{ex}.md").is_file():
                must.append(f"handout/{ex}.md")
        for optional in ("README.md", "handout/grading.md"):
            if (ROOT / optional).is_file():
                must.append(optional)
        for f in must:
            self.assertIn(f, self.files)
        # the stubs are the kit's stubs, byte for byte
        for ex in exercises.names(ROOT):
            rel = f"exercises/{ex}/{ex}.cu"
            self.assertEqual((self.kit / rel).read_bytes(), (ROOT / rel).read_bytes())
        self.assertTrue(any(f.startswith("tests/unit/") for f in self.files))

    def test_the_extracted_kit_lists_its_commands(self):
        r = subprocess.run([sys.executable, "run.py", "--help"], cwd=self.kit, capture_output=True,
                           text=True, timeout=120, env={**os.environ, "BWLAB_ROOT": str(self.kit)})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("test", r.stdout)

    def test_grade_and_score_find_the_course_policy_in_the_handout(self):
        # Both look for the policy through one list; in the handout only
        # handout/policy.ini is there, and it is the instructor's file, so
        # --show-policy prints the hash grading records (not the built-in
        # defaults' e3b0c44298fc, the sha256 of nothing).
        from bwlab import cmd_score
        src = ROOT / scoring.INSTRUCTOR_POLICY
        if not src.is_file():
            self.skipTest("no grader/instructor/policy.ini in this copy of the kit")
        want = scoring.load_policy(src).sha256[:12]
        r = subprocess.run([sys.executable, "run.py", "grade", "--show-policy"], cwd=self.kit,
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "BWLAB_ROOT": str(self.kit)})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"policy: {scoring.HANDOUT_POLICY} (sha256 {want})", r.stdout)
        score_policy = scoring.find_policy(self.kit, None, cmd_score.POLICY_FALLBACKS)
        self.assertEqual(scoring.shown_source(score_policy, self.kit), scoring.HANDOUT_POLICY)
        self.assertEqual(score_policy.sha256[:12], want)

    @unittest.skipUnless(os.environ.get("BWLAB_SLOW_TESTS") == "1",
                         "slow (minutes): set BWLAB_SLOW_TESTS=1 to build the handout and run its selftest")
    def test_the_extracted_kit_builds_and_passes_its_selftest(self):
        env = {k: v for k, v in os.environ.items()
               if k not in ("BWLAB_ROOT", "BWLAB_BUILD_DIR", "BWLAB_SECRET_SEED", "BWLAB_SEED")}
        r = subprocess.run([sys.executable, "run.py", "selftest"], cwd=self.kit, capture_output=True,
                           text=True, timeout=3600, env=env)
        self.assertEqual(r.returncode, 0, (r.stdout + r.stderr)[-6000:])


if __name__ == "__main__":
    unittest.main()

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
import re
import subprocess
import sys
import tarfile
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import cmd_handout, exercises, handout_files, handout_subset, policy_file  # noqa: E402

# The link checker of test_doc_links.py, to follow the subset handout's links.
_links_spec = importlib.util.spec_from_file_location("doc_links", ROOT / "tests" / "python" / "test_doc_links.py")
doc_links = importlib.util.module_from_spec(_links_spec)
_links_spec.loader.exec_module(doc_links)

# tests/gpu/handout_zero.py says which expectation covers each source (the GPU
# acceptance step grades them with it); absent where tests/gpu/ is.
ZERO_SCRIPT = ROOT / "tests" / "gpu" / "handout_zero.py"
handout_zero = None
if ZERO_SCRIPT.is_file():
    _spec = importlib.util.spec_from_file_location("handout_zero", ZERO_SCRIPT)
    handout_zero = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(handout_zero)

FAKE_SEED = 7_338_129_044_517_610_923      # a made-up secret for these tests
INSTRUCTOR_TESTS = ("tests/python/grading_fixtures.py", "tests/python/test_grading_scoring.py",
                    "tests/python/test_grading_formats.py", "tests/python/test_grading_batch.py",
                    "tests/python/test_grading_isolation.py", "tests/python/test_grading_lanes.py",
                    "tests/python/test_layout.py", "tests/python/test_handout_pack.py",
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
                  "grader/modes/main.c", "grader/py/bwlab/cli.py", "grader/py/bwlab/cmd_grade.py",
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


class SubsetRuleTests(unittest.TestCase):
    """run.py handout --exercises: the rules, on made-up input."""

    TABLE = ("/*\n * The exercise table.\n * BW_EXERCISE(name, n_arrays, in_place, uses_alpha, summary)\n */\n"
             'BW_EXERCISE(haxpy, 2, 1, 1, "y = alpha*x + y (bf16, in place)")\n'
             'BW_EXERCISE(vector_sum, 3, 0, 0, "c = a + b (bf16)")\n'
             'BW_EXERCISE(saxpy, "y = a*x + y (fp32)")\n'
             'BW_EXERCISE(transpose)\n')

    def test_the_names_asked_for(self):
        # Catches an unknown name packed as an empty exercise, an empty list
        # taken as "all of them" (exercises.select's meaning of []), and
        # repeats packed twice.
        self.assertEqual(handout_subset.requested("saxpy, haxpy,saxpy", self.TABLE), ["saxpy", "haxpy"])
        with self.assertRaises(exercises.UnknownExercise) as e:
            handout_subset.requested("haxpy,nope", self.TABLE)
        self.assertEqual(str(e.exception), "--exercises: unknown exercise 'nope' "
                                           "(this kit has: haxpy, vector_sum, saxpy, transpose)")
        for empty in ("", " ", "haxpy,", ",haxpy", "haxpy,,saxpy"):
            with self.subTest(text=empty), self.assertRaises(ValueError) as e:
                handout_subset.requested(empty, self.TABLE)
            self.assertIn("haxpy, vector_sum, saxpy, transpose", str(e.exception))

    def test_the_table_keeps_its_header_and_the_listed_lines(self):
        # Catches a trim by the whole row's format (the new BW_EXERCISE(name)
        # line, or a BW_EXERCISE(name, "summary") one, would be lost or
        # kept), a header dropped, and an unlisted line kept.
        got = handout_subset.trim_table(self.TABLE, ["saxpy", "haxpy"])
        self.assertEqual(got, self.TABLE.replace('BW_EXERCISE(vector_sum, 3, 0, 0, "c = a + b (bf16)")\n', "")
                         .replace("BW_EXERCISE(transpose)\n", ""))
        self.assertEqual(exercises.table_names(got), ["haxpy", "saxpy"])
        got = handout_subset.trim_table(self.TABLE, ["transpose"])
        self.assertEqual(exercises.table_names(got), ["transpose"])
        got = handout_subset.trim_table(self.TABLE, ["vector_sum"])
        self.assertEqual(got.splitlines()[:4], self.TABLE.splitlines()[:4])
        self.assertEqual([l for l in got.splitlines() if "BW_EXERCISE(" in l and not l.startswith(" *")],
                         ['BW_EXERCISE(vector_sum, 3, 0, 0, "c = a + b (bf16)")'])

    def test_what_belongs_to_an_exercise_left_out(self):
        # Catches a peer given to the shorter name it starts with
        # (vector_sum_cub.cu is vector_sum's, not vector's: CMake would build
        # it as vector's peer, against vector's header), and folders or pages
        # matched by prefix (exercises/vector_sum/ is not exercises/vector/).
        files = ["exercises/vector/vector.cu", "exercises/vector_sum/vector_sum.cu",
                 "exercises/exercises.def", "handout/vector.md", "handout/vector_sum.md",
                 "handout/README.md", "grader/peers/vector_cub.cu", "grader/peers/vector_sum_cub.cu",
                 "grader/modes/main.c"]
        gone = handout_subset.left_out(files, Path("/nonexistent"), ["vector", "vector_sum"], ["vector"])
        self.assertEqual(sorted(gone), ["exercises/vector_sum/vector_sum.cu", "grader/peers/vector_sum_cub.cu",
                                        "handout/vector_sum.md"])
        self.assertIn("vector_sum not handed out", gone["grader/peers/vector_sum_cub.cu"])

    def test_corpus_entries_follow_their_expect_json(self):
        # Catches entries chosen by their folder's name or kept whatever
        # exercise they are for; an entry naming no exercise stays out.
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            files = []
            for entry, ex in (("a", "haxpy"), ("b", "vector_sum"), ("c", None)):
                d = root / "tests" / "corpus" / entry
                d.mkdir(parents=True)
                (d / "expect.json").write_text(json.dumps({"status": "refused", **({"exercise": ex} if ex else {})}))
                files += [f"tests/corpus/{entry}/expect.json", f"tests/corpus/{entry}/exercises/haxpy/haxpy.cu"]
            gone = handout_subset.left_out(files, root, ["haxpy", "vector_sum"], ["vector_sum"])
        self.assertEqual(sorted({f.split("/")[2] for f in gone}), ["a", "c"])
        self.assertIn("names no exercise", gone["tests/corpus/c/expect.json"])

    def test_links_to_pages_left_out(self):
        # Catches a dead link left in a shipped page, a live one unlinked,
        # code (where [x](y) is not a link) edited, and the table shortened
        # without the note that says why.
        page = ("| exercise | guide |\n|---|---|\n| `a` | [a.md](a.md) |\n| `b` | [b.md](b.md) |\n"
                "\nSee [b.md](b.md#hints) and [a.md](a.md), or [the tools](tools.md).\n"
                "```\n[b.md](b.md)\n```\nIn code: `[b.md](b.md)`.\n")
        got = handout_subset.unlink_missing("handout/README.md", page, {"handout/b.md"},
                                            {"handout/a.md", "handout/tools.md", "handout/README.md"})
        self.assertEqual(got, "| exercise | guide |\n|---|---|\n| `a` | [a.md](a.md) |\n\n"
                              + handout_subset.TABLE_NOTE + "\n"
                              "\nSee b.md (not in this handout) and [a.md](a.md), or [the tools](tools.md).\n"
                              "```\n[b.md](b.md)\n```\nIn code: `[b.md](b.md)`.\n")
        # a link from another folder, and to a folder with nothing left in it
        got = handout_subset.unlink_missing("docs/X.md", "[b](../handout/b.md), [ex](../exercises/b/)\n",
                                            {"handout/b.md", "exercises/b/b.cu"}, {"exercises/a/a.cu"})
        self.assertEqual(got, "b (not in this handout), ex (not in this handout)\n")
        self.assertEqual(handout_subset.unlink_missing("handout/a.md", page, set(), {"handout/a.md"}), page)


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
            "exercises/haxpy/haxpy.cu": "// stub\n", "grader/modes/main.c": "int main(void){return 0;}\n",
            "grader/py/bwlab/__init__.py": "", "grader/py/bwlab/__pycache__/x.cpython-311.pyc": "junk",
            "solutions/haxpy/haxpy.cu": "// the answer\n",
            "grader/instructor/secret_seed": f"{FAKE_SEED}\n",
            "grader/instructor/policy.ini": "[all]\nperformance_points = 40 ; this course\n",
            "tests/python/test_grading_batch.py": "", "tests/python/test_public.py": "",
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
                               "exercises/haxpy/haxpy.cu", "grader/modes/main.c", "grader/py/bwlab/__init__.py",
                               "handout/policy.ini", "run.py", "tests/python/test_public.py"])
        # the course's policy goes in, byte for byte (so its sha256 is the one
        # grading records), though grader/instructor/ itself stays out
        packed = (dest / "bwlab" / "handout" / "policy.ini").read_bytes()
        self.assertEqual(packed, (self.root / "grader" / "instructor" / "policy.ini").read_bytes())
        self.assertEqual(policy_file.parse_policy(packed.decode()).for_exercise("haxpy").performance_points, 40)
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

    def test_a_subset_refuses_a_policy_section_for_an_exercise_left_out(self):
        # The policy ships byte for byte, and the handout's score and grade
        # refuse a section for an exercise their table lacks. Catches the
        # packer shipping such a policy into a subset handout.
        (self.root / "exercises" / "exercises.def").write_text(
            'BW_EXERCISE(haxpy, 2, 1, 1, "y")\nBW_EXERCISE(vector_sum, 3, 0, 0, "c")\n')
        (self.root / "exercises" / "vector_sum").mkdir()
        (self.root / "exercises" / "vector_sum" / "vector_sum.cu").write_text("// stub\n")
        (self.root / "grader" / "instructor" / "policy.ini").write_text(
            "[all]\nperformance_points = 40\n[exercise vector_sum]\nperformance_points = 30\n")
        (code, _, _), text = quiet(cmd_handout.make_handout, self.root, self.out, "bwlab", {}, only=["haxpy"])
        self.assertEqual(code, 1, text)
        self.assertIn("[exercise vector_sum] is for an exercise this handout leaves out", text)
        self.assertFalse(self.out.exists())
        (code, _, _), text = quiet(cmd_handout.make_handout, self.root, self.out, "bwlab", {},
                                   only=["vector_sum"])
        self.assertEqual(code, 0, text)
        dest = Path(self.tmp.name) / "x"
        extract(self.out, dest)
        self.assertEqual(files_under(dest / "bwlab" / "exercises"), ["exercises.def", "vector_sum/vector_sum.cu"])
        self.assertEqual((dest / "bwlab" / "exercises" / "exercises.def").read_text(),
                         'BW_EXERCISE(vector_sum, 3, 0, 0, "c")\n')

    def test_the_tarball_is_reproducible(self):
        quiet(cmd_handout.make_handout, self.root, self.out, "bwlab", {})
        a = self.out.read_bytes()
        quiet(cmd_handout.pack, self.root,
              handout_files.select(handout_files.list_files(self.root)[0], self.root)[0],
              self.out, "bwlab", int(tarfile.open(self.out).getmembers()[0].mtime),
              {policy_file.HANDOUT_POLICY: cmd_handout.course_policy(self.root)})
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

    def test_every_handed_out_test_has_what_it_imports_and_reads(self):
        # A test that imports an instructor-only helper (grading_fixtures) or
        # reads an instructor-only folder would fail the student's selftest.
        kept, _ = handout_files.select(handout_files.list_files(ROOT)[0], ROOT)
        kept = set(kept)
        local = {p.stem for p in (ROOT / "tests" / "python").glob("*.py")}
        for f in sorted(x for x in kept if x.startswith("tests/python/") and x.endswith(".py")):
            text = (ROOT / f).read_text()
            for m in re.finditer(r"^(\s*)(?:from|import)\s+(\w+)", text, re.M):
                mod = m.group(2)
                if mod not in local or f"tests/python/{mod}.py" in kept:
                    continue
                # Only an import inside a test that skips without the file.
                self.assertTrue(m.group(1) and f'"{mod}.py"' in text,
                                f"{f} imports {mod}, which the handout does not hold")
            self.assertNotRegex(text, r'"docs"\s*/\s*"ci"|docs/ci/|"exercise_template"', f)

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
        # The CPU reference: the shared code, and each exercise's reference and rule.
        must = ["run.py", "CMakeLists.txt", "tests/CMakeLists.txt", "exercises/exercises.def",
                "grader/py/bwlab/cli.py", "grader/py/bwlab/__init__.py", "grader/modes/main.c",
                "reference/element.c", "reference/exact.c", "reference/parallel_for.c",
                "docs/ARCHITECTURE.md"]
        for ex in exercises.names(ROOT):
            # what CMake needs of each exercise the table lists
            must += [f"exercises/{ex}/{ex}.cu", f"exercises/{ex}/{ex}.h", f"exercises/{ex}/adapter.cu",
                     f"exercises/{ex}/exercise.def", f"reference/{ex}.c"]
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

    def test_without_exercises_every_file_is_the_kits(self):
        # Catches the subset's rewriting reaching a plain handout: the table
        # trimmed, a page's links or the README's table edited, a file of
        # the packing list missing.
        kept, _ = handout_files.select(handout_files.list_files(ROOT)[0], ROOT)
        self.assertEqual(self.files, sorted(kept + [policy_file.HANDOUT_POLICY]))
        for f in kept:
            self.assertEqual((self.kit / f).read_bytes(), (ROOT / f).read_bytes(), f)
        self.assertNotIn(handout_subset.TABLE_NOTE, (self.kit / "handout" / "README.md").read_text())

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
        src = ROOT / policy_file.INSTRUCTOR_POLICY
        if not src.is_file():
            self.skipTest("no grader/instructor/policy.ini in this copy of the kit")
        want = policy_file.load_policy(src).sha256[:12]
        r = subprocess.run([sys.executable, "run.py", "grade", "--show-policy"], cwd=self.kit,
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "BWLAB_ROOT": str(self.kit)})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"policy: {policy_file.HANDOUT_POLICY} (sha256 {want})", r.stdout)
        score_policy = policy_file.find_policy(self.kit, None, cmd_score.POLICY_FALLBACKS)
        self.assertEqual(policy_file.shown_source(score_policy, self.kit), policy_file.HANDOUT_POLICY)
        self.assertEqual(score_policy.sha256[:12], want)

    @unittest.skipUnless(os.environ.get("BWLAB_SLOW_TESTS") == "1",
                         "slow (minutes): set BWLAB_SLOW_TESTS=1 to build the handout and run its selftest")
    def test_the_extracted_kit_builds_and_passes_its_selftest(self):
        # As a student runs it: without BWLAB_SLOW_TESTS, whose tests (the
        # CPU shapes, the object vetting) this suite has run on the same
        # sources; their files ship, which the tests above check.
        env = {k: v for k, v in os.environ.items()
               if k not in ("BWLAB_ROOT", "BWLAB_BUILD_DIR", "BWLAB_SECRET_SEED", "BWLAB_SEED",
                            "BWLAB_SLOW_TESTS")}
        r = subprocess.run([sys.executable, "run.py", "selftest"], cwd=self.kit, capture_output=True,
                           text=True, timeout=3600, env=env)
        out = r.stdout + r.stderr
        # The tail alone can miss a Check failure printed minutes earlier: name the failing lines first.
        failing = [l for l in out.splitlines() if ":F:" in l or ":E:" in l or l.startswith(("FAIL", "ERROR"))]
        self.assertEqual(r.returncode, 0, "\n".join(failing[:40]) + "\n...\n" + out[-4000:])


def _corpus_exercise(entry: Path) -> str:
    return json.loads((entry / "expect.json").read_text())["exercise"]


class SubsetKitTests(unittest.TestCase):
    """Pack this kit with --exercises (each exercise alone), extract it, look."""

    @classmethod
    def setUpClass(cls):
        cls.names = exercises.names(ROOT)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.packs = {}
        env = {"BWLAB_SECRET_SEED": str(FAKE_SEED)}
        for ex in cls.names:
            tarball = Path(cls.tmp.name) / f"{ex}.tar.gz"
            (code, _, _), text = quiet(cmd_handout.make_handout, ROOT, tarball, "bwlab", env, only=[ex])
            dest = Path(cls.tmp.name) / ex
            if code == 0:
                extract(tarball, dest)
            cls.packs[ex] = (code, text, dest / "bwlab")
        full = Path(cls.tmp.name) / "full.tar.gz"
        quiet(cmd_handout.make_handout, ROOT, full, "bwlab", env)
        extract(full, Path(cls.tmp.name) / "full")
        cls.full = Path(cls.tmp.name) / "full" / "bwlab"

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        if len(self.names) < 2:
            self.skipTest("the kit has one exercise: no subset to hand out")

    def test_only_the_listed_exercise_is_there(self):
        # Catches an unlisted exercise's folder, page, peer, table line or
        # corpus entry shipped, and a listed one's missing.
        for ex, (code, text, kit) in self.packs.items():
            with self.subTest(exercise=ex):
                self.assertEqual(code, 0, text)
                files = files_under(kit)
                for other in self.names:
                    listed = other == ex
                    self.assertEqual(any(f.startswith(f"exercises/{other}/") for f in files), listed, other)
                    if (ROOT / "handout" / f"{other}.md").is_file():
                        self.assertEqual(f"handout/{other}.md" in files, listed, other)
                    for peer in (ROOT / "grader" / "peers").glob(f"{other}_*.cu"):
                        if not any(peer.name.startswith(f"{o}_") for o in self.names if len(o) > len(other)):
                            self.assertEqual(f"grader/peers/{peer.name}" in files, listed, peer.name)
                table = (kit / "exercises" / "exercises.def").read_text()
                self.assertEqual(exercises.table_names(table), [ex])
                kit_table = (ROOT / "exercises" / "exercises.def").read_text()
                self.assertEqual(table, handout_subset.trim_table(kit_table, [ex]))
                self.assertTrue(table.startswith("/*"), "the table's comment header is kept")
                # the corpus: the full handout's entries for this exercise, no other;
                # an exercise none of whose entries may ship (each would earn
                # points) has no tests/corpus/ at all
                full = {e.name for e in (self.full / "tests" / "corpus").iterdir() if _corpus_exercise(e) == ex}
                corpus = kit / "tests" / "corpus"
                got = {e.name for e in corpus.iterdir()} if corpus.is_dir() else set()
                self.assertEqual(got, full)
                self.assertIn(f"exercise {[o for o in self.names if o != ex][0]} not handed out", text)
        # the corpus comparison above compared something
        self.assertTrue(any(_corpus_exercise(e) in self.names for e in (self.full / "tests" / "corpus").iterdir()))

    def test_no_link_is_dead(self):
        # Catches a shipped page (handout/README.md's table, a page that
        # points to another exercise's hints) linking to a page left out.
        for ex, (code, text, kit) in self.packs.items():
            with self.subTest(exercise=ex):
                self.assertEqual(code, 0, text)
                md = [f for f in files_under(kit) if f.endswith(".md")]
                self.assertEqual(doc_links.dead_links(kit, md), [])
                readme = (kit / "handout" / "README.md").read_text()
                row = f"`exercises/{ex}/{ex}.cu`"
                if row in (ROOT / "handout" / "README.md").read_text():
                    self.assertIn(row, readme)
                self.assertIn(handout_subset.TABLE_NOTE, readme)

    def test_the_packed_kit_knows_only_its_exercises(self):
        # run.py reads the packed table: catches a trimmed table the Python
        # side does not see (its list of exercises would still name the others).
        ex = self.names[-1]
        code, text, kit = self.packs[ex]
        self.assertEqual(code, 0, text)
        other = self.names[0]
        r = subprocess.run([sys.executable, "run.py", "test", other], cwd=kit, capture_output=True, text=True,
                           timeout=120, env={**os.environ, "BWLAB_ROOT": str(kit)})
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn(f"unknown exercise '{other}' (this kit has: {ex})", r.stderr)

    @unittest.skipUnless(os.environ.get("BWLAB_SLOW_TESTS") == "1",
                         "slow (minutes): set BWLAB_SLOW_TESTS=1 to build a subset handout")
    def test_the_packed_kit_builds_and_runs_only_its_exercises(self):
        # Catches a subset kit that does not configure or build (a peer or
        # worker of an exercise left out still wanted), or whose `run.py
        # test` with no name runs another exercise. Without a GPU it builds
        # and exits 3; on one the stub is "not implemented" (exit 1).
        ex = self.names[-1]
        code, text, kit = self.packs[ex]
        self.assertEqual(code, 0, text)
        env = {k: v for k, v in os.environ.items()
               if k not in ("BWLAB_ROOT", "BWLAB_BUILD_DIR", "BWLAB_SECRET_SEED", "BWLAB_SEED")}
        r = subprocess.run([sys.executable, "run.py", "test"], cwd=kit, capture_output=True, text=True,
                           timeout=3600, env=env)
        out = r.stdout + r.stderr
        self.assertIn(r.returncode, (1, 3), out[-6000:])
        self.assertIn(f"== {ex} (student) ==", out)
        for other in self.names:
            if other != ex:
                self.assertNotIn(f"== {other} ", out)


class HandoutCommandLineTests(unittest.TestCase):
    """`run.py handout --exercises` as typed."""

    def handout(self, *args):
        return subprocess.run([sys.executable, "run.py", "handout", "--list", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "BWLAB_ROOT": str(ROOT)})

    def test_an_unknown_or_empty_list_is_refused(self):
        # Catches an unknown name packed (or ignored), and an empty list
        # taken as every exercise: each must be a one-line usage error.
        known = ", ".join(exercises.names(ROOT))
        for arg, says in (("nosuch", f"unknown exercise 'nosuch' (this kit has: {known})"),
                          (f"{exercises.names(ROOT)[0]},nosuch", "unknown exercise 'nosuch'"),
                          ("", "names no exercise"), (",", "has an empty item")):
            with self.subTest(arg=arg):
                r = self.handout("--exercises", arg)
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertEqual(r.stdout, "")
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertIn(says, r.stderr)
                self.assertIn(known, r.stderr)

    def test_no_exercises_lists_what_it_always_did(self):
        # Catches --exercises changing the plain handout, or a list of every
        # exercise packing less than no list does.
        kept, _ = handout_files.select(handout_files.list_files(ROOT)[0], ROOT)
        plain = self.handout()
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertEqual(plain.stdout.splitlines(), kept)
        every = self.handout("--exercises", ",".join(exercises.names(ROOT)))
        self.assertEqual(every.stdout, plain.stdout)
        one = self.handout("--exercises", exercises.names(ROOT)[-1])
        self.assertLess(len(one.stdout.splitlines()), len(kept))


if __name__ == "__main__":
    unittest.main()

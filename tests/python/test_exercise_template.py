"""A new exercise from the documented template (docs/exercise_template/), in a
scratch copy of the kit: the README's recipe, run as written, adds only the
exercise's own files and one table line; the kit then builds warning-free
with it (its stub, adapter and solution through nvcc), every front end reads
it (bwgrade list and cases, run.py's model, the handout), the C tests that
walk the table take it in, and correct and broken kernels of the new
exercise get their verdicts through the CPU stand-in worker
(tests/unit/cpu_shapes.c). What it catches: a template that no longer
compiles or passes, a recipe the README gets wrong, and any place in the kit
that still has to be edited by hand for a new exercise (a name list, a
switch on the exercise, a fixed count)."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "docs" / "exercise_template"
NAME = "toy_scale"
NEW_FILES = {f"exercises/{NAME}/exercise.def", f"exercises/{NAME}/{NAME}.h",
             f"exercises/{NAME}/{NAME}.cu", f"exercises/{NAME}/adapter.cu",
             f"reference/{NAME}.c", f"solutions/{NAME}/{NAME}.cu", f"handout/{NAME}.md"}
# The build: the grader, the CPU stand-in worker, the new exercise's student
# and solution workers (nvcc, -Werror on kit code) and the C test that walks
# every exercise of the table.
TARGETS = ["bwgrade", "cpu_worker", f"bw_worker_{NAME}", f"bw_worker_{NAME}_solution",
           "test_case_data"]
# (kernel of tests/unit/cpu_shapes.c): the status and the first diagnosis.
EXPECT = {
    "right": ("pass", None),
    "nothing": ("not_implemented", "not_implemented"),
    "no_tail": ("fail", "tail"),
    "past_end": ("fail", "tail"),
    "ftz": ("fail", "special_values"),
}


def recipe() -> str:
    """The shell block that follows the README's recipe marker."""
    text = (TEMPLATE / "README.md").read_text()
    m = re.search(r"<!-- exercise-template-recipe[^>]*-->\s*```sh\n(.*?)```", text, re.S)
    if m is None:
        raise AssertionError("docs/exercise_template/README.md lost its marked recipe block")
    return m.group(1)


def kit_files() -> list[str]:
    """The kit as a clone has it (tracked files, and new ones not ignored)."""
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                          "--exclude-standard"], capture_output=True, check=True).stdout
    return sorted({p for p in out.decode().split("\0") if p and (ROOT / p).is_file()})


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): digest(p) for p in root.rglob("*")
            if p.is_file() and "build" not in p.relative_to(root).parts[:1]}


@unittest.skipUnless(os.environ.get("BWLAB_SLOW_TESTS") == "1",
                     "slow (copies and builds a scratch kit): "
                     "set BWLAB_SLOW_TESTS=1")
@unittest.skipUnless(shutil.which("git") and shutil.which("cmake") and shutil.which("nvcc"),
                     "needs git, cmake and nvcc")
class ExerciseFromTheTemplate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="bwlab-template-")
        cls.kit = Path(cls.tmp.name) / "kit"
        for rel in kit_files():
            dest = cls.kit / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest)
        cls.before = snapshot(cls.kit)
        script = recipe().replace("name=my_exercise", f"name={NAME}", 1)
        cls.recipe_run = subprocess.run(["bash", "-euc", script], cwd=cls.kit,
                                        capture_output=True, text=True, timeout=60)
        cls.after = snapshot(cls.kit)
        cls.build = cls.kit / "build"
        cls.configure = cls.compile = None
        if cls.recipe_run.returncode == 0:
            cls.configure = subprocess.run(
                ["cmake", "-S", str(cls.kit), "-B", str(cls.build), "-DBW_WERROR=ON"],
                capture_output=True, text=True, timeout=600)
            if cls.configure.returncode == 0:
                cls.compile = subprocess.run(
                    ["cmake", "--build", str(cls.build), "-j", str(os.cpu_count() or 2),
                     "--target", *TARGETS], capture_output=True, text=True, timeout=1200)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def built(self):
        self.assertEqual(self.recipe_run.returncode, 0, self.recipe_run.stderr)
        self.assertEqual(self.configure.returncode, 0, self.configure.stderr[-3000:])
        self.assertEqual(self.compile.returncode, 0,
                         (self.compile.stdout + self.compile.stderr)[-4000:])

    def bwgrade(self, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.build / "bwgrade"), *args], capture_output=True,
                              text=True, timeout=600, env=env)

    # ---- the recipe -------------------------------------------------------

    def test_the_recipe_adds_the_exercise_files_and_one_table_line(self):
        self.assertEqual(self.recipe_run.returncode, 0, self.recipe_run.stderr)
        added = set(self.after) - set(self.before)
        changed = {p for p in self.before if self.after.get(p) != self.before[p]}
        self.assertEqual(added, NEW_FILES)
        self.assertEqual(changed, {"exercises/exercises.def"})
        old = (ROOT / "exercises" / "exercises.def").read_text().splitlines()
        new = (self.kit / "exercises" / "exercises.def").read_text().splitlines()
        self.assertEqual(new, old + [f"BW_EXERCISE({NAME})"])
        for rel in NEW_FILES:
            self.assertNotIn("NAME", (self.kit / rel).read_text(), rel)

    # ---- every front end reads the declaration ----------------------------

    def test_bwgrade_lists_the_exercise_with_its_declaration(self):
        self.built()
        p = self.bwgrade("list")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [line.split("\t") for line in p.stdout.splitlines()]
        self.assertIn([NAME, "elementwise", "a", "x:fp16:in:n,y:fp16:out:n", "y = a*x (fp16)"],
                      rows)

    def test_run_py_reads_the_same_declaration(self):
        code = ("import sys; sys.path.insert(0, 'grader/py')\n"
                "from bwlab import exercises\n"
                f"e = exercises.read({NAME!r})\n"
                "print(e.shape, [(a.name, a.type, a.role) for a in e.arrays], "
                "e.traffic(1000), [x.name for x in exercises.load()][-1])\n")
        p = subprocess.run([sys.executable, "-c", code], cwd=self.kit, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        # 2 bytes read and 2 written per element.
        self.assertIn("(2000, 2000)", p.stdout)
        self.assertIn("('x', 'F16', 'IN')", p.stdout)
        self.assertTrue(p.stdout.strip().endswith(NAME), p.stdout)

    def test_the_cases_cover_offsets_tails_and_special_values(self):
        self.built()
        p = self.bwgrade("cases", NAME)
        self.assertEqual(p.returncode, 0, p.stderr)
        head = p.stdout.splitlines()[0]
        count = int(re.search(r"(\d+) cases", head).group(1))
        self.assertGreater(count, 500, head)
        rows = [line.split() for line in p.stdout.splitlines()[2:]]
        offsets = {int(r[3]) for r in rows if r[1] == "small"}
        # 16-byte vectors of fp16 hold 8 elements: offsets 0..7 and more.
        self.assertTrue(set(range(8)) <= offsets, offsets)
        self.assertIn("special", {r[1] for r in rows})

    def test_the_handout_of_the_exercise_alone(self):
        p = subprocess.run([sys.executable, "run.py", "handout", "--list", "--exercises", NAME],
                           cwd=self.kit, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        listed = set(p.stdout.split())
        for rel in (f"exercises/{NAME}/{NAME}.cu", f"exercises/{NAME}/{NAME}.h",
                    f"handout/{NAME}.md", f"reference/{NAME}.c"):
            self.assertTrue(any(x.endswith(rel) for x in listed), (rel, p.stdout[-2000:]))
        self.assertFalse(any("solutions/" in x for x in listed), p.stdout)
        self.assertFalse(any("exercises/haxpy/" in x for x in listed), p.stdout)

    # ---- the C tests and the verdicts -------------------------------------

    def test_the_c_test_that_walks_the_table_passes(self):
        self.built()
        p = subprocess.run([str(self.build / "tests" / "test_case_data")], capture_output=True,
                           text=True, timeout=900, env=dict(os.environ, CK_DEFAULT_TIMEOUT="300"))
        self.assertEqual(p.returncode, 0, (p.stdout + p.stderr)[-3000:])

    def test_correct_and_broken_kernels_get_their_verdicts(self):
        self.built()
        for kernel, (status, first) in EXPECT.items():
            with self.subTest(kernel=kernel):
                env = dict(os.environ, CUDA_FAKE_KERNEL=f"{NAME}.{kernel}")
                env.pop("BWLAB_SEED", None)
                p = self.bwgrade("test", NAME, "--worker", str(self.build / "tests" / "cpu_worker"),
                                 "--groups", "small,medium,special", "--json", "-", env=env)
                rep = json.loads(p.stdout)
                codes = [d["code"] for d in rep.get("diagnoses") or []]
                self.assertEqual(rep["status"], status, codes)
                self.assertEqual(codes[0] if codes else None, first, codes)
                if status == "pass":
                    self.assertEqual(rep["passed"], rep["total"])
                    self.assertGreater(rep["total"], 500)


if __name__ == "__main__":
    unittest.main()

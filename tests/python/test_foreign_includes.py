"""run.py grade's #include check (grader/py/bwlab/foreign_includes.py) with
the real nvcc preprocessor: a submission may read its exercise's contract
header and system or CUDA headers, nothing else, however the path is
spelled; where the preprocessor fails, only messages on the submission's own
lines are shown. Skipped without nvcc."""
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import foreign_includes, toolchain  # noqa: E402

HONEST = b'#include "haxpy.h"\n#include <cstdio>\n#include <cuda/ptx>\n#include <cub/cub.cuh>\n'


class ForeignIncludes(unittest.TestCase):
    def setUp(self):
        self.env = toolchain.tool_env()
        self.nvcc = shutil.which("nvcc", path=self.env.get("PATH"))
        if self.nvcc is None:
            self.skipTest("skipped: nvcc not found")
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.secret = self.tmp / "instructor" / "secret_seed"
        self.secret.parent.mkdir()
        self.secret.write_text("5287310986123456789\n")
        # The instructors' kit holds solutions/ (the handout does not).
        self.solution = self.tmp / "kit" / "solutions" / "haxpy" / "haxpy.cu"
        self.solution.parent.mkdir(parents=True)
        self.solution.write_text("// a solution\n")

    def check(self, text: bytes):
        src = self.tmp / "student" / "haxpy" / "haxpy.cu"
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_bytes(text)
        return src, foreign_includes.check(src, [ROOT / "exercises" / "haxpy"], self.nvcc, self.env, 120)

    def test_the_contract_and_system_headers_pass(self):
        self.assertEqual(self.check(HONEST)[1], (None, None))

    def test_a_file_elsewhere_is_refused_however_it_is_spelled(self):
        # Catches a text scan (the macro hides the path) and an allow-list
        # that takes in the kit or the instructor's folders.
        for text in (b'#include "%s"\n' % bytes(self.secret),
                     b'#define Q(x) #x\n#define P(x) Q(x)\n#include P(%s)\n' % bytes(self.secret),
                     b'#if __has_include("%s")\n#include "%s"\n#endif\n' % (bytes(self.secret), bytes(self.secret)),
                     HONEST + b'#include "%s"\n' % bytes(self.solution)):
            with self.subTest(text=text[:60]):
                why, shown = self.check(text)[1]
                self.assertIsNotNone(why)
                self.assertIn("a submission is its one file", why)
                self.assertIsNone(shown)

    def test_a_failing_preprocessor_shows_only_the_files_own_lines(self):
        src, (why, shown) = self.check(b'#include "haxpy.hh"\n')
        self.assertIsNone(why)
        self.assertIn("haxpy.hh", shown)
        # An error inside another file quotes that file: none of it is shown.
        junk = self.tmp / "instructor" / "notes.txt"
        junk.write_text("# the answer is 42\n")
        src, (why, shown) = self.check(b'#include "%s"\n' % bytes(junk))
        self.assertIsNone(why)
        self.assertEqual(shown, "")
        self.assertNotIn("42", shown)

    def test_the_make_rule_is_read_across_continuations(self):
        self.assertEqual(foreign_includes.parse_make_rule("a.o : a.cu \\\n  /x/y.h /p\\ q.h\n"),
                         ["a.cu", "/x/y.h", "/p q.h"])


if __name__ == "__main__":
    unittest.main()

"""What run.py grade prints must not act on the terminal or a CI log.
(Found by an attack review of the grading pipeline; the instructor side, so
not in the student handout: it needs grading_fixtures.)"""
import os
import sys
import tarfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab.console import printable  # noqa: E402
from grading_fixtures import GOOD, BatchCase, FakeRunner, read_csv, run_grade, write_sub  # noqa: E402


class TheConsole(BatchCase, unittest.TestCase):
    """What run.py grade prints must not act on the terminal or a CI log:
    escape sequences in a name or a problem's text once cleared the screen
    and could start a workflow command (::add-mask::) on a line of its own;
    a name that is not UTF-8 stopped the grade before anyone was graded."""

    def test_printable(self):
        self.assertEqual(printable("a\x1b[2Jb\n::add-mask::x\u202e"), "a\\x1b[2Jb\\x0a::add-mask::x\\u202e")
        self.assertEqual(printable(os.fsdecode(b"zo\xeb")), "zo\\xeb")
        self.assertEqual(printable("zoë std::vector"), "zoë std::vector")

    def test_names_and_problems_are_printed_inert(self):
        s = self.subs
        odd = os.fsdecode(os.fsencode(str(s)) + b"/zo\xeb")   # Latin-1, as some zip tools write
        write_sub(Path(odd), GOOD)
        write_sub(s / "esc\x1b[2J", GOOD)
        t = s / "mallory.tar"                 # its problem quotes a member's name
        s.mkdir(exist_ok=True)
        with tarfile.open(t, "w") as tf:
            ti = tarfile.TarInfo("\x1b[2K\n::add-mask::exercises/haxpy/haxpy.cu")
            ti.type, ti.linkname = tarfile.SYMTYPE, "x"
            tf.addfile(ti)
        code, text = run_grade(FakeRunner(), odd, str(s / "esc\x1b[2J"), str(t),
                               "--out", str(self.dir / "o"), "--seed-file", str(self.seed_file))
        self.assertEqual(code, 1, text)           # graded; mallory's archive is a PROBLEM
        self.assertNotIn("\x1b", text)
        self.assertFalse([line for line in text.splitlines() if line.startswith("::")], text)
        self.assertIn("PROBLEM mallory:", text)
        rows = {r["id"]: r for r in read_csv(self.dir / "o" / "gradebook.csv")}
        self.assertEqual(sorted(rows), ["esc\\x1b[2J", "mallory", "zo\\xeb"])
        self.assertEqual(rows["zo\\xeb"]["haxpy_total"], "100")


if __name__ == "__main__":
    unittest.main()

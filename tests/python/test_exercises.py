import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import exercises  # noqa: E402

SAMPLE = r'''/* a comment mentioning BW_EXERCISE(not_me, 1, 0, 0, "x") */
 * BW_EXERCISE(name, n_arrays, in_place, uses_alpha, summary)
BW_EXERCISE(alpha_one, 2, 1, 1, "y = alpha*x + y (bf16, in place)")
BW_EXERCISE(second, 3, 0, 0, "c = a + b, \"quoted\"")
  BW_EXERCISE(indented, 1, 0, 0, "not at the start of the line")
BW_EXERCISE(odd_row,)
BW_EXERCISE(alpha_one, 2, 1, 1, "a repeat is ignored")
'''


class ParseTable(unittest.TestCase):
    def test_names_in_order(self):
        rows = exercises.parse(SAMPLE)
        self.assertEqual([r.name for r in rows], ["alpha_one", "second", "odd_row"])

    def test_fields(self):
        rows = {r.name: r for r in exercises.parse(SAMPLE)}
        a = rows["alpha_one"]
        self.assertEqual((a.n_arrays, a.in_place, a.uses_alpha), (2, True, True))
        self.assertEqual(a.summary, "y = alpha*x + y (bf16, in place)")
        self.assertEqual(rows["second"].summary, 'c = a + b, "quoted"')
        self.assertFalse(rows["second"].in_place)
        self.assertIsNone(rows["odd_row"].n_arrays)
        self.assertEqual(rows["second"].student_file(), "exercises/second/second.cu")

    def test_the_kits_table(self):
        names = exercises.names(ROOT)
        self.assertIn("haxpy", names)
        self.assertIn("vector_sum", names)
        for name in names:
            self.assertTrue((ROOT / "exercises" / name).is_dir(), name)

    def test_select(self):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "exercises").mkdir()
            (Path(tmp) / "exercises" / "exercises.def").write_text(SAMPLE)
            root = Path(tmp)
            self.assertEqual([e.name for e in exercises.select([], root)],
                             ["alpha_one", "second", "odd_row"])
            self.assertEqual([e.name for e in exercises.select(["second", "alpha_one", "second"], root)],
                             ["second", "alpha_one"])
            with self.assertRaises(exercises.UnknownExercise) as cm:
                exercises.select(["nope"], root)
            self.assertIn("unknown exercise 'nope'", str(cm.exception))
            self.assertIn("alpha_one", str(cm.exception))


if __name__ == "__main__":
    unittest.main()

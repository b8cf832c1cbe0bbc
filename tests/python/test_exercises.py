"""The exercises as run.py reads them: the table (exercises/exercises.def,
names only, in either form of line) and each exercise's declaration
(exercises/NAME/exercise.def), with the traffic that follows from it."""
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import cmd_asm, exercises  # noqa: E402
from bwlab.exercises import Array  # noqa: E402

TABLE = r'''/* a comment mentioning BW_EXERCISE(not_me, 1, 0, 0, "x") */
 * BW_EXERCISE(name)
BW_EXERCISE(new_form)
BW_EXERCISE(old_form, 2, 1, 1, "y = alpha*x + y (bf16, in place)")
BW_EXERCISE( spaced )
  BW_EXERCISE(indented, 1, 0, 0, "not at the start of the line: CMake skips it too")
BW_EXERCISE(odd_row,)
BW_EXERCISE(new_form, 2, 1, 1, "a repeat is ignored")
'''

GOOD = '''\
BW_SUMMARY("c = a + b")
BW_SHAPE(ELEMENTWISE)
BW_ARRAY(a, BF16, IN, N)
BW_ARRAY(b, BF16, IN, N)
BW_ARRAY(c, BF16, OUT, N)
'''


def kit(tmp: str, table: str, declarations: dict[str, str], pages: dict[str, str] | None = None) -> Path:
    """A made-up kit under tmp: the table, exercises/NAME/exercise.def for
    each declaration given, handout/NAME.md for each page."""
    root = Path(tmp)
    (root / "exercises").mkdir(parents=True, exist_ok=True)
    (root / "exercises" / "exercises.def").write_text(table)
    for name, text in declarations.items():
        (root / "exercises" / name).mkdir(exist_ok=True)
        (root / "exercises" / name / "exercise.def").write_text(text)
    for name, text in (pages or {}).items():
        (root / "handout").mkdir(exist_ok=True)
        (root / "handout" / f"{name}.md").write_text(text)
    return root


class Table(unittest.TestCase):
    def test_both_forms_give_the_name(self):
        # Catches a parser that takes only the old five-field row (the new
        # BW_EXERCISE(name) line lost), or only the new one.
        self.assertEqual(exercises.table_names(TABLE), ["new_form", "old_form", "spaced", "odd_row"])

    def test_a_line_that_names_nothing_is_refused(self):
        for line in ("BW_EXERCISE()", "BW_EXERCISE(, 2, 1, 1, \"x\")", "BW_EXERCISE(no_close"):
            with self.subTest(line=line), self.assertRaises(exercises.ExerciseError) as cm:
                exercises.table_names(f"/* header */\nBW_EXERCISE(fine)\n{line}\n")
            self.assertTrue(str(cm.exception).startswith("exercises/exercises.def:3: "), cm.exception)

    def test_the_kits_table(self):
        names = exercises.names(ROOT)
        self.assertIn("haxpy", names)
        for name in names:
            self.assertTrue((ROOT / "exercises" / name / "exercise.def").is_file(), name)
        # every exercise the table lists is declared well
        self.assertEqual([e.name for e in exercises.load(ROOT)], names)


class KitDeclarations(unittest.TestCase):
    """The five declarations of the kit read as they say."""

    WANT = {
        "haxpy": ("ELEMENTWISE", ("alpha",), (Array("x", "BF16", "IN", "N"), Array("y", "BF16", "INOUT", "N"))),
        "vector_sum": ("ELEMENTWISE", (), (Array("a", "BF16", "IN", "N"), Array("b", "BF16", "IN", "N"),
                                           Array("c", "BF16", "OUT", "N"))),
        "saxpy": ("ELEMENTWISE", ("a",), (Array("x", "F32", "IN", "N"), Array("y", "F32", "INOUT", "N"))),
        "reduce_sum": ("REDUCTION", (), (Array("x", "BF16", "IN", "N"), Array("sum", "F32", "OUT", "ONE"))),
        "transpose": ("MATRIX", (), (Array("in", "BF16", "IN", "ROWS_COLS"),
                                     Array("out", "BF16", "OUT", "COLS_ROWS"))),
    }
    # (n, rows, cols) -> (bytes read, bytes written)
    TRAFFIC = {"haxpy": ((10,), (40, 20)), "vector_sum": ((10,), (40, 20)), "saxpy": ((10,), (80, 40)),
               "reduce_sum": ((10,), (20, 4)), "transpose": ((15, 3, 5), (30, 30))}
    # n_arrays, in_place, uses_alpha: the attributes the package used before the declarations
    OLD = {"haxpy": (2, True, True), "vector_sum": (3, False, False), "saxpy": (2, True, True),
           "reduce_sum": (2, False, False), "transpose": (2, False, False)}

    def test_declarations(self):
        for name, (shape, scalars, arrays) in self.WANT.items():
            with self.subTest(exercise=name):
                ex = exercises.read(name, ROOT)
                self.assertEqual((ex.name, ex.shape, ex.scalars, ex.arrays), (name, shape, scalars, arrays))
                self.assertTrue(ex.summary)
                self.assertEqual((ex.n_arrays, ex.in_place, ex.uses_alpha), self.OLD[name])
                self.assertEqual(ex.matrix, shape == "MATRIX")
                self.assertEqual(ex.student_file(), f"exercises/{name}/{name}.cu")

    def test_traffic(self):
        for name, (size, want) in self.TRAFFIC.items():
            with self.subTest(exercise=name):
                self.assertEqual(exercises.read(name, ROOT).traffic(*size), want)

    def test_summaries(self):
        self.assertEqual(exercises.read("haxpy", ROOT).summary, "y = alpha*x + y (bf16, in place)")
        self.assertEqual(exercises.read("vector_sum", ROOT).summary, "c = a + b (bf16)")

    def test_element_sizes(self):
        self.assertEqual([a.elem_bytes for a in exercises.read("reduce_sum", ROOT).arrays], [2, 4])
        self.assertEqual([a.elem_bytes for a in exercises.read("saxpy", ROOT).arrays], [4, 4])


class Traffic(unittest.TestCase):
    def decl(self, text: str) -> exercises.Exercise:
        return exercises.parse_declaration(textwrap.dedent(text), "t")

    def test_matrix_by_n_or_by_shape(self):
        ex = self.decl('''\
            BW_SUMMARY("t")
            BW_SHAPE(MATRIX)
            BW_ARRAY(a, F32, IN, COLS_ROWS)
            BW_ARRAY(b, F16, INOUT, ROWS_COLS)
            ''')
        # a read (4 B), b read and written (2 B)
        self.assertEqual(ex.traffic(15, 3, 5), (90, 30))
        self.assertEqual(ex.traffic(15), (90, 30))
        with self.assertRaises(ValueError):
            ex.traffic(16, 3, 5)        # n is not rows * cols
        with self.assertRaises(ValueError):
            ex.traffic(15, 3)           # rows without cols

    def test_in_place_reads_and_writes(self):
        ex = self.decl('''\
            BW_SUMMARY("t")
            BW_SHAPE(REDUCTION)
            BW_SCALAR(s)
            BW_ARRAY(a, F16, IN, N)
            BW_ARRAY(b, F32, IN, N)
            BW_ARRAY(acc, F32, INOUT, ONE)
            ''')
        self.assertEqual(ex.traffic(100), (2 * 100 + 4 * 100 + 4, 4))
        self.assertEqual((ex.n_arrays, ex.in_place, ex.uses_alpha), (3, True, True))


class Malformed(unittest.TestCase):
    """Each malformed declaration is refused with its file and line."""

    HEAD = 'BW_SUMMARY("s")\nBW_SHAPE(ELEMENTWISE)\n'
    # (text, the line named (None: the file only), a fragment of the message)
    CASES = [
        (HEAD + "BW_ARRAY(x, BF16, IN, N)\nBW_FOO(y)\n", 4, "unknown item BW_FOO"),
        (HEAD + "hello\n", 3, "is not an item"),
        (HEAD + "BW_ARRAY(x, BF16, OUT, N);\n", 3, "is not an item"),
        (HEAD + "BW_SCALAR(a) BW_ARRAY(x, BF16, OUT, N)\n", 3, "one item a line"),
        ('BW_SUMMARY(text)\nBW_SHAPE(ELEMENTWISE)\nBW_ARRAY(x, BF16, OUT, N)\n', 1, "one string"),
        (HEAD + 'BW_SUMMARY("again")\nBW_ARRAY(x, BF16, OUT, N)\n', 3, "a second BW_SUMMARY"),
        (HEAD + 'BW_SHAPE(MATRIX)\nBW_ARRAY(x, BF16, OUT, N)\n', 3, "a second BW_SHAPE"),
        ('BW_SUMMARY("s")\nBW_SHAPE(SQUARE)\nBW_ARRAY(x, BF16, OUT, N)\n', 2, "unknown shape 'SQUARE'"),
        ('BW_SUMMARY("s")\nBW_SHAPE(ELEMENTWISE, MATRIX)\n', 2, "BW_SHAPE takes one shape"),
        (HEAD + "BW_ARRAY(x, BF16, OUT)\n", 3, "BW_ARRAY takes 4 items"),
        (HEAD + "BW_SCALAR(a, b)\nBW_ARRAY(x, BF16, OUT, N)\n", 3, "BW_SCALAR takes 1 item"),
        (HEAD + "BW_ARRAY(x, BF8, OUT, N)\n", 3, "unknown type 'BF8'"),
        (HEAD + "BW_ARRAY(x, BF16, IO, N)\n", 3, "unknown role 'IO'"),
        (HEAD + "BW_ARRAY(x, BF16, OUT, M)\n", 3, "unknown extent 'M'"),
        (HEAD + "BW_ARRAY(1x, BF16, OUT, N)\n", 3, "'1x' is not a name"),
        (HEAD + "BW_SCALAR(x)\nBW_ARRAY(x, BF16, OUT, N)\n", 4, "'x' is declared twice (line 3)"),
        (HEAD + "BW_ARRAY(x, BF16, OUT, N)\nBW_ARRAY(y, BF16, INOUT, N)\n", 4, "y is a second written array"),
        (HEAD + "BW_ARRAY(x, BF16, IN, N)\nBW_ARRAY(y, BF16, IN, N)\n", 4, "no array is written"),
        (HEAD + "BW_SCALAR(a)\n", None, "no BW_ARRAY line"),
        ('BW_SUMMARY("s")\nBW_ARRAY(x, BF16, OUT, N)\n', None, "no BW_SHAPE line"),
        ('BW_SHAPE(ELEMENTWISE)\nBW_ARRAY(x, BF16, OUT, N)\n', None, "no BW_SUMMARY line"),
        (HEAD + "BW_ARRAY(x, BF16, IN, N)\nBW_ARRAY(y, F32, OUT, ONE)\n", 4, "every array of an ELEMENTWISE"),
        ('BW_SUMMARY("s")\nBW_SHAPE(REDUCTION)\nBW_ARRAY(x, BF16, IN, N)\nBW_ARRAY(y, F32, OUT, N)\n',
         4, "a REDUCTION writes ONE element"),
        ('BW_SUMMARY("s")\nBW_SHAPE(REDUCTION)\nBW_ARRAY(x, BF16, IN, ONE)\nBW_ARRAY(y, F32, OUT, ONE)\n',
         3, "a REDUCTION's inputs are N"),
        ('BW_SUMMARY("s")\nBW_SHAPE(MATRIX)\nBW_ARRAY(x, BF16, IN, ROWS_COLS)\nBW_ARRAY(y, BF16, OUT, N)\n',
         4, "every array of a MATRIX"),
        (HEAD + "/* not closed\nBW_ARRAY(x, BF16, OUT, N)\n", 3, "a /* comment is not closed"),
        ('BW_SUMMARY("not closed)\nBW_SHAPE(ELEMENTWISE)\n', 1, "a string is not closed"),
        # a line number after a comment of several lines is still the file's
        ("/* one\n two\n three */\n" + HEAD + "BW_ARRAY(x, BF16, OUT, Q)\n", 6, "unknown extent 'Q'"),
        ("/* one\n two */ // three\n" + HEAD + 'BW_SCALAR("k)\n', 5, "a string is not closed"),
    ]

    def test_each_is_refused_with_file_and_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            for text, line, fragment in self.CASES:
                with self.subTest(text=text):
                    root = kit(tmp, "BW_EXERCISE(bad)\n", {"bad": text})
                    with self.assertRaises(exercises.ExerciseError) as cm:
                        exercises.read("bad", root)
                    msg = str(cm.exception)
                    where = "exercises/bad/exercise.def" + (f":{line}: " if line else ": ")
                    self.assertTrue(msg.startswith(where), f"{msg!r} should start with {where!r}")
                    self.assertIn(fragment, msg)
                    self.assertIsInstance(cm.exception, ValueError)

    def test_missing_declaration(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = kit(tmp, "BW_EXERCISE(good)\nBW_EXERCISE(absent)\n", {"good": GOOD})
            with self.assertRaises(exercises.ExerciseError) as cm:
                exercises.load(root)
            self.assertTrue(str(cm.exception).startswith("exercises/absent/exercise.def: missing"),
                            cm.exception)

    def test_comments_and_strings(self):
        ex = exercises.parse_declaration(textwrap.dedent('''\
            // a line comment, BW_SHAPE(MATRIX)
            BW_SUMMARY("a // b, /* c */ \\"d\\"")   /* after */
            /* a comment over
               BW_ARRAY(z, F32, OUT, N)
               lines */ BW_SHAPE(ELEMENTWISE)
            BW_SCALAR(k) // why
            BW_ARRAY( x , F16 , INOUT , N )

            '''), "c")
        self.assertEqual(ex.summary, 'a // b, /* c */ "d"')
        self.assertEqual(ex.shape, "ELEMENTWISE")
        self.assertEqual(ex.scalars, ("k",))
        self.assertEqual(ex.arrays, (Array("x", "F16", "INOUT", "N"),))


class Selection(unittest.TestCase):
    def test_select_and_load(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = kit(tmp, "/* t */\nBW_EXERCISE(one)\nBW_EXERCISE(two, 3, 0, 0, \"old\")\nBW_EXERCISE(broken)\n",
                       {"one": GOOD, "two": GOOD.replace("c = a + b", "two"), "broken": "BW_SHAPE(ROUND)\n"})
            self.assertEqual(exercises.names(root), ["one", "two", "broken"])
            got = exercises.select(["two", "one", "two"], root)
            self.assertEqual([e.name for e in got], ["two", "one"])
            self.assertEqual(got[0].summary, "two")      # from the declaration, not the table row
            with self.assertRaises(exercises.UnknownExercise) as cm:
                exercises.select(["nope"], root)
            self.assertIn("unknown exercise 'nope'", str(cm.exception))
            self.assertIn("one, two, broken", str(cm.exception))
            # all of them: the broken declaration is read, and refused
            with self.assertRaises(exercises.ExerciseError) as cm:
                exercises.select([], root)
            self.assertIn("exercises/broken/exercise.def:1: unknown shape 'ROUND'", str(cm.exception))

    def test_from_list(self):
        table = ["one", "two"]
        self.assertEqual(exercises.from_list("two, one,two", table), ["two", "one"])
        with self.assertRaises(exercises.UnknownExercise):
            exercises.from_list("three", table)
        with self.assertRaises(ValueError):
            exercises.from_list("one,,two", table)


class Guide(unittest.TestCase):
    PAGES = {
        "first": "# first\n\n**Move 16 bytes per access.** Load eight bf16 at once.\n",
        "second": "# second\n\n## Vectorized loads\n\ntext\n",
        "plain": "# plain\n\nNo word on the subject.\n",
    }
    TABLE = "BW_EXERCISE(first)\nBW_EXERCISE(second)\nBW_EXERCISE(plain)\nBW_EXERCISE(nopage)\n"

    def test_own_page_first(self):
        # Catches a guide that always names the first page of the table (or
        # one exercise's page by name).
        with tempfile.TemporaryDirectory() as tmp:
            root = kit(tmp, self.TABLE, {}, self.PAGES)
            self.assertEqual(cmd_asm.guide_for("second", root), "handout/second.md, 'Vectorized loads'")
            self.assertEqual(cmd_asm.guide_for("first", root), "handout/first.md, 'Move 16 bytes per access'")

    def test_else_the_first_page_in_table_order(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = kit(tmp, "BW_EXERCISE(plain)\nBW_EXERCISE(second)\nBW_EXERCISE(first)\n", {}, self.PAGES)
            self.assertEqual(cmd_asm.guide_for("plain", root), "handout/second.md, 'Vectorized loads'")
            self.assertEqual(cmd_asm.guide_for("nopage", root), "handout/second.md, 'Vectorized loads'")

    def test_else_the_tools_page(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = kit(tmp, self.TABLE, {}, {"plain": self.PAGES["plain"]})
            self.assertEqual(cmd_asm.guide_for("plain", root), "handout/tools.md")


if __name__ == "__main__":
    unittest.main()

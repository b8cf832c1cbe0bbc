import contextlib
import io
import subprocess
import sys
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import cli  # noqa: E402

ALL = ["test", "benchmark", "score", "selftest", "grade", "merge", "report", "handout", "asm", "profile", "crosscheck"]


def run_py(*args):
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


class RunPy(unittest.TestCase):
    def test_no_arguments_prints_help(self):
        p = run_py()
        self.assertEqual(p.returncode, 0, p.stderr)
        for name in ALL:
            self.assertIn(name, p.stdout)
        self.assertIn("python3 run.py test", p.stdout)

    def test_unknown_exercise(self):
        p = run_py("test", "no_such_exercise")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown exercise 'no_such_exercise'", p.stderr)
        self.assertIn("haxpy", p.stderr)

    def test_unknown_exercise_benchmark(self):
        p = run_py("benchmark", "nope")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown exercise 'nope'", p.stderr)

    def test_unknown_command(self):
        p = run_py("frobnicate")
        self.assertEqual(p.returncode, 2)
        self.assertIn("invalid choice", p.stderr)

    def test_solutions_and_submission_exclusive(self):
        p = run_py("test", "--solutions", "--submission", "x")
        self.assertEqual(p.returncode, 2)
        self.assertIn("not allowed with", p.stderr)

    def test_bad_submission_path(self):
        p = run_py("test", "haxpy", "--submission", str(ROOT / "no" / "such" / "dir"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("no such file or directory", p.stderr)

    def test_command_help(self):
        for name in ["test", "benchmark", "selftest"]:
            p = run_py(name, "--help")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(f"run.py {name}", p.stdout)


class Table(unittest.TestCase):
    def test_every_command_is_registered(self):
        self.assertEqual(list(cli.COMMANDS), ALL)
        for name, (module, help_line) in cli.COMMANDS.items():
            self.assertEqual(module, f"bwlab.cmd_{name}")
            self.assertTrue(help_line)

    def test_my_commands_have_the_interface(self):
        for name in ["test", "benchmark", "selftest"]:
            mod = cli.load_command(name)
            self.assertIsNotNone(mod)
            self.assertTrue(callable(mod.add_arguments) and callable(mod.run))
            self.assertIsInstance(mod.HELP, str)
            self.assertNotIn("\n", mod.HELP)

    def test_missing_module_is_reported(self):
        table = dict(cli.COMMANDS, later=("bwlab.cmd_later_not_written", "written later"))
        err = io.StringIO()
        with mock.patch.object(cli, "COMMANDS", table), contextlib.redirect_stderr(err):
            rc = cli.main(["later", "--anything", "x"])
        self.assertEqual(rc, 2)
        self.assertIn("`run.py later` is not available in this copy of the kit", err.getvalue())

    def test_missing_module_in_help(self):
        table = dict(cli.COMMANDS, later=("bwlab.cmd_later_not_written", "written later"))
        out = io.StringIO()
        with mock.patch.object(cli, "COMMANDS", table), contextlib.redirect_stdout(out):
            rc = cli.main([])
        self.assertEqual(rc, 0)
        self.assertIn("written later (not available in this copy)", out.getvalue())


if __name__ == "__main__":
    unittest.main()


class ImportGraph(unittest.TestCase):
    """The bwlab modules import each other without cycles (counting imports
    inside functions too): a cycle is how build.py and vet.py, or cmd_grade
    and cmd_handout, once ended up needing each other."""

    def test_no_cycles(self):
        import ast
        pkg = ROOT / "grader" / "py" / "bwlab"
        mods = {p.stem for p in pkg.glob("*.py")}
        edges = {}
        for m in mods:
            deps = set()
            for node in ast.walk(ast.parse((pkg / f"{m}.py").read_text())):
                if isinstance(node, ast.ImportFrom) and node.level == 1:
                    if node.module:
                        deps.add(node.module.split(".")[0])
                    else:
                        deps |= {a.name for a in node.names}
            edges[m] = (deps & mods) - {"__init__"}
        state = {}

        def visit(m, path):
            if state.get(m) == "done":
                return
            if state.get(m) == "open":
                self.fail("import cycle: " + " -> ".join(path[path.index(m):] + [m]))
            state[m] = "open"
            for d in sorted(edges[m]):
                visit(d, path + [m])
            state[m] = "done"

        for m in sorted(mods):
            visit(m, [])
        self.assertIn("seeds", edges["cmd_handout"])   # the test sees function-level imports

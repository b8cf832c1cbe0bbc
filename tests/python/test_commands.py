"""run.py test and run.py benchmark against a stand-in bwgrade (no GPU, no build)."""
import contextlib
import io
import json
import os
import stat
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import build, cli, cmd_benchmark, optional_tools  # noqa: E402
from bwlab import exercises as kit_exercises  # noqa: E402

# What `run.py test` with no exercise named chooses: the whole table, in its order.
TABLE = kit_exercises.names(ROOT)

# Behaves like bwgrade as docs/ARCHITECTURE.md describes it, driven by
# FAKE_BWGRADE: {exercise: {"rc": .., "status": .., "passed": .., "total": .., "say": ..,
# "sleep": seconds before it reports}}. Its log gets its arguments when it
# starts and ["end", exercise] when it is done.
FAKE_BWGRADE = textwrap.dedent("""\
    #!{python}
    import json, os, sys
    args = sys.argv[1:]
    with open(os.environ["FAKE_BWGRADE_LOG"], "a") as f:
        f.write(json.dumps(args) + "\\n")
    mode, ex = args[0], args[1]
    plan = json.loads(os.environ["FAKE_BWGRADE"]).get(ex, {{}})
    import atexit, time
    atexit.register(lambda: open(os.environ["FAKE_BWGRADE_LOG"], "a").write(json.dumps(["end", ex]) + "\\n"))
    time.sleep(plan.get("sleep", 0))
    label = args[args.index("--label") + 1] if "--label" in args else None
    plan = dict(plan, **plan.get(label or "", {{}})) if label else plan
    print(plan.get("say", f"bwgrade {{mode}} {{ex}}: report"))
    rc = plan.get("rc", 0)
    out = args[args.index("--json") + 1]
    if rc == 3:
        # "no_device": False plays a student's worker that prints the words
        # but is not bwgrade's word (its baseline worker started).
        said = "no CUDA device: cudaGetDeviceCount returned 100 (no CUDA-capable device is detected)"
        print("bwgrade: " + said)
        with open(out, "w") as f:
            json.dump({{"tool": "bwgrade", "mode": mode, "exercise": ex, "status": "error",
                       "error": said, "no_device": plan.get("no_device", True)}}, f)
        sys.exit(3)
    if mode == "test":
        doc = {{"tool": "bwgrade", "mode": "test", "exercise": ex, "seed": 1,
                "status": plan.get("status", "pass"), "passed": plan.get("passed", 4),
                "failed": plan.get("total", 4) - plan.get("passed", 4) - plan.get("not_run", 0),
                "skipped": plan.get("not_run", 0), "not_run": plan.get("not_run", 0),
                "total": plan.get("total", 4), "diagnoses": plan.get("diagnoses", []), "cases": []}}
    else:
        doc = {{"tool": "bwgrade", "mode": "bench", "exercise": ex, "label": label,
                "device": {{"name": "Fake GPU", "peak_gbs": 1000.0}},
                "copy": {{"gbs": 0 if "--no-copy" in args else 800.0}},
                "rows": [{{"n": 1000, "offset": 0, "gbs": plan.get("gbs", 400.0),
                          "pct_copy": None if "--no-copy" in args else 50.0, "status": "ok"}},
                         {{"n": 1000, "offset": 1, "gbs": 0, "status": plan.get("row_status", "ok"),
                          "pct_copy": 0}}]}}
    with open(out, "w") as f:
        json.dump(doc, f)
    sys.exit(rc)
""")


class Base(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)
        self.bwgrade = self.tmp / "bwgrade"
        self.bwgrade.write_text(FAKE_BWGRADE.format(python=sys.executable))
        self.bwgrade.chmod(self.bwgrade.stat().st_mode | stat.S_IEXEC)
        self.log = self.tmp / "bwgrade.log"
        self._env = mock.patch.dict(os.environ, {"FAKE_BWGRADE_LOG": str(self.log), "FAKE_BWGRADE": "{}"})
        self._env.start()

    def tearDown(self):
        self._env.stop()
        self._tmp.cleanup()

    def behave(self, **plans):
        os.environ["FAKE_BWGRADE"] = json.dumps(plans)

    def plan(self, exercises, label="student", broken=(), peers=()):
        workers = []
        for ex in exercises:
            w = build.Worker(ex, label, f"bw_worker_{ex}", path=self.tmp / f"bw_worker_{ex}", status="ok")
            if ex in broken:
                w.status, w.path = "build_error", None
                w.message = f"{ex} ({label}) did not compile"
                w.lines = [f"exercises/{ex}/{ex}.cu(3): error: expected a \";\""]
            workers.append(w)
            for lib in peers:
                workers.append(build.Worker(ex, lib, f"bw_worker_{ex}_{lib}",
                                            path=self.tmp / f"bw_worker_{ex}_{lib}", status="ok"))
        return build.Plan(build_dir=self.tmp, bwgrade=self.bwgrade, workers=workers)

    def run_cli(self, argv, plan):
        out, err = io.StringIO(), io.StringIO()
        # The optional tools are there (test_bad_inputs.py takes them away).
        with mock.patch.object(build, "prepare", return_value=plan) as prep, \
                mock.patch.object(optional_tools, "sanitizer_on", return_value=True), \
                mock.patch.object(optional_tools, "has_matplotlib", return_value=True), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli.main(argv)
        self.prepare_call = prep.call_args
        return rc, out.getvalue(), err.getvalue()

    def log_lines(self):
        return [json.loads(l) for l in self.log.read_text().splitlines()] if self.log.exists() else []

    def calls(self):
        """bwgrade's command lines by exercise (they run side by side), each
        exercise's in the order they ran."""
        return sorted((c for c in self.log_lines() if c[0] != "end"), key=lambda c: c[1])


class TestCommand(Base):
    def test_all_pass(self):
        # No exercise named: every exercise of the table runs, and the summary
        # names each, in table order.
        self.behave(**{ex: {"passed": 1204, "total": 1204} for ex in TABLE})
        rc, out, _ = self.run_cli(["test"], self.plan(TABLE))
        self.assertEqual(rc, 0)
        for ex in TABLE:
            self.assertIn(f"bwgrade test {ex}: report", out)   # bwgrade's report is streamed
        self.assertTrue(out.rstrip().endswith(
            f"{len(TABLE)} exercises: " + ", ".join(f"{ex} pass (1204/1204)" for ex in TABLE)), out)
        self.assertEqual([c[1] for c in self.calls()], sorted(TABLE))   # each once
        self.assertEqual(self.calls()[0][:4], ["test", "haxpy", "--worker", str(self.tmp / "bw_worker_haxpy")])

    def test_exercises_run_side_by_side_and_report_in_table_order(self):
        # haxpy, first in the table, takes longer, yet its report comes first,
        # whole, and every other one follows whole, in table order; all ran
        # at once, sharing one lock file for their large cases.
        self.behave(**{ex: {"say": f"{ex} line", "sleep": 0.8 if ex == "haxpy" else 0} for ex in TABLE})
        rc, out, _ = self.run_cli(["test"], self.plan(TABLE))
        self.assertEqual(rc, 0)
        for ex, after in zip(TABLE, TABLE[1:]):
            self.assertLess(out.index(f"{ex} line"), out.index(f"{after} ("), out)   # its heading
            self.assertLess(out.index(f"{after} ("), out.index(f"{after} line"), out)
        log = self.log_lines()
        for ex in TABLE[1:]:
            started = next(i for i, l in enumerate(log) if l[:2] == ["test", ex])
            self.assertLess(started, log.index(["end", "haxpy"]), log)   # not one after the other
        locks = [c[c.index("--device-lock") + 1] for c in self.calls()]
        self.assertEqual(locks, [str(self.tmp / "device.lock")] * len(TABLE))

    def test_one_exercise_takes_no_lock(self):
        rc, _, _ = self.run_cli(["test", "haxpy"], self.plan(["haxpy"]))
        self.assertEqual(rc, 0)
        self.assertNotIn("--device-lock", self.calls()[0])

    def test_one_fails(self):
        self.behave(vector_sum={"rc": 1, "status": "fail", "passed": 1180, "total": 1204})
        rc, out, _ = self.run_cli(["test", "haxpy", "vector_sum"], self.plan(["haxpy", "vector_sum"]))
        self.assertEqual(rc, 1)
        self.assertIn("2 exercises: haxpy pass (4/4), vector_sum FAIL (1180/1204)", out)

    def test_stub_not_implemented(self):
        self.behave(haxpy={"rc": 1, "status": "not_implemented", "passed": 0, "total": 9})
        rc, out, _ = self.run_cli(["test", "haxpy"], self.plan(["haxpy"]))
        self.assertEqual(rc, 1)
        self.assertIn("1 exercise: haxpy not implemented (0/9)", out)

    def test_options_pass_through_and_json(self):
        report = self.tmp / "out" / "r.json"
        rc, _, _ = self.run_cli(["test", "haxpy", "--seed", "7", "--case", "3", "--json", str(report)],
                                self.plan(["haxpy"]))
        self.assertEqual(rc, 0)
        call = self.calls()[0]
        self.assertEqual(call[4:8], ["--seed", "7", "--case", "3"])
        doc = json.loads(report.read_text())
        self.assertEqual(doc["exercises"]["haxpy"]["tool"], "bwgrade")
        self.assertEqual(doc["exercises"]["haxpy"]["status"], "pass")
        self.assertEqual(doc["variant"], "student")

    def test_build_error_counts_as_failure(self):
        report = self.tmp / "r.json"
        rc, out, _ = self.run_cli(["test", "--json", str(report)],
                                  self.plan(TABLE, broken=["vector_sum"]))
        self.assertEqual(rc, 1)
        self.assertIn('exercises/vector_sum/vector_sum.cu(3): error: expected a ";"', out)
        self.assertIn("vector_sum BUILD ERROR", out)
        entries = json.loads(report.read_text())["exercises"]
        self.assertEqual(list(entries), TABLE)
        entry = entries["vector_sum"]
        self.assertEqual(entry["status"], "build_error")
        self.assertTrue(entry["build_output"])
        # The others ran and passed: a build error costs only its exercise.
        self.assertEqual([c[1] for c in self.calls()], sorted(set(TABLE) - {"vector_sum"}))
        self.assertEqual({ex for ex, e in entries.items() if e["status"] == "pass"},
                         set(TABLE) - {"vector_sum"})

    def test_no_device(self):
        self.behave(**{ex: {"rc": 3} for ex in TABLE})
        report = self.tmp / "r.json"
        rc, out, _ = self.run_cli(["test", "--json", str(report)], self.plan(TABLE))
        self.assertEqual(rc, 3)
        self.assertIn("built OK; no CUDA device here, so nothing was run. "
                      "Run this on a machine with an NVIDIA GPU.", out)
        self.assertIn("no CUDA device: cudaGetDeviceCount", out)   # bwgrade's own message
        self.assertEqual(len(self.calls()), len(TABLE))            # side by side
        doc = json.loads(report.read_text())
        self.assertTrue(doc["no_device"])
        self.assertEqual({ex: e["status"] for ex, e in doc["exercises"].items()},
                         {ex: "not_run" for ex in TABLE})

    def test_only_bwgrades_word_means_no_device(self):
        # bwgrade exit 3 whose report does not say no_device: the words came
        # from a student's worker, and it is that exercise's trouble only.
        self.behave(haxpy={"rc": 3, "no_device": False})
        report = self.tmp / "r.json"
        rc, out, _ = self.run_cli(["test", "--json", str(report)], self.plan(TABLE))
        self.assertEqual(rc, 3)
        self.assertNotIn("no CUDA device here", out)
        doc = json.loads(report.read_text())
        self.assertFalse(doc["no_device"])
        self.assertEqual(doc["exercises"]["haxpy"]["status"], "error")
        self.assertEqual({e["status"] for ex, e in doc["exercises"].items() if ex != "haxpy"},
                         {"pass"})

    def test_sanitize_all_runs_each_tool(self):
        self.behave(haxpy={"passed": 2, "total": 2})
        report = self.tmp / "r.json"
        rc, _, _ = self.run_cli(["test", "haxpy", "--sanitize", "--json", str(report)], self.plan(["haxpy"]))
        self.assertEqual(rc, 0)
        tools = [c[c.index("--sanitize") + 1] for c in self.calls()]
        self.assertEqual(tools, ["memcheck", "racecheck", "initcheck"])
        entry = json.loads(report.read_text())["exercises"]["haxpy"]
        self.assertEqual(set(entry["sanitize_runs"]), {"memcheck", "racecheck", "initcheck"})

    def test_one_sanitizer(self):
        rc, _, _ = self.run_cli(["test", "haxpy", "--sanitizer", "racecheck"], self.plan(["haxpy"]))
        self.assertEqual(rc, 0)
        call = self.calls()[0]
        self.assertEqual(call[call.index("--sanitize"):][:2], ["--sanitize", "racecheck"])

    def test_students_get_fail_fast_unless_all_or_one_case(self):
        """Catches run.py test dropping the fail-fast default (slow answers to
        failing kernels), --all not turning it off, or --fail-fast sent with --case."""
        self.behave(haxpy={"status": "fail", "passed": 30, "total": 869, "not_run": 469, "rc": 1})
        rc, out, _ = self.run_cli(["test", "haxpy"], self.plan(["haxpy"]))
        self.assertEqual(rc, 1)
        self.assertIn("--fail-fast", self.calls()[-1])
        self.assertIn("haxpy FAIL (30/400 run, 469 not run)", out)
        self.run_cli(["test", "haxpy", "--all"], self.plan(["haxpy"]))
        self.assertNotIn("--fail-fast", self.calls()[-1])
        self.run_cli(["test", "haxpy", "--case", "7"], self.plan(["haxpy"]))
        self.assertNotIn("--fail-fast", self.calls()[-1])

    def test_unknown_exercise(self):
        rc, _, err = self.run_cli(["test", "haxpy", "nope"], self.plan(["haxpy"]))
        self.assertEqual(rc, 2)
        self.assertIn("unknown exercise 'nope'", err)
        self.assertIsNone(self.prepare_call)   # nothing was built

    def test_bad_submission(self):
        rc, _, err = self.run_cli(["test", "--submission", str(self.tmp / "absent")], self.plan([]))
        self.assertEqual(rc, 2)
        self.assertIn("no such file or directory", err)

    def test_submission_missing_file(self):
        sub = self.tmp / "sub" / "haxpy"
        sub.mkdir(parents=True)
        (sub / "haxpy.cu").write_text("// mine\n")
        # As build.prepare plans it: every exercise but haxpy has no file.
        plan = self.plan(TABLE, label="submission")
        others = [ex for ex in TABLE if ex != "haxpy"]
        for w in plan.workers:
            if w.exercise in others:
                w.status, w.path = "missing", None
                w.message = f"missing file exercises/{w.exercise}/{w.exercise}.cu"
        rc, out, _ = self.run_cli(["test", "--submission", str(self.tmp / "sub")], plan)
        self.assertEqual(rc, 1)
        self.assertIn("submission: haxpy: taken from haxpy/haxpy.cu", out)
        for ex in others:
            self.assertIn(f"submission: {ex}: missing file exercises/{ex}/{ex}.cu", out)
            self.assertIn(f"{ex} MISSING FILE", out)
        self.assertIn("haxpy pass (4/4)", out)
        self.assertEqual([c[1] for c in self.calls()], ["haxpy"])
        args, kwargs = self.prepare_call
        self.assertEqual(args[0], TABLE)
        self.assertEqual(args[1], "submission")


class BenchmarkCommand(Base):
    def test_side_by_side_with_peers(self):
        self.behave(haxpy={"student": {"gbs": 400.0}, "cublas": {"gbs": 700.0}})
        report = self.tmp / "b.json"
        rc, out, _ = self.run_cli(["benchmark", "haxpy", "--peers", "--quick", "--sizes", "1000,2000",
                                   "--json", str(report)], self.plan(["haxpy"], peers=["cublas"]))
        self.assertEqual(rc, 0)
        student, peer = self.calls()
        self.assertEqual(student[:2], ["bench", "haxpy"])
        self.assertIn("--quick", student)
        self.assertEqual(student[student.index("--sizes") + 1], "1000,2000")
        self.assertEqual(student[student.index("--label") + 1], "student")
        self.assertNotIn("--no-copy", student)
        self.assertIn("--no-copy", peer)
        self.assertEqual(peer[peer.index("--label") + 1], "cublas")
        self.assertIn("student GB/s", out)
        self.assertIn("cublas %copy", out)
        # The peer ran without its own copy: its %copy is relative to the student run's copy.
        self.assertRegex(out, r"1,000\s+0\s+400\.0\s+50\.0\s+700\.0\s+87\.5")
        doc = json.loads(report.read_text())
        self.assertEqual(set(doc["exercises"]["haxpy"]), {"student", "cublas"})

    def test_invalid_rows_fail(self):
        self.behave(haxpy={"rc": 1, "row_status": "wrong"})
        rc, out, _ = self.run_cli(["benchmark", "haxpy"], self.plan(["haxpy"]))
        self.assertEqual(rc, 1)
        self.assertIn("wrong", out)

    def test_no_device(self):
        self.behave(haxpy={"rc": 3})
        rc, out, _ = self.run_cli(["benchmark", "haxpy"], self.plan(["haxpy"]))
        self.assertEqual(rc, 3)
        self.assertIn("no CUDA device here", out)

    def test_a_workers_no_device_words_are_not_bwgrades(self):
        self.behave(haxpy={"rc": 3, "no_device": False})
        rc, out, _ = self.run_cli(["benchmark", "haxpy"], self.plan(["haxpy"]))
        self.assertEqual(rc, 3)
        self.assertNotIn("no CUDA device here", out)

    def test_plot_unavailable_or_called(self):
        plot_path = str(self.tmp / "p.png")
        real_import = cmd_benchmark.importlib.import_module

        def no_plot(name, *a):
            if name == "bwlab.plot":
                err = ModuleNotFoundError("No module named 'bwlab.plot'")
                err.name = "bwlab.plot"
                raise err
            return real_import(name, *a)

        with mock.patch.object(cmd_benchmark.importlib, "import_module", side_effect=no_plot):
            rc, out, _ = self.run_cli(["benchmark", "haxpy", "--plot", plot_path], self.plan(["haxpy"]))
        self.assertEqual(rc, 0)
        self.assertIn("plotting not available", out)

        fake = mock.Mock()
        fake.SUFFIXES = (".png", ".svg", ".pdf")
        fake.plot_benchmark.return_value = "wrote p.png"
        def with_plot(name, *a):
            return fake if name == "bwlab.plot" else real_import(name, *a)

        with mock.patch.object(cmd_benchmark.importlib, "import_module", side_effect=with_plot):
            rc, out, _ = self.run_cli(["benchmark", "haxpy", "--plot", plot_path], self.plan(["haxpy"]))
        self.assertIn("wrote p.png", out)
        docs, path = fake.plot_benchmark.call_args[0]
        self.assertEqual(path, plot_path)
        self.assertEqual(docs[0]["label"], "student")


if __name__ == "__main__":
    unittest.main()

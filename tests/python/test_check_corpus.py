"""tests/gpu/check_corpus.py on made-up results (no GPU): the checker that
decides whether each hostile submission got its intended verdict must itself
refuse the wrong ones."""
import importlib.util
import json
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECKER = ROOT / "tests" / "gpu" / "check_corpus.py"
check_corpus = None
if CHECKER.is_file() and (ROOT / "tests" / "corpus").is_dir():
    spec = importlib.util.spec_from_file_location("check_corpus", CHECKER)
    check_corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check_corpus)


def test_result(status, outcomes=("pass",), diagnoses=(), **extra):
    cases = [{"outcome": o, "detail": extra.pop("detail", None)} for o in outcomes]
    return {"status": status, "passed": 1, "total": 1, "cases": cases,
            "diagnoses": [{"code": d} for d in diagnoses], **extra}


class CheckCorpusTests(unittest.TestCase):
    def setUp(self):
        if check_corpus is None:
            self.skipTest("no tests/gpu/ or tests/corpus/ in this copy of the kit (the student handout)")
    def run_entry(self, name, test, bench_row=None, bench=True, unvetted=False):
        entry = ROOT / "tests" / "corpus" / name
        ex = json.loads((entry / "expect.json").read_text())["exercise"]
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            (d / f"{name}.json").write_text(json.dumps({"exercises": {ex: test}}))
            if bench_row is not None:
                doc = {"exercises": {ex: {"submission": {"rows": [bench_row]}}}}
                (d / f"{name}.bench.json").write_text(json.dumps(doc))
            return check_corpus.verdict(entry, d, bench, unvetted)[0]

    def test_a_stopped_run_is_held_to_the_fail_fast_expectations_only(self):
        """hangs: a full run must show passing cases too; a run that stopped at
        the first hang (fail-fast) cannot, and is judged by "fail_fast"."""
        def line(result):
            entry = ROOT / "tests" / "corpus" / "hangs"
            with tempfile.TemporaryDirectory() as tmp:
                (Path(tmp) / "hangs.json").write_text(
                    json.dumps({"exercises": {"vector_sum": result}}))
                return check_corpus.verdict(entry, Path(tmp), False)[:2]
        full = test_result("fail", outcomes=("timeout", "skipped"), diagnoses=("timeout",))
        ok, text = line(full)
        self.assertFalse(ok)
        self.assertIn("lack ['pass']", text)
        self.assertTrue(line(dict(full, not_run=776))[0])
        ok, text = line(dict(test_result("fail", outcomes=("crash",), diagnoses=("timeout",)),
                             not_run=5))
        self.assertFalse(ok)
        self.assertIn("lack ['timeout']", text)

    def test_bench_verdict_is_checked(self):
        # Catches a checker that looks only at the test status of a cheat
        # that passes every test case.
        passing = test_result("pass")
        caught = {"n": 268435455, "status": "not_recomputed",
                  "rule": "every call computes its whole output from its inputs"}
        self.assertTrue(self.run_entry("memo_pointers", passing, caught))
        self.assertFalse(self.run_entry("memo_pointers", passing, dict(caught, status="ok")))
        self.assertFalse(self.run_entry("memo_pointers", passing, None))
        self.assertTrue(self.run_entry("memo_pointers", passing, None, bench=False))

    def test_refusal_rule_and_symbol_are_checked(self):
        # Catches accepting a refusal for the wrong reason.
        good = test_result("refused", outcomes=(), rule="forbidden_call", symbol="fork")
        self.assertTrue(self.run_entry("forks", good))
        self.assertFalse(self.run_entry("forks", dict(good, rule="library")))
        self.assertFalse(self.run_entry("forks", dict(good, symbol="exit")))

    def test_a_sanitizer_run_is_checked_for_status_and_note(self):
        """api_error_ignored: under memcheck every case passes, with the API
        error as a note. Catches a checker that ignores the sanitizer run's
        status (a memcheck that charges the API error) or its note."""
        entry = ROOT / "tests" / "corpus" / "api_error_ignored"

        def run(result):
            with tempfile.TemporaryDirectory() as tmp:
                (Path(tmp) / "api_error_ignored.json").write_text(
                    json.dumps({"exercises": {"haxpy": result}}))
                return check_corpus.verdict(entry, Path(tmp), False, sanitize=True)[:2]
        note = ("========= Program hit cudaErrorInvalidValue (error 1) due to \"invalid argument\" "
                "on CUDA API call to cudaDeviceSetLimit.\n")
        good = test_result("pass")
        good["cases"][0]["sanitizer_note"] = note
        self.assertTrue(run(good)[0])
        charged = test_result("fail", outcomes=("fail",), detail=note)
        ok, text = run(charged)
        self.assertFalse(ok)
        self.assertIn("status under memcheck fail (want pass)", text)
        ok, text = run(test_result("pass"))
        self.assertFalse(ok)
        self.assertIn("no case's sanitizer_note mentions", text)
        # reads_past_end must fail under memcheck
        entry = ROOT / "tests" / "corpus" / "reads_past_end"
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "reads_past_end.json").write_text(
                json.dumps({"exercises": {"vector_sum": test_result("pass")}}))
            self.assertFalse(check_corpus.verdict(entry, Path(tmp), False, sanitize=True)[0])

    def test_detail_is_checked(self):
        # Catches a forged reply that failed for some other reason passing
        # (a run with vetting bypassed, where the reply token is the defence).
        self.assertTrue(self.run_entry("forges_reply", test_result(
            "fail", outcomes=("crash",), diagnoses=("crash",), detail="a forged reply on the ..."),
            unvetted=True))
        self.assertFalse(self.run_entry("forges_reply", test_result(
            "fail", outcomes=("crash",), diagnoses=("crash",), detail="killed by signal SEGV"),
            unvetted=True))

    def test_raw_system_calls_refused_by_their_rule(self):
        # Catches a raw-syscall entry accepted when it ran (the vetting missed
        # it) or when refused by another rule.
        for name in ("forges_reply", "raw_fork", "raw_open_write", "raw_kill"):
            good = test_result("refused", outcomes=(), rule="system_call",
                               symbol="(anonymous namespace)::raw_syscall(long, long, long)+0x1f"
                               if name != "forges_reply" else "raw_write(int, void const*, unsigned long)+0x22")
            self.assertTrue(self.run_entry(name, good), name)
            self.assertFalse(self.run_entry(name, dict(good, rule="forbidden_call")), name)
            self.assertFalse(self.run_entry(name, test_result("fail", outcomes=("crash",))), name)

    def test_unvetted_run_is_held_to_when_unvetted(self):
        # Catches --unvetted still wanting a refusal, or accepting a run where
        # the containment failed and the grader died (raw_kill: an error).
        # (unvetted it computes nothing: every case is not implemented, as the
        # H100 grade of it showed)
        fail = test_result("not_implemented", outcomes=("fail",))
        self.assertTrue(self.run_entry("raw_kill", fail, unvetted=True))
        self.assertFalse(self.run_entry("raw_kill", dict(fail, status="error"), unvetted=True))
        self.assertFalse(self.run_entry("raw_kill", dict(fail, status="pass"), unvetted=True))
        refused = test_result("refused", outcomes=(), rule="system_call", symbol="raw_syscall")
        self.assertFalse(self.run_entry("raw_kill", refused, unvetted=True))

    def test_groups_passed_is_checked(self):
        # off_by_one_write goes into the student handout because its
        # expect.json says no case group passes: catches a checker that lets
        # a run where one group passed whole (points a student could copy) through.
        def run(groups, **extra):
            cases = [{"group": g, "outcome": o, "detail": d} for g, o, d in groups]
            return self.run_entry("off_by_one_write", {
                "status": "fail", "passed": 1, "total": len(cases), "cases": cases,
                "diagnoses": [{"code": "guard"}], **extra})
        self.assertTrue(run([("small", "fail", None), ("small", "pass", None), ("special", "fail", None)]))
        self.assertFalse(run([("small", "fail", None), ("special", "pass", None)]))
        # a skipped case neither passes nor fails a group (as in scoring)
        self.assertFalse(run([("small", "fail", None), ("special", "pass", None), ("special", "skipped", None)]))
        # cases not run after an early stop count as failed, as in grading
        self.assertTrue(run([("small", "fail", None), ("large", "skipped", "not run: the small cases ...")],
                            not_run=1))

    def test_ceiling_on_figure(self):
        passing = test_result("pass")
        self.assertTrue(self.run_entry("sleeps", passing, {"n": 1, "status": "ok", "pct_peak": 2.4}))
        self.assertFalse(self.run_entry("sleeps", passing, {"n": 1, "status": "ok", "pct_peak": 60.0}))


if __name__ == "__main__":
    unittest.main()

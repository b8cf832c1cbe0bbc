import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import cmd_selftest as st  # noqa: E402

# ctest --output-on-failure -V with two Check suites, one failing test and one
# executable that crashed outside Check (captured from a real run, trimmed).
CTEST_MIXED = """\
Test project /tmp/ck/b
test 1
    Start 1: test_cases

1: Test command: /tmp/ck/b/test_cases
1: Running suite(s): cases
1: 100%: Checks: 25, Failures: 0, Errors: 0
1/3 Test #1: test_cases .......................   Passed    0.10 sec
test 2
    Start 2: test_validate

2: Test command: /tmp/ck/b/test_validate
2: Running suite(s): validate
2: 33%: Checks: 3, Failures: 1, Errors: 1
2: /tmp/ck/t.c:5:F:core:b:0: Assertion '1 == 2' failed: 1 == 1, 2 == 2
2: /tmp/ck/t.c:6:E:core:c:0: (after this point) Received signal 11 (Segmentation fault)
2/3 Test #2: test_validate ....................***Failed    0.00 sec
Running suite(s): validate
33%: Checks: 3, Failures: 1, Errors: 1
/tmp/ck/t.c:5:F:core:b:0: Assertion '1 == 2' failed: 1 == 1, 2 == 2
/tmp/ck/t.c:6:E:core:c:0: (after this point) Received signal 11 (Segmentation fault)

test 3
    Start 3: test_image

3: Test command: /tmp/ck/b/test_image
3/3 Test #3: test_image .......................***Exception: SegFault  0.00 sec


33% tests passed, 2 tests failed out of 3

Total Test time (real) =   0.01 sec

The following tests FAILED:
	  2 - test_validate (Failed)
	  3 - test_image (SEGFAULT)
Errors while running CTest
"""

# A GPU test without a GPU: it prints why and exits with its SKIP_RETURN_CODE.
CTEST_SKIPPED = """\
1: 100%: Checks: 40, Failures: 0, Errors: 0
1/2 Test #1: test_cases .......................   Passed    0.31 sec
test 20
    Start 20: bwhold_ready_then_exits_on_eof

20: Test command: /usr/bin/sh "-c" "..."
20: skipped: no CUDA device
2/2 Test #20: bwhold_ready_then_exits_on_eof ...***Skipped   0.01 sec

100% tests passed, 0 tests failed out of 2

The following tests did not run:
	 20 - bwhold_ready_then_exits_on_eof (Skipped)
"""

CTEST_GOOD = """\
1: 100%: Checks: 40, Failures: 0, Errors: 0
1/2 Test #1: test_cases .......................   Passed    0.31 sec
2: 100%: Checks: 12, Failures: 0, Errors: 0
2/2 Test #2: test_bf16 ........................   Passed    1.02 sec

100% tests passed, 0 tests failed out of 2
"""

CTEST_NONE = """\
Test project /work/main/build
No tests were found!!!
"""

UNITTEST_PY311 = """\
test_a (test_x.T.test_a) ... skipped 'no CUDA device'
test_b (test_x.T.test_b)
doc line ... ok
test_c (test_x.T.test_c) ... FAIL
test_d (test_x.T.test_d) ... ERROR
test_e (test_x.T.test_e) ... expected failure
test_f (test_x.T.test_f) ... skipped "it's slow"
test_g (test_x.T.test_g) ... building the grader ...
skipped 'no CUDA device'

======================================================================
FAIL: test_c (test_x.T.test_c)
----------------------------------------------------------------------
AssertionError: 1 != 2

----------------------------------------------------------------------
Ran 7 tests in 0.001s

FAILED (failures=1, errors=1, skipped=3, expected failures=1)
"""

UNITTEST_PY310_OK = """\
test_one (test_cli.Cli) ... ok
test_two (test_cli.Cli) ... skipped 'no CUDA device'

----------------------------------------------------------------------
Ran 2 tests in 0.010s

OK (skipped=1)
"""

UNITTEST_CRASHED = """\
test_one (test_cli.Cli) ... Traceback (most recent call last):
  ...
Killed
"""


class CheckAndCtest(unittest.TestCase):
    def test_check_counts_each_suite_once(self):
        c = st.parse_check(CTEST_MIXED)
        self.assertEqual((c.checks, c.failures, c.errors, c.suites), (28, 1, 1, 2))
        self.assertEqual(c.passed, 26)
        self.assertEqual(c.failed, 2)
        self.assertEqual(c.by_test["2"], (3, 1, 1))

    def test_check_without_ctest_prefix(self):
        c = st.parse_check("Running suite(s): x\n100%: Checks: 7, Failures: 0, Errors: 0\n")
        self.assertEqual((c.checks, c.suites), (7, 1))

    def test_ctest_results(self):
        r = st.parse_ctest(CTEST_MIXED)
        self.assertEqual([t[1] for t in r.tests], ["test_cases", "test_validate", "test_image"])
        self.assertEqual(r.tests[2][2], "Exception: SegFault")
        self.assertEqual((r.total, r.failed_count, r.passed), (3, 2, 1))
        self.assertTrue(r.ran)

    def test_ctest_found_nothing(self):
        self.assertFalse(st.parse_ctest(CTEST_NONE).ran)
        self.assertEqual(st.parse_check(CTEST_NONE).suites, 0)


class Unittest(unittest.TestCase):
    def test_py311_output(self):
        r = st.parse_unittest(UNITTEST_PY311)
        self.assertTrue(r.finished)
        self.assertEqual((r.ran, r.failures, r.errors, r.skipped, r.expected_failures), (7, 1, 1, 3, 1))
        self.assertEqual(r.passed, 2)
        self.assertEqual(r.failed, 2)
        self.assertEqual(r.skipped_tests, [("test_x.T.test_a", "no CUDA device"),
                                           ("test_x.T.test_f", "it's slow"),
                                           ("test_x.T.test_g", "no CUDA device")])
        self.assertEqual(r.failed_tests, [("test_x.T.test_c", "FAIL"), ("test_x.T.test_d", "ERROR")])

    def test_py310_output(self):
        r = st.parse_unittest(UNITTEST_PY310_OK)
        self.assertEqual((r.ran, r.passed, r.failed, r.skipped), (2, 1, 0, 1))
        self.assertEqual(r.skipped_tests, [("test_cli.Cli.test_two", "no CUDA device")])

    def test_crash(self):
        self.assertFalse(st.parse_unittest(UNITTEST_CRASHED).finished)


class Summary(unittest.TestCase):
    def test_all_good(self):
        s = st.summarize(True, st.parse_check(CTEST_GOOD), st.parse_ctest(CTEST_GOOD),
                         st.parse_unittest(UNITTEST_PY310_OK))
        self.assertEqual(s.final_line(), "selftest: 53 passed, 0 failed, 1 skipped")
        text = "\n".join(s.lines)
        self.assertIn("Check:  52 passed, 0 failed (in 2 suites)", text)
        self.assertIn("ctest:  2 passed, 0 failed", text)
        self.assertIn("python: 1 passed, 0 failed, 1 skipped", text)
        self.assertIn("skipped: no CUDA device (1): test_cli.Cli.test_two", text)

    def test_crash_outside_check_counts(self):
        s = st.summarize(True, st.parse_check(CTEST_MIXED), st.parse_ctest(CTEST_MIXED),
                         st.parse_unittest(UNITTEST_PY311))
        # Check: 26 passed, 2 failed; test_image crashed outside Check: +1; python: 2 and 2.
        self.assertEqual((s.passed, s.failed, s.skipped), (28, 5, 3))
        self.assertIn("test_image (Exception: SegFault)", "\n".join(s.lines))

    def test_a_skipped_ctest_is_skipped_with_its_reason(self):
        """Catches a skipped GPU test counted as a failure (the selftest then
        fails on every machine without a GPU) or as a pass."""
        s = st.summarize(True, st.parse_check(CTEST_SKIPPED), st.parse_ctest(CTEST_SKIPPED),
                         st.parse_unittest(UNITTEST_PY310_OK))
        self.assertEqual(s.final_line(), "selftest: 41 passed, 0 failed, 2 skipped")
        text = "\n".join(s.lines)
        self.assertIn("ctest:  1 passed, 0 failed, 1 skipped", text)
        self.assertIn("skipped: no CUDA device: bwhold_ready_then_exits_on_eof", text)

    def test_c_tests_not_run_is_a_failure(self):
        s = st.summarize(True, st.parse_check(CTEST_NONE), st.parse_ctest(CTEST_NONE),
                         st.parse_unittest(UNITTEST_PY310_OK))
        self.assertEqual(s.failed, 1)
        self.assertIn("did NOT run", "\n".join(s.lines))

    def test_build_failure(self):
        s = st.summarize(False, None, None, st.parse_unittest(UNITTEST_PY310_OK), "bwgrade did not build")
        self.assertEqual(s.final_line(), "selftest: 1 passed, 2 failed, 1 skipped")
        self.assertIn("build:  FAILED (bwgrade did not build)", s.lines)

    def test_python_did_not_finish(self):
        s = st.summarize(True, st.parse_check(CTEST_GOOD), st.parse_ctest(CTEST_GOOD),
                         st.parse_unittest(UNITTEST_CRASHED))
        self.assertEqual(s.failed, 1)

    def test_final_line_format(self):
        self.assertRegex(st.Summary(3, 0, 2).final_line(), r"^selftest: \d+ passed, \d+ failed, \d+ skipped$")


if __name__ == "__main__":
    unittest.main()

"""run.py selftest: the kit's own tests, in one go.

1. Check (the C unit test library) must be there: installed here when running
   as root with apt-get, otherwise the command to install it is printed and
   the self-test fails. The C tests are never skipped quietly.
2. Configure and build build/ (every kit target, warnings as errors).
3. CTest runs the Check suites; their own summaries give the test counts.
4. The Python tests (tests/python) run in a separate interpreter.

The last line is always `selftest: N passed, M failed, K skipped` (CI reads it).
"""
from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import EXIT_FAIL, EXIT_OK, build, console, repo_root

HELP = "run the kit's own tests: build everything, Check suites via CTest, Python tests"


# --- parsers (pure: tested on captured output) -----------------------------------

CHECK_RE = re.compile(r"^(?:(\d+): )?\s*(\d+)%: Checks: (\d+), Failures: (\d+), Errors: (\d+)", re.M)
CTEST_RESULT_RE = re.compile(
    r"^\s*\d+/\d+ Test\s+#(\d+): (\S+) \.*\s*(?:\*{3})?(Passed|Failed|Not Run|Timeout|Exception[^\d]*?|\S[^\d]*?)"
    r"\s+[\d.]+ sec", re.M)
CTEST_TOTAL_RE = re.compile(r"(\d+)% tests passed, (\d+) tests? failed out of (\d+)")


@dataclass
class CheckResult:
    checks: int = 0
    failures: int = 0
    errors: int = 0
    suites: int = 0
    by_test: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # ctest number -> counts

    @property
    def passed(self) -> int:
        return self.checks - self.failures - self.errors

    @property
    def failed(self) -> int:
        return self.failures + self.errors


def parse_check(text: str) -> CheckResult:
    """Sum Check's runner summaries ("100%: Checks: 25, Failures: 0, Errors: 0")."""
    r = CheckResult()
    matches = list(CHECK_RE.finditer(text))
    # ctest -V prefixes a test's output with "N: "; --output-on-failure then
    # repeats a failed test's output without the prefix. Count each once.
    if any(m.group(1) for m in matches):
        matches = [m for m in matches if m.group(1)]
    for m in matches:
        checks, fails, errs = int(m.group(3)), int(m.group(4)), int(m.group(5))
        r.checks += checks
        r.failures += fails
        r.errors += errs
        r.suites += 1
        if m.group(1):
            prev = r.by_test.get(m.group(1), (0, 0, 0))
            r.by_test[m.group(1)] = (prev[0] + checks, prev[1] + fails, prev[2] + errs)
    return r


@dataclass
class CtestResult:
    tests: list[tuple[str, str, str]] = field(default_factory=list)   # (number, name, outcome)
    total: int | None = None
    failed_count: int | None = None

    @property
    def ran(self) -> bool:
        return bool(self.tests) or bool(self.total)

    skip_reasons: dict[str, str] = field(default_factory=dict)   # ctest number -> what it printed

    @property
    def failed(self) -> list[tuple[str, str, str]]:
        return [t for t in self.tests if t[2] not in ("Passed", "Skipped")]

    @property
    def skipped(self) -> list[tuple[str, str, str]]:
        """Tests that exited with their SKIP_RETURN_CODE (a GPU test without a GPU)."""
        return [t for t in self.tests if t[2] == "Skipped"]

    @property
    def passed(self) -> int:
        return sum(1 for t in self.tests if t[2] == "Passed")


def parse_ctest(text: str) -> CtestResult:
    r = CtestResult()
    for m in CTEST_RESULT_RE.finditer(text):
        r.tests.append((m.group(1), m.group(2), m.group(3).strip()))
    m = CTEST_TOTAL_RE.search(text)
    if m:
        r.failed_count, r.total = int(m.group(2)), int(m.group(3))
    for num, _name, _outcome in r.skipped:
        why = re.search(rf"^{num}: skipped: (.*)$", text, re.M)
        r.skip_reasons[num] = why.group(1).strip() if why else "no reason given"
    return r


@dataclass
class UnittestResult:
    ran: int = 0
    failures: int = 0
    errors: int = 0
    skipped: int = 0
    expected_failures: int = 0
    unexpected_successes: int = 0
    finished: bool = False          # the final OK / FAILED line was seen
    skipped_tests: list[tuple[str, str]] = field(default_factory=list)   # (test, reason)
    failed_tests: list[tuple[str, str]] = field(default_factory=list)    # (test, FAIL|ERROR)

    @property
    def passed(self) -> int:
        return max(0, self.ran - self.failures - self.errors - self.skipped - self.unexpected_successes)

    @property
    def failed(self) -> int:
        return self.failures + self.errors + self.unexpected_successes


_HEADER_RE = re.compile(r"^(\w+) \(([\w.]+)\)")
# The outcome ends the header line, or a later line when the test printed something.
_OUTCOME_RE = re.compile(r"(?:^| \.\.\. )(skipped (.*)|FAIL|ERROR|ok|expected failure|unexpected success)$")


def _test_id(name: str, where: str) -> str:
    return where if where.endswith("." + name) else f"{where}.{name}"


def _reason(raw: str) -> str:
    try:
        value = ast.literal_eval(raw)
        return value if isinstance(value, str) else raw
    except (ValueError, SyntaxError):
        return raw.strip("'\"")


def parse_unittest(text: str) -> UnittestResult:
    """Counts and per-test outcomes from `python -m unittest -v` output."""
    r = UnittestResult()
    current: str | None = None
    for line in text.splitlines():
        h = _HEADER_RE.match(line)
        if h:
            current = _test_id(h.group(1), h.group(2))
        o = _OUTCOME_RE.search(line)
        if o and current:
            if o.group(2) is not None:
                r.skipped_tests.append((current, _reason(o.group(2))))
            elif o.group(1) in ("FAIL", "ERROR"):
                r.failed_tests.append((current, o.group(1)))
            current = None
        m = re.match(r"^Ran (\d+) tests? in ", line)
        if m:
            r.ran = int(m.group(1))
        m = re.match(r"^(OK|FAILED)(?: \((.*)\))?\s*$", line)
        if m:
            r.finished = True
            for part in (m.group(2) or "").split(","):
                key, _, value = part.strip().partition("=")
                if not value.isdigit():
                    continue
                n = int(value)
                if key == "failures":
                    r.failures = n
                elif key == "errors":
                    r.errors = n
                elif key == "skipped":
                    r.skipped = n
                elif key == "expected failures":
                    r.expected_failures = n
                elif key == "unexpected successes":
                    r.unexpected_successes = n
    return r


# --- the summary ---------------------------------------------------------------------------

@dataclass
class Summary:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    lines: list[str] = field(default_factory=list)    # breakdown, one per part

    def final_line(self) -> str:
        return f"selftest: {self.passed} passed, {self.failed} failed, {self.skipped} skipped"


def summarize(build_ok: bool | None, check: CheckResult | None, ctest: CtestResult | None,
              py: UnittestResult | None, build_note: str = "") -> Summary:
    """Put the parts together. None means a part did not run."""
    s = Summary()
    if build_ok is None:
        s.lines.append("build:  not run")
    elif build_ok:
        s.lines.append("build:  ok" + (f" ({build_note})" if build_note else ""))
    else:
        s.lines.append("build:  FAILED" + (f" ({build_note})" if build_note else ""))
        s.failed += 1

    if check is None or ctest is None or not ctest.ran or check.suites == 0:
        s.lines.append("Check:  did NOT run (this counts as a failure)")
        s.failed += 1
    else:
        s.passed += check.passed
        s.failed += check.failed
        s.lines.append(f"Check:  {check.passed} passed, {check.failed} failed "
                       f"(in {console.plural(check.suites, 'suite')})")
    if ctest is not None and ctest.ran:
        # A test executable that failed outside Check's own count (crash, timeout,
        # exit code) would otherwise go unnoticed.
        extra = []
        for num, name, outcome in ctest.failed:
            counts = check.by_test.get(num) if check else None
            if not counts or (counts[1] + counts[2]) == 0:
                extra.append(f"{name} ({outcome})")
        s.failed += len(extra)
        skipped = ctest.skipped
        s.skipped += len(skipped)
        total = ctest.total if ctest.total is not None else len(ctest.tests)
        nfail = ctest.failed_count if ctest.failed_count is not None else len(ctest.failed)
        line = (f"ctest:  {total - nfail - len(skipped)} passed, {nfail} failed, "
                f"{len(skipped)} skipped (one per test executable)")
        if extra:
            line += "; failed outside Check's count: " + ", ".join(extra)
        s.lines.append(line)
        for num, name, _outcome in skipped:
            s.lines.append(f"  skipped: {ctest.skip_reasons.get(num, 'no reason given')}: {name}")
    else:
        s.lines.append("ctest:  did not run")

    if py is None:
        s.lines.append("python: did not run")
    elif not py.finished:
        s.lines.append("python: did not finish (see the output above)")
        s.failed += 1 + py.failed
    else:
        s.passed += py.passed
        s.failed += py.failed
        s.skipped += py.skipped
        s.lines.append(f"python: {py.passed} passed, {py.failed} failed, {py.skipped} skipped")
        for test, kind in py.failed_tests:
            s.lines.append(f"  {kind}: {test}")
        by_reason: dict[str, list[str]] = {}
        for test, reason in py.skipped_tests:
            by_reason.setdefault(reason, []).append(test)
        for reason, tests in by_reason.items():
            s.lines.append(f"  skipped: {reason} ({len(tests)}): " + ", ".join(tests))
    return s


# --- running -------------------------------------------------------------------------------

def run_and_capture(cmd: list[str], cwd: Path | None = None) -> tuple[int, str]:
    """Stream a command's output to the terminal and keep all of it."""
    sys.stdout.flush()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd,
                                env=build.tool_env(), text=True, errors="replace", bufsize=1)
    except OSError as e:
        return 127, f"cannot start {cmd[0]}: {e}\n"
    out = []
    with proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            out.append(line)
    return proc.wait(), "".join(out)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-install", action="store_true",
                        help="never install Check; fail with the command to run instead")
    parser.add_argument("--no-python", action="store_true", help="skip the Python tests (reported)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show the whole build output")


def run(args: argparse.Namespace) -> int:
    root = repo_root()
    bdir = build.build_dir(root)
    build_ok: bool | None = None
    note = ""
    check = ctest = None
    py = None

    console.heading("Check (the C unit test library)")
    have_check = build.ensure_check(install=not args.no_install)
    console.say("Check: found" if have_check else "Check: missing")

    if have_check:
        console.heading(f"build ({bdir})")
        try:
            build.configure(root, bdir, {"BW_WERROR": "ON", "BW_STUDENT_ONLY": "OFF", "BW_REQUIRE_CHECK": "ON"}, args.verbose)
            console.say(f"building every kit target with {build.jobs()} jobs ...")
            build.build_kit(bdir, None, args.verbose, root)
            build_ok, note = True, "warnings are errors"
        except build.KitError as e:
            build_ok, note = False, e.message
            console.error(e.message)
            if e.lines:
                console.say(console.indent(e.lines))

    if build_ok:
        console.heading("C unit tests (ctest)")
        _rc, out = run_and_capture(["ctest", "--test-dir", str(bdir), "--output-on-failure", "-V"])
        check, ctest = parse_check(out), parse_ctest(out)

    if not args.no_python:
        console.heading("Python tests")
        _rc, out = run_and_capture([sys.executable, "-m", "unittest", "discover",
                                    "-s", str(root / "tests" / "python"), "-v"], cwd=root)
        py = parse_unittest(out)

    s = summarize(build_ok, check, ctest, py, note)
    if args.no_python:
        s.lines = ["python: skipped (--no-python)" if l == "python: did not run" else l for l in s.lines]
    console.heading("summary")
    for line in s.lines:
        console.say(line)
    console.say(s.final_line())
    return EXIT_OK if s.failed == 0 else EXIT_FAIL

"""run.py test: build the exercises and let bwgrade grade them.

bwgrade's own report is what the student reads: it is streamed as is. This
module only builds, starts bwgrade once per exercise, keeps its JSON and
prints a one-line summary at the end.

The exercises' bwgrade processes run side by side (each holds little host
memory: the images stream through a ring), sharing a lock file so that a
case too large to share the device (over a quarter of its memory) runs
alone. Their reports are shown
one exercise after the other, in table order: the first streams live, the
others are held until their turn.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Callable

from . import (EXIT_FAIL, EXIT_KIT, EXIT_NO_DEVICE, EXIT_OK, EXIT_USAGE, build, console, exercises,
               optional_tools, repo_root, user_values)
from .submission import Submission, SubmissionError
from . import submission as submission_mod

HELP = "build and grade the exercises on this machine's GPU"

SANITIZERS = ["memcheck", "racecheck", "initcheck"]
NO_DEVICE_MESSAGE = ("built OK; no CUDA device here, so nothing was run. "
                     "Run this on a machine with an NVIDIA GPU.")


# --- arguments shared with benchmark ---------------------------------------------

def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("exercise", nargs="*", metavar="EXERCISE",
                        help="exercises to run (default: all, in table order)")
    src = parser.add_mutually_exclusive_group()
    src.add_argument("--solutions", action="store_true",
                     help="use the reference solutions in solutions/ instead of exercises/")
    src.add_argument("--submission", metavar="DIR|ARCHIVE",
                     help="use a submission: a directory, a .tar.gz or a .zip holding "
                          "exercises/NAME/NAME.cu")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="show the whole CMake and compiler output")


def variant_of(args: argparse.Namespace) -> str:
    if getattr(args, "solutions", False):
        return "solution"
    if getattr(args, "submission", None):
        return "submission"
    return "student"


class Stop(Exception):
    """Stop the command with this exit code (the message is already printed)."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def refuse_bad_seed_env(args: argparse.Namespace) -> None:
    """bwgrade reads $BWLAB_SEED when no --seed is given: a bad one is
    refused here, once, rather than by every bwgrade run. Raises Stop."""
    if getattr(args, "seed", None) is None:
        problem = user_values.seed_env_problem()
        if problem:
            console.error(problem)
            raise Stop(EXIT_USAGE)


def prepare(args: argparse.Namespace, peers: bool = False,
            before_build: Callable[[], None] | None = None,
            check_chosen: Callable[[list[str]], None] | None = None
            ) -> tuple[list[str], str, build.Plan]:
    """Resolve the exercises, check_chosen(them) (a command's options that
    depend on them), read a submission, then before_build() (a command's
    check for a tool it needs), build. Raises Stop on errors."""
    root = repo_root()
    try:
        chosen = [e.name for e in exercises.select(args.exercise, root)]
        all_names = exercises.names(root)
    except exercises.UnknownExercise as e:
        console.error(str(e))
        raise Stop(EXIT_USAGE) from None
    except exercises.ExerciseError as e:
        console.error(str(e))
        raise Stop(EXIT_KIT) from None
    except OSError as e:
        console.error(f"cannot read the exercise table: {e}")
        raise Stop(EXIT_KIT) from None
    if check_chosen is not None:
        check_chosen(chosen)
    variant = variant_of(args)
    sub: Submission | None = None
    if variant == "solution" and not any(build.has_solution(root, ex) for ex in chosen):
        console.error("this copy of the kit has no solutions/ (the student handout leaves them out)")
        raise Stop(EXIT_USAGE)
    if variant == "submission":
        try:
            sub = submission_mod.load(args.submission, all_names)
        except SubmissionError as e:
            console.error(f"submission {args.submission}: {e}")
            raise Stop(EXIT_USAGE) from None
        if not any(ex in sub.files for ex in chosen):
            wanted = ", ".join(f"exercises/{ex}/{ex}.cu" for ex in chosen)
            console.error(f"submission {args.submission}: none of {wanted} is in it (also looked "
                          "for NAME/NAME.cu and NAME.cu, and inside one wrapping folder)")
            raise Stop(EXIT_USAGE)
        for ex in chosen:
            where = sub.found_at.get(ex)
            console.say(f"submission: {ex}: " + (f"taken from {where}" if where else sub.missing[ex]))
    if before_build is not None:
        before_build()
    try:
        plan = build.prepare(chosen, variant, sub, peers=peers, verbose=args.verbose,
                             root=root, all_names=all_names)
    except build.KitError as e:
        console.error(e.message)
        if e.lines:
            console.say(console.indent(e.lines))
        if isinstance(e, build.CheckMissing):
            console.say("    (as root, `python3 run.py selftest` installs it for you)")
        raise Stop(EXIT_KIT) from None
    return chosen, variant, plan


# --- running bwgrade -------------------------------------------------------------------

def _to_stdout(line: str) -> None:
    sys.stdout.write(line)
    sys.stdout.flush()


def stream(cmd: list[str], tail_lines: int = 40,
           out: Callable[[str], None] = _to_stdout,
           env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    """Run cmd, handing its output to out (our stdout) line by line as it
    comes; return the exit code and the last lines."""
    tail: collections.deque[str] = collections.deque(maxlen=tail_lines)
    sys.stdout.flush()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", bufsize=1, env=env)
    except OSError as e:
        msg = f"cannot start {cmd[0]}: {e.strerror or e}"
        out(msg + "\n")
        return 127, [msg]
    with proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            out(line)
            tail.append(line.rstrip("\n"))
    return proc.wait(), list(tail)


def read_json(path: Path) -> dict | None:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        return doc if isinstance(doc, dict) else None
    except (OSError, ValueError):
        return None


def reports_no_device(rc: int | None, doc: dict | None) -> bool:
    """bwgrade's word that this machine has no CUDA device: exit 3 and
    "no_device" in its report, which only its own worker (no student code)
    makes true (grader/supervisor/trusted_device.h). Nothing a student's
    worker prints counts: "no CUDA device" on its stderr used to stop a whole
    grade (corpus entry fakes_no_device)."""
    return rc == EXIT_NO_DEVICE and isinstance(doc, dict) and doc.get("no_device") is True


def run_bwgrade(bwgrade: Path, mode: str, exercise: str, worker: Path,
                extra: list[str], out: Callable[[str], None] = _to_stdout
                ) -> tuple[int, dict | None, list[str]]:
    """One bwgrade run with --json into a temporary file; returns its exit
    code, its JSON (None if it wrote none) and the tail of its output."""
    with tempfile.TemporaryDirectory(prefix="bwlab-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [str(bwgrade), mode, exercise, "--worker", str(worker), *extra, "--json", str(report)]
        # CUDA's bin folder on PATH as for the build: compute-sanitizer is there.
        rc, tail = stream(cmd, out=out, env=build.tool_env())
        return rc, read_json(report), tail


def error_doc(exercise: str, status: str, detail: str, lines: list[str] | None = None) -> dict:
    doc = {"exercise": exercise, "status": status, "detail": detail,
           "passed": 0, "failed": 0, "skipped": 0, "total": 0}
    if lines:
        doc["build_output"] = lines
    return doc


def worker_problem_doc(w: build.Worker) -> dict:
    doc = error_doc(w.exercise, w.status, w.message, w.lines)
    if w.rule:
        doc["rule"], doc["symbol"] = w.rule, w.symbol   # the evidence, for instructors
    return doc


def test_extra_args(args: argparse.Namespace, sanitizer: str | None) -> list[str]:
    extra: list[str] = []
    if args.seed is not None:
        extra += ["--seed", str(args.seed)]
    if args.case is not None:
        extra += ["--case", str(args.case)]
    elif not getattr(args, "all", False):
        extra.append("--fail-fast")
    if sanitizer:
        extra += ["--sanitize", sanitizer]
    return extra


def sanitizers_of(args: argparse.Namespace) -> list[str | None]:
    if not args.sanitize:
        return [None]
    return list(SANITIZERS) if args.sanitize == "all" else [args.sanitize]


def combine_sanitizer_runs(runs: list[tuple[str | None, dict]]) -> dict:
    """One entry per exercise: with one run, its report; with several
    (--sanitize all), the first that did not pass (else the last), with a
    short account of every run under 'sanitize_runs'."""
    if len(runs) == 1:
        tool, doc = runs[0]
        if tool:
            doc.setdefault("sanitize", tool)
        return doc
    chosen = next((d for _t, d in runs if d.get("status") != "pass"), runs[-1][1])
    chosen = dict(chosen)
    chosen["sanitize_runs"] = {t: {k: d.get(k) for k in ("status", "passed", "failed", "total")}
                               for t, d in runs}
    return chosen


# --- summary ---------------------------------------------------------------------------

STATUS_WORDS = {
    "pass": "pass", "fail": "FAIL", "not_implemented": "not implemented",
    "error": "ERROR", "build_error": "BUILD ERROR", "refused": "REFUSED", "missing": "MISSING FILE",
    "unavailable": "UNAVAILABLE", "not_run": "not run",
}


def summary_line(results: dict[str, dict]) -> str:
    parts = []
    for name, doc in results.items():
        status = str(doc.get("status", "error"))
        word = STATUS_WORDS.get(status, status.upper())
        total = doc.get("total")
        not_run = doc.get("not_run") or 0
        if status in ("pass", "fail", "not_implemented") and isinstance(total, int) and total > 0:
            if isinstance(not_run, int) and not_run > 0:
                parts.append(f"{name} {word} ({doc.get('passed', 0)}/{total - not_run} run, "
                             f"{not_run} not run)")
            else:
                parts.append(f"{name} {word} ({doc.get('passed', 0)}/{total})")
        else:
            parts.append(f"{name} {word}")
    return f"{console.plural(len(results), 'exercise')}: " + ", ".join(parts)


def write_json(path: str, doc: dict) -> None:
    p = Path(path)
    if p.parent and not p.parent.exists():
        p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, p)


class ExerciseRun(threading.Thread):
    """One exercise's bwgrade runs (one per sanitizer tool), in a thread;
    its output waits in a queue until show() prints it."""

    def __init__(self, bwgrade: Path, ex: str, worker: Path, args: argparse.Namespace,
                 lock: list[str]):
        super().__init__(daemon=True)
        self.bwgrade, self.ex, self.worker, self.args, self.lock = bwgrade, ex, worker, args, lock
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.doc: dict = {}
        self.no_device = self.could_not_run = self.refused = False

    def run(self) -> None:
        try:
            self._run()
        finally:
            self.lines.put(None)

    def _run(self) -> None:
        runs: list[tuple[str | None, dict]] = []
        for tool in sanitizers_of(self.args):
            rc, doc, tail = run_bwgrade(self.bwgrade, "test", self.ex, self.worker,
                                        test_extra_args(self.args, tool) + self.lock,
                                        out=self.lines.put)
            if rc == EXIT_NO_DEVICE:
                if reports_no_device(rc, doc):
                    self.no_device = True
                    doc = error_doc(self.ex, "not_run", str(doc.get("error") or "no CUDA device"))
                else:
                    self.could_not_run = True
                    doc = doc or error_doc(self.ex, "error", "bwgrade could not run the worker (exit 3)")
                runs.append((tool, doc))
                break
            if doc is None:
                # bwgrade's line says which value (a --case beyond the table).
                self.refused = rc == EXIT_USAGE
                why = ("bwgrade refused the command line (exit 2)" if self.refused
                       else f"bwgrade exited with code {rc} and wrote no report")
                doc = error_doc(self.ex, "error", why)
                if self.refused:    # the next tool would be refused the same way
                    runs.append((tool, doc))
                    break
            runs.append((tool, doc))
        self.doc = combine_sanitizer_runs(runs)

    def show(self) -> None:
        """Print the output as it comes, until the runs are done."""
        while (line := self.lines.get()) is not None:
            _to_stdout(line)
        self.join()


# --- the command -----------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--seed", type=user_values.SEED, metavar="S",
                        help="case seed, a non-negative integer (default: $BWLAB_SEED, else the "
                             "public seed)")
    parser.add_argument("--case", type=user_values.CASE, metavar="K",
                        help="run only case K, from 0 (the report names each failing case's index)")
    parser.add_argument("--all", action="store_true",
                        help="run every case; by default a failing exercise stops once its "
                             "diagnosis is clear (after a hang, or after the first group "
                             "with a failure) and says how many cases it did not run")
    parser.add_argument("--sanitize", action="store_const", const="all",
                        help="run the cases under compute-sanitizer: memcheck, racecheck and initcheck, "
                             "one after the other (slow)")
    parser.add_argument("--sanitizer", dest="sanitize", choices=SANITIZERS,
                        help="run under this one compute-sanitizer tool only")
    parser.add_argument("--json", metavar="FILE", help="write every exercise's report to FILE")


def refuse_missing_sanitizer(args: argparse.Namespace) -> None:
    """--sanitize needs compute-sanitizer where bwgrade looks (PATH, with
    CUDA's bin folder added as for the build). Raises Stop."""
    if args.sanitize and not optional_tools.sanitizer_on(build.tool_env().get("PATH")):
        flag = "--sanitize" if args.sanitize == "all" else f"--sanitizer {args.sanitize}"
        raise Stop(optional_tools.refuse(optional_tools.ToolMissing(
            "compute-sanitizer", f"`run.py test {flag}`")))


def run(args: argparse.Namespace) -> int:
    try:
        refuse_bad_seed_env(args)
        chosen, variant, plan = prepare(args, before_build=lambda: refuse_missing_sanitizer(args))
    except Stop as s:
        return s.code

    assert plan.bwgrade is not None or not any(w.ok for w in plan.workers)
    runnable = [ex for ex in chosen if plan.for_exercise(ex)[0].ok]
    lock = [] if len(runnable) < 2 else ["--device-lock", str(plan.build_dir / "device.lock")]
    runs = {ex: ExerciseRun(plan.bwgrade, ex, plan.for_exercise(ex)[0].path, args, lock)
            for ex in runnable}
    for r in runs.values():
        r.start()

    results: dict[str, dict] = {}
    no_device = False
    could_not_run = refused = False
    for ex in chosen:
        w = plan.for_exercise(ex)[0]
        console.heading(f"{ex} ({w.label})")
        if not w.ok:
            console.say(w.message)
            if w.lines:
                console.say(console.indent(w.lines))
            results[ex] = worker_problem_doc(w)
            continue
        r = runs[ex]
        r.show()
        results[ex] = r.doc
        no_device = no_device or r.no_device
        could_not_run = could_not_run or r.could_not_run
        refused = refused or r.refused

    console.say("")
    built_all = all(w.ok for w in plan.workers)
    if no_device:
        console.say(NO_DEVICE_MESSAGE if built_all else
                    "no CUDA device here, so nothing was run (and some exercises did not build, "
                    "see above). Run this on a machine with an NVIDIA GPU.")
    console.say(summary_line(results))

    if args.json:
        write_json(args.json, {"tool": "run.py", "mode": "test", "variant": variant,
                               "submission": args.submission, "seed": args.seed,
                               "no_device": no_device, "exercises": results})
        console.say(f"wrote {args.json}")

    if refused:
        return EXIT_USAGE
    if no_device or could_not_run:
        return EXIT_NO_DEVICE
    return EXIT_OK if all(d.get("status") == "pass" for d in results.values()) else EXIT_FAIL

"""Grading a batch: each submission is built (on up to --jobs threads) and then
tested and benchmarked on one lane per GPU; its record is scored, scrubbed of
the secret seed and handed on as soon as it is done.

A compile error, crash, hang or missing file costs only the exercise it
touches; only bwgrade's own word that there is no CUDA device (its report's
no_device, which no student code can set) stops the batch (NoDevice).
"""
from __future__ import annotations

import queue
import re
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import EXIT_NO_DEVICE, __version__, console, gradebook, policy_file, scoring, vet
from .cmd_test import reports_no_device
from .submission import SubmissionError
from .child_run import kill_all_children
from .grade_runner import Built, Outcome, build_env
from .scoring import fmt_points, pts
from .seeds import Seed, redact


class NoDevice(Exception):
    """bwgrade found no CUDA device: stop, grading further is pointless."""


# [ \t]*, not \s*: with re.M, \s also crosses line ends, and a file of blank
# lines took quadratic time (80,000 of them: 5.3 s).
INCLUDE_RE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]([^">]+)[">]', re.M)


def include_notes(files: dict[str, bytes]) -> list[str]:
    """Flag #include paths that climb out ('..') or are absolute: a student
    file has no business reaching into the rest of the machine."""
    notes = []
    for ex, data in sorted(files.items()):
        for m in INCLUDE_RE.finditer(data):
            inc = m.group(1).decode("utf-8", "replace")
            if inc.startswith("/") or ".." in inc.split("/"):
                notes.append(f"{ex}: suspicious #include \"{inc}\"")
    return notes


@dataclass
class Options:
    exercises: list[str]
    policy: policy_file.Policy
    seed: Seed
    out_dir: Path
    lanes: list[str | None] = field(default_factory=lambda: [None])   # GPU per lane
    jobs: int = 2
    build_timeout: float = policy_file.LIMIT_DEFAULTS["build_timeout"]
    test_timeout: float = policy_file.LIMIT_DEFAULTS["test_timeout"]
    bench_timeout: float = policy_file.LIMIT_DEFAULTS["bench_timeout"]
    memcheck_timeout: float = policy_file.LIMIT_DEFAULTS["memcheck_timeout"]
    keep_work: bool = False
    quiet: bool = False


def child_env(gpu: str | None) -> dict[str, str]:
    """bwgrade's environment: the tools' (CUDA's bin folder on PATH, where
    compute-sanitizer is) without the seeds; bwgrade passes its workers only
    an allow-list of it."""
    env = build_env()
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    return env


class Progress:
    def __init__(self, total: int, quiet: bool = False):
        self.total = total
        self.done = 0
        self.start = time.monotonic()
        self.lock = threading.Lock()
        self.quiet = quiet

    @staticmethod
    def clock(seconds: float) -> str:
        s = int(round(seconds))
        h, rem = divmod(s, 3600)
        m, s = divmod(rem, 60)
        return f"{h}h{m:02d}m{s:02d}s" if h else (f"{m}m{s:02d}s" if m else f"{s}s")

    def say(self, text: str) -> None:
        if not self.quiet:
            with self.lock:
                console.say(text)

    def started(self, sid: str, gpu: str | None) -> None:
        where = f" on GPU {gpu}" if gpu is not None else ""
        self.say(f"[{self.done}/{self.total}] grading {sid}{where} ...")

    def finished(self, rec: dict) -> None:
        with self.lock:
            self.done += 1
            done = self.done
        elapsed = time.monotonic() - self.start
        left = elapsed / done * (self.total - done)
        flag = "  PROBLEM" if rec.get("problems") else ""
        self.say(f"[{done}/{self.total}] {rec['id']}: {fmt_points(rec['total'])}/"
                 f"{fmt_points(rec['max_total'])}{flag}  (elapsed {self.clock(elapsed)}, "
                 f"about {self.clock(left)} left)")


def empty_result(ex: str) -> dict:
    return {"exercise": ex, "state": "not_built", "student_file": f"exercises/{ex}/{ex}.cu",
            "found_at": None, "build": None, "test_exit": None, "test": None,
            "bench_exit": None, "bench": None, "seconds": 0.0}


def build_submission(runner, sid: str, path: Path, opts: Options) -> tuple[object | None, Built, list[str]]:
    """Read and build one submission: (submission or None, Built, problems)."""
    try:
        sub = runner.load(path)
    except OSError as e:
        return None, Built(), [f"the submission could not be read: {e.strerror or e}"]
    except Exception as e:  # noqa: BLE001 - SubmissionError, or an archive Python cannot read
        # An archive member's undecodable name arrives as surrogates, which
        # no record could be written with: spelled as escapes instead.
        why = str(e).encode("utf-8", "backslashreplace").decode("utf-8")
        kind = "" if isinstance(e, SubmissionError) else f"{type(e).__name__}: "
        return None, Built(), [f"the submission could not be read: {kind}{why}"]
    try:
        built = runner.build(sub, sid, opts.build_timeout)
    except Exception as e:  # noqa: BLE001 - one submission's trouble must not stop the batch
        return sub, Built(), [f"building failed inside the grader: {type(e).__name__}: {e}"]
    return sub, built, []


def test_submission(runner, sid: str, path: Path, sub, built: Built, load_problems: list[str],
                    gpu: str | None, opts: Options) -> dict:
    """Run bwgrade on what was built and score it: the submission's record."""
    seed = opts.seed
    t0 = time.monotonic()
    env = child_env(gpu)
    logs_dir = opts.out_dir / gradebook.LOGS_DIR / sid
    problems = list(load_problems) + list(built.problems)
    notes = list(built.notes)
    if vet.skip_requested():
        notes.append(vet.UNSAFE_NOTE)
    if sub is not None:
        notes += include_notes(getattr(sub, "files", {}))
    results = []
    scratch = Path(tempfile.mkdtemp(prefix="bwlab-json-"))
    try:
        for ex in opts.exercises:
            t_ex = time.monotonic()
            res = empty_result(ex)
            res["found_at"] = built.found_at.get(ex)
            binfo = built.build.get(ex)
            if sub is None:
                res.update(state="not_built", reason="the submission could not be read")
            elif binfo is None:
                res.update(state="not_built", reason="not built")
            else:
                res["build"] = binfo
                res["state"] = binfo["state"]
                if binfo.get("reason"):
                    res["reason"] = binfo["reason"]
                if binfo["state"] == "build_timeout":
                    res["build_timeout"] = opts.build_timeout
            worker = built.workers.get(ex)
            if res["state"] == "ok" and worker is not None:
                run_exercise(runner, ex, worker, env, res, problems, scratch, opts)
            pol = opts.policy.for_exercise(ex)
            res["score"] = scoring.score_exercise(pol, res)
            res["seconds"] = round(time.monotonic() - t_ex + (binfo or {}).get("seconds", 0.0), 2)
            results.append(res)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if built.logs:
        for name, text in built.logs.items():
            p = logs_dir / f"{name}.log"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(redact(text, seed), encoding="utf-8")
    rec = {
        "kind": gradebook.RECORD_KIND, "format": gradebook.RECORD_FORMAT,
        "id": sid, "source": path.name or str(path), "kit_version": __version__,
        "seed": seed.describe(),
        "policy": {"source": opts.policy.source, "sha256": opts.policy.sha256},
        "gpu": gpu,
        "device": gradebook.record_device({"exercises": results}) or None,
        "exercises": results,
        "total": pts(sum(r["score"]["total"] for r in results)),
        "max_total": pts(sum(r["score"]["max"] for r in results)),
        "notes": notes, "problems": problems,
        "seconds": round(time.monotonic() - t0, 2),
    }
    contained = containment_of(results)
    if contained is not None:
        rec["containment"] = contained
    return redact(rec, seed)


def containment_of(results: list[dict]) -> dict | list | None:
    """What confined the workers, as bwgrade said in its JSON ("containment"):
    one dict when every run of the submission said the same, else the
    distinct ones; None when no bwgrade run said."""
    seen: list[dict] = []
    for res in results:
        for key in ("test", "memcheck", "bench"):
            doc = res.get(key)
            c = doc.get("containment") if isinstance(doc, dict) else None
            if isinstance(c, dict) and c not in seen:
                seen.append(c)
    return None if not seen else seen[0] if len(seen) == 1 else seen


def _looks_like_no_device(out: Outcome) -> bool:
    """Only bwgrade's own word stops the batch (cmd_test.reports_no_device)."""
    return reports_no_device(out.rc, out.doc)


def _tail_text(text: str, limit: int = 2000) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def run_exercise(runner, ex: str, worker: Path, env: dict[str, str], res: dict,
                 problems: list[str], scratch: Path, opts: Options) -> None:
    """One built exercise through bwgrade as the policy asks: the test, the
    memcheck run, and the benchmark once correctness passed in full. Fills
    res (the exercise's part of the record); run.py score runs it too."""
    out = runner.test(ex, worker, opts.seed, env, opts.test_timeout, scratch / f"{ex}.test.json")
    res["test_exit"] = out.rc
    res["test_seconds"] = round(out.seconds, 2)
    if out.timed_out:
        res.update(state="test_timeout", test_timeout=opts.test_timeout)
        return
    if out.rc in (0, 1) and isinstance(out.doc, dict):
        res["test"] = out.doc
    else:
        if _looks_like_no_device(out):
            raise NoDevice(_tail_text(out.output, 400) or "bwgrade found no CUDA device")
        if out.rc == 3:
            diag = "; ".join(str(d.get("text", "")) for d in (out.doc or {}).get("diagnoses") or [])
            why = f"bwgrade could not run the worker (exit 3){': ' + diag if diag else ''}"
        elif out.rc is None:
            why = "bwgrade could not be started"
        elif out.rc == 2:
            why = "bwgrade refused its command line (exit 2)"
        elif out.rc < 0:
            why = f"bwgrade was killed by signal {-out.rc}"
        else:
            why = f"bwgrade exited with code {out.rc} without a usable report"
        res.update(state="test_error", reason=why, test=out.doc, test_output=_tail_text(out.output))
        problems.append(f"{ex}: {why}")
        return
    pol = opts.policy.for_exercise(ex)
    if pol.memcheck and out.doc.get("status") in ("pass", "fail"):
        groups, skipped = memcheck_groups(pol.memcheck, out.doc)
        if skipped:
            res["memcheck_skipped"] = skipped
        if groups:
            _run_memcheck(runner, ex, worker, env, res, problems, scratch, opts, groups,
                          case_limit=MEMCHECK_CASE_LIMIT_AFTER_HANG if _saw_timeout(out.doc) else None)
        else:
            res.update(memcheck_state="not_run",
                       memcheck_reason="not run: every group it checks already failed the plain test")
    corr = scoring.score_correctness(pol, res)
    if not corr["passed"] or pol.performance_points <= 0:
        return
    b = runner.bench(ex, worker, env, opts.bench_timeout, scratch / f"{ex}.bench.json")
    res["bench_exit"] = b.rc
    res["bench_seconds"] = round(b.seconds, 2)
    if b.timed_out:
        res.update(bench_state="bench_timeout", bench_timeout=opts.bench_timeout)
    elif b.rc in (0, 1) and isinstance(b.doc, dict):
        res["bench"] = b.doc
        res["bench_state"] = "ok"
    else:
        if _looks_like_no_device(b):
            raise NoDevice(_tail_text(b.output, 400) or "bwgrade found no CUDA device")
        why = f"the benchmark could not run (bwgrade exit {b.rc})"
        res.update(bench_state="bench_error", bench_reason=why, bench_output=_tail_text(b.output))
        problems.append(f"{ex}: {why}")


# Seconds a case may take in the memcheck run once the plain test saw a case
# hang: a kernel that hangs again under the sanitizer then costs this per
# group (the group's other cases are not run), not the sanitizer's usual
# 60 s and more. A clean memcheck case of these groups takes well under 1 s.
MEMCHECK_CASE_LIMIT_AFTER_HANG = 10


def memcheck_groups(wanted: tuple[str, ...], test: dict) -> tuple[tuple[str, ...], dict[str, str]]:
    """Which of the policy's memcheck groups to run: those whose every case
    that ran passed the plain test. A group that failed there has lost its
    points already, and re-running it under the sanitizer only costs time (a
    hanging kernel hangs again, at the sanitizer's longer limit). Returns
    (groups, {skipped group: why})."""
    stats = scoring.group_stats(test)
    run, skipped = [], {}
    for g in wanted:
        s = stats.get(g)
        if s is None or s["passed"] == 0 and s["failed"] == 0:
            skipped[g] = "no case of it ran in the plain test"
        elif s["failed"]:
            skipped[g] = f"failed the plain test ({s['failed']} of {s['passed'] + s['failed']} cases)"
        else:
            run.append(g)
    return tuple(run), skipped


def _saw_timeout(test: dict) -> bool:
    return any(c.get("outcome") == "timeout" for c in test.get("cases") or [])


def _run_memcheck(runner, ex: str, worker: Path, env: dict[str, str], res: dict,
                  problems: list[str], scratch: Path, opts: Options, groups: tuple[str, ...],
                  case_limit: float | None = None) -> None:
    """These memcheck groups under compute-sanitizer memcheck: a case that
    fails there fails its group (scoring.py). Timed apart from the test.
    case_limit: each case's time limit (after a hang in the plain test).
    When the grader cannot run it (no sanitizer, a grader error), nothing is
    deducted and the submission gets a PROBLEM for the instructor."""
    res["memcheck_groups"] = list(groups)
    if case_limit:
        res["memcheck_case_limit"] = case_limit
    m = runner.memcheck(ex, worker, opts.seed, env, opts.memcheck_timeout,
                        scratch / f"{ex}.memcheck.json", groups, case_limit=case_limit)
    res["memcheck_exit"] = m.rc
    res["memcheck_seconds"] = round(m.seconds, 2)
    if m.timed_out:
        res.update(memcheck_state="timeout", memcheck_timeout=opts.memcheck_timeout)
    elif m.rc in (0, 1) and isinstance(m.doc, dict):
        res.update(memcheck_state="ok", memcheck=m.doc)
    else:
        why = f"memcheck could not run (bwgrade exit {m.rc})"
        tail = _tail_text(m.output, 400)
        res.update(memcheck_state="error", memcheck_reason=why, memcheck_output=_tail_text(m.output))
        problems.append(f"{ex}: {why}" + (f": {tail}" if tail else ""))


@dataclass
class LaneTimes:
    """Where a batch's wall time went, for the closing "time:" line."""
    wall: float = 0.0
    busy: list[float] = field(default_factory=list)   # per lane: running bwgrade and scoring
    first_test: float | None = None                   # seconds until a lane first had work


def grade_batch(runner, todo: dict[str, Path], opts: Options,
                on_record=None, ready=None, times: LaneTimes | None = None) -> list[dict]:
    """Grade the submissions in todo (id -> path) in sorted id order: builds on
    up to opts.jobs threads, runs on one lane per GPU. on_record(rec) is called
    as each finishes; ready(), when given, before a lane runs anything (it
    waits for bwgrade to be built, and raises if it was not). Raises NoDevice
    (after stopping the others). times, when given, is filled in."""
    ids = sorted(todo)
    t_start = time.monotonic()
    progress = Progress(len(ids), opts.quiet)
    records: dict[str, dict] = {}
    lanes = opts.lanes or [None]
    busy = [0.0] * len(lanes)
    first_test: list[float] = []
    ahead = threading.Semaphore(len(lanes) + max(1, opts.jobs))
    work: queue.Queue = queue.Queue()
    stop = threading.Event()
    failure: list[BaseException] = []

    def build_job(sid: str):
        if stop.is_set():
            return None, Built(), ["not graded: the run stopped"]
        return build_submission(runner, sid, todo[sid], opts)

    def producer(pool: ThreadPoolExecutor) -> None:
        for sid in ids:
            ahead.acquire()
            if stop.is_set():
                break
            work.put((sid, pool.submit(build_job, sid)))
        for _ in lanes:
            work.put(None)

    def lane(slot: int, gpu: str | None) -> None:
        hold = []   # the lane's held CUDA context, once bwgrade is built
        try:
            lane_loop(slot, gpu, hold)
        finally:
            for h in hold:
                if h is not None:
                    h.close()

    def lane_loop(slot: int, gpu: str | None, hold: list) -> None:
        while True:
            item = work.get()
            if item is None:
                return
            sid, fut = item
            built = Built()
            try:
                if stop.is_set():
                    continue
                if ready is not None:
                    ready()
                # Taken while the lane's first submission still builds, so
                # that its context is not created alongside the first worker's.
                if not hold and hasattr(runner, "hold_context"):
                    hold.append(runner.hold_context(child_env(gpu)))
                sub, built, load_problems = fut.result()
                t0 = time.monotonic()
                if not first_test:
                    first_test.append(t0 - t_start)
                progress.started(sid, gpu)
                rec = test_submission(runner, sid, todo[sid], sub, built, load_problems, gpu, opts)
                busy[slot] += time.monotonic() - t0
                if stop.is_set():
                    continue   # its runs may have been killed by the stop: no record
                records[sid] = rec
                if on_record:
                    on_record(rec)
                progress.finished(rec)
            except BaseException as e:  # noqa: BLE001 - stop everything, report once
                failure.append(e)
                stop.set()
                kill_all_children()
            finally:
                if not opts.keep_work:
                    try:
                        runner.cleanup(built)
                    except Exception:  # noqa: BLE001
                        pass
                ahead.release()

    pool = ThreadPoolExecutor(max_workers=max(1, opts.jobs), thread_name_prefix="bwlab-build")
    prod = threading.Thread(target=producer, args=(pool,), daemon=True)
    threads = [threading.Thread(target=lane, args=(i, g), daemon=True) for i, g in enumerate(lanes)]
    try:
        prod.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        prod.join()
    except KeyboardInterrupt:
        stop.set()
        kill_all_children()
        for _ in range(len(lanes) + max(1, opts.jobs)):
            ahead.release()   # let the producer see the stop
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True, cancel_futures=True)
    if times is not None:
        times.wall = time.monotonic() - t_start
        times.busy = busy
        times.first_test = first_test[0] if first_test else None
    if failure:
        raise failure[0]
    return [records[s] for s in ids if s in records]

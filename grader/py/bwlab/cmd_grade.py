"""run.py grade: grade a batch of submissions (for instructors).

    python3 run.py grade SUBMISSION... [--out DIR] [--jobs N] [--gpus LIST]
                         [--shard K/N] [--policy FILE] [--seed-file FILE | --public]

Each submission (a directory, .tar.gz or .zip) gives only its student files,
exercises/NAME/NAME.cu (submission.py takes them, safely). They are compiled
against a pristine copy of the kit's sources that holds no solutions and no
instructor files, in a build tree of their own, with a time limit on every
build and run (the whole process group is killed when one runs over). bwgrade,
built once per run from the same pristine copy, decides every case with the
secret seed and the hidden cases; scoring.py turns its reports into points;
gradebook.py writes the results.

A compile error, crash, hang or missing file costs only the exercise it
touches. Exit codes:
    0  every submission was graded (whatever the scores)
    1  every submission was graded, but some had a problem that needs a look
       (an unreadable archive, a grader error): see PROBLEM in the notes
    2  usage: bad arguments, unusable policy, no secret seed without --public,
       a submission path that does not exist, two submissions with one id
    3  no CUDA device: nothing was graded
    4  the kit's grader itself could not be built
    5  the policy runs memcheck and compute-sanitizer is not there

This module is the command line; the work is done by seeds.py (the secret
seed), submission_ids.py (ids and shards), grade_runner.py (building and
running one submission: KitRunner, which the tests replace with a fake),
grade_batch.py (the batch over GPU lanes), scoring.py and gradebook.py.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path

from . import (EXIT_FAIL, EXIT_KIT, EXIT_NO_DEVICE, EXIT_OK, EXIT_USAGE, __version__,
               console, exercises, repo_root)
from . import gradebook, optional_tools, policy_file, sandbox, user_values, vet
from .build import KitError
from .child_run import kill_all_children
from .grade_batch import LaneTimes, NoDevice, Options, child_env, grade_batch
from .grade_runner import KitRunner
from .scoring import fmt_points
from .seeds import DEFAULT_SEED_FILE, SECRET_ENV, SeedError, find_seed
from .submission_ids import collect, ids_digest, parse_shard, shard_select

HELP = "grade submissions (instructors): hidden cases, scoring policy, gradebook"



def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("exit codes: 0 every submission graded; 1 graded, but some submission has a PROBLEM "
                     "to look at; 2 usage (including: no secret seed without --public); 3 no CUDA device; "
                     "4 the grader did not build; 5 the policy runs memcheck and compute-sanitizer is missing "
                     "(set memcheck = none to grade without it). Details: docs/INSTRUCTORS.md")
    parser.add_argument("submissions", nargs="*", metavar="SUBMISSION",
                        help="a directory, .tar.gz or .zip per student, holding exercises/NAME/NAME.cu "
                             "(id = the name without its extension)")
    parser.add_argument("--exercises", metavar="LIST",
                        help="grade only these exercises, comma-separated (the ones a handout made "
                             "with run.py handout --exercises holds); default: every exercise")
    parser.add_argument("--out", default="grades", metavar="DIR",
                        help="where the results go (default: grades/)")
    parser.add_argument("--jobs", type=user_values.POSITIVE, default=None, metavar="N",
                        help="submissions built at the same time (default: 2, or one per GPU if more)")
    parser.add_argument("--gpus", metavar="LIST",
                        help="grade in parallel, one submission per GPU: e.g. 0,1,2,3 "
                             "(sets CUDA_VISIBLE_DEVICES for each)")
    parser.add_argument("--shard", metavar="K/N",
                        help="grade only slice K of N (1-based): the submissions whose index in "
                             "the sorted id list, counted from 0, leaves K-1 when divided by N")
    parser.add_argument("--policy", metavar="FILE",
                        help=f"scoring policy (default: {', else '.join(policy_file.POLICY_FILES)} (the copy "
                             "run.py handout packs), else the built-in defaults; as run.py score)")
    seed = parser.add_mutually_exclusive_group()
    seed.add_argument("--seed-file", metavar="FILE",
                      help=f"the secret seed (default: ${SECRET_ENV}, else {DEFAULT_SEED_FILE})")
    seed.add_argument("--public", action="store_true",
                      help="grade on the public seed and the public cases only (what students see)")
    parser.add_argument("--build-timeout", type=user_values.SECONDS, metavar="S",
                        help="seconds for each build step (default: the policy's [limits])")
    parser.add_argument("--test-timeout", type=user_values.SECONDS, metavar="S",
                        help="seconds for one exercise's bwgrade test run")
    parser.add_argument("--bench-timeout", type=user_values.SECONDS, metavar="S",
                        help="seconds for one exercise's bwgrade bench run")
    parser.add_argument("--memcheck-timeout", type=user_values.SECONDS, metavar="S",
                        help="seconds for one exercise's memcheck run (the policy's memcheck groups)")
    parser.add_argument("--bwgrade", metavar="PATH",
                        help="use this bwgrade instead of building one from the kit")
    parser.add_argument("--work", metavar="DIR",
                        help="where build trees go (default: a temporary folder)")
    parser.add_argument("--keep-work", action="store_true",
                        help="keep the build trees (default: removed after each submission)")
    parser.add_argument("--show-policy", action="store_true",
                        help="print the scoring policy in effect and stop")
    parser.add_argument("-q", "--quiet", action="store_true", help="no per-submission progress lines")
    parser.add_argument("--sandbox", choices=sandbox.MODES, default="auto",
                        help="run the workers inside bubblewrap: no network, read-only files, the "
                             "instructor's files, seed file and grades hidden (auto: when bwrap "
                             "works here, else none with a warning; default auto)")


def show_policy(policy: policy_file.Policy, names: list[str], root: Path) -> None:
    console.say(f"policy: {policy_file.shown_source(policy, root)} (sha256 {policy.sha256[:12]})")
    for ex in names:
        p = policy.for_exercise(ex)
        groups = ", ".join(f"{g}:{w:g}" for g, w in p.groups)
        thr = ", ".join(f">={t:g}%: {f:g}" for t, f in p.thresholds)
        console.say(f"  {ex}: correctness {fmt_points(p.correctness_points)} ({p.correctness_mode}"
                    + (f"; weights {groups}" if p.correctness_mode == "per_group" else "") + "; "
                    + (f"memcheck on {', '.join(p.memcheck)}" if p.memcheck else "no memcheck") + "), "
                    f"performance {fmt_points(p.performance_points)} ({p.bench_row} row, "
                    f"{p.performance_scale} scale; {thr})")
    console.say("  limits: " + ", ".join(f"{k} {v:g} s" for k, v in policy.limits.items()))


def manifest_for(opts: Options, ids: list[str], all_ids: list[str],
                 shard: tuple[int, int] | None) -> dict:
    return {"kind": "bwlab-grade-run", "format": 1, "kit_version": __version__,
            "exercises": opts.exercises, "ids": sorted(ids),
            "shard": {"k": shard[0], "n": shard[1]} if shard else None,
            "all_ids_count": len(all_ids), "all_ids_sha256": ids_digest(all_ids),
            "policy": {"source": opts.policy.source, "sha256": opts.policy.sha256,
                       # for run.py report's threshold lines
                       "exercises": opts.policy.describe(opts.exercises)["exercises"]},
            "seed": opts.seed.describe()}


def seed_path(root: Path, seed_file: str | None, seed) -> Path | None:
    """The file the secret seed was read from, if it came from one."""
    if seed.kind != "secret" or seed.origin.startswith("$"):
        return None
    return Path(seed_file) if seed_file else root / DEFAULT_SEED_FILE


def keep_from_workers(out_dir: Path, seed_file: Path | None) -> list[str]:
    """As root the workers run as nobody (bwgrade --contain): the outputs and
    the seed file must be neither readable nor writable by other users.
    Takes the others' permissions off them (the grading user's own stay);
    returns what it changed, for the console."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return []
    notes = []
    for path in (out_dir, seed_file):
        try:
            mode = path.stat().st_mode if path is not None else 0
            if path is not None and mode & 0o077:
                path.chmod(mode & 0o700)
                notes.append(f"{path}: other users could open it; made it {mode & 0o700:o} "
                             "(the workers run as nobody and must not read it)")
        except OSError as e:
            notes.append(f"{path}: could not restrict its permissions: {e.strerror or e}")
    return notes


def finish(out_dir: Path, manifest: dict, exercises_: list[str]) -> list[dict]:
    """Write gradebook.csv, junit.xml, results.json from the records on disk
    (the same path merge takes, so both write the same files)."""
    records = [gradebook.load_record(gradebook.record_path(out_dir, sid))
               for sid in manifest["ids"] if gradebook.record_path(out_dir, sid).is_file()]
    gradebook.write_outputs(out_dir, records, exercises_)
    # What bwgrade said confined the workers, each distinct answer once (the
    # records hold it per submission).
    seen: list = []
    for r in records:
        c = r.get("containment")
        for one in c if isinstance(c, list) else [c] if c is not None else []:
            if one not in seen:
                seen.append(one)
    manifest["containment"] = seen
    gradebook.write_manifest(out_dir, manifest)
    return records


class GraderBuild:
    """runner.setup (building bwgrade) on a thread of its own, so that it
    overlaps the first submissions' builds instead of delaying them; the
    lanes call wait() before their first run, which re-raises its error."""

    def __init__(self, runner, timeout: float):
        self.seconds = 0.0
        self._error: BaseException | None = None
        self._done = threading.Event()
        setup = getattr(runner, "setup", None)
        if setup is None:
            self._done.set()
            return
        threading.Thread(target=self._run, args=(setup, timeout), daemon=True,
                         name="bwlab-grader-build").start()

    def _run(self, setup, timeout: float) -> None:
        t0 = time.monotonic()
        try:
            setup(timeout)
        except BaseException as e:  # noqa: BLE001 - handed to whoever waits
            self._error = e
        finally:
            self.seconds = time.monotonic() - t0
            self._done.set()

    def wait(self) -> None:
        self._done.wait()
        if self._error is not None:
            raise self._error


def wall_line(t: LaneTimes, grader: GraderBuild, lanes: int) -> str:
    """How the batch's wall time split: the grader's build, the wait for the
    first submission's build, and how busy the lanes were."""
    busy = sum(t.busy)
    share = busy / (t.wall * lanes) if t.wall > 0 else 0.0
    first = f", first run after {t.first_test:.1f} s" if t.first_test is not None else ""
    return (f"time: batch {t.wall:.1f} s wall (bwgrade built in {grader.seconds:.1f} s alongside "
            f"the first builds{first}); {console.plural(lanes, 'lane')} busy {busy:.1f} s, "
            f"{100 * share:.0f}% of the wall")


def sanitizer_found(runner) -> bool:
    """compute-sanitizer where the workers' bwgrade looks (its PATH). A
    stand-in runner (the tests') answers with its sanitizer_missing(env), and
    one without it runs no real bwgrade, so needs none."""
    env = child_env(None)
    if runner is None:
        return optional_tools.sanitizer_on(env.get("PATH"))
    own = getattr(runner, "sanitizer_missing", None)
    return own is None or own(env) is None


def run(args: argparse.Namespace, runner=None) -> int:
    root = repo_root()
    try:
        table = exercises.load(root)
        names = ([e.name for e in table] if getattr(args, "exercises", None) is None
                 else exercises.from_list(args.exercises, table))
    except exercises.ExerciseError as e:    # the kit's table or a declaration
        console.error(str(e))
        return EXIT_KIT
    except ValueError as e:   # a bad --exercises list (UnknownExercise is one)
        console.error(str(e))
        return EXIT_USAGE
    except OSError as e:
        console.error(f"cannot read the exercise table: {e}")
        return EXIT_KIT
    try:
        policy = policy_file.find_policy(root, args.policy)
        policy.check_exercises(names)
    except policy_file.PolicyError as e:
        console.error(str(e))
        return EXIT_USAGE
    if args.show_policy:
        show_policy(policy, names, root)
        return EXIT_OK
    if not args.submissions:
        console.error("no submissions given (run.py grade SUBMISSION...)")
        return EXIT_USAGE
    try:
        seed = find_seed(root, args.seed_file, args.public)
    except SeedError as e:
        console.error(str(e))
        return EXIT_USAGE
    try:
        shard = parse_shard(args.shard)
        todo_all = collect(args.submissions)
    except ValueError as e:
        console.error(str(e))
        return EXIT_USAGE
    lanes: list[str | None] = [None]
    if args.gpus is not None:
        # An empty item (--gpus "" or 0,,1) is refused, not dropped: it is a typo.
        lanes = [g.strip() for g in args.gpus.split(",")]
        if any(not re.fullmatch(r"[0-9]+|GPU-[0-9a-fA-F-]+|MIG-[0-9a-zA-Z/-]+", g)
               for g in lanes) or len(set(lanes)) != len(lanes):
            console.error(f"--gpus: '{args.gpus}' is not a list of distinct GPU indices or UUIDs "
                          "(like 0,1,2,3)")
            return EXIT_USAGE
    jobs = args.jobs if args.jobs is not None else max(2, len(lanes))
    limits = dict(policy.limits)
    for key in ("build_timeout", "test_timeout", "bench_timeout", "memcheck_timeout"):
        v = getattr(args, key)
        if v is not None:
            limits[key] = v
    memcheck_in = [ex for ex in names if policy.for_exercise(ex).memcheck]
    if memcheck_in and not sanitizer_found(runner):
        # Before anything is written or built: the batch could not grade anyone.
        return optional_tools.refuse(optional_tools.ToolMissing(
            "compute-sanitizer", f"the policy's memcheck ({', '.join(memcheck_in)})",
            "or set memcheck = none in the policy to grade without it"))

    chosen = shard_select(list(todo_all), shard)
    todo = {sid: todo_all[sid] for sid in chosen}
    out_dir = Path(args.out)
    opts = Options(exercises=names, policy=policy, seed=seed, out_dir=out_dir, lanes=lanes, jobs=jobs,
                   build_timeout=limits["build_timeout"], test_timeout=limits["test_timeout"],
                   bench_timeout=limits["bench_timeout"], memcheck_timeout=limits["memcheck_timeout"],
                   keep_work=args.keep_work, quiet=args.quiet)
    hide = [root / "grader" / "instructor", root / DEFAULT_SEED_FILE, out_dir.resolve()]
    if args.seed_file:
        hide.append(Path(args.seed_file).resolve())
    try:
        box = sandbox.choose(args.sandbox, hide)
    except sandbox.SandboxError as e:
        console.error(str(e))
        return EXIT_USAGE
    manifest = manifest_for(opts, chosen, list(todo_all), shard)
    manifest["sandbox"] = box.describe()
    # vet.py's checks before a submission runs; off only for the kit's tests.
    manifest["vetting"] = f"SKIPPED ({vet.SKIP_ENV}=1)" if vet.skip_requested() else "on"
    try:
        out_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as e:
        console.error(f"cannot create {out_dir}: {e.strerror or e}")
        return EXIT_USAGE
    for note in keep_from_workers(out_dir, seed_path(root, args.seed_file, seed)):
        console.say(note)

    if vet.skip_requested():
        console.warn(f"UNSAFE: {vet.SKIP_WARNING}; the manifest and every gradebook row say so")
    if box.warning:
        console.warn(box.warning)
    elif box.kind == "bwrap":
        console.say(f"workers run inside bubblewrap ({box.bwrap}): no network, read-only files, "
                    f"{len(box.hide)} paths hidden")
    if seed.kind == "public":
        console.warn("grading on the PUBLIC seed with the public cases only (--public)")
    else:
        console.say(f"secret seed from {seed.origin} (fingerprint {seed.fingerprint}); hidden cases on")
    what = f"{len(todo)} of {len(todo_all)} submissions (shard {shard[0]}/{shard[1]})" if shard \
        else console.plural(len(todo), "submission")
    console.say(f"grading {what} into {out_dir}/, {console.plural(len(lanes), 'lane')}"
                + (f" (GPUs {','.join(lanes)})" if lanes != [None] else "")
                + f", {jobs} build jobs")

    work_parent = Path(args.work) if args.work else None
    if work_parent:
        work_parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="bwlab-grade-", dir=work_parent))
    # Searchable, not listable: as root the workers run as nobody and must
    # reach their executables in here (each submission's folder is 0711 too).
    workdir.chmod(0o711)
    try:
        if runner is None:
            runner = KitRunner(root, workdir, names, build_jobs=max(1, (os.cpu_count() or 2) // jobs),
                               bwgrade=Path(args.bwgrade) if args.bwgrade else None)
        runner.sandbox_args = tuple(box.bwgrade_args())
        grader = GraderBuild(runner, limits["build_timeout"] * 2)
        gradebook.write_manifest(out_dir, manifest)
        times = LaneTimes()
        try:
            grade_batch(runner, todo, opts,
                        on_record=lambda r: gradebook.write_record(out_dir, {**r, "sandbox": box.kind}),
                        ready=grader.wait, times=times)
            grader.wait()   # a failed grader build, when no lane got as far as waiting for it
        except KitError as e:
            console.error(e.message)
            if e.lines:
                console.say(console.indent(e.lines))
            return EXIT_KIT
        except NoDevice as e:
            console.error(f"no CUDA device: nothing more can be graded ({console.printable(e)})")
            finish(out_dir, manifest, names)
            return EXIT_NO_DEVICE
        except KeyboardInterrupt:
            kill_all_children()
            console.error("interrupted; the submissions graded so far are in " + str(out_dir))
            finish(out_dir, manifest, names)
            return 130
    finally:
        if not args.keep_work:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            console.say(f"build trees kept in {workdir}")

    records = finish(out_dir, manifest, names)
    console.say("")
    for line in gradebook.summary_lines(records, names):
        console.say(line)
    console.say("")
    troubled = [r for r in records if r.get("problems")]
    for r in troubled:
        for p in r["problems"]:
            console.say(f"PROBLEM {r['id']}: {console.printable(p)}")
    for line in gradebook.time_lines(records):
        console.say(line)
    if records:
        console.say(wall_line(times, grader, len(lanes)))
    console.say(f"wrote {out_dir}/{gradebook.GRADEBOOK}, {gradebook.JUNIT}, "
                f"<id>.json and {gradebook.GRADESCOPE_DIR}/<id>/results.json")
    return EXIT_FAIL if troubled else EXIT_OK

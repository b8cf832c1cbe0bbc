"""run.py score: the points your exercises would get, estimated on this GPU.

    python3 run.py score [EXERCISE...] [--solutions | --submission PATH] [--policy FILE]

Each exercise goes through exactly what `run.py grade` does to it (the same
code: grade_batch.run_exercise), on the public cases: the test, the policy's
memcheck groups, and `bench --quick` once every case passed; scoring.py turns
that into points under the course's policy. It is an estimate: grading uses
a secret seed with more cases, and the grading GPU may be another.

The policy: --policy FILE, else grader/instructor/policy.ini (the kit with the
instructor's files), else handout/policy.ini (what `run.py handout` packs for
the students), else the built-in defaults.

Exit codes: 0 scored (whatever the points), 1 something could not be run,
2 usage, 3 no CUDA device, 4 the kit did not build, 5 the policy runs memcheck
and compute-sanitizer is missing.
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from . import (EXIT_FAIL, EXIT_KIT, EXIT_NO_DEVICE, EXIT_OK, EXIT_USAGE, console, exercises,
               gradebook, optional_tools, policy_file, repo_root, scoring)
from .cmd_test import Stop, add_source_arguments, prepare, write_json
from .grade_batch import NoDevice, Options, child_env, empty_result, run_exercise
from .grade_runner import KitRunner
from .scoring import fmt_points
from .seeds import Seed

HELP = "estimate your points under the course's scoring policy (public cases, this GPU)"

POLICY_FALLBACKS = policy_file.POLICY_FILES   # the same list as run.py grade's
# Build states of build.Worker -> the states scoring.py names.
BUILD_STATES = {"build_error": "build_failed", "refused": "refused", "missing": "missing"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--policy", metavar="FILE",
                        help=f"scoring policy (default: {', else '.join(policy_file.POLICY_FILES)}, "
                             "else the built-in defaults)")
    parser.add_argument("--json", metavar="FILE",
                        help="also write every exercise's result and score to FILE")
    parser.epilog = ("exit codes: 0 scored; 1 something could not be run; 2 usage; 3 no CUDA "
                     "device; 4 the kit did not build; 5 the policy runs memcheck and "
                     "compute-sanitizer is missing (the message says how to get it)")


def result_for(worker, ex: str) -> dict:
    """The exercise's result before any run: what the build said."""
    res = empty_result(ex)
    if worker is None:
        res.update(state="not_built", reason="not built")
    elif worker.ok:
        res["state"] = "ok"
    else:
        res["state"] = BUILD_STATES.get(worker.status, "not_built")
        res["reason"] = worker.message
    return res


def score_lines(results: dict[str, dict], device: str | None) -> list[str]:
    """The table and the estimate line."""
    rows, total, most = [], 0.0, 0.0
    for ex, res in results.items():
        sc = res["score"]
        corr, perf = sc["correctness"], sc["performance"]
        pct = f"{perf['pct_copy']:g}% of copy" if perf.get("pct_copy") is not None else "-"
        rows.append([ex, f"{fmt_points(corr['score'])}/{fmt_points(corr['max'])}",
                     f"{fmt_points(perf['score'])}/{fmt_points(perf['max'])}", pct,
                     f"{fmt_points(sc['total'])}/{fmt_points(sc['max'])}"])
        total += sc["total"]
        most += sc["max"]
    lines = console.table(["exercise", "correctness", "performance", "bandwidth", "total"], rows).splitlines()
    for ex, res in results.items():
        sc = res["score"]
        for part in ("correctness", "performance"):
            p = sc[part]
            if p["score"] < p["max"] and p.get("reason"):
                lines.append(f"  {ex} {part}: {p['reason']}")
    where = f" on {device}" if device else ""
    lines.append(f"estimated total: {fmt_points(total)}/{fmt_points(most)} points (an estimate: "
                 f"the public cases{where}; grading adds hidden cases and may use another GPU)")
    return lines


def run(args: argparse.Namespace) -> int:
    root = repo_root()
    try:
        policy = policy_file.find_policy(root, args.policy, POLICY_FALLBACKS)
        policy.check_exercises(exercises.names(root))
    except policy_file.PolicyError as e:
        console.error(str(e))
        return EXIT_USAGE
    except exercises.ExerciseError as e:
        console.error(str(e))
        return EXIT_KIT
    try:
        names = [e.name for e in exercises.select(args.exercise, root)]
    except (exercises.UnknownExercise, exercises.ExerciseError, OSError):
        names = []      # prepare() says what is wrong with them
    memcheck_in = [ex for ex in names if policy.for_exercise(ex).memcheck]
    if memcheck_in and not optional_tools.sanitizer_on(child_env(None).get("PATH")):
        # grade runs the policy's memcheck too: an estimate without it would mislead.
        return optional_tools.refuse(optional_tools.ToolMissing(
            "compute-sanitizer", f"the policy's memcheck ({', '.join(memcheck_in)})",
            "or score with a policy that says memcheck = none: --policy FILE"))
    try:
        chosen, _variant, plan = prepare(args)
    except Stop as s:
        return s.code
    console.say(f"policy: {policy_file.shown_source(policy, root)}")
    opts = Options(exercises=chosen, policy=policy, seed=Seed(None, "public", "public cases", hidden=False),
                   out_dir=Path("."))
    scratch = Path(tempfile.mkdtemp(prefix="bwlab-score-"))
    runner = KitRunner(root, scratch, chosen, bwgrade=plan.bwgrade)
    env = child_env(None)
    results: dict[str, dict] = {}
    problems: list[str] = []
    try:
        for ex in chosen:
            worker = next(iter(plan.for_exercise(ex)), None)
            res = result_for(worker, ex)
            if res["state"] == "ok":
                console.say(f"{ex}: test, memcheck and benchmark as grading runs them ...")
                run_exercise(runner, ex, worker.path, env, res, problems, scratch, opts)
            res["score"] = scoring.score_exercise(policy.for_exercise(ex), res)
            results[ex] = res
    except NoDevice as e:
        console.error(f"no CUDA device: nothing can be scored here ({e})")
        return EXIT_NO_DEVICE
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    device = gradebook.record_device({"exercises": list(results.values())}) or None
    console.say("")
    for line in score_lines(results, device):
        console.say(line)
    if args.json:
        write_json(args.json, {
            "tool": "run.py", "mode": "score", "estimate": True, "device": device,
            "policy": {"source": policy.source, "sha256": policy.sha256},
            "exercises": results,
            "total": scoring.pts(sum(r["score"]["total"] for r in results.values())),
            "max": scoring.pts(sum(r["score"]["max"] for r in results.values()))})
        console.say(f"wrote {args.json}")
    for p in problems:
        console.say(f"PROBLEM: {p}")
    return EXIT_FAIL if problems else EXIT_OK

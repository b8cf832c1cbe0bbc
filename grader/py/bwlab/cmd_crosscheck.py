"""run.py crosscheck: the benchmark's figures against Nsight Compute.

For each implementation (yours, the solutions or a submission; with --peers
the library peers too) and each row (size, offset), it measures the row with
`bwgrade bench` as `run.py benchmark` does, then profiles 21 (--calls) timed calls of
the same row in the same conditions (a fresh worker, the same validated call
and warmup, L2 flushed by the worker before each call, clocks left alone) with

    ncu --target-processes all --profile-from-start off --cache-control none
        --clock-control none ... bwgrade bench ... --profile-calls 21

and prints the benchmark's time per call, the median of ncu's summed kernel
durations per call, their ratio, and each kernel's launch configuration.
Exit code 1 when a row breaks the rule in bwlab/crosscheck.py.
"""
from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

from . import EXIT_FAIL, EXIT_NO_DEVICE, EXIT_OK, console, crosscheck, ncu, optional_tools, user_values
from .cmd_benchmark import add_size_arguments, bench_extra_args, refuse_sizes_without_kind
from .cmd_test import Stop, add_source_arguments, prepare, read_json, refuse_bad_seed_env, write_json

HELP = "check every benchmark figure against Nsight Compute's duration of the same call"

# 2^26 + 5 and 2^28 - 1, the headline's sizes; a matrix exercise: the largest
# square below 2^31 elements and an odd tall shape (each exercise takes its kind).
DEFAULT_SIZES = "67108869,268435455,46340x46340,1048579x1001"
DEFAULT_OFFSETS = "0,1"
RUN_TIMEOUT = 900


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--peers", action="store_true",
                        help="also check the library peers (cub, cuBLAS) of each exercise")
    add_size_arguments(parser, f"{DEFAULT_SIZES}: 2^26+5 and 2^28-1, or two shapes", DEFAULT_OFFSETS)
    parser.add_argument("--calls", type=user_values.PROFILE_CALLS, default=crosscheck.CALLS,
                        metavar="K",
                        help=f"calls profiled per row, 1 to {user_values.MAX_PROFILE_CALLS}; ncu's "
                             f"figure is their median (default {crosscheck.CALLS})")
    parser.add_argument("--json", metavar="FILE", help="write every row to FILE")


def _run(cmd: list[str], verbose: bool) -> tuple[int, str]:
    if verbose:
        console.say("$ " + " ".join(cmd))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                           timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return 124, f"did not finish within {RUN_TIMEOUT} s"
    except OSError as e:
        return 127, f"cannot start {cmd[0]}: {e.strerror or e}"
    return p.returncode, p.stdout + p.stderr


def check_worker(bwgrade: Path, ncu_path: str, ex: str, worker, args: argparse.Namespace,
                 tmp: Path) -> tuple[list[crosscheck.Row], list[str], str | None]:
    """(rows, notes, error): the measurement, the profile, and their pairing."""
    extra = bench_extra_args(args, worker.label, peer=True, ex=ex)
    stem = tmp / f"{ex}_{worker.label}"
    base = [str(bwgrade), "bench", ex, "--worker", str(worker.path), *extra]
    rc, out = _run(base + ["--json", f"{stem}.bench.json"], args.verbose)
    bench_doc = read_json(Path(f"{stem}.bench.json"))
    if bench_doc is None:
        return [], [], f"bwgrade bench wrote no report (exit {rc}): {out.strip()[-500:]}"
    if bench_doc.get("status") == "wrong":
        return [], [], "wrong answers: no speed figures (run `python3 run.py test`)"
    log = f"{stem}.ncu.csv"
    target = crosscheck.profiled_target(base, args.calls, f"{stem}.profile.json")
    rc, out = _run(crosscheck.ncu_command(ncu_path, target, log), args.verbose)
    csv_text = Path(log).read_text(errors="replace") if Path(log).exists() else ""
    profile_doc = read_json(Path(f"{stem}.profile.json"))
    if profile_doc is None:
        reason = ncu.diagnose(csv_text + "\n" + out)
        return [], [], reason or f"the profiled run wrote no report (exit {rc}): {out.strip()[-500:]}"
    rows, notes = crosscheck.rows_of(bench_doc, profile_doc, csv_text, args.calls)
    if not any(r.kernels for r in rows):
        reason = ncu.diagnose(csv_text + "\n" + out)
        if reason:
            notes.append(reason)
    return rows, notes, None


def table(rows: list[crosscheck.Row]) -> str:
    lines = []
    body = []
    for r in rows:
        ratio = r.ratio
        body.append([r.shape or console.number(r.n), r.offset,
                     "-" if r.bench_ms is None else f"{r.bench_ms:.4f}",
                     "-" if r.ncu_ms is None else f"{r.ncu_ms:.4f}",
                     "-" if ratio is None else f"{ratio:.3f}",
                     "-" if r.gbs is None else console.number(r.gbs),
                     r.verdict])
    lines.append(console.table(["n", "offset", "bench ms", "ncu ms", "ratio", "GB/s", "verdict"],
                               body))
    for r in rows:
        for k in r.kernels:
            dur = "-" if k.duration_ns is None else f"{k.duration_ns / 1e6:.4f} ms"
            lines.append(f"  {r.shape or f'n = {r.n:,}'}, offset {r.offset}: {k.name}: {dur}; "
                         f"{k.launch()}")
    return "\n".join(lines)


def row_doc(r: crosscheck.Row) -> dict:
    return {"n": r.n, "shape": r.shape, "offset": r.offset, "bench_ms": r.bench_ms, "bench_status": r.bench_status,
            "gbs": r.gbs, "timer_ms": r.timer_ms, "ncu_ms": r.ncu_ms, "ncu_call_ms": r.call_ms,
            "ratio": r.ratio, "ok": r.ok, "verdict": r.verdict,
            "kernels": [vars(k) for k in r.kernels]}


def run(args: argparse.Namespace) -> int:
    try:
        refuse_bad_seed_env(args)
    except Stop as s:
        return s.code
    ncu_path = ncu.find_ncu()

    def need_ncu() -> None:
        if not ncu_path:
            raise Stop(optional_tools.refuse(optional_tools.ToolMissing("ncu", "`run.py crosscheck`")))

    if not args.sizes:
        args.sizes = [DEFAULT_SIZES]
    if not args.offsets:
        args.offsets = [DEFAULT_OFFSETS]
    try:
        chosen, variant, plan = prepare(args, peers=args.peers, before_build=need_ncu,
                                        check_chosen=lambda c: refuse_sizes_without_kind(args, c))
    except Stop as s:
        return s.code
    if plan.bwgrade is None:
        console.error("bwgrade was not built")
        return EXIT_FAIL

    worst = EXIT_OK
    results: dict[str, dict] = {}
    summary: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bwlab-crosscheck-") as tmp:
        for ex in chosen:
            results[ex] = {}
            for w in plan.for_exercise(ex):
                console.heading(f"{ex} ({w.label})")
                if not w.ok:
                    console.say(w.message)
                    results[ex][w.label] = {"error": w.message}
                    summary.append(f"{ex} ({w.label}): not built")
                    worst = max(worst, EXIT_FAIL)
                    continue
                rows, notes, error = check_worker(plan.bwgrade, ncu_path, ex, w, args, Path(tmp))
                if error:
                    console.say(error)
                    results[ex][w.label] = {"error": error}
                    summary.append(f"{ex} ({w.label}): {error.splitlines()[0]}")
                    no_device = "no CUDA device" in error or "cannot profile" in error
                    worst = max(worst, EXIT_NO_DEVICE if no_device else EXIT_FAIL)
                    continue
                console.say(table(rows))
                for note in notes:
                    console.say(f"note: {note}")
                results[ex][w.label] = {"rows": [row_doc(r) for r in rows], "notes": notes}
                bad = [r for r in rows if not r.ok]
                ratios = [r.ratio for r in rows if r.ratio is not None]
                span = f"ratio {min(ratios):.3f}-{max(ratios):.3f}" if ratios else "no ratio"
                summary.append(f"{ex} ({w.label}): {len(rows) - len(bad)} of {len(rows)} rows "
                               f"agree with ncu, {span}")
                if bad or not rows:
                    worst = max(worst, EXIT_FAIL)

    console.say("")
    for line in summary:
        console.say(line)
    if args.json:
        write_json(args.json, {"tool": "run.py", "mode": "crosscheck", "variant": variant,
                               "tolerance": crosscheck.TOLERANCE, "exercises": results})
        console.say(f"wrote {args.json}")
    console.say("crosscheck: " + ("every row agrees with ncu" if worst == EXIT_OK
                                  else "some rows do not agree with ncu, or could not be checked"))
    return worst

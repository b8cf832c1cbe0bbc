"""run.py profile: Nsight Compute's view of one call of your function.

Builds bwgrade and the worker as `run.py test` does, then runs

    ncu --target-processes all --csv --page raw ... bwgrade once EXERCISE --worker W --n N

(--rows R --cols C instead of --n N for a MATRIX exercise, from --shape RxC)
and prints, per kernel, the course's table: executed instructions, DRAM
throughput and bytes, duration, cycles, registers, occupancy, the most
executed opcodes, and the bytes actually moved against the bytes the
exercise has to move (from its declaration, exercises/NAME/exercise.def).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from . import EXIT_FAIL, EXIT_KIT, EXIT_NO_DEVICE, EXIT_OK, EXIT_USAGE, console, exercises, repo_root
from . import ncu, optional_tools, user_values

HELP = "profile one call of an exercise with Nsight Compute (ncu) and show the course's table"

DEFAULT_N = (1 << 28) - 1
DEFAULT_SHAPE = (16384, 16384)     # a MATRIX exercise's rows x cols: 2^28 elements
TOP_OPCODES = 8            # opcodes listed under the table
MEMORY_OPCODES = ("LDG", "STG")   # also listed when not among the top


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("exercise", help="the exercise (one of exercises/exercises.def)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--solutions", action="store_true",
                     help="profile the kit's reference solution instead of your file")
    src.add_argument("--submission", metavar="DIR|ARCHIVE",
                     help="profile the file from a submission (folder, .tar.gz or .zip)")
    p.add_argument("--n", type=user_values.SIZE, default=None,
                   help=f"elements in the profiled call: N, 2^P, 2^P+K or 2^P-K, from 1 to 2^31-1 "
                        f"(default {DEFAULT_N:,} = 2^28 - 1); not for a MATRIX exercise")
    p.add_argument("--shape", type=user_values.SHAPE, default=None, metavar="RxC",
                   help="a MATRIX exercise's size in the profiled call: rows x cols, "
                        f"rows*cols at most 2^31-1 (default {DEFAULT_SHAPE[0]}x{DEFAULT_SHAPE[1]})")
    p.add_argument("--offset", type=user_values.OFFSET, default=None, metavar="K",
                   help=f"pointer offset in elements, 0 to {user_values.MAX_OFFSET} (default 0)")
    p.add_argument("--seed", type=user_values.SEED, default=None,
                   help="input seed passed to bwgrade, a non-negative integer (default: $BWLAB_SEED, "
                        "else the public seed)")
    p.add_argument("--clock-control", choices=["base", "none"], default="base",
                   help="ncu's clock setting: base (ncu's default: clocks locked to base, "
                        "repeatable) or none (the GPU boosts as in a benchmark)")
    p.add_argument("--csv", metavar="FILE", help="also keep ncu's CSV output in FILE")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="show the whole CMake and compiler output, and ncu's own messages")


# ---------------------------------------------------------------------------
# Expected traffic


def expected_bytes(ex: exercises.Exercise, n: int, rows: int | None = None,
                   cols: int | None = None) -> tuple[int, int]:
    """(bytes read, bytes written) the exercise must move at size n (rows x
    cols for a matrix): its declaration's traffic, every array it reads read
    once, the one it writes written once."""
    return ex.traffic(n, rows, cols)


def size_arguments(ex: exercises.Exercise, args: argparse.Namespace) -> tuple[int, int | None, int | None]:
    """(n, rows, cols) of the profiled call from --n or --shape (rows and
    cols None unless the exercise is a MATRIX). Raises ValueError, whose text
    is the one line to print, for the option the exercise does not take."""
    if ex.matrix:
        if args.n is not None:
            raise ValueError(f"--n: {ex.name} is a MATRIX exercise, sized rows x cols: give "
                             f"--shape RxC instead (default {DEFAULT_SHAPE[0]}x{DEFAULT_SHAPE[1]})")
        rows, cols = args.shape or DEFAULT_SHAPE
        return rows * cols, rows, cols
    if args.shape is not None:
        raise ValueError(f"--shape: {ex.name} is sized by an element count, not rows x cols: "
                         f"give --n N instead (default {DEFAULT_N:,})")
    return (DEFAULT_N if args.n is None else args.n), None, None


def _per_element(b: int, n: int) -> str:
    """' (K B/element)' when b is a whole number of bytes per element, else ''
    (a reduction's one written element)."""
    return f" ({b // n} B/element)" if n and b % n == 0 else ""


# ---------------------------------------------------------------------------
# Formatting


def _num(x: float | None, digits: int = 0) -> str:
    if x is None:
        return "-"
    return f"{x:,.{digits}f}"


def _per(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def _duration(ns: float | None) -> str:
    if ns is None:
        return "-"
    if ns >= 1e6:
        return f"{ns / 1e6:,.3f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:,.1f} us"
    return f"{ns:,.0f} ns"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f} %"


def kernel_table(s: ncu.Summary, ex: exercises.Exercise) -> list[str]:
    """The course's table for one kernel."""
    exp_r, exp_w = expected_bytes(ex, s.n)
    rows: list[list[object]] = []

    def row(name: str, value: str, per: str = "", note: str = "") -> None:
        rows.append([name, value, per, note])

    row("executed instructions (warp)", _num(s.instructions), _per(s.per_element(s.instructions)),
        "per element = total / n")
    if s.global_loads is not None:
        row("  global load instructions", _num(s.global_loads), _per(s.per_element(s.global_loads), 4))
    if s.global_stores is not None:
        row("  global store instructions", _num(s.global_stores), _per(s.per_element(s.global_stores), 4))
    row("DRAM throughput", _pct(s.dram_pct), "", "of the peak ncu knows for this GPU")
    row("DRAM bytes read", _num(s.bytes_read), _per(s.per_element(s.bytes_read), 2),
        f"needed: {_num(exp_r)}{_per_element(exp_r, s.n)}" if exp_r else "")
    row("DRAM bytes written", _num(s.bytes_written), _per(s.per_element(s.bytes_written), 2),
        f"needed: {_num(exp_w)}{_per_element(exp_w, s.n)}" if exp_w else "")
    row("duration", _duration(s.duration_ns))
    clock = f"SM clock {s.sm_hz / 1e9:.2f} GHz" if s.sm_hz else ""
    row("elapsed cycles", _num(s.cycles), "", clock)
    row("registers per thread", _num(s.registers))
    occ_note = f"theoretical {_pct(s.occupancy_max)}" if s.occupancy_max is not None else ""
    row("achieved occupancy", _pct(s.occupancy), "", occ_note)
    bw = s.bandwidth_gbs
    row("effective bandwidth", "-" if bw is None else f"{bw:,.1f} GB/s", "",
        "(DRAM bytes read + written) / duration")
    if s.duration_ns:
        row("bandwidth as benchmarked", f"{(exp_r + exp_w) / s.duration_ns:,.1f} GB/s", "",
            "bytes needed / duration, as run.py benchmark counts")

    out = [f"kernel {s.name}", f"  grid {s.grid or '?'}  block {s.block or '?'}  n = {s.n:,}"]
    table = console.table(["metric", "value", "per element", "note"], rows,
                          right=[False, True, True, False])
    out += ["  " + line for line in table.splitlines()]

    moved = (s.bytes_read or 0) + (s.bytes_written or 0)
    if s.bytes_read is not None and s.bytes_written is not None:
        need = exp_r + exp_w
        ratio = moved / need if need else 0.0
        out.append(f"  traffic: {moved:,.0f} B moved for {need:,} B needed"
                   f"{_per_element(need, s.n)}: {ratio:.3f}x"
                   + ("" if ratio <= 1.05 else " -- more than needed: bytes read twice, or "
                      "partly used sectors (misaligned or strided access)"))
        if s.bytes_written < 0.98 * exp_w:
            out.append("  (fewer bytes written than needed: the last writes were still in the L2 "
                       "cache when the kernel ended, so DRAM had not seen them yet)")
    if s.opcodes:
        total = s.instructions or sum(v for _, v in s.opcodes)
        top = s.opcodes[:TOP_OPCODES]
        rest = len(s.opcodes) - len(top)
        out.append(f"  most executed opcodes, top {len(top)} of {len(s.opcodes)} "
                   "(warp instructions, share of all, per element):")
        # The global loads and stores are listed even when they are not among the top.
        memory = [(op, v) for op, v in s.opcodes[TOP_OPCODES:] if op in MEMORY_OPCODES]
        width = max(len(op) for op, _ in top + memory)

        def line(op: str, v: float, tail: str = "") -> str:
            share = 100.0 * v / total if total else 0.0
            return f"    {op:<{width}}  {v:>16,.0f}  {share:5.1f} %  {v / s.n if s.n else 0:.4f}{tail}"

        out += [line(op, v) for op, v in top]
        if rest > 0:
            other = sum(v for _, v in s.opcodes[TOP_OPCODES:])
            among = ", among them:" if memory else ")"
            out.append(f"    ({rest} more opcodes: {other:,.0f} warp instructions{among}")
        out += [line(op, v, "  (global memory)") for op, v in memory]
        if memory and rest > 0:
            out[-1] += ")"
    elif s.opcode_unnamed:
        out.append(f"  per-opcode counts: ncu printed {s.opcode_unnamed} counts without opcode names "
                   "(--print-metric-instances values): no opcode table")
    elif s.opcode_raw:
        out.append(f"  per-opcode counts: could not read ncu's format: {s.opcode_raw[:200]}")
    return out


def totals_line(summaries: list[ncu.Summary]) -> str:
    dur = sum(s.duration_ns or 0 for s in summaries)
    moved = sum((s.bytes_read or 0) + (s.bytes_written or 0) for s in summaries)
    inst = sum(s.instructions or 0 for s in summaries)
    n = summaries[0].n if summaries else 0
    bw = moved / dur if dur else 0.0
    return (f"all {len(summaries)} kernels: {_duration(dur)}, {moved:,.0f} DRAM bytes "
            f"({bw:,.1f} GB/s), {inst:,.0f} warp instructions ({inst / n if n else 0:.3f} per element)")


# ---------------------------------------------------------------------------
# Running


def _target(bwgrade: Path, ex: str, worker: Path, args: argparse.Namespace, n: int,
            rows: int | None = None, cols: int | None = None) -> list[str]:
    """bwgrade once's command line: --rows R --cols C for a matrix, else --n N."""
    size = ["--rows", str(rows), "--cols", str(cols)] if rows is not None else ["--n", str(n)]
    cmd = [str(bwgrade), "once", ex, "--worker", str(worker), *size]
    if args.offset is not None:
        cmd += ["--offset", str(args.offset)]
    if args.seed is not None:
        cmd += ["--seed", str(args.seed)]
    return cmd


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except KeyboardInterrupt:
        console.error("interrupted")
        return EXIT_FAIL
    except OSError as e:
        console.error(f"profile: {e.strerror or e}" + (f": {e.filename}" if e.filename else ""))
        return EXIT_KIT


def _run(args: argparse.Namespace) -> int:
    root = repo_root()
    try:
        ex = exercises.select([args.exercise], root)[0]
    except exercises.UnknownExercise as e:
        console.error(str(e))
        return EXIT_USAGE
    except exercises.ExerciseError as e:
        console.error(str(e))
        return EXIT_KIT
    except OSError as e:
        console.error(f"cannot read the exercise table: {e}")
        return EXIT_KIT
    try:
        n, rows, cols = size_arguments(ex, args)
    except ValueError as e:
        console.error(str(e))
        return EXIT_USAGE
    # Build as run.py test does (shared code: the same build tree and messages).
    from .cmd_test import Stop, prepare, refuse_bad_seed_env
    try:
        refuse_bad_seed_env(args)
    except Stop as s:
        return s.code
    ncu_path = ncu.find_ncu()

    def need_ncu() -> None:
        if not ncu_path:
            raise Stop(optional_tools.refuse(optional_tools.ToolMissing("ncu", "`run.py profile`")))

    build_args = argparse.Namespace(exercise=[ex.name], solutions=args.solutions,
                                    submission=args.submission, verbose=args.verbose)
    try:
        _chosen, _variant, plan = prepare(build_args, before_build=need_ncu)
    except Stop as s:
        return s.code
    workers = [w for w in plan.for_exercise(ex.name)]
    if not workers or not workers[0].ok:
        w = workers[0] if workers else None
        console.error(w.message if w else f"no worker for {ex.name}")
        if w and w.lines:
            console.say(console.indent(w.lines))
        return EXIT_FAIL
    worker = workers[0]
    if plan.bwgrade is None:
        console.error("bwgrade was not built")
        return EXIT_KIT

    target = _target(plan.bwgrade, ex.name, worker.path, args, n, rows, cols)
    extra = ["--clock-control", "none"] if args.clock_control == "none" else []
    size = f"{rows} x {cols} ({n:,} elements)" if rows is not None else f"n = {n:,}"
    console.heading(f"profiling {ex.name} ({worker.label}), {size}")
    console.say("ncu replays each kernel several times to read all counters; this takes a while.")
    rc, logtext, program, notes = ncu.run_profile(ncu_path, target, args.verbose, extra)
    for note in notes:
        console.say(f"note: {note}")
    if args.csv:
        try:
            Path(args.csv).write_text(logtext, encoding="utf-8")
            console.say(f"wrote ncu's CSV to {args.csv}")
        except OSError as e:
            console.warn(f"cannot write {args.csv}: {e.strerror or e}")

    everything = logtext + "\n" + program
    reason = ncu.diagnose(everything)
    kernels = ncu.parse_csv(logtext)
    # bwgrade's own report of the call (passed or not) and any errors of ncu.
    said = [l for l in program.splitlines() if l.strip() and (args.verbose or not l.startswith("==PROF=="))]
    errors = [l for l in logtext.splitlines() if l.startswith("==ERROR==") or l.startswith("==WARNING==")]
    if said:
        console.say("bwgrade once said:")
        console.say(console.indent(said[-15:]))
    if errors and (args.verbose or not kernels):
        console.say("ncu said:")
        console.say(console.indent(errors[-15:]))

    if not kernels:
        if "ERR_NVGPUCTRPERM" in everything:
            console.error(ncu.PERMISSION_MESSAGE)
            return EXIT_NO_DEVICE
        if "unknown command 'once'" in program or ("once" in program and "usage" in program.lower()
                                                   and rc == EXIT_USAGE):
            console.error("this bwgrade cannot make a single call (`bwgrade once`); "
                          "rebuild the kit (python3 run.py test builds it)")
            return EXIT_KIT
        if rc == EXIT_NO_DEVICE:
            console.error("bwgrade could not run the call (exit code 3): no CUDA device here, or the "
                          "worker would not start; see its messages above")
            return EXIT_NO_DEVICE
        if reason:
            console.error(reason)
            return EXIT_NO_DEVICE if "cannot profile" in reason else EXIT_FAIL
        console.error(f"ncu profiled no kernel (exit code {rc})")
        return EXIT_FAIL

    console.say("")
    summaries = [ncu.summarize(k, n) for k in kernels]
    for s in summaries:
        for line in kernel_table(s, ex):
            console.say(line)
        console.say("")
    if len(summaries) > 1:
        console.say(totals_line(summaries))
    console.say("Numbers under ncu are for one call with caches flushed and, unless "
                "--clock-control none, clocks at base: `run.py benchmark` is the speed that counts.")
    if rc not in (0, None):
        console.warn(f"bwgrade once exited with code {rc}: the call did not pass its check "
                     "(see above); these are the numbers of a wrong result")
        return EXIT_FAIL
    return EXIT_OK

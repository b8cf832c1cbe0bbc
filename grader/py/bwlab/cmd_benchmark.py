"""run.py benchmark: bandwidth of each exercise, next to a device copy and,
with --peers, next to library implementations (cub, cuBLAS).

bwgrade takes the measurements and checks the output of every timed run;
this module starts it once per worker and lays its JSON side by side.
"""
from __future__ import annotations

import argparse
import importlib

from pathlib import Path

from . import (EXIT_FAIL, EXIT_NO_DEVICE, EXIT_OK, EXIT_USAGE, console, exercises, optional_tools,
               user_values)
from .cmd_test import (Stop, add_source_arguments, error_doc, prepare, reports_no_device,
                       refuse_bad_seed_env, run_bwgrade, write_json)

HELP = "measure bandwidth (GB/s and % of a device copy), optionally against library peers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--peers", action="store_true",
                        help="also measure the library peers (cub, cuBLAS) of each exercise")
    parser.add_argument("--quick", action="store_true", help="fewer sizes and samples")
    add_size_arguments(parser, "bwgrade's list", "0")
    parser.add_argument("--json", metavar="FILE", help="write every measurement to FILE")
    parser.add_argument("--plot", metavar="FILE",
                        help="draw the results into FILE, .png, .svg or .pdf (needs matplotlib)")
    parser.add_argument("--no-why", action="store_true",
                        help="below 80%% of the copy, do not look for the cause (it compiles the "
                             "file and runs one call under ncu)")


def add_size_arguments(parser: argparse.ArgumentParser, sizes_default: str,
                       offsets_default: str) -> None:
    """--sizes and --offsets, checked as bwgrade checks them (shared with crosscheck)."""
    parser.add_argument("--sizes", action="append", metavar="N,N,...", type=user_values.SIZES_OR_SHAPES,
                        help="element counts, comma-separated: N, 2^P, 2^P+K or 2^P-K, from 1 to "
                             "2^31-1; for a matrix exercise shapes RxC (rows*cols at most 2^31-1); "
                             "each exercise takes the items of its kind "
                             f"(default: {sizes_default})")
    parser.add_argument("--offsets", action="append", metavar="K,K,...", type=user_values.OFFSETS,
                        help=f"pointer offsets in elements, 0 to {user_values.MAX_OFFSET}, "
                             f"comma-separated (default: {offsets_default})")


def refuse_bad_plot(args: argparse.Namespace) -> None:
    """--plot's file type, and matplotlib, before a long run. Raises Stop."""
    if not args.plot:
        return
    try:
        suffixes = importlib.import_module("bwlab.plot").SUFFIXES
    except ModuleNotFoundError as e:
        if e.name == "bwlab.plot":
            return      # plot() says plotting is not in this copy
        raise
    if Path(args.plot).suffix.lower() not in suffixes:
        console.error(f"--plot: '{args.plot}' is not a file name ending in {', '.join(suffixes)}")
        raise Stop(EXIT_USAGE)
    if not optional_tools.has_matplotlib():
        raise Stop(optional_tools.refuse(optional_tools.ToolMissing(
            "matplotlib", "`run.py benchmark --plot`", "without --plot the tables need nothing")))


def _joined(values: list[str] | None) -> str | None:
    if not values:
        return None
    parts = [p for v in values for p in v.split(",") if p.strip()]
    return ",".join(p.strip() for p in parts)


def sizes_for(args: argparse.Namespace, ex: str) -> str | None:
    """The --sizes items that exercise ex takes: shapes for a matrix exercise,
    element counts for the others; None when --sizes was not given."""
    sizes = _joined(args.sizes)
    if not sizes:
        return None
    counts, shapes = user_values.split_sizes(sizes)
    return ",".join(shapes if exercises.read(ex).matrix else counts)


def refuse_sizes_without_kind(args: argparse.Namespace, chosen: list[str]) -> None:
    """--sizes that give an exercise named on the command line nothing it
    takes: one line, exit 2, before anything is built (raises Stop). An
    exercise chosen by default (every one) then runs its own default sizes,
    and a line says so."""
    for ex in chosen:
        if sizes_for(args, ex) != "":
            continue
        kind = ("shapes RxC: it is a matrix exercise" if exercises.read(ex).matrix
                else "element counts")
        if args.exercise:
            console.error(f"--sizes: nothing for {ex}, which takes {kind}")
            raise Stop(EXIT_USAGE)
        console.say(f"{ex}: --sizes has no {kind.split(':')[0]}, so it runs its default sizes")


def bench_extra_args(args: argparse.Namespace, label: str, peer: bool, ex: str) -> list[str]:
    extra = ["--label", label]
    sizes, offsets = sizes_for(args, ex), _joined(args.offsets)
    if sizes:
        extra += ["--sizes", sizes]
    if offsets:
        extra += ["--offsets", offsets]
    if peer:
        extra.append("--no-copy")   # the copy is measured once, in the main run
    if getattr(args, "quick", False):   # run.py crosscheck has no --quick
        extra.append("--quick")
    return extra


def _pct_copy(row: dict, copy_gbs: float | None) -> float | None:
    pct = row.get("pct_copy")
    if isinstance(pct, (int, float)) and pct > 0:
        return float(pct)
    gbs = row.get("gbs")
    # A peer run without its own copy: relate it to the copy of the main run.
    if isinstance(gbs, (int, float)) and copy_gbs:
        return 100.0 * gbs / copy_gbs
    return None


def comparison_table(docs: list[dict]) -> str:
    """One exercise's runs side by side: n, offset, then GB/s and % of copy per label."""
    docs = [d for d in docs if isinstance(d.get("rows"), list)]
    if not docs:
        return "(no measurements)"
    copy_gbs = None
    for d in docs:
        c = d.get("copy") or {}
        if isinstance(c.get("gbs"), (int, float)) and c["gbs"] > 0:
            copy_gbs = float(c["gbs"])
            break
    keys: list[tuple] = []
    cells: dict[tuple, dict[str, dict]] = {}
    for d in docs:
        for row in d["rows"]:
            key = (row.get("rows"), row.get("cols"), row.get("n"), row.get("offset"))
            if key not in cells:
                keys.append(key)
                cells[key] = {}
            cells[key][d.get("label", "?")] = row
    labels = [d.get("label", "?") for d in docs]
    headers = ["n", "offset"]
    for label in labels:
        headers += [f"{label} GB/s", f"{label} %copy"]
    if any(k[0] for k in keys):
        headers[0] = "rows x cols"
    rows = []
    for key in keys:
        r, c, n, off = key
        line: list[object] = [f"{r}x{c}" if r else console.number(n), off]
        for label in labels:
            row = cells[key].get(label)
            if row is None:
                line += ["", ""]
            elif row.get("status", "ok") != "ok":
                line += [row.get("status"), "-"]
            else:
                pct = _pct_copy(row, copy_gbs)
                line += [console.number(row.get("gbs")), console.number(pct)]
        rows.append(line)
    out = console.table(headers, rows)
    notes = []
    if copy_gbs:
        notes.append(f"device-to-device copy: {copy_gbs:,.1f} GB/s")
    dev = next((d.get("device") for d in docs if isinstance(d.get("device"), dict)), None)
    if dev and dev.get("name"):
        peak = dev.get("peak_gbs")
        notes.append(f"{dev['name']}" + (f", theoretical peak {peak:,.1f} GB/s" if isinstance(peak, (int, float)) else ""))
    return out + ("\n" + "; ".join(notes) if notes else "")


OWN_LABELS = ("student", "solution", "submission")


def why_line(args: argparse.Namespace, ex: str, worker, bwgrade, doc: dict) -> str | None:
    """why_slow's line for this exercise's own run, when its largest aligned
    row reached less than WHY_BELOW_PCT of the copy; None otherwise."""
    from . import cmd_asm, ncu, scoring, why_slow
    row = scoring.pick_bench_row(doc, "largest")
    pct = row.get("pct_copy") if row and row.get("status", "ok") == "ok" else None
    if not isinstance(pct, (int, float)) or pct >= why_slow.WHY_BELOW_PCT:
        return None
    causes, unchecked = [], []
    dev = doc.get("device") or {}
    arch = "sm_" + str(dev.get("cc", "9.0")).replace(".", "")
    nvcc = cmd_asm.find_cuda_tool("nvcc")
    try:
        content, shown = cmd_asm.read_source(args, ex)
        if not nvcc:
            raise cmd_asm.CompileError("nvcc not found")
        funcs, _ = cmd_asm.compile_functions(content, ex, shown, arch, nvcc, cmd_asm.disassembler())
        causes += why_slow.code_causes(funcs)
    except (cmd_asm.SourceError, cmd_asm.CompileError) as e:
        unchecked.append(f"the compiled code ({str(e).splitlines()[0]})")
    ncu_path = ncu.find_ncu()
    n = int(row["n"])
    # A matrix exercise's row gives its shape, and bwgrade once takes it so.
    shape = [row.get("rows"), row.get("cols")]
    size = (["--rows", str(shape[0]), "--cols", str(shape[1])]
            if all(isinstance(v, int) and v > 0 for v in shape) else ["--n", str(n)])
    if not ncu_path:
        unchecked.append("the launch (ncu not found)")
    else:
        launches, why = why_slow.profile_launches(
            ncu_path, [str(bwgrade), "once", ex, "--worker", str(worker), *size])
        if launches is None:
            unchecked.append(f"the launch ({why})")
        else:
            causes = why_slow.launch_causes(launches, n) + causes
    return why_slow.line(float(pct), causes, unchecked)


def plot(docs: list[dict], path: str) -> str:
    try:
        mod = importlib.import_module("bwlab.plot")
    except ModuleNotFoundError as e:
        if e.name == "bwlab.plot":
            return "plotting not available in this copy of the kit"
        raise
    return str(mod.plot_benchmark(docs, path))


def run(args: argparse.Namespace) -> int:
    try:
        refuse_bad_seed_env(args)
        chosen, variant, plan = prepare(args, peers=args.peers,
                                        before_build=lambda: refuse_bad_plot(args),
                                        check_chosen=lambda c: refuse_sizes_without_kind(args, c))
    except Stop as s:
        return s.code

    results: dict[str, dict[str, dict]] = {}
    all_docs: list[dict] = []
    worst = EXIT_OK
    no_device = False
    for ex in chosen:
        results[ex] = {}
        for w in plan.for_exercise(ex):
            if no_device:
                results[ex][w.label] = error_doc(ex, "not_run", "no CUDA device")
                continue
            console.heading(f"{ex} ({w.label})")
            if not w.ok:
                console.say(w.message)
                if w.lines:
                    console.say(console.indent(w.lines))
                results[ex][w.label] = error_doc(ex, w.status, w.message, w.lines)
                worst = max(worst, EXIT_FAIL)
                continue
            peer = w.label not in ("student", "solution", "submission")
            rc, doc, tail = run_bwgrade(plan.bwgrade, "bench", ex, w.path,
                                        bench_extra_args(args, w.label, peer, ex))
            if rc == EXIT_NO_DEVICE:
                no_device = reports_no_device(rc, doc)
                worst = EXIT_NO_DEVICE
                results[ex][w.label] = doc or error_doc(ex, "not_run", "bwgrade could not run (exit 3)")
                continue
            if doc is None and rc == EXIT_USAGE:
                # bwgrade's one line says which value; the others would say the same.
                return EXIT_USAGE
            if doc is None:
                doc = error_doc(ex, "error", f"bwgrade exited with code {rc} and wrote no report")
            else:
                doc.setdefault("label", w.label)
                all_docs.append(doc)
            results[ex][w.label] = doc
            if rc != EXIT_OK:
                worst = max(worst, EXIT_FAIL)

    for ex in chosen:
        docs = [d for d in results[ex].values() if "rows" in d]
        if docs:
            console.heading(f"{ex}: side by side")
            console.say(comparison_table(docs))
        own = next((w for w in plan.for_exercise(ex) if w.label in OWN_LABELS and w.ok), None)
        doc = results[ex].get(own.label) if own else None
        if own and isinstance(doc, dict) and "rows" in doc and not args.no_why:
            why = why_line(args, ex, own.path, plan.bwgrade, doc)
            if why:
                console.say(why)
                doc["why_slow"] = why

    console.say("")
    if no_device:
        console.say("built OK; no CUDA device here, so nothing was measured. "
                    "Run this on a machine with an NVIDIA GPU.")
    if args.json:
        write_json(args.json, {"tool": "run.py", "mode": "bench", "variant": variant,
                               "submission": args.submission, "exercises": results})
        console.say(f"wrote {args.json}")
    if args.plot:
        console.say(plot(all_docs, args.plot) if all_docs else "nothing to plot")
    return worst

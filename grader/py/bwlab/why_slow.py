"""The benchmark's "why slow" line: when an exercise reaches less than
WHY_BELOW_PCT of the same-run copy, name the likely cause from two facts the
kit can establish, never from a guess:

  the compiled code   run.py asm's analysis of the file (sass.verdict): are the
                      hot path's global loads and stores wide (64/128-bit)?
  the launch          Nsight Compute on one call at the benchmark's size
                      (bwgrade once): the grid, the block, and how many waves of
                      the whole GPU the grid makes (launch__waves_per_multiprocessor).

Causes, in this order: a grid that fills less than half of the GPU once
(waves < SMALL_GRID_WAVES: most SMs have little or nothing to do); one
element per thread (threads >= n); narrow accesses. When none holds it
says so, and when a fact could not be had (no ncu, no disassembler) it says
which. handout/tools.md, 'Why is it slow?', explains each cause.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ncu, sass

WHY_BELOW_PCT = 80.0
GUIDE = "handout/tools.md, 'Why is it slow?'"
LAUNCH_METRICS = ["launch__grid_size", "launch__block_size", "launch__waves_per_multiprocessor"]
NCU_TIMEOUT = 600
# Below half a wave, at least half of the GPU's thread slots stay empty for
# the whole kernel. (A recorded grid-stride kernel at 0.97 waves is slow for
# its 16-bit accesses, not for its grid: tests/data/ncu_haxpy_scalar_h100.csv.)
SMALL_GRID_WAVES = 0.5


@dataclass
class Launch:
    kernel: str
    grid: int | None          # blocks
    block: int | None         # threads per block
    waves: float | None       # the grid over what the GPU holds at once


def code_causes(funcs: list[sass.Function]) -> list[str]:
    """A cause per kernel whose hot path is not vectorized."""
    out = []
    for fn in funcs:
        if not fn.entry:
            continue
        v = sass.verdict(fn, "")
        if v.state not in ("no", "partly"):
            continue
        name = (fn.display or fn.name).split("(")[0]
        widths = []
        if v.load_width:
            widths.append(f"{v.load_width}-bit loads")
        if v.store_width:
            widths.append(f"{v.store_width}-bit stores")
        out.append(f"{name} moves data in {' and '.join(widths) or 'narrow accesses'} "
                   f"({'in its loop' if v.basis == 'loops' else 'no loop'}): not vectorized")
    return out


def launch_causes(launches: list[Launch], n: int) -> list[str]:
    out = []
    for k in launches:
        name = k.kernel.split("(")[0]
        if k.waves is not None and k.waves < SMALL_GRID_WAVES and k.grid and k.block:
            out.append(f"{name}'s grid is too small: {k.grid:,} blocks of {k.block} threads fill "
                       f"{100 * k.waves:.0f}% of what the GPU runs at once (launch__waves_per_multiprocessor "
                       f"{k.waves:.2f}); most of its SMs wait")
        elif k.grid and k.block and k.grid * k.block >= n:
            out.append(f"{name} handles one element per thread ({k.grid * k.block:,} threads for "
                       f"n = {n:,})")
    return out


def read_launches(csv_text: str) -> list[Launch]:
    out = []
    for k in ncu.parse_csv(csv_text):
        grid, block = k.get("launch__grid_size"), k.get("launch__block_size")
        out.append(Launch(k.name, int(grid) if grid is not None else None,
                          int(block) if block is not None else None,
                          k.get("launch__waves_per_multiprocessor")))
    return out


def profile_launches(ncu_path: str, target: list[str]) -> tuple[list[Launch] | None, str]:
    """ncu on target (bwgrade once ...): the launches, or None and why not."""
    rc, text, program, _notes = ncu.run_profile(ncu_path, target, metrics=LAUNCH_METRICS,
                                                instances="none", timeout=NCU_TIMEOUT)
    launches = read_launches(text) if text else []
    if rc != 0 or not launches:
        why = ncu.diagnose(text + "\n" + program)
        if not why and rc in (124, 127):
            why = program     # run_profile's own words: timed out, or could not start
        return None, (why.splitlines()[0] if why else f"ncu exit {rc}, no kernel profiled")
    return launches, ""


def line(pct: float, causes: list[str], unchecked: list[str]) -> str:
    """The one line the benchmark prints."""
    head = f"why {pct:.0f}% of copy: "
    if causes:
        text = head + "; ".join(causes)
    else:
        text = head + "no cause found in " + (
            "the compiled code or the launch" if not unchecked else
            "what could be checked") + "; `run.py profile` shows the whole profile"
    if unchecked:
        text += " (not checked: " + "; ".join(unchecked) + ")"
    return text + f" -- see {GUIDE}"

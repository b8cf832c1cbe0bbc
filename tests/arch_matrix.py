#!/usr/bin/env python3
"""Compile-only check: the kit's CUDA code for every GPU family, per toolkit.

Compiles each CUDA source of the kit (the worker's kernels and its C files
that include CUDA headers, the adapters, the exercise stubs, the solutions,
the library peers) with `-c` for sm_75, 80, 86, 89, 90, 100 and 120 (one
nvcc run per source, one -gencode per architecture, SASS only), warnings
as errors, with each toolkit given, and prints a table: source x toolkit.

    python3 tests/arch_matrix.py                        # nvcc on PATH (or /usr/local/cuda)
    python3 tests/arch_matrix.py --toolkit 12.4=/opt/cuda-12.4/bin/nvcc --toolkit 13.0=nvcc

Where a toolkit cannot be asked for a cell, the cell says why instead of
failing: an architecture the toolkit does not know (CUDA 12 before 12.8 has
no sm_100/sm_120), a library header it lacks (cuBLAS), or a CCCL older than
a source needs (NEEDS below). Exit status: 0 when every cell asked built,
1 otherwise, 2 for a bad command line. Standard library only.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHS = ("75", "80", "86", "89", "90", "100", "120")

# The CCCL a source needs, and the first CUDA 12 that ships it: the
# solutions call cuda::ptx (fence_proxy_async, cp_async_bulk...), complete
# from CCCL 2.4; the CUB peers call cub::DeviceTransform, public from 2.8.
NEEDS = {
    "solutions": (2004000, "CCCL 2.4 (CUDA 12.5)"),
    "cub_peers": (2008000, "CCCL 2.8 (CUDA 12.9)"),
}


@dataclass
class Unit:
    path: str                      # relative to ROOT
    lang: str                      # "cu" (nvcc, per architecture) or "c" (gcc, once)
    includes: list[str]
    defines: list[str] = field(default_factory=list)
    needs: str | None = None       # key of NEEDS
    header: str | None = None      # a library header the toolkit must have


@dataclass
class Toolkit:
    name: str
    nvcc: str
    include: Path
    archs: list[str]               # of ARCHS, those this nvcc knows
    cccl: int                      # CCCL_VERSION, 0 if not found
    release: str = ""              # "12.4", from nvcc --version
    foreign: list[Path] = field(default_factory=list)   # other CUDA installs' roots

    @property
    def root(self) -> Path:
        return Path(self.nvcc).parent.parent


def exercises() -> list[str]:
    rows = (ROOT / "exercises" / "exercises.def").read_text().splitlines()
    return [m.group(1) for m in (re.match(r"^BW_EXERCISE\((\w+)[,)]", r) for r in rows) if m]


def units() -> list[Unit]:
    """Every kit source with CUDA in it, found by path so new ones are covered."""
    posix = ["_POSIX_C_SOURCE=200809L"]
    worker = ["grader/protocol", "grader/worker"]
    out = [Unit(str(p.relative_to(ROOT)), "cu", worker, posix)
           for p in sorted((ROOT / "grader" / "worker").glob("*.cu"))]
    for p in sorted((ROOT / "grader" / "worker").glob("*.c")):
        out.append(Unit(str(p.relative_to(ROOT)), "c", worker + ["reference", "exercises"], posix))
    for ex in exercises():
        inc = [f"exercises/{ex}", "grader/protocol"]
        out.append(Unit(f"exercises/{ex}/adapter.cu", "cu", inc))
        out.append(Unit(f"exercises/{ex}/{ex}.cu", "cu", inc))
        for p in sorted((ROOT / "solutions" / ex).glob("*.cu")):
            out.append(Unit(str(p.relative_to(ROOT)), "cu", inc, needs="solutions"))
        for p in sorted((ROOT / "grader" / "peers").glob(f"{ex}_*.cu")):
            lib = p.stem[len(ex) + 1:]
            out.append(Unit(str(p.relative_to(ROOT)), "cu", inc,
                            needs="cub_peers" if lib == "cub" else None,
                            header="cublas_v2.h" if lib == "cublas" else None))
    return out


def cccl_version(include: Path) -> int:
    for p in include.rglob("version.h"):
        if p.parent.name == "__cccl":
            m = re.search(r"^#\s*define\s+CCCL_VERSION\s+(\d+)", p.read_text(errors="replace"), re.M)
            if m:
                return int(m.group(1))
    return 0


def toolkit_top(nvcc: str) -> Path:
    """The install nvcc belongs to, as nvcc itself reports it (TOP in its
    dry run): the nvcc on PATH may be a wrapper script in /usr/local/bin."""
    out = subprocess.run([nvcc, "-dryrun", "-x", "cu", "-E", os.devnull],
                         capture_output=True, text=True)
    m = re.search(r"^#\$ TOP=(.+)$", out.stdout + out.stderr, re.M)
    return Path(m.group(1).strip()).resolve() if m else Path(nvcc).resolve().parent.parent


def toolkit(name: str, nvcc: str) -> Toolkit:
    path = shutil.which(nvcc)
    if not path:
        raise SystemExit(f"arch_matrix: {name}: nvcc not found: {nvcc}")
    real = toolkit_top(path) / "bin" / "nvcc"
    if not real.exists():
        real = Path(path).resolve()
    out = subprocess.run([str(real), "--list-gpu-arch"], capture_output=True, text=True)
    known = set(re.findall(r"compute_(\d+)", out.stdout))
    include = real.parent.parent / "include"
    ver = subprocess.run([str(real), "--version"], capture_output=True, text=True)
    rel = re.search(r"release (\d+\.\d+)", ver.stdout)
    return Toolkit(name, str(real), include, [a for a in ARCHS if a in known], cccl_version(include),
                   rel.group(1) if rel else "")


def with_foreign(tks: list[Toolkit]) -> list[Toolkit]:
    """Tell each toolkit which CUDA installs are not its own."""
    roots = {tk.root for tk in tks}
    roots.update(p.resolve() for p in Path("/usr/local").glob("cuda*") if p.is_dir())
    for tk in tks:
        tk.foreign = sorted(r for r in roots if r != tk.root.resolve())
    return tks


def default_nvcc() -> str | None:
    return shutil.which("nvcc") or next(
        (str(p) for p in (Path("/usr/local/cuda/bin/nvcc"),) if p.exists()), None)


_SYSTEM_DIRS: dict[str, list[str]] = {}


def system_dirs(lang: str) -> list[str]:
    """gcc's own include directories for "c" or "c++", less those under
    /usr/local: CUDA installs put or link their headers there (a CUDA 13
    machine may have /usr/local/include/cublas_v2.h), and a header found
    there would stand in for one a CUDA 12 toolkit lacks."""
    if lang not in _SYSTEM_DIRS:
        p = subprocess.run(["gcc", f"-x{lang}", "-E", "-v", "-"], input="", capture_output=True, text=True)
        block = re.search(r"#include <\.\.\.> search starts here:\n(.*?)End of search list", p.stderr, re.S)
        dirs = [d.strip() for d in block.group(1).splitlines()] if block else []
        _SYSTEM_DIRS[lang] = [d for d in dirs if d and not Path(d).resolve().is_relative_to("/usr/local")]
    return _SYSTEM_DIRS[lang]


def command(u: Unit, tk: Toolkit, obj: Path) -> list[str]:
    inc = [f"-I{ROOT / i}" for i in u.includes]
    defs = [f"-D{d}" for d in u.defines]
    deps = ["-MD", "-MF", f"{obj}.d"]
    if u.lang == "c":
        # Host C with the toolkit's runtime headers, as CMake builds bwworker.
        sysinc = [a for d in system_dirs("c") for a in ("-isystem", d)]
        return ["gcc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", *defs, *inc,
                f"-I{tk.include}", "-nostdinc", *sysinc, *deps, "-c", str(ROOT / u.path), "-o", str(obj)]
    gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in tk.archs]
    host = ",".join(["-Wall", "-Wextra", "-Werror", "-nostdinc"] +
                    [a for d in system_dirs("c++") for a in ("-isystem", d)])
    return [tk.nvcc, "-c", "-O3", "-DNDEBUG", "-std=c++17", "-lineinfo", *gencode,
            f"-Xcompiler={host}", "-Werror", "all-warnings", *defs, *inc,
            *deps, str(ROOT / u.path), "-o", str(obj)]


def foreign_headers(depfile: Path, tk: Toolkit) -> list[str]:
    """Headers read from another CUDA install (gcc also searches
    /usr/local/include, which may link to one): such a build proves nothing
    about this toolkit."""
    try:
        text = depfile.read_text(errors="replace")
    except OSError:
        return []
    out = []
    for dep in text.replace("\\\n", " ").split()[1:]:
        real = Path(dep).resolve()
        if any(real.is_relative_to(f) for f in tk.foreign) and not real.is_relative_to(tk.root):
            out.append(dep)
    return sorted(set(out))


def skip_reason(u: Unit, tk: Toolkit) -> str | None:
    if u.header and not (tk.include / u.header).exists():
        return f"n/a: no {u.header} in this toolkit"
    if u.needs and tk.cccl < NEEDS[u.needs][0]:
        return f"n/a: needs {NEEDS[u.needs][1]}"
    return None


def compile_one(u: Unit, tk: Toolkit, obj: Path, before: Toolkit | None = None) -> tuple[str, list[str], float]:
    """("ok" | "FAILED" | "n/a: why" | "as NAME", error lines, seconds)."""
    if before is not None and u.needs is None:
        # The same compiler with another CCCL: only the sources that need
        # the newer CCCL are built again.
        return f"as {before.name}", [], 0.0
    why = skip_reason(u, tk)
    if why:
        return why, [], 0.0
    t0 = time.monotonic()
    p = subprocess.run(command(u, tk, obj), capture_output=True, text=True, errors="replace")
    dt = time.monotonic() - t0
    text = (p.stdout + p.stderr).replace(str(ROOT) + "/", "")
    lines = [l for l in text.splitlines() if l.strip()]
    if p.returncode == 0:
        mixed = foreign_headers(Path(f"{obj}.d"), tk)
        if mixed:
            return "FAILED", [f"read from another CUDA install: {h}" for h in mixed[:12]], dt
        return "ok", [], dt
    picked = [l for l in lines if re.search(r"error|warning", l, re.I)] or lines
    return "FAILED", picked[:12], dt


def same_compiler(tks: list[Toolkit], j: int) -> Toolkit | None:
    """An earlier toolkit of the same nvcc release (another CCCL), if any."""
    return next((t for t in tks[:j] if t.release and t.release == tks[j].release), None)


@dataclass
class Result:
    failures: int
    report: str
    cells: dict[tuple[int, int], tuple[str, list[str], float]]   # (unit, toolkit) -> cell
    units: list[Unit]


def run(tks: list[Toolkit], jobs: int, only: list[Unit] | None = None) -> Result:
    """Compile every unit with every toolkit and lay out the table."""
    us = only if only is not None else units()
    cells: dict[tuple[int, int], tuple[str, list[str], float]] = {}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bwlab-arch-") as tmp, ThreadPoolExecutor(jobs) as pool:
        futures = {(i, j): pool.submit(compile_one, u, tk, Path(tmp) / f"{i}_{j}.o", same_compiler(tks, j))
                   for j, tk in enumerate(tks) for i, u in enumerate(us)}
        for key, f in futures.items():
            cells[key] = f.result()
    wall = time.monotonic() - t0

    out = []
    for tk in tks:
        missing = [a for a in ARCHS if a not in tk.archs]
        cc = f"CCCL {tk.cccl // 1000000}.{tk.cccl // 1000 % 1000}" if tk.cccl else "no CCCL found"
        line = f"{tk.name}: {tk.nvcc} (CUDA {tk.release or '?'}, {cc}); sm_" + ", sm_".join(tk.archs)
        if missing:
            line += "; not in this toolkit: sm_" + ", sm_".join(missing)
        out.append(line)
    width = max(len(u.path) for u in us)
    colw = [max(len(tk.name), max(len(cells[(i, j)][0]) for i in range(len(us))))
            for j, tk in enumerate(tks)]
    out.append("")
    out.append(f"{'source':{width}}  " + "  ".join(f"{tk.name:{w}}" for tk, w in zip(tks, colw)))
    for i, u in enumerate(us):
        out.append(f"{u.path:{width}}  " + "  ".join(f"{cells[(i, j)][0]:{w}}" for j, w in enumerate(colw)))
    failures = 0
    for j, tk in enumerate(tks):
        for i, u in enumerate(us):
            status, lines, _dt = cells[(i, j)]
            if status == "FAILED":
                failures += 1
                out.append("")
                out.append(f"{u.path} with {tk.name}:")
                out.extend("  " + l for l in lines)
    built = sum(1 for c in cells.values() if c[0] in ("ok", "FAILED"))
    out.append("")
    out.append(f"arch matrix: {built - failures} of {built} builds ok, {failures} failed, "
               f"{len(cells) - built} not built (n/a, or as an earlier column); {wall:.0f} s with {jobs} jobs")
    return Result(failures, "\n".join(out), cells, us)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--toolkit", action="append", default=[], metavar="NAME=NVCC",
                    help="a toolkit to build with (repeatable); default: the nvcc on PATH")
    ap.add_argument("--jobs", type=int, default=2, help="nvcc runs at once (default 2)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error("--jobs must be 1 or more")
    specs = []
    for s in args.toolkit:
        name, sep, nvcc = s.partition("=")
        if not sep or not name or not nvcc:
            ap.error(f"--toolkit takes NAME=NVCC, not {s!r}")
        specs.append((name, nvcc))
    if not specs:
        nvcc = default_nvcc()
        if not nvcc:
            print("arch_matrix: no nvcc on PATH or in /usr/local/cuda/bin", file=sys.stderr)
            return 1
        specs = [("default", nvcc)]
    r = run(with_foreign([toolkit(n, p) for n, p in specs]), args.jobs)
    print(r.report)
    return 1 if r.failures else 0


if __name__ == "__main__":
    sys.exit(main())

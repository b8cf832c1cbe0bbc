"""run.py asm: the machine code of your kernels, and whether it is vectorized.

Compiles the one .cu file on its own (nvcc -cubin, or -ptx) for sm_90 by
default, whatever GPU this machine has or lacks, so it works without a GPU.
SASS comes from cuobjdump -sass (or nvdisasm) on that cubin; registers,
stack and spills from ptxas's own report (nvcc --resource-usage).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import EXIT_FAIL, EXIT_KIT, EXIT_OK, EXIT_USAGE, repo_root
from . import exercises as exmod
from . import optional_tools, sass
from .console import error, say

HELP = "show the SASS (or PTX) of your kernels and whether loads and stores are vectorized"

DEFAULT_ARCH = "90"
COMPILE_TIMEOUT = 300


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("exercise", help="the exercise (one of exercises/exercises.def)")
    view = p.add_mutually_exclusive_group()
    view.add_argument("--sass", action="store_true",
                      help="show SASS, the GPU's own instructions (the default)")
    view.add_argument("--ptx", action="store_true",
                      help="show PTX, the compiler's portable intermediate code")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--solutions", action="store_true",
                     help="the kit's reference solution instead of your file")
    src.add_argument("--submission", metavar="DIR",
                     help="the file from a submission (folder, .tar.gz or .zip)")
    p.add_argument("--arch", default=DEFAULT_ARCH, metavar="SM",
                   help="GPU architecture to compile for, e.g. 90 or sm_90 (default: 90, the H100)")
    p.add_argument("--summary", action="store_true",
                   help="print only the per-kernel summary, not the listing")


# ---------------------------------------------------------------------------
# Tools


def find_cuda_tool(name: str) -> str | None:
    """A CUDA toolkit program: on PATH, next to nvcc, or under CUDA_HOME,
    CUDA_PATH or /usr/local/cuda."""
    found = shutil.which(name)
    if found:
        return found
    dirs: list[Path] = []
    nvcc = shutil.which("nvcc")
    if nvcc:
        dirs += [Path(nvcc).parent, Path(os.path.realpath(nvcc)).parent]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            dirs.append(Path(os.environ[var]) / "bin")
    dirs.append(Path("/usr/local/cuda/bin"))
    for d in dirs:
        cand = d / name
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return None


def normalize_arch(arch: str) -> str | None:
    """'90', 'sm_90', 'sm90', '90a' -> 'sm_90' / 'sm_90a'; None if malformed."""
    m = re.fullmatch(r"(?:sm_?|compute_)?(\d{2,3}[af]?)", arch.strip().lower())
    return f"sm_{m.group(1)}" if m else None


# ---------------------------------------------------------------------------
# Source


class SourceError(Exception):
    """No source to compile (missing file, unusable submission)."""


def read_source(args: argparse.Namespace, ex: str) -> tuple[bytes, str]:
    """(content, how to name it to the user) of the file to compile."""
    root = repo_root()
    if getattr(args, "submission", None):
        from . import submission
        try:
            sub = submission.load(args.submission, [ex])
        except submission.SubmissionError as e:
            raise SourceError(str(e)) from None
        if ex not in sub.files:
            raise SourceError(f"{args.submission}: {sub.missing.get(ex, 'no file for ' + ex)}")
        inside = sub.found_at.get(ex, f"{ex}.cu")
        shown = (str(Path(args.submission) / inside) if sub.kind == "directory"
                 else f"{args.submission}:{inside}")
        return sub.files[ex], shown
    if getattr(args, "solutions", False):
        path = root / "solutions" / ex / f"{ex}.cu"
        if not path.is_file():
            raise SourceError(f"no reference solution for {ex} in this kit ({path.relative_to(root)} "
                              "is absent; the student handout leaves solutions out)")
        return path.read_bytes(), str(path.relative_to(root))
    path = root / "exercises" / ex / f"{ex}.cu"
    if not path.is_file():
        raise SourceError(f"missing file {path.relative_to(root)}")
    return path.read_bytes(), str(path.relative_to(root))


# ---------------------------------------------------------------------------
# Where the handout explains vectorized access

_GUIDE_TOPIC = re.compile(r"vectori[sz]|16 bytes per access|16-byte (?:loads|access)", re.I)
_GUIDE_TITLE = re.compile(r"^#{1,4}\s+(.+?)\s*$|^\*\*(.+?)\*\*")


GUIDE_FALLBACK = "handout/tools.md"


def guide_for(ex: str, root: Path | None = None) -> str:
    """'handout/NAME.md, 'TITLE'': the heading or bold hint on vectorized
    access of the exercise's own handout page, else of the first page (in
    the table's order) that has one; else the handout's page on the tools."""
    root = root or repo_root()
    try:
        table = exmod.names(root)
    except (OSError, ValueError):
        table = []
    for name in [ex] + [n for n in table if n != ex]:
        try:
            text = (root / "handout" / f"{name}.md").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            m = _GUIDE_TITLE.match(line.strip())
            if m:
                title = (m.group(1) or m.group(2)).strip().rstrip(".:")
                if _GUIDE_TOPIC.search(title):
                    return f"handout/{name}.md, '{title}'"
    return GUIDE_FALLBACK


# ---------------------------------------------------------------------------
# Compiling


class CompileError(Exception):
    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


def nvcc_command(nvcc: str, src: Path, out: Path, arch: str, mode: str, ex: str) -> list[str]:
    """nvcc compiling src alone to a cubin (mode 'cubin') or PTX (mode 'ptx').
    The contract header comes from the kit: exercises/EX comes first on the
    include path, and src sits alone in a scratch folder."""
    root = repo_root()
    cmd = [nvcc, f"-arch={arch}", f"-{mode}", "-O3", "-std=c++17",
           "-I", str(root / "exercises" / ex), "-I", str(root / "grader"),
           "-o", str(out), str(src)]
    if mode == "cubin":
        cmd.insert(3, "--resource-usage")
    return cmd


def run_tool(cmd: list[str], shown_src: str, tmp_src: Path) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT,
                              errors="replace")
    except subprocess.TimeoutExpired:
        raise CompileError(f"{Path(cmd[0]).name} took longer than {COMPILE_TIMEOUT} s; stopped") from None
    except OSError as e:
        raise CompileError(f"could not run {cmd[0]}: {e.strerror}") from None
    # Name the student's file as they know it, not by the scratch copy.
    for attr in ("stdout", "stderr"):
        setattr(proc, attr, getattr(proc, attr).replace(str(tmp_src), shown_src))
    if proc.returncode != 0:
        raise CompileError((proc.stderr + proc.stdout).strip() or
                           f"{Path(cmd[0]).name} failed with exit code {proc.returncode}")
    return proc


def disassembler() -> list[str] | None:
    """The command that prints SASS of a cubin, or None (PTX only then)."""
    cuobjdump = find_cuda_tool("cuobjdump")
    if cuobjdump:
        return [cuobjdump, "-sass"]
    nvdisasm = find_cuda_tool("nvdisasm")
    return [nvdisasm, "-c"] if nvdisasm else None


def compile_functions(content: bytes, ex: str, shown: str, arch: str, nvcc: str,
                      disasm: list[str] | None) -> tuple[list[sass.Function], dict[str, sass.Resources]]:
    """Compile content (the exercise's file) for arch; its functions parsed
    from SASS (with disasm) or PTX (disasm None), named and marked kernel or
    not, and ptxas's resource report. Raises CompileError."""
    with tempfile.TemporaryDirectory(prefix="bwlab-asm-") as tmp:
        tmpd = Path(tmp)
        src = tmpd / f"{ex}.cu"
        src.write_bytes(content)
        cubin = tmpd / f"{ex}.cubin"
        proc = run_tool(nvcc_command(nvcc, src, cubin, arch, "cubin", ex), shown, src)
        resources = sass.parse_ptxas_info(proc.stderr + "\n" + proc.stdout)
        if disasm is None:
            ptx = tmpd / f"{ex}.ptx"
            run_tool(nvcc_command(nvcc, src, ptx, arch, "ptx", ex), shown, src)
            funcs = sass.parse_ptx(ptx.read_text(errors="replace"))
        else:
            dproc = run_tool(disasm + [str(cubin)], shown, src)
            funcs = sass.parse_sass(dproc.stdout)
            if Path(disasm[0]).name.startswith("cuobjdump"):
                _add_res_usage(disasm[0], cubin, resources)
    for fn in funcs:
        if fn.entry is None:
            r = resources.get(fn.name)
            fn.entry = r.entry if r is not None and r.entry is not None else True
    names = sass.demangle([f.name for f in funcs])
    for fn in funcs:
        fn.display = names.get(fn.name, fn.name)
    return funcs, resources


# ---------------------------------------------------------------------------
# Output


def _times() -> str:
    enc = (getattr(sys.stdout, "encoding", None) or "").lower()
    return "\u00d7" if "utf" in enc else "x"


def _counts_line(fn: sass.Function, kind: str, spaces: tuple[str, ...]) -> str | None:
    x = _times()
    items = [(op, n) for op, n in sass.access_counts(fn, spaces)
             if any(a.op == op and a.kind == kind for a in fn.accesses)]
    if not items:
        return None
    return ", ".join(f"{op} {x}{n}" for op, n in items)


def _fmt_bytes(n: int | None) -> str:
    return "?" if n is None else f"{n} B"


def _loops_text(fn: sass.Function, is_sass: bool) -> str:
    if not fn.loops:
        return "none"
    if is_sass:
        spans = ", ".join(f"/*{lo:04x}*/ to /*{hi:04x}*/" for lo, hi in fn.loops)
    else:
        spans = ", ".join(f"lines {lo}-{hi} of its listing" for lo, hi in fn.loops)
    return f"{len(fn.loops)} ({spans})"


def summary_lines(fn: sass.Function, res: sass.Resources | None, is_sass: bool,
                  guide: str) -> list[str]:
    kind = "kernel" if fn.entry is not False else "device function"
    out = [f"{kind} {fn.shown_name}"]
    if res is not None:
        spills = ((res.spill_stores or 0) + (res.spill_loads or 0))
        parts = [f"registers {res.registers if res.registers is not None else '?'}",
                 f"stack frame {_fmt_bytes(res.stack)}",
                 f"spills {_fmt_bytes(res.spill_stores)} stored / {_fmt_bytes(res.spill_loads)} loaded"]
        if res.shared:
            parts.append(f"static shared {res.shared} B")
        out.append("  " + ", ".join(parts))
        if spills:
            out.append("  spills: registers ran out and values go to local memory (slow); "
                       "fewer values live at once, or a higher register limit, avoid them")
    else:
        out.append("  registers: ? (ptxas gave no report for this function)")
    loads = _counts_line(fn, "load", ("global", "generic", "bulk"))
    stores = _counts_line(fn, "store", ("global", "generic", "bulk"))
    out.append(f"  global loads:  {loads or 'none'}")
    out.append(f"  global stores: {stores or 'none'}")
    if any(a.space == "generic" for a in fn.accesses):
        out.append("  (generic LD/ST: the compiler could not prove the pointer is global; "
                   "they are counted with the global ones)")
    local = _counts_line(fn, "load", ("local",)), _counts_line(fn, "store", ("local",))
    if any(local):
        out.append("  local memory:  " + ", ".join(x for x in local if x)
                   + "  (spills, or a per-thread array indexed at run time)")
    atomics = _counts_line(fn, "atomic", ("global", "generic"))
    if atomics:
        out.append(f"  atomics:       {atomics}")
    out.append(f"  loops: {_loops_text(fn, is_sass)}")
    v = sass.verdict(fn, guide)
    if v.state == "none":
        out.append(f"  hot path vectorized: - ({v.text})")
    else:
        out.append(f"  hot path vectorized: {v.text}")
    return out


def _resources_for(name: str, table: dict[str, sass.Resources]) -> sass.Resources | None:
    return table.get(name)


def _add_res_usage(cuobjdump: str, cubin: Path, resources: dict[str, sass.Resources]) -> None:
    """Fill gaps in ptxas's report from cuobjdump -res-usage (best effort)."""
    try:
        proc = subprocess.run([cuobjdump, "-res-usage", str(cubin)], capture_output=True,
                              text=True, timeout=60, errors="replace")
    except (OSError, subprocess.SubprocessError):
        return
    if proc.returncode != 0:
        return
    for name, r in sass.parse_res_usage(proc.stdout).items():
        resources[name] = resources.get(name, sass.Resources()).merge(r)


# ---------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except KeyboardInterrupt:
        error("interrupted")
        return EXIT_FAIL
    except OSError as e:
        error(f"asm: {e.strerror or e}" + (f": {e.filename}" if e.filename else ""))
        return EXIT_KIT


def _run(args: argparse.Namespace) -> int:
    try:
        ex = exmod.select([args.exercise])[0].name
    except exmod.UnknownExercise as e:
        error(str(e))
        return EXIT_USAGE
    except exmod.ExerciseError as e:
        error(str(e))
        return EXIT_KIT
    except OSError as e:
        error(f"cannot read the exercise table: {e}")
        return EXIT_KIT
    arch = normalize_arch(args.arch)
    if arch is None:
        error(f"--arch {args.arch}: expected a number such as 90 (or sm_90)")
        return EXIT_USAGE
    try:
        content, shown = read_source(args, ex)
    except SourceError as e:
        error(str(e))
        return EXIT_USAGE

    nvcc = find_cuda_tool("nvcc")
    if not nvcc:
        error("nvcc not found: install the CUDA toolkit or add its bin folder to PATH "
              "(asm needs nvcc to compile, but no GPU)")
        return EXIT_KIT
    want_ptx = bool(args.ptx)
    disasm = None
    if not want_ptx:
        disasm = disassembler()
        if disasm is None:
            if args.sass:
                return optional_tools.refuse(optional_tools.ToolMissing(
                    "cuobjdump", "`run.py asm --sass` (or nvdisasm)",
                    f"`run.py asm {ex} --ptx` works with nvcc alone"))
            say("note: cuobjdump and nvdisasm not found, so no SASS; showing PTX instead "
                "(install the full CUDA toolkit for SASS)")
            want_ptx = True

    guide = guide_for(ex)
    try:
        funcs, resources = compile_functions(content, ex, shown, arch, nvcc, None if want_ptx else disasm)
    except CompileError as e:
        say(f"asm: {ex}: {shown} does not compile for {arch}:")
        say("")
        for line in e.text.splitlines():
            say("  " + line)
        return EXIT_FAIL

    what = "PTX" if want_ptx else "SASS"
    say(f"asm: {ex}, {shown}, {what} for {arch}")
    kernels = [f for f in funcs if f.entry]
    others = [f for f in funcs if not f.entry]
    if not funcs:
        say("this file defines no kernel yet (nothing to show: the stub launches nothing)")
        return EXIT_OK
    say(f"functions in this file: {len(kernels)} kernel{'s' if len(kernels) != 1 else ''}"
        + (f", {len(others)} device function{'s' if len(others) != 1 else ''} (not inlined)"
           if others else ""))
    for fn in funcs:
        say(f"  {'kernel         ' if fn.entry else 'device function'} {fn.shown_name}")
        if fn.display != fn.name:
            say(f"  {'':15} ({fn.name})")

    if not args.summary:
        for fn in funcs:
            say("")
            say(f"==== {'kernel' if fn.entry else 'device function'}: {fn.shown_name} ====")
            for line in fn.lines:
                say(line)

    say("")
    say("== summary ==")
    for fn in funcs:
        for line in summary_lines(fn, _resources_for(fn.name, resources), not want_ptx, guide):
            say(line)
        say("")
    say(sass.HEURISTIC)
    return EXIT_OK

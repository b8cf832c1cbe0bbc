"""A submission is its one file: the headers it may pull in are its
exercise's contract (and the kit headers the build puts on its include path)
and the compiler's and the system's own. Any other file it names is read at
compile time, as the grading user and outside every sandbox: the kit's
solutions (an #include of solutions/haxpy/haxpy.cu compiles to full marks),
the secret seed (its value printed back in a compiler error), other
submissions. A macro spelling the path hides it from a text scan, so the
check asks the preprocessor (nvcc -M) which files the source really reads,
before anything is compiled, and run.py grade refuses the file when one lies
elsewhere. Where the preprocessor fails, only its messages about the
submission's own lines are shown: an error inside another file would quote
that file."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

# The host compiler's and the C library's headers.
SYSTEM_ROOTS = ("/usr/include", "/usr/lib/gcc", "/usr/local/include", "/usr/lib/llvm")


def toolkit_roots(nvcc: str) -> list[Path]:
    """Where a CUDA toolkit's headers live: the folder above nvcc's bin/ and,
    for the Python registry's packages (nvidia-cuda-nvcc-cu12 and friends),
    the nvidia/ folder that holds them all."""
    root = Path(os.path.realpath(nvcc)).parent.parent
    roots = [root]
    for p in (root, *root.parents):
        if p.name == "nvidia" and p.parent.name in ("site-packages", "dist-packages"):
            roots.append(p)
            break
    return roots


def parse_make_rule(text: str) -> list[str]:
    """The prerequisites of `nvcc -M`'s make rule(s), in order."""
    body = text.replace("\\\n", " ")
    deps: list[str] = []
    for line in body.splitlines():
        if ":" not in line:
            continue
        _, rest = line.split(":", 1)
        deps += [d.replace("\\ ", " ") for d in re.split(r"(?<!\\)\s+", rest.strip()) if d]
    return deps


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


def check(source: Path, include_dirs: list[Path], nvcc: str, env: dict[str, str],
          timeout: float) -> tuple[str | None, str | None]:
    """(why the file is refused, or None; when the preprocessor failed, what
    to show instead of the compile: its messages on the file's own lines,
    maybe none; None when it did not fail)."""
    cmd = [nvcc, "-M", "-x", "cu", "-std=c++17", *[f"-I{d}" for d in include_dirs], str(source)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=env,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return "its #include lines took longer than the build's time limit to resolve", None
    except OSError:
        return None, None   # no nvcc: the build that follows says so
    if r.returncode != 0:
        return None, own_lines(r.stdout + r.stderr, source)
    allowed = [Path(os.path.realpath(source))] + [Path(os.path.realpath(d)) for d in include_dirs]
    allowed += toolkit_roots(nvcc) + [Path(p) for p in SYSTEM_ROOTS]
    for dep in parse_make_rule(r.stdout):
        real = Path(os.path.realpath(dep))
        if not _inside(real, allowed):
            return (f"it includes {dep}, a file outside the exercise's contract header and the "
                    "compiler's own: a submission is its one file, and it may #include only "
                    "its exercise's header and system or CUDA headers"), None
    return None, None


def own_lines(output: str, source: Path) -> str:
    """The preprocessor's messages whose place is the submission itself
    (with the source lines they quote); any other file's are left out."""
    keep, show = [], False
    name = str(source)
    for line in output.splitlines():
        if re.match(r"^\S.*?:\d+(:\d+)?: ", line) or line.startswith("In file included from"):
            show = line.startswith(name + ":")
        if show:
            keep.append(line)
    return "\n".join(keep)

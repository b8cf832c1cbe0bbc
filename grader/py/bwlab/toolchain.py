"""The tools' environment and what a CMake tree says of itself: shared by
build.py (which builds) and vet.py (which may compile a file again to
check it), so neither needs the other."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

CUDA_BIN = Path("/usr/local/cuda/bin")


def tool_env() -> dict[str, str]:
    """The environment for CMake: nvcc on PATH when CUDA sits in /usr/local/cuda."""
    env = dict(os.environ)
    if not shutil.which("nvcc", path=env.get("PATH")) and (CUDA_BIN / "nvcc").exists():
        env["PATH"] = f"{env.get('PATH', '')}{os.pathsep}{CUDA_BIN}".lstrip(os.pathsep)
    return env


def cache_values(bdir: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    cache = bdir / "CMakeCache.txt"
    if not cache.exists():
        return out
    for line in cache.read_text(errors="replace").splitlines():
        m = re.match(r"^([A-Za-z_0-9]+):[A-Z_]+=(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out

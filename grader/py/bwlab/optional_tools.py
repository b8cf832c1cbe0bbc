"""The tools some commands need and the kit does not: where to get each.

A command that needs one of them and cannot find it stops before it builds
anything, with one line naming the tool, what needs it and how to get it,
and exit code EXIT_TOOL (5), apart from 3 (no CUDA device) and 4 (the kit
did not build), so that a script can tell "install this" from the rest.
Finding the CUDA programs is left to their modules (cmd_asm.find_cuda_tool,
ncu.find_ncu, the grade runner's PATH); this module only words the refusal.
"""
from __future__ import annotations

import importlib.util
import shutil

from . import EXIT_TOOL, console

# tool -> how to get it. The apt names are those of NVIDIA's CUDA repository
# (replace 13-0 by the toolkit's version); the pip packages are NVIDIA's own.
HOW_TO_GET = {
    "cuobjdump": ("it is part of the CUDA Toolkit: apt-get install cuda-cuobjdump-13-0 (NVIDIA's "
                  "CUDA repository), or pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm "
                  "and add their bin folder to PATH"),
    "ncu": ("it is Nsight Compute, part of the CUDA Toolkit: apt-get install "
            "cuda-nsight-compute-13-0 (NVIDIA's CUDA repository), or NVIDIA's Nsight Compute "
            "installer; then put ncu on PATH"),
    "compute-sanitizer": ("it is part of the CUDA Toolkit: apt-get install cuda-sanitizer-13-0 "
                          "(NVIDIA's CUDA repository), or pip install nvidia-cuda-sanitizer-api "
                          "and add its nvidia/cu13/bin folder to PATH"),
    "matplotlib": "pip install matplotlib, or apt-get install python3-matplotlib",
}


class ToolMissing(Exception):
    """A needed optional tool is not there; str() is the line to print."""

    def __init__(self, tool: str, needed_for: str, extra: str = ""):
        self.tool = tool
        text = f"{tool} was not found, and {needed_for} needs it; {HOW_TO_GET[tool]}"
        super().__init__(text + (f" ({extra})" if extra else ""))


def refuse(e: ToolMissing) -> int:
    """Print the line; the exit code to return."""
    console.error(str(e))
    return EXIT_TOOL


def has_matplotlib() -> bool:
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        return False


def sanitizer_on(path: str | None) -> bool:
    """compute-sanitizer on this PATH (bwgrade looks for it there)."""
    return shutil.which("compute-sanitizer", path=path) is not None

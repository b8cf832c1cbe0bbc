"""run.py's modules: a thin layer that builds the kit with CMake, runs the
grader (bwgrade) and formats what it reports. The grader decides pass or fail
and takes the measurements; nothing here second-guesses it.

Python 3.10 or newer, standard library only.
"""
from __future__ import annotations

import os
from pathlib import Path

__version__ = "1.0"

# grader/py/bwlab/__init__.py -> the repository root is three levels above this package.
ROOT = Path(__file__).resolve().parents[3]

# Exit codes shared by the commands (bwgrade uses the first four).
EXIT_OK = 0          # everything passed
EXIT_FAIL = 1        # some exercise failed (a compile error counts as a failure)
EXIT_USAGE = 2       # bad command line, unknown exercise, unusable submission
EXIT_NO_DEVICE = 3   # built, but nothing could run (no CUDA device)
EXIT_KIT = 4         # the kit itself could not be configured or built
EXIT_TOOL = 5        # a tool this command needs is missing (cuobjdump, ncu, compute-sanitizer, matplotlib)


def repo_root() -> Path:
    """The kit's root directory (BWLAB_ROOT overrides it, for tests)."""
    env = os.environ.get("BWLAB_ROOT")
    return Path(env).resolve() if env else ROOT

"""Which of the kit's files make the student handout: the file list (git's
view of the checkout, else a walk of the tree) and the two lists that decide,
the deny-list first.

  ALLOW   the top-level paths a student needs (sources, handout, public tests)
  DENY    solutions, instructor files, grading-only tests and docs, build
          outputs, caches

run.py handout packs these files; run.py grade builds every submission
against the same files, so a submission sees exactly what a student has.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

# Paths (files, or folders with a trailing slash) that may go in.
ALLOW = (
    "run.py",
    "CMakeLists.txt",
    "README.md",
    ".gitignore",
    "exercises/",
    "grader/",
    "reference/",
    "handout/",
    "docs/",
    "tests/CMakeLists.txt",
    "tests/unit/",
    "tests/python/",
    "tests/corpus/",
    "tests/data/",
)

# Paths that never go in, whatever ALLOW says.
DENY = (
    "solutions/",
    "grader/instructor/",
    "docs/INSTRUCTORS.md",
    "docs/slurm/",
    "docs/ci/",
    # Tests of the instructor side: they need solutions/ or grader/instructor/.
    "tests/python/test_grading.py",
    "tests/python/test_handout_pack.py",
    "tests/python/test_e2e_grade_gpu.py",
    "tests/python/test_class_report.py",
    "tests/python/test_slurm_array.py",
    "tests/slurm/",
    "tests/data/grades_h100/",
    # Working kernels, or the solutions' code in other forms: a student would
    # get the answer (or the correctness points) for free.
    "tests/corpus/simple_correct/",
    "tests/corpus/too_few_blocks/",
    "tests/data/asm/vectorized.cu",
    "tests/data/asm/haxpy_solution.sm_90.cuobjdump.sass",
    "tests/data/asm_haxpy_solution_sm90.txt",
    "docs/BENCHMARKS.md",
    "tests/gpu/",
    "build/",
    "grades/",
    ".git/",
)
# Any path with one of these components, or ending so, stays out too.
DENY_PARTS = ("__pycache__", ".git", ".pytest_cache", ".mypy_cache")
DENY_SUFFIXES = (".pyc", ".pyo", ".o", ".orig", ".rej", ".swp", "~")
DENY_NAMES = ("secret_seed",)


def _matches(path: str, rule: str) -> bool:
    return path.startswith(rule) if rule.endswith("/") else path == rule


def verdict(path: str) -> str | None:
    """None if path goes in, else the rule that keeps it out."""
    parts = path.split("/")
    for part in parts:
        if part in DENY_PARTS:
            return f"{part}/"
    if parts[-1] in DENY_NAMES:
        return parts[-1]
    for suffix in DENY_SUFFIXES:
        if path.endswith(suffix):
            return f"*{suffix}"
    for rule in DENY:
        if _matches(path, rule):
            return rule
    if any(_matches(path, rule) for rule in ALLOW):
        return None
    return "not on the allow-list: " + (parts[0] + "/" if len(parts) > 1 else parts[0])


def _in_git_checkout(root: Path) -> bool:
    if not (root / ".git").exists():
        return False
    try:
        r = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and Path(r.stdout.strip()).resolve() == root.resolve()


def list_files(root: Path) -> tuple[list[str], str]:
    """The candidate files (relative POSIX paths, sorted) and where the list came from."""
    root = Path(root)
    if _in_git_checkout(root):
        r = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], capture_output=True, timeout=120)
        if r.returncode == 0:
            names = {n for n in r.stdout.decode("utf-8", "surrogateescape").split("\0") if n}
            # Deleted in the working tree but still in the index: nothing to pack.
            files = sorted(n for n in names if (root / n).is_file() and not (root / n).is_symlink())
            return files, "git ls-files"
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        dirnames[:] = sorted(d for d in dirnames
                             if d not in DENY_PARTS and not (rel_dir == "" and d in ("build", "grades")))
        for f in filenames:
            p = Path(dirpath) / f
            if p.is_file() and not p.is_symlink():
                files.append(rel_dir + f)
    return sorted(files), "a walk of the tree"


def select(files: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """(kept, left out grouped by the rule that kept each out)."""
    kept: list[str] = []
    left: dict[str, list[str]] = {}
    for f in files:
        why = verdict(f)
        if why is None:
            kept.append(f)
        else:
            left.setdefault(why, []).append(f)
    return kept, left

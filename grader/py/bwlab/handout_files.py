"""Which of the kit's files make the student handout: the file list (git's
view of the checkout, else a walk of the tree) and the two lists that decide,
the deny-list first.

  ALLOW   the top-level paths a student needs (sources, handout, public tests)
  DENY    solutions, instructor files, grading-only tests and docs, build
          outputs, caches

Then the corpus rule: an entry of tests/corpus/ goes in only when its
expect.json says that, submitted, it earns no correctness point
(corpus_zero_reason); a working kernel in the handout would be points for free.

run.py handout packs these files; run.py grade builds every submission
against the same files, so a submission sees exactly what a student has.
"""
from __future__ import annotations

import json
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
    "docs/exercise_template/",    # instructors' material, with a working solution
    "docs/slurm/",
    "docs/ci/",
    # Tests of the instructor side: they need solutions/ or grader/instructor/.
    "tests/python/grading_fixtures.py",       # what the test_grading_*.py share
    "tests/python/test_grading_scoring.py",
    "tests/python/test_grading_formats.py",
    "tests/python/test_grading_batch.py",
    "tests/python/test_grading_isolation.py",
    "tests/python/test_grading_lanes.py",
    "tests/python/test_grading_console.py",
    "tests/python/test_ci_recipes.py",        # reads docs/ci (not shipped)
    "tests/python/test_layout.py",            # the kit's own file rules (grader/instructor/ included)
    "tests/python/test_handout_pack.py",
    "tests/python/test_e2e_grade_gpu.py",
    "tests/python/test_class_report.py",
    "tests/python/test_grades_data.py",      # reads tests/data/grades_h100 (not shipped)
    "tests/python/test_verdicts_record.py",  # reads tests/data/verdicts (not shipped)
    "tests/python/test_slurm_array.py",
    "tests/python/test_exercise_template.py",  # reads docs/exercise_template (not shipped)
    "tests/python/test_arch_matrix.py",   # builds solutions/ with tests/arch_matrix.py (not shipped)
    "tests/slurm/",
    "tests/data/grades_h100/",
    "tests/data/verdicts/",       # the record of today's verdicts, for the kit's redesign
    # Working kernels, or the solutions' code in other forms: a student would
    # get the answer (or the correctness points) for free.
    # (Corpus entries are decided by their expect.json: see corpus_zero_reason.)
    "tests/data/asm/scalar_haxpy.cu",
    "tests/data/asm/vectorized.cu",
    "tests/data/asm/haxpy_solution.sm_90.cuobjdump.sass",
    "tests/data/asm_haxpy_solution_sm90.txt",
    "docs/BENCHMARKS.md",
    # The development log behind docs/SPEED.md: commits, stops, private probes.
    "docs/SPEED_HISTORY.md",
    "tests/gpu/",
    "build/",
    "grades/",
    ".git/",
)
# Any path with one of these components, or ending so, stays out too.
DENY_PARTS = ("__pycache__", ".git", ".pytest_cache", ".mypy_cache")
DENY_SUFFIXES = (".pyc", ".pyo", ".o", ".orig", ".rej", ".swp", "~")
DENY_NAMES = ("secret_seed",)


CORPUS = "tests/corpus/"
# Verdicts that earn no correctness point whatever the cases did
# (scoring.score_correctness): refused or not compiled, or still the stub.
ZERO_STATUSES = ("refused", "build_error", "not_implemented")


def corpus_zero_reason(expect: dict) -> str | None:
    """None when a corpus entry's expect.json says that the entry, graded,
    earns no correctness point; else why it may earn some. Both verdicts a
    run can be held to count (the full one, and "fail_fast"'s). A failing
    verdict must say so outright with "groups_passed": [] (no case group
    without a failure; tests/gpu/check_corpus.py holds the real runs to it):
    "outcomes" lists only outcomes that must appear, not all that may.
    A refused entry's "when_unvetted" verdict counts too: code that passes
    once vetting is off holds a working kernel a student could keep by
    deleting the refused part (forges_timing)."""
    views = [expect]
    for part in ("fail_fast", "when_unvetted"):
        if isinstance(expect.get(part), dict):
            views.append({**expect, **expect[part]})
    for v in views:
        status = v.get("status")
        if status == "pass":
            return "its expected verdict is pass"
        if "pass" in (v.get("outcomes") or []):
            return "some of its cases pass"
        if status not in ZERO_STATUSES and v.get("groups_passed") != []:
            return 'its expect.json does not claim "groups_passed": [] (every case group fails)'
    return None


def corpus_held_back(root: Path) -> dict[str, str]:
    """tests/corpus/ENTRY/ -> why it stays out, for every entry that may earn
    correctness points (or has no readable expect.json)."""
    out: dict[str, str] = {}
    base = Path(root) / CORPUS
    if not base.is_dir():
        return out
    for entry in sorted(base.iterdir()):
        if not entry.is_dir():
            continue
        try:
            expect = json.loads((entry / "expect.json").read_text(encoding="utf-8"))
            why = corpus_zero_reason(expect) if isinstance(expect, dict) else "expect.json is not an object"
        except (OSError, ValueError) as e:
            why = f"no usable expect.json ({type(e).__name__})"
        if why is not None:
            out[f"{CORPUS}{entry.name}/"] = f"corpus entry that may earn points: {why}"
    return out


def _matches(path: str, rule: str) -> bool:
    return path.startswith(rule) if rule.endswith("/") else path == rule


def verdict(path: str, held_back: dict[str, str] | None = None) -> str | None:
    """None if path goes in, else the rule that keeps it out. held_back:
    corpus_held_back's answer for the kit (folders and why they stay out)."""
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
    for rule, why in (held_back or {}).items():
        if _matches(path, rule):
            return why
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


def select(files: list[str], root: Path) -> tuple[list[str], dict[str, list[str]]]:
    """(kept, left out grouped by the rule that kept each out). root: the
    kit, whose corpus expectations decide which entries go in."""
    held_back = corpus_held_back(root)
    kept: list[str] = []
    left: dict[str, list[str]] = {}
    for f in files:
        why = verdict(f, held_back)
        if why is None:
            kept.append(f)
        else:
            left.setdefault(why, []).append(f)
    return kept, left

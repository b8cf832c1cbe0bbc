"""The exercise list, read from exercises/exercises.def (the kit's one table).

Only the lines that start with BW_EXERCISE( count; the C side reads the same
file as an X-macro and CMake reads it as text, so all three always agree.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import repo_root

NAME_RE = re.compile(r"^BW_EXERCISE\((\w+),")
# The full row: BW_EXERCISE(name, n_arrays, in_place, uses_alpha, "summary")
ROW_RE = re.compile(r'^BW_EXERCISE\((\w+),\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*"((?:[^"\\]|\\.)*)"\s*\)')


@dataclass(frozen=True)
class Exercise:
    name: str
    n_arrays: int | None = None
    in_place: bool | None = None
    uses_alpha: bool | None = None
    summary: str = ""

    def student_file(self) -> str:
        """Where the student's file lives, relative to the kit root."""
        return f"exercises/{self.name}/{self.name}.cu"


class UnknownExercise(ValueError):
    pass


def table_path(root: Path | None = None) -> Path:
    return (root or repo_root()) / "exercises" / "exercises.def"


def parse(text: str) -> list[Exercise]:
    out: list[Exercise] = []
    seen: set[str] = set()
    for line in text.splitlines():
        m = NAME_RE.match(line)
        if not m:
            continue
        name = m.group(1)
        if name in seen:
            continue
        seen.add(name)
        full = ROW_RE.match(line)
        if full:
            out.append(Exercise(name, int(full.group(2)), full.group(3) != "0",
                                full.group(4) != "0", full.group(5).replace('\\"', '"')))
        else:
            out.append(Exercise(name))
    return out


def load(root: Path | None = None) -> list[Exercise]:
    return parse(table_path(root).read_text(encoding="utf-8"))


def names(root: Path | None = None) -> list[str]:
    return [e.name for e in load(root)]


def select(requested: list[str] | None, root: Path | None = None) -> list[Exercise]:
    """The exercises named on the command line, in that order, without repeats;
    all of them, in table order, when none is named."""
    table = load(root)
    if not requested:
        return table
    by_name = {e.name: e for e in table}
    chosen: list[Exercise] = []
    for name in requested:
        if name not in by_name:
            known = ", ".join(by_name) or "(none)"
            raise UnknownExercise(f"unknown exercise '{name}' (this kit has: {known})")
        if by_name[name] not in chosen:
            chosen.append(by_name[name])
    return chosen


def from_list(text: str, table: list[Exercise]) -> list[str]:
    """The names an --exercises LIST gives (comma-separated), without repeats,
    in the order given, each in the table. Raises ValueError (UnknownExercise
    for a name the table lacks) whose text is the one line to print."""
    known = [e.name for e in table]
    shown = ", ".join(known) or "(none)"
    items = [i.strip() for i in text.split(",")]
    if not text.strip():
        raise ValueError(f"--exercises names no exercise (give one or more of: {shown}; comma-separated)")
    if not all(items):
        raise ValueError(f"--exercises: '{text}' has an empty item (give one or more of: {shown}; "
                         "comma-separated)")
    for name in items:
        if name not in known:
            raise UnknownExercise(f"--exercises: unknown exercise '{name}' (this kit has: {shown})")
    return list(dict.fromkeys(items))

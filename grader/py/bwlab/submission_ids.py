"""Submission ids (the file or folder name without its archive extension),
the batch they make, and the shards of it (run.py grade --shard K/N)."""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from . import gradebook
from .console import printable

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar", ".zip")


def submission_id(path: str | Path) -> str:
    """The file or directory name without its archive extension, as
    console.printable shows it: a name that is not UTF-8, or holds escape
    sequences, would stop the grade or reach every report raw. A backslash
    of the name is doubled first, so that two names never share an id: a
    name spelt like another's escape ("a\\x1b" beside "a" + ESC) would
    otherwise refuse the whole batch as a duplicate."""
    p = Path(path)
    name = p.name or Path(os.path.abspath(path)).name
    if not p.is_dir():
        low = name.lower()
        for suffix in ARCHIVE_SUFFIXES:
            if low.endswith(suffix) and len(name) > len(suffix):
                name = name[:-len(suffix)]
                break
    return printable(name.replace("\\", "\\\\"))


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """'K/N' (1-based: K from 1 to N) -> (K, N)."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m:
        raise ValueError(f"--shard {text}: use K/N, for example 1/4")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= k <= n:
        raise ValueError(f"--shard {text}: K runs from 1 to N (1-based)")
    return k, n


def shard_select(ids: list[str], shard: tuple[int, int] | None) -> list[str]:
    """Sorted ids; shard K/N keeps index i (0-based in the sorted list) when i % N == K-1."""
    ordered = sorted(ids)
    if shard is None:
        return ordered
    k, n = shard
    return [x for i, x in enumerate(ordered) if i % n == k - 1]


def ids_digest(ids: list[str]) -> str:
    return hashlib.sha256("\0".join(sorted(ids)).encode("utf-8")).hexdigest()


def collect(paths: list[str]) -> dict[str, Path]:
    """id -> path. ValueError on a missing path, a duplicate or reserved id
    (its text printable: the paths are the students' names)."""
    out: dict[str, Path] = {}
    for p in paths:
        path = Path(p)
        if not os.path.lexists(path):
            raise ValueError(f"no such file or directory: {printable(p)}")
        sid = submission_id(p)
        if not sid or set(sid) <= {"."}:
            raise ValueError(f"{printable(p)}: cannot make a submission id from this name")
        if sid in gradebook.RESERVED_IDS:
            raise ValueError(f"{printable(p)}: the id '{sid}' is reserved for an output file; rename it")
        if sid in out:
            raise ValueError(f"two submissions have the id '{sid}': {printable(out[sid])} and "
                             f"{printable(p)}")
        out[sid] = path
    return out

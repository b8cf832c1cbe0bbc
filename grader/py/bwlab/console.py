"""Small formatting helpers shared by the commands: messages, tables, counts."""
from __future__ import annotations

import os
import sys
import unicodedata
from typing import Iterable, Sequence

PROG = "run.py"


def say(text: str = "") -> None:
    """A line for the user, on stdout, flushed so it interleaves with child output."""
    print(text, flush=True)


def error(text: str) -> None:
    """An error message on stderr, prefixed so it stands out in a long log."""
    sys.stdout.flush()
    print(f"{PROG}: error: {text}", file=sys.stderr, flush=True)


def warn(text: str) -> None:
    sys.stdout.flush()
    print(f"{PROG}: warning: {text}", file=sys.stderr, flush=True)


def printable(text: object) -> str:
    """Text a student controls (a file name, a worker's output), made safe to
    print on one line of a terminal or a CI log: bytes that are not UTF-8 as
    \\xNN, and every control or format character (escape sequences, newlines
    that would start a CI workflow command such as ::add-mask::, bidi
    overrides) as \\xNN or \\uNNNN."""
    s = str(text)
    if any("\udc80" <= ch <= "\udcff" for ch in s):   # undecodable bytes of a file name
        s = os.fsencode(s).decode("utf-8", "backslashreplace")
    out = []
    for ch in s:
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def heading(text: str) -> None:
    say("")
    say(f"== {text} ==")


def indent(lines: Iterable[str], prefix: str = "    ") -> str:
    return "\n".join(prefix + line if line else line for line in lines)


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]],
          right: Sequence[bool] | None = None, gap: str = "  ") -> str:
    """A plain-text table. Cells are str()'d; None prints as '-'.
    right[i] says whether column i is right-aligned (numbers); the default
    right-aligns every column but the first."""
    cells = [[("-" if c is None else str(c)) for c in row] for row in rows]
    ncol = len(headers)
    if right is None:
        right = [i > 0 for i in range(ncol)]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, c in enumerate(row[:ncol]):
            widths[i] = max(widths[i], len(c))

    def fmt(row: Sequence[str]) -> str:
        out = []
        for i in range(ncol):
            c = row[i] if i < len(row) else ""
            out.append(c.rjust(widths[i]) if right[i] else c.ljust(widths[i]))
        return gap.join(out).rstrip()

    lines = [fmt(list(headers)), gap.join("-" * w for w in widths)]
    lines += [fmt(r) for r in cells]
    return "\n".join(lines)


def number(x: object, digits: int = 1) -> str:
    """A float with fixed decimals, an int with thousands separators, '-' for None."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        return f"{x:,.{digits}f}"
    return str(x)

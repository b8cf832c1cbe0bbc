"""A handout that holds some of the kit's exercises (run.py handout
--exercises LIST): which of the packing list's files belong to the exercises
left out, and the files rewritten for the ones handed out.

Left out, for each exercise not on the list:
  exercises/NAME/            its stub, contract and adapter
  handout/NAME.md            its page
  grader/peers/NAME_*.cu     its library peers (CMake globs peers by exercise
                             name; a peer whose prefix matches a shorter
                             listed name would otherwise be built as its peer)
  tests/corpus/ENTRY/        entries whose expect.json "exercise" names it
                             (an entry naming no exercise stays out too)

Rewritten:
  exercises/exercises.def    its BW_EXERCISE(name lines for the listed names
                             only (everything else kept as it is), so that
                             CMake, the grader's X-macro and run.py, which all
                             read this table, see exactly the handed-out ones
  *.md                       a link to a file left out here would be dead: a
                             table row holding one is dropped (handout/README's
                             exercise table lists what was handed out) and a
                             note follows that table; any other such link
                             becomes its text, marked "(not in this handout)"
"""
from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

from .exercises import NAME_RE, from_list, table_names

TABLE = "exercises/exercises.def"
CORPUS = "tests/corpus/"
PEERS = "grader/peers/"

NOT_HERE = " (not in this handout)"
TABLE_NOTE = ("This handout holds the exercises in the table above only; where a page "
              "names another one, it is not part of this course.")

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target "title"): group 1 the text, group 2 the target.
LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(\s*(<[^>\n]*>|[^)\s]+)(?:\s+\"[^\"\n]*\")?\s*\)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def requested(text: str, table_text: str) -> list[str]:
    """The names --exercises gives, checked against the table's text
    (exercises.from_list says how)."""
    return from_list(text, table_names(table_text))


def trim_table(text: str, keep: list[str]) -> str:
    """exercises.def with the BW_EXERCISE(name...) lines of the names not in
    keep removed; comments and every other line as they were."""
    lines = text.splitlines(keepends=True)
    return "".join(l for l in lines if not (m := NAME_RE.match(l)) or m.group(1) in keep)


def _owner(name: str, prefix_of: list[str]) -> str | None:
    """The exercise a per-exercise file NAME_* belongs to: the longest table
    name that is a prefix followed by '_' (with exercises a and a_b, the
    peer a_b_cub.cu is a_b's, not a's)."""
    best = None
    for ex in prefix_of:
        if name.startswith(ex + "_") and (best is None or len(ex) > len(best)):
            best = ex
    return best


def _corpus_exercise(root: Path, entry: str) -> str | None:
    try:
        expect = json.loads((Path(root) / CORPUS / entry / "expect.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ex = expect.get("exercise") if isinstance(expect, dict) else None
    return ex if isinstance(ex, str) else None


def left_out(files: list[str], root: Path, table: list[str], keep: list[str]) -> dict[str, str]:
    """file -> why it stays out of a handout of the exercises in keep (table:
    every exercise of the kit)."""
    dropped = [ex for ex in table if ex not in keep]
    out: dict[str, str] = {}
    corpus_cache: dict[str, str | None] = {}
    for f in files:
        parts = f.split("/")
        why = None
        if len(parts) > 2 and parts[0] == "exercises" and parts[1] in dropped:
            why = f"exercise {parts[1]} not handed out"
        elif len(parts) == 2 and parts[0] == "handout" and parts[1][:-3] in dropped \
                and parts[1].endswith(".md"):
            why = f"exercise {parts[1][:-3]} not handed out"
        elif f.startswith(PEERS) and len(parts) == 3:
            owner = _owner(parts[2], table)
            if owner in dropped:
                why = f"exercise {owner} not handed out"
        elif f.startswith(CORPUS) and len(parts) > 3:
            entry = parts[2]
            if entry not in corpus_cache:
                corpus_cache[entry] = _corpus_exercise(root, entry)
            ex = corpus_cache[entry]
            if ex is None:
                why = "corpus entry that names no exercise (expect.json)"
            elif ex not in keep:
                why = f"exercise {ex} not handed out"
        if why is not None:
            out[f] = why
    return out


def _mask_code_spans(line: str) -> str:
    return CODE_SPAN.sub(lambda s: " " * len(s.group(0)), line)


def _is_table_row(line: str) -> bool:
    return line.lstrip().startswith("|")


def _folders(paths: set[str]) -> set[str]:
    out = set()
    for p in paths:
        parts = p.split("/")
        out.update("/".join(parts[:i]) for i in range(1, len(parts)))
    return out


def unlink_missing(rel: str, text: str, gone: set[str], kept: set[str]) -> str:
    """The Markdown file rel (a path in the kit) with its links to the files
    in gone (or to folders that hold only such files, none of kept) taken
    out: table rows dropped, with a note after the table; other links become
    plain text."""
    gone_folders = _folders(gone) - _folders(kept)

    def dead(target: str) -> bool:
        if target.startswith("<"):
            target = target[1:-1]
        if SCHEME.match(target) or target.startswith(("//", "#")):
            return False
        path = target.partition("#")[0]
        dest = posixpath.normpath(posixpath.join(posixpath.dirname(rel), path))
        return dest in gone or dest in gone_folders

    lines = text.split("\n")
    # First the fate of each line: None kept as is, "" dropped, else rewritten.
    fate: list[str | None] = [None] * len(lines)
    in_table = [False] * len(lines)
    fence = None
    for i, line in enumerate(lines):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * len(m.group(1))
            continue
        if fence is not None:
            if line.strip().startswith(fence) and set(line.strip()) <= {fence[0]}:
                fence = None
            continue
        in_table[i] = _is_table_row(line)
        hits = [h for h in LINK.finditer(_mask_code_spans(line)) if dead(h.group(2))]
        if not hits:
            continue
        if in_table[i]:
            fate[i] = ""
            continue
        for h in reversed(hits):
            line = line[:h.start()] + line[h.start(1):h.end(1)] + NOT_HERE + line[h.end():]
        fate[i] = line
    out: list[str] = []
    lost_rows = False
    for i, line in enumerate(lines):
        if fate[i] != "":
            out.append(line if fate[i] is None else fate[i])
        lost_rows = lost_rows or (in_table[i] and fate[i] == "")
        # The end of a table that lost rows: say why it is short.
        if lost_rows and in_table[i] and not (i + 1 < len(lines) and in_table[i + 1]):
            out += ["", TABLE_NOTE]
            lost_rows = False
    return "\n".join(out)


def rewritten(root: Path, kept: list[str], gone: set[str], keep: list[str]) -> dict[str, bytes]:
    """path -> new contents, for the kept files that change in a subset
    handout: the trimmed table, and the Markdown that linked to a file in gone."""
    root = Path(root)
    out = {TABLE: trim_table((root / TABLE).read_text(encoding="utf-8"), keep).encode("utf-8")}
    shipped = set(kept)
    for rel in kept:
        if not rel.endswith(".md"):
            continue
        text = (root / rel).read_text(encoding="utf-8")
        new = unlink_missing(rel, text, gone, shipped)
        if new != text:
            out[rel] = new.encode("utf-8")
    return out

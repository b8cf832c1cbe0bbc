"""The exercises: their list in exercises/exercises.def (the kit's one
table), and each one's declaration in exercises/NAME/exercise.def.

The table: only the lines that start with BW_EXERCISE( count, and only the
name is taken from them, so both forms read the same:

    BW_EXERCISE(name)
    BW_EXERCISE(name, n_arrays, in_place, uses_alpha, "summary")   (the older form)

A declaration (exercise.def): one item a line, C comments allowed:

    BW_SUMMARY("text")
    BW_SHAPE(ELEMENTWISE | REDUCTION | MATRIX)
    BW_SCALAR(name)                      zero or more: float scalars the function takes
    BW_ARRAY(name, TYPE, ROLE, EXTENT)   one per array, in the function's order
        TYPE    BF16 | F16 | F32
        ROLE    IN (read) | OUT (written) | INOUT (read, then overwritten in place)
        EXTENT  N (n elements) | ONE (one element) | ROWS_COLS (rows x cols)
                | COLS_ROWS (the same elements laid out cols x rows)

The C side reads both files as X-macros and CMake reads them as text, so all
of them agree on what an exercise is; what each call must move (traffic())
follows from the arrays' roles, types and extents.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import repo_root

TABLE = "exercises/exercises.def"
DECLARATION = "exercise.def"        # in exercises/NAME/

# A table line, either form: the name, then ',' or ')'.
NAME_RE = re.compile(r"^BW_EXERCISE\(\s*(\w+)\s*[,)]")

TYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4}
ROLES = ("IN", "OUT", "INOUT")
EXTENTS = ("N", "ONE", "ROWS_COLS", "COLS_ROWS")
SHAPES = ("ELEMENTWISE", "REDUCTION", "MATRIX")
MATRIX_EXTENTS = ("ROWS_COLS", "COLS_ROWS")
ITEMS = ("BW_SUMMARY", "BW_SHAPE", "BW_SCALAR", "BW_ARRAY")

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ITEM = re.compile(r"^\s*(\w+)\s*\((.*)\)\s*$")
_STRING = re.compile(r'^\s*"((?:[^"\\\n]|\\.)*)"\s*$')


class ExerciseError(ValueError):
    """A missing or malformed table line or exercise.def; the text names the
    file and the line."""


class UnknownExercise(ValueError):
    pass


@dataclass(frozen=True)
class Array:
    name: str
    type: str       # TYPE_BYTES
    role: str       # ROLES
    extent: str     # EXTENTS

    @property
    def elem_bytes(self) -> int:
        return TYPE_BYTES[self.type]

    @property
    def read(self) -> bool:
        return self.role in ("IN", "INOUT")

    @property
    def written(self) -> bool:
        return self.role in ("OUT", "INOUT")

    def elements(self, n: int, rows: int | None = None, cols: int | None = None) -> int:
        """Elements of this array in a call of size n (rows x cols for a matrix)."""
        if self.extent == "ONE":
            return 1
        if self.extent in MATRIX_EXTENTS and rows is not None and cols is not None:
            return rows * cols
        return n


@dataclass(frozen=True)
class Exercise:
    name: str
    summary: str = ""
    shape: str = ""
    scalars: tuple[str, ...] = ()
    arrays: tuple[Array, ...] = ()

    @property
    def n_arrays(self) -> int:
        return len(self.arrays)

    @property
    def in_place(self) -> bool:
        """Some array is read, then overwritten (INOUT)."""
        return any(a.role == "INOUT" for a in self.arrays)

    @property
    def uses_alpha(self) -> bool:
        """The function takes a float scalar."""
        return bool(self.scalars)

    @property
    def matrix(self) -> bool:
        """Sized rows x cols rather than by an element count."""
        return self.shape == "MATRIX"

    def student_file(self) -> str:
        """Where the student's file lives, relative to the kit root."""
        return f"exercises/{self.name}/{self.name}.cu"

    def traffic(self, n: int, rows: int | None = None, cols: int | None = None) -> tuple[int, int]:
        """(bytes read, bytes written) one call must move at size n: every
        array read (IN, INOUT) read once, every array written (OUT, INOUT)
        written once. A matrix may be given as rows and cols (then
        n = rows * cols)."""
        if (rows is None) != (cols is None):
            raise ValueError("traffic(): give both rows and cols, or neither")
        if rows is not None and cols is not None and n != rows * cols:
            raise ValueError(f"traffic(): n = {n} is not rows * cols = {rows} * {cols}")
        read = sum(a.elements(n, rows, cols) * a.elem_bytes for a in self.arrays if a.read)
        written = sum(a.elements(n, rows, cols) * a.elem_bytes for a in self.arrays if a.written)
        return read, written


# ---------------------------------------------------------------------------
# The table


def table_path(root: Path | None = None) -> Path:
    return (root or repo_root()) / TABLE


def table_names(text: str, source: str = TABLE) -> list[str]:
    """The names the table lists, in its order, without repeats. A line that
    starts with BW_EXERCISE( but names nothing raises ExerciseError."""
    out: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("BW_EXERCISE("):
            continue
        m = NAME_RE.match(line)
        if not m:
            raise ExerciseError(f"{source}:{number}: '{line.strip()}' names no exercise "
                                "(write BW_EXERCISE(name))")
        if m.group(1) not in out:
            out.append(m.group(1))
    return out


# ---------------------------------------------------------------------------
# A declaration


def declaration_path(name: str, root: Path | None = None) -> Path:
    return (root or repo_root()) / "exercises" / name / DECLARATION


def _strip_comments(text: str, source: str) -> str:
    """text with /* */ and // comments blanked out (line breaks kept, so line
    numbers stay), string literals left alone."""
    out: list[str] = []
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] not in '"\n':
                j += 2 if text[j] == "\\" and text[j + 1:j + 2] not in ("", "\n") else 1
            if j >= n or text[j] == "\n":
                raise ExerciseError(f"{source}:{line}: a string is not closed on its line")
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise ExerciseError(f"{source}:{line}: a /* comment is not closed")
            body = text[i:j + 2]
            out.append(re.sub(r"[^\n]", " ", body))
            line += body.count("\n")
            i = j + 2
        else:
            if c == "\n":
                line += 1
            out.append(c)
            i += 1
    return "".join(out)


def _one_of(value: str, allowed: tuple[str, ...] | dict, what: str, where: str) -> str:
    if value not in allowed:
        raise ExerciseError(f"{where}: unknown {what} '{value}' (use one of {', '.join(allowed)})")
    return value


def parse_declaration(text: str, name: str, source: str | None = None) -> Exercise:
    """The Exercise an exercise.def declares. Raises ExerciseError naming
    source (the file, as shown) and the line."""
    source = source or f"exercises/{name}/{DECLARATION}"
    summary: str | None = None
    shape: str | None = None
    scalars: list[str] = []
    arrays: list[Array] = []
    item_line: dict[str, int] = {}    # BW_SUMMARY, BW_SHAPE -> its line
    name_line: dict[str, int] = {}    # scalar or array name -> its line
    for number, line in enumerate(_strip_comments(text, source).splitlines(), 1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        m = _ITEM.match(line)
        if not m:
            raise ExerciseError(f"{where}: '{line.strip()}' is not an item (one a line: "
                                "BW_SUMMARY(\"text\"), BW_SHAPE(...), BW_SCALAR(name) or "
                                "BW_ARRAY(name, TYPE, ROLE, EXTENT))")
        item, body = m.group(1), m.group(2)
        if item not in ITEMS:
            raise ExerciseError(f"{where}: unknown item {item} (items: {', '.join(ITEMS)})")
        if item == "BW_SUMMARY":
            s = _STRING.match(body)
            if not s:
                raise ExerciseError(f"{where}: BW_SUMMARY takes one string in double quotes")
            if summary is not None:
                raise ExerciseError(f"{where}: a second BW_SUMMARY (line {item_line['BW_SUMMARY']} "
                                    "has the first)")
            summary = re.sub(r"\\(.)", r"\1", s.group(1))
            item_line[item] = number
            continue
        if "(" in body or ")" in body:
            raise ExerciseError(f"{where}: one item a line ('{line.strip()}' holds more)")
        args = [a.strip() for a in body.split(",")]
        if item == "BW_SHAPE":
            if len(args) != 1:
                raise ExerciseError(f"{where}: BW_SHAPE takes one shape ({', '.join(SHAPES)})")
            if shape is not None:
                raise ExerciseError(f"{where}: a second BW_SHAPE (line {item_line['BW_SHAPE']} has the first)")
            shape = _one_of(args[0], SHAPES, "shape", where)
            item_line[item] = number
            continue
        want = 1 if item == "BW_SCALAR" else 4
        if len(args) != want:
            raise ExerciseError(f"{where}: {item} takes {want} item{'s' if want > 1 else ''} "
                                + ("(name)" if want == 1 else "(name, TYPE, ROLE, EXTENT)")
                                + f", not {len(args)}")
        if not _IDENT.fullmatch(args[0]):
            raise ExerciseError(f"{where}: '{args[0]}' is not a name (letters, digits, _)")
        if args[0] in name_line:
            raise ExerciseError(f"{where}: '{args[0]}' is declared twice (line {name_line[args[0]]})")
        name_line[args[0]] = number
        if item == "BW_SCALAR":
            scalars.append(args[0])
            continue
        arrays.append(Array(args[0], _one_of(args[1], TYPE_BYTES, "type", where),
                            _one_of(args[2], ROLES, "role", where),
                            _one_of(args[3], EXTENTS, "extent", where)))
    for item, value in (("BW_SUMMARY", summary), ("BW_SHAPE", shape)):
        if value is None:
            raise ExerciseError(f"{source}: no {item} line")
    if not arrays:
        raise ExerciseError(f"{source}: no BW_ARRAY line (the function takes at least one array)")
    written = [a for a in arrays if a.written]
    if not written:
        raise ExerciseError(f"{source}:{name_line[arrays[-1].name]}: no array is written "
                            "(OUT or INOUT); an exercise writes exactly one")
    if len(written) > 1:
        raise ExerciseError(f"{source}:{name_line[written[1].name]}: {written[1].name} is a second "
                            f"written array (after {written[0].name}); an exercise writes exactly one")
    for a in arrays:
        where = f"{source}:{name_line[a.name]}"
        if shape == "ELEMENTWISE" and a.extent != "N":
            raise ExerciseError(f"{where}: {a.name} is {a.extent}, but every array of an "
                                "ELEMENTWISE exercise is N")
        if shape == "REDUCTION" and a.written and a.extent != "ONE":
            raise ExerciseError(f"{where}: {a.name} is {a.extent}, but a REDUCTION writes ONE element")
        if shape == "REDUCTION" and not a.written and a.extent != "N":
            raise ExerciseError(f"{where}: {a.name} is {a.extent}, but a REDUCTION's inputs are N")
        if shape == "MATRIX" and a.extent not in MATRIX_EXTENTS:
            raise ExerciseError(f"{where}: {a.name} is {a.extent}, but every array of a MATRIX "
                                f"exercise is {' or '.join(MATRIX_EXTENTS)}")
    return Exercise(name, summary or "", shape or "", tuple(scalars), tuple(arrays))


def read(name: str, root: Path | None = None) -> Exercise:
    """The exercise NAME as exercises/NAME/exercise.def declares it. Raises
    ExerciseError when that file is missing or malformed."""
    path = declaration_path(name, root)
    source = f"exercises/{name}/{DECLARATION}"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ExerciseError(f"{source}: missing (every exercise in {TABLE} declares itself "
                            "there)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ExerciseError(f"{source}: cannot read it: {getattr(e, 'strerror', None) or e}") from None
    return parse_declaration(text, name, source)


# ---------------------------------------------------------------------------
# The kit's exercises


def names(root: Path | None = None) -> list[str]:
    """The table's names, in its order (no declaration is read)."""
    return table_names(table_path(root).read_text(encoding="utf-8"))


def load(root: Path | None = None) -> list[Exercise]:
    """Every exercise of the table, in its order, as declared."""
    return [read(name, root) for name in names(root)]


def select(requested: list[str] | None, root: Path | None = None) -> list[Exercise]:
    """The exercises named on the command line, in that order, without repeats;
    all of them, in table order, when none is named. Only the chosen ones'
    declarations are read."""
    table = names(root)
    if not requested:
        return [read(name, root) for name in table]
    chosen: list[str] = []
    for name in requested:
        if name not in table:
            known = ", ".join(table) or "(none)"
            raise UnknownExercise(f"unknown exercise '{name}' (this kit has: {known})")
        if name not in chosen:
            chosen.append(name)
    return [read(name, root) for name in chosen]


def from_list(text: str, table: list[Exercise] | list[str]) -> list[str]:
    """The names an --exercises LIST gives (comma-separated), without repeats,
    in the order given, each in the table (the kit's exercises, or their
    names). Raises ValueError (UnknownExercise for a name the table lacks)
    whose text is the one line to print."""
    known = [e if isinstance(e, str) else e.name for e in table]
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

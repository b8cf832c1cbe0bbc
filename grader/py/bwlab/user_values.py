"""The values a user types (seeds, case indices, element counts, matrix
shapes, offsets),
checked by the rules bwgrade's own parsers apply (grader/modes/main.c), so that a
bad one is refused with one line before anything is built.

Each check_* function returns the value as bwgrade should get it, or raises
BadValue whose text says what is wrong and what is accepted. The argparse_*
wrappers make them argparse `type=` functions (the option's name is added by
argparse, and cli.py prints the result as one line).
"""
from __future__ import annotations

import argparse
import os
import re
from typing import Callable

INT_MAX = 2 ** 31 - 1
U64_MAX = 2 ** 64 - 1
MAX_OFFSET = 127          # 2 * offset must stay below the 256-byte alignment (grader/judge/image.h)
MAX_PROFILE_CALLS = 1000  # bwgrade bench --profile-calls

# bwgrade's parse_u64: decimal, or hex after 0x; a digit first (no sign, no space).
_U64_RE = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]+")
# bwgrade's parse_size: N, 2^P, 2^P+K or 2^P-K.
_POW_RE = re.compile(r"2\^([0-9]+)(?:([+-])([0-9]+))?")

# A matrix exercise's size: rows x cols, both in decimal.
_SHAPE_RE = re.compile(r"([0-9]+)[xX]([0-9]+)")

SIZE_FORMS = "N, 2^P, 2^P+K, 2^P-K; 1 to 2^31-1"
SHAPE_FORMS = "RxC, rows and cols from 1, rows*cols at most 2^31-1"
SEED_FORMS = "a non-negative integer, decimal or 0x hex, below 2^64"


class BadValue(ValueError):
    pass


def _u64(text: str) -> int | None:
    if not _U64_RE.fullmatch(text):
        return None
    value = int(text, 16) if text[:2].lower() == "0x" else int(text, 10)
    return value if value <= U64_MAX else None


def check_seed(text: str) -> int:
    value = _u64(text)
    if value is None:
        raise BadValue(f"'{text}' is not a seed ({SEED_FORMS})")
    return value


def check_case(text: str) -> int:
    value = _u64(text)
    if value is None or value > INT_MAX:
        raise BadValue(f"'{text}' is not a case index (a whole number from 0, below the "
                       "exercise's case count that `run.py test`'s summary line shows)")
    return value


def _size(text: str) -> int | None:
    m = _POW_RE.fullmatch(text)
    if m:
        p = int(m.group(1))
        if p > 31:
            return None
        value = 1 << p
        if m.group(2):
            k = int(m.group(3))
            if k > INT_MAX:
                return None
            value = value + k if m.group(2) == "+" else value - k
    else:
        value = _u64(text)
    return value if value is not None and 1 <= value <= INT_MAX else None


def check_size(text: str) -> int:
    value = _size(text.strip())
    if value is None:
        raise BadValue(f"'{text}' is not an element count ({SIZE_FORMS})")
    return value


def check_shape(text: str) -> tuple[int, int]:
    """'RxC' -> (rows, cols): a matrix exercise's size."""
    m = _SHAPE_RE.fullmatch(text.strip())
    rows, cols = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    if rows < 1 or cols < 1 or rows * cols > INT_MAX:
        raise BadValue(f"'{text}' is not a shape ({SHAPE_FORMS})")
    return rows, cols


def check_offset(text: str) -> int:
    value = _u64(text.strip())
    if value is None or value > MAX_OFFSET:
        raise BadValue(f"'{text}' is not an offset (elements, 0 to {MAX_OFFSET})")
    return value


def check_list(text: str, one: Callable[[str], object], what: str) -> str:
    """A comma-separated list of one() values, as bwgrade takes it (no empty
    item); returned joined again without spaces."""
    items = text.split(",")
    if not text.strip() or any(not i.strip() for i in items):
        raise BadValue(f"'{text}' has an empty item (give {what}, comma-separated)")
    for item in items:
        one(item)
    return ",".join(i.strip() for i in items)


def check_sizes(text: str) -> str:
    return check_list(text, check_size, f"element counts: {SIZE_FORMS}")


def check_shapes(text: str) -> str:
    return check_list(text, check_shape, f"shapes: {SHAPE_FORMS}")


def check_size_or_shape(text: str) -> int | tuple[int, int]:
    """An element count or, with an 'x' in it, a matrix's shape."""
    if "x" in text.strip().lower():
        return check_shape(text)
    return check_size(text)


def check_sizes_or_shapes(text: str) -> str:
    return check_list(text, check_size_or_shape,
                      f"element counts ({SIZE_FORMS}) or, for a matrix exercise, shapes ({SHAPE_FORMS})")


def split_sizes(text: str) -> tuple[list[str], list[str]]:
    """A checked --sizes list as (element counts, shapes)."""
    items = [i.strip() for i in text.split(",") if i.strip()]
    shapes = [i for i in items if "x" in i.lower()]
    return [i for i in items if i not in shapes], shapes


def check_offsets(text: str) -> str:
    return check_list(text, check_offset, f"offsets 0 to {MAX_OFFSET}")


def check_count(text: str, low: int = 1, high: int | None = None) -> int:
    """A whole number from low to high (no bound when high is None)."""
    value = _u64(text.strip())
    if value is None or value < low or (high is not None and value > high):
        span = f"{low} to {high}" if high is not None else f"{low} or more"
        raise BadValue(f"'{text}' is not a whole number from {span}")
    return value


def check_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise BadValue(f"'{text}' is not a number of seconds above 0")
    return value


def seed_env_problem(environ: dict[str, str] | None = None) -> str | None:
    """What is wrong with $BWLAB_SEED (bwgrade reads it when no --seed is
    given, and ignores it when empty), or None."""
    environ = os.environ if environ is None else environ
    text = environ.get("BWLAB_SEED", "")
    if not text:
        return None
    try:
        check_seed(text)
    except BadValue as e:
        return f"BWLAB_SEED: {e}; unset it for the public seed"
    return None


def argparse_type(check: Callable[[str], object], name: str) -> Callable[[str], object]:
    """check() as an argparse type: a BadValue becomes argparse's own error."""
    def convert(text: str):
        try:
            return check(text)
        except BadValue as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    convert.__name__ = name     # argparse names the type in some messages
    return convert


SEED = argparse_type(check_seed, "seed")
CASE = argparse_type(check_case, "case index")
SIZE = argparse_type(check_size, "element count")
SHAPE = argparse_type(check_shape, "shape")
SHAPES = argparse_type(check_shapes, "shapes")
OFFSET = argparse_type(check_offset, "offset")
SIZES = argparse_type(check_sizes, "element counts")
SIZES_OR_SHAPES = argparse_type(check_sizes_or_shapes, "sizes")
OFFSETS = argparse_type(check_offsets, "offsets")
POSITIVE = argparse_type(check_count, "count")
SECONDS = argparse_type(check_seconds, "seconds")
PROFILE_CALLS = argparse_type(lambda t: check_count(t, 1, MAX_PROFILE_CALLS), "calls")

"""The grading seed: where the secret one comes from, its fingerprint, and
scrubbing it from everything grading writes.

run.py grade takes the first found of: --public (the public seed and public
cases), --seed-file FILE, $BWLAB_SECRET_SEED, grader/instructor/secret_seed.
A secret seed lies between 2^32 and 2^64-1, so it cannot be guessed and its
digits stand out wherever they would leak (cmd_handout searches for them).
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

SECRET_ENV = "BWLAB_SECRET_SEED"
SEED_ENV = "BWLAB_SEED"
DEFAULT_SEED_FILE = "grader/instructor/secret_seed"
REDACTED = "<secret seed>"
MIN_SECRET_SEED = 2 ** 32
NEW_SEED_COMMAND = "python3 -c 'import secrets; print(secrets.randbits(63) | 1 << 62)'"


@dataclass(frozen=True)
class Seed:
    value: int | None           # None: the public seed (bwgrade's default)
    kind: str                   # "secret" or "public"
    origin: str                 # where it came from, for the report
    hidden: bool                # pass --hidden (the instructor's extra cases)

    @property
    def fingerprint(self) -> str | None:
        if self.value is None:
            return None
        return hashlib.sha256(f"bwlab-seed:{self.value}".encode()).hexdigest()[:12]

    def describe(self) -> dict:
        return {"kind": self.kind, "origin": self.origin, "fingerprint": self.fingerprint,
                "hidden": self.hidden}

    def secrets(self) -> list[str]:
        """The texts that would give the seed away, longest first."""
        if self.value is None:
            return []
        return sorted({str(self.value), hex(self.value), f"{self.value:#X}".replace("0X", "0x")},
                      key=len, reverse=True)


class SeedError(ValueError):
    pass


def parse_seed(text: str, origin: str) -> int:
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            value = int(line, 0)
        except ValueError:
            raise SeedError(f"{origin}: '{line}' is not an integer (decimal or 0x hex)") from None
        if not MIN_SECRET_SEED <= value < 2 ** 64:
            raise SeedError(f"{origin}: a secret seed must lie between 2^32 and 2^64-1, so that it "
                            f"cannot be guessed and its digits stand out (make one with: {NEW_SEED_COMMAND})")
        return value
    raise SeedError(f"{origin}: no seed in it")


def public_seed(root: Path) -> int | None:
    """BW_PUBLIC_SEED from grader/judge/cases.h, if it can be read."""
    try:
        text = (root / "grader" / "judge" / "cases.h").read_text(encoding="utf-8")
    except OSError:
        return None
    m = re.search(r"#define\s+BW_PUBLIC_SEED\s+(?:UINT64_C\()?\s*(0[xX][0-9a-fA-F]+|\d+)", text)
    return int(m.group(1), 0) if m else None


def _read_seed_file(path: Path) -> Seed:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise SeedError(f"cannot read the seed file {path}: {e.strerror or e}") from None
    return Seed(parse_seed(text, str(path)), "secret", f"seed file {path.name}", hidden=True)


def find_seed(root: Path, seed_file: str | None, public: bool,
              environ: dict[str, str] | None = None) -> Seed:
    """The grading seed, first found of: --public (the public seed, public
    cases), --seed-file FILE, $BWLAB_SECRET_SEED, grader/instructor/secret_seed.
    SeedError if there is none."""
    environ = os.environ if environ is None else environ
    if public:
        return Seed(None, "public", "--public", hidden=False)
    seed = None
    if seed_file:
        seed = _read_seed_file(Path(seed_file))
    elif environ.get(SECRET_ENV, "").strip():
        seed = Seed(parse_seed(environ[SECRET_ENV], f"${SECRET_ENV}"), "secret", f"${SECRET_ENV}",
                    hidden=True)
    elif (root / DEFAULT_SEED_FILE).is_file():
        seed = _read_seed_file(root / DEFAULT_SEED_FILE)
    if seed is not None:
        if seed.value == public_seed(root):
            raise SeedError(f"{seed.origin}: that is the public seed (BW_PUBLIC_SEED); "
                            f"make a secret one with: {NEW_SEED_COMMAND}")
        return seed
    raise SeedError(
        f"no secret seed: set ${SECRET_ENV}, or write one to {DEFAULT_SEED_FILE} (or pass "
        "--seed-file FILE); to grade on the public seed and public cases on purpose, pass --public")


def redact(obj, seed: Seed):
    """obj with every trace of the secret seed replaced (strings, and the
    number itself wherever it appears)."""
    secrets = seed.secrets()
    if not secrets:
        return obj

    def walk(x):
        if isinstance(x, str):
            for s in secrets:
                if s in x:
                    x = x.replace(s, REDACTED)
            return x
        if isinstance(x, bool):
            return x
        if isinstance(x, int) and x == seed.value:
            return REDACTED
        if isinstance(x, float) and x == float(seed.value):
            return REDACTED
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x
    return walk(obj)

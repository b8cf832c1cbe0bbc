"""run.py handout: pack the student tarball (for instructors).

    python3 run.py handout [--out FILE] [--prefix NAME] [--exercises LIST]

Which files go in is decided in handout_files.py (ALLOW and DENY there, and
the corpus entries whose expect.json says they earn no correctness point);
with --exercises, handout_subset.py then leaves out the other exercises'
files and trims the exercise table. Everything left out is listed. The
tarball is refused (exit 1) if any file that would go in contains the secret
seed (as found by `run.py grade`: the seed file or $BWLAB_SECRET_SEED), or if
a denied path somehow got in.

Exit codes: 0 written, 1 refused (a secret in it), 2 usage, 4 kit unreadable.
"""
from __future__ import annotations

import argparse
import gzip
import io
import os
import tarfile
import time
from pathlib import Path

from . import (EXIT_FAIL, EXIT_KIT, EXIT_OK, EXIT_USAGE, console, exercises, handout_subset, policy_file,
               repo_root)
from .handout_files import corpus_held_back, list_files, select, verdict
from .seeds import SeedError, find_seed

HELP = "make the student handout tarball (instructors)"

DEFAULT_OUT = "bwlab-handout.tar.gz"
DEFAULT_PREFIX = "bwlab"

def secret_texts(root: Path, environ: dict[str, str] | None = None) -> list[str]:
    """The secret seed as text (decimal and hex), when one is configured."""
    try:
        seed = find_seed(root, None, False, environ)
    except SeedError:
        return []
    return seed.secrets()


def find_secrets(root: Path, files: list[str], secrets: list[str]) -> list[str]:
    if not secrets:
        return []
    needles = [s.lower().encode() for s in secrets]
    hits = []
    for f in files:
        try:
            data = (root / f).read_bytes().lower()
        except OSError:
            continue
        if any(n in data for n in needles):
            hits.append(f)
    return hits


def pack(root: Path, files: list[str], out: Path, prefix: str = DEFAULT_PREFIX,
         mtime: int | None = None, extra: dict[str, bytes] | None = None) -> int:
    """Write files (relative to root), and the generated extra files (path ->
    contents), into out (.tar.gz) under prefix/. Deterministic: sorted,
    owner 0, one mtime ($SOURCE_DATE_EPOCH or now). Returns the bytes written."""
    extra = extra or {}
    if mtime is None:
        env = os.environ.get("SOURCE_DATE_EPOCH", "")
        mtime = int(env) if env.isdigit() else int(time.time())
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        seen_dirs: set[str] = set()
        for rel in sorted(set(files) | set(extra)):
            parts = rel.split("/")
            for i in range(1, len(parts)):
                d = "/".join(parts[:i])
                if d not in seen_dirs:
                    seen_dirs.add(d)
                    ti = tarfile.TarInfo(f"{prefix}/{d}" if prefix else d)
                    ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, mtime
                    tf.addfile(ti)
            src = root / rel
            data = extra[rel] if rel in extra else src.read_bytes()
            ti = tarfile.TarInfo(f"{prefix}/{rel}" if prefix else rel)
            ti.size = len(data)
            ti.mtime = mtime
            ti.mode = 0o755 if rel not in extra and os.access(src, os.X_OK) else 0o644
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = ""
            tf.addfile(ti, io.BytesIO(data))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=mtime, compresslevel=9) as gz:
            gz.write(buf.getvalue())
    os.replace(tmp, out)
    return out.stat().st_size


def check_tarball(out: Path, prefix: str, root: Path,
                  also_out: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Names in the written tarball that the deny rules (or the corpus rule,
    or also_out: the files of the exercises not handed out) forbid (should
    be none)."""
    held_back = corpus_held_back(root)
    bad = []
    with tarfile.open(out, "r:gz") as tf:
        for m in tf.getmembers():
            name = m.name[len(prefix) + 1:] if prefix and m.name.startswith(prefix + "/") else m.name
            if m.isfile() and (verdict(name, held_back) is not None or name in also_out):
                bad.append(m.name)
    return bad


def course_policy(root: Path, only: list[str] | None = None) -> bytes:
    """handout/policy.ini: the instructor's policy file byte for byte, so that
    the handout's `run.py score` and `run.py grade` use the course's numbers
    and `grade --show-policy` prints the sha256 that grading records. Without
    one, a file of comments only: the built-in defaults. only: the exercises
    handed out (None: all); an [exercise NAME] section for another one is
    refused, since the handout's score and grade would refuse the file."""
    src = Path(root) / policy_file.INSTRUCTOR_POLICY
    if src.is_file():
        data = src.read_bytes()
        policy = policy_file.parse_policy(data.decode("utf-8"), str(src))     # refuse to ship a broken one
        for name in policy.overrides if only is not None else ():
            if name not in only:
                raise policy_file.PolicyError(
                    f"{policy_file.INSTRUCTOR_POLICY}: [exercise {name}] is for an exercise this handout "
                    f"leaves out, and the handout's score and grade would refuse the file: remove "
                    f"that section or hand out {name} too")
        return data
    return (b"# The course's scoring policy: the kit's built-in defaults (no "
            b"grader/instructor/policy.ini\n# was found when the handout was packed). "
            b"handout/grading.md explains them.\n")


def choose(root: Path, only: list[str] | None = None
           ) -> tuple[list[str], dict[str, list[str]], dict[str, bytes], set[str], str]:
    """(kept files, left-out groups, rewritten files, the files left out for
    the exercises not handed out, where the list came from). only: the
    exercises to hand out, checked against the table (None: all, as they are)."""
    files, origin = list_files(root)
    kept, left = select(files, root)
    if only is None:
        return kept, left, {}, set(), origin
    gone = handout_subset.left_out(kept, root, exercises.names(root), only)
    for f, why in gone.items():
        left.setdefault(why, []).append(f)
    kept = [f for f in kept if f not in gone]
    return kept, left, handout_subset.rewritten(root, kept, set(gone), only), set(gone), origin


def make_handout(root: Path, out: Path, prefix: str = DEFAULT_PREFIX, environ: dict[str, str] | None = None,
                 quiet: bool = False, only: list[str] | None = None) -> tuple[int, list[str], dict[str, list[str]]]:
    """Select, scan and pack. only: the exercises to hand out, already
    checked (None: all). Returns (exit code, kept files, left-out groups)."""
    say = (lambda _t: None) if quiet else console.say
    kept, left, rewrites, gone, origin = choose(root, only)
    files_n = len(kept) + sum(len(v) for v in left.values())
    say(f"{files_n} files from {origin}; {len(kept)} go into the handout"
        + (f" (exercises: {', '.join(only)})" if only is not None else ""))
    for why, paths in sorted(left.items()):
        shown = ", ".join(paths[:4]) + (f", ... ({len(paths)} files)" if len(paths) > 4 else "")
        say(f"  left out ({why}): {shown}")
    if not any(f == "run.py" for f in kept):
        console.warn("run.py is not in the handout: is this the kit's root?")
    secrets = secret_texts(root, environ)
    hits = find_secrets(root, kept, secrets)
    hits += [rel for rel, data in rewrites.items()
             if rel not in hits and any(s.lower().encode() in data.lower() for s in secrets)]
    if hits:
        console.error("refusing to pack: these files contain the secret seed: " + ", ".join(hits))
        return EXIT_FAIL, kept, left
    try:
        extra = {**rewrites, policy_file.HANDOUT_POLICY: course_policy(root, only)}
    except policy_file.PolicyError as e:
        console.error(f"refusing to pack: the scoring policy is unusable: {e}")
        return EXIT_FAIL, kept, left
    size = pack(root, kept, out, prefix, extra=extra)
    bad = check_tarball(out, prefix, root, gone)
    if bad:
        out.unlink()
        console.error("refusing: denied paths got into the tarball: " + ", ".join(bad))
        return EXIT_FAIL, kept, left
    say(f"wrote {out} ({size / 1024:.0f} KiB, {len(kept)} files and {policy_file.HANDOUT_POLICY} "
        f"(the scoring policy) under {prefix + '/' if prefix else './'})")
    return EXIT_OK, kept, left


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = "exit codes: 0 written; 1 refused (a file holds the secret seed); 2 usage"
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="FILE",
                        help=f"the tarball to write (default: {DEFAULT_OUT})")
    parser.add_argument("--prefix", default=DEFAULT_PREFIX, metavar="NAME",
                        help=f"the folder everything sits in inside the tarball (default: {DEFAULT_PREFIX}; "
                             "'' for none)")
    parser.add_argument("--list", action="store_true", help="list the files that would go in; write nothing")
    parser.add_argument("--exercises", metavar="LIST",
                        help="hand out only these exercises (comma-separated names from "
                             "exercises/exercises.def); the others' folders, pages, peers and corpus "
                             "entries stay out and the exercise table lists only these")


def run(args: argparse.Namespace) -> int:
    root = repo_root()
    if not (root / "exercises" / "exercises.def").is_file():
        console.error(f"{root} does not look like the kit (no exercises/exercises.def)")
        return EXIT_KIT
    prefix = args.prefix.strip("/")
    if prefix and (prefix in (".", "..") or "/" in prefix):
        console.error("--prefix must be a plain folder name")
        return EXIT_USAGE
    only = None
    if args.exercises is not None:
        try:
            only = handout_subset.requested(args.exercises,
                                            exercises.table_path(root).read_text(encoding="utf-8"))
        except exercises.ExerciseError as e:    # the kit's table itself
            console.error(str(e))
            return EXIT_KIT
        except ValueError as e:     # UnknownExercise is one
            console.error(str(e))
            return EXIT_USAGE
    if args.list:
        kept, _, _, _, _ = choose(root, only)
        for f in kept:
            console.say(f)
        return EXIT_OK
    out = Path(args.out)
    if not out.name.endswith((".tar.gz", ".tgz")):
        console.error("--out should end in .tar.gz")
        return EXIT_USAGE
    try:
        code, _, _ = make_handout(root, out, prefix, only=only)
    except OSError as e:
        console.error(f"cannot write the handout: {e}")
        return EXIT_FAIL
    return code

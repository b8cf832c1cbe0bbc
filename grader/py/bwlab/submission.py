"""Reading a submission: a directory, a .tar.gz (or any tar) or a .zip.

Only the student's files are taken: exercises/NAME/NAME.cu for each exercise.
Nothing else in a submission is ever extracted, compiled or run. The file is
looked for, in this order, at

    exercises/NAME/NAME.cu     (a copy of the kit's layout)
    NAME/NAME.cu
    NAME.cu

from the submission's root, then from inside its single top-level folder if
it has one (archives often wrap everything in one directory).

An archive is refused as a whole if any member is unsafe: an absolute path, a
'..' component, a symbolic or hard link, a device or FIFO, more than
MAX_MEMBERS members, more than MAX_TOTAL_BYTES of content, an extended
header (PAX) over MAX_EXTENDED_HEADER, too many of them (in a row or in
all), or a sparse file. A submission that is itself a
symbolic link is refused too. In a directory,
only the candidate paths are looked at; a candidate reached through a
symbolic link is refused.
"""
from __future__ import annotations

import hashlib
import os
import stat
import tarfile
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

MAX_TOTAL_BYTES = 16 * 1024 * 1024   # all regular files of an archive together
MAX_MEMBERS = 2000                    # entries in an archive
MAX_FILE_BYTES = 1024 * 1024          # one student file
# A tar's extended header (PAX, or a GNU long name) is read whole into memory
# and parsed before the member it describes: a 1 GiB one (1 MiB compressed)
# took 3 GiB and 31 s. A real one holds a long name and a few times.
MAX_EXTENDED_HEADER = 64 * 1024
# Many small ones add up: global PAX headers accumulate in the archive's
# state, and each chained header is one more level of tarfile's recursion.
# Global ones under 64 KiB in chains of 150, 2.1 MB compressed, took 1.1 GB
# and 20 s; chains of 500 raised RecursionError.
MAX_EXTENDED_TOTAL = 1024 * 1024      # all extended headers of an archive
MAX_EXTENDED_RUN = 8                  # in a row, before the member they describe

# Archive clutter that never decides the top-level folder.
IGNORED_TOP = {"__MACOSX", ".DS_Store"}


class SubmissionError(Exception):
    """The submission cannot be used at all (unreadable or unsafe)."""


@dataclass
class Submission:
    source: str
    kind: str                                              # "directory", "tar" or "zip"
    files: dict[str, bytes] = field(default_factory=dict)  # exercise -> content
    found_at: dict[str, str] = field(default_factory=dict)  # exercise -> path inside the submission
    missing: dict[str, str] = field(default_factory=dict)   # exercise -> message

    def digest(self) -> str:
        """A short hash of what was taken: same files, same build tree."""
        h = hashlib.sha256()
        for name in sorted(self.files):
            data = self.files[name]
            h.update(f"{name}\0{len(data)}\0".encode())
            h.update(data)
        return h.hexdigest()[:16]

    def write(self, dest: Path) -> None:
        """Write the taken files as dest/NAME/NAME.cu."""
        for name, data in self.files.items():
            d = Path(dest) / name
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{name}.cu").write_bytes(data)


def missing_message(exercise: str) -> str:
    return f"missing file exercises/{exercise}/{exercise}.cu"


def candidates(exercise: str, top: str | None) -> list[str]:
    rel = [f"exercises/{exercise}/{exercise}.cu", f"{exercise}/{exercise}.cu", f"{exercise}.cu"]
    prefixes = [""] + ([top + "/"] if top else [])
    return [p + r for p in prefixes for r in rel]


def normalize(name: str) -> str:
    """A member name as a clean relative POSIX path; SubmissionError if it
    is absolute or climbs out with '..'."""
    raw = name.replace("\\", "/")
    if raw.startswith("/") or (len(raw) >= 2 and raw[1] == ":"):
        raise SubmissionError(f"refused: '{name}' is an absolute path")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise SubmissionError(f"refused: '{name}' contains '..'")
    return "/".join(parts)


def single_top(paths: list[str]) -> str | None:
    """The one folder everything lies in, if there is exactly one."""
    tops = set()
    for p in paths:
        first, sep, _ = p.partition("/")
        if first in IGNORED_TOP or first.startswith("._"):
            continue
        if not sep:
            # A file at the root: can still be a lone folder's own entry ("top/").
            tops.add(("file", first))
        else:
            tops.add(("dir", first))
    dirs = {name for kind, name in tops if kind == "dir"}
    files = {name for kind, name in tops if kind == "file"}
    if len(dirs) == 1 and files <= dirs:
        return next(iter(dirs))
    return None


# --- archives ---------------------------------------------------------------

# An archive as a table: normalized path -> (size, reader); directories as None.
_Members = dict[str, "tuple[int, Callable[[], bytes]] | None"]


def _check_counts(count: int, total: int) -> None:
    if count > MAX_MEMBERS:
        raise SubmissionError(f"refused: more than {MAX_MEMBERS} entries in the archive")
    if total > MAX_TOTAL_BYTES:
        raise SubmissionError(f"refused: more than {MAX_TOTAL_BYTES // (1024 * 1024)} MiB of content")


class _BoundedTarInfo(tarfile.TarInfo):
    """A TarInfo that refuses, before tarfile reads them (it has no limits):
    an extended header over MAX_EXTENDED_HEADER, more than MAX_EXTENDED_RUN in
    a row or MAX_EXTENDED_TOTAL in all, and any sparse file, whose maps tarfile
    also reads whole (an old GNU chain of 200,000 extension blocks, 447 KB
    compressed, took 1.6 GB and 16 s). No student file is sparse."""

    def _proc_member(self, tf):
        if self.type in _EXTENDED_TYPES:
            run = tf.__dict__.get("_bw_run", 0) + 1
            total = tf.__dict__.get("_bw_total", 0) + self.size
            tf._bw_run, tf._bw_total = run, total
            if self.size > MAX_EXTENDED_HEADER:
                raise _Refused(f"refused: an extended tar header of {self.size} bytes (the "
                               f"limit is {MAX_EXTENDED_HEADER // 1024} KiB)")
            if run > MAX_EXTENDED_RUN:
                raise _Refused(f"refused: more than {MAX_EXTENDED_RUN} extended tar headers in "
                               "a row")
            if total > MAX_EXTENDED_TOTAL:
                raise _Refused(f"refused: more than {MAX_EXTENDED_TOTAL // 1024} KiB of extended "
                               "tar headers")
        else:
            tf._bw_run = 0
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise _Refused(f"refused: '{self.name}' is a sparse file")
        return super()._proc_member(tf)

    def _refuse_sparse(self, *args):
        raise _Refused(f"refused: '{self.name}' is a sparse file")

    _proc_gnusparse_00 = _proc_gnusparse_01 = _proc_gnusparse_10 = _refuse_sparse


class _Refused(Exception):
    """Not a tarfile.HeaderError: tarfile turns those into "not a tar archive"
    (a header refused after the first), and this must reach the student."""


_EXTENDED_TYPES = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE,
                   tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)


def _open_tar(path: Path) -> tarfile.TarFile | None:
    """The tar archive at path (any compression), or None if it is not one.
    Not tarfile.is_tarfile: it parses the first header with no limit."""
    try:
        return tarfile.open(path, "r:*", tarinfo=_BoundedTarInfo)
    except _Refused as e:
        raise SubmissionError(str(e)) from None
    except tarfile.ReadError:
        return None


def _tar_members(tf: tarfile.TarFile) -> _Members:
    members: _Members = {}
    count = total = 0
    for m in tf:  # streams the headers; stops at the first unsafe one
        count += 1
        _check_counts(count, total)
        name = normalize(m.name)
        if m.issym() or m.islnk():
            raise SubmissionError(f"refused: '{m.name}' is a link")
        if m.ischr() or m.isblk() or m.isfifo() or m.isdev():
            raise SubmissionError(f"refused: '{m.name}' is a device or FIFO")
        if m.isdir():
            if name:
                members[name] = None
            continue
        if not m.isfile():
            raise SubmissionError(f"refused: '{m.name}' is not a regular file or folder")
        total += m.size
        _check_counts(count, total)
        if not name:
            continue

        def read(member: tarfile.TarInfo = m) -> bytes:
            f = tf.extractfile(member)
            if f is None:
                raise SubmissionError(f"cannot read '{member.name}'")
            return f.read(MAX_FILE_BYTES + 1)

        members[name] = (m.size, read)
    return members


def _zip_members(zf: zipfile.ZipFile) -> _Members:
    members: _Members = {}
    infos = zf.infolist()
    _check_counts(len(infos), 0)
    total = 0
    for info in infos:
        name = normalize(info.filename)
        mode = (info.external_attr >> 16) & 0xFFFF
        if mode and stat.S_ISLNK(mode):
            raise SubmissionError(f"refused: '{info.filename}' is a link")
        if mode and (stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
            raise SubmissionError(f"refused: '{info.filename}' is a device or FIFO")
        if info.is_dir():
            if name:
                members[name] = None
            continue
        total += info.file_size
        _check_counts(len(infos), total)
        if not name:
            continue

        def read(i: zipfile.ZipInfo = info) -> bytes:
            if i.flag_bits & 0x1:
                raise SubmissionError(f"refused: '{i.filename}' is encrypted")
            with zf.open(i) as f:
                return f.read(MAX_FILE_BYTES + 1)

        members[name] = (info.file_size, read)
    return members


def _take_from_members(sub: Submission, members: _Members, exercises: list[str]) -> None:
    top = single_top(list(members))
    for ex in exercises:
        for cand in candidates(ex, top):
            entry = members.get(cand)
            if entry is None:
                continue
            size, read = entry
            if size > MAX_FILE_BYTES:
                raise SubmissionError(f"refused: '{cand}' is larger than {MAX_FILE_BYTES // 1024} KiB")
            data = read()
            if len(data) > MAX_FILE_BYTES:
                raise SubmissionError(f"refused: '{cand}' is larger than {MAX_FILE_BYTES // 1024} KiB")
            sub.files[ex] = data
            sub.found_at[ex] = cand
            break
        else:
            sub.missing[ex] = missing_message(ex)


# --- directories --------------------------------------------------------------

def _dir_top(root: Path) -> str | None:
    try:
        entries = [e for e in os.listdir(root) if e not in IGNORED_TOP and not e.startswith(".")]
    except OSError as e:
        raise SubmissionError(f"cannot read {root}: {e.strerror}") from None
    if len(entries) == 1:
        only = root / entries[0]
        if not only.is_symlink() and only.is_dir():
            return entries[0]
    return None


def _safe_regular_file(root: Path, rel: str) -> Path | None:
    """root/rel if it exists; SubmissionError if any part of the way is a
    symbolic link or the end is not a regular file."""
    path = root
    parts = PurePosixPath(rel).parts
    for i, part in enumerate(parts):
        path = path / part
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            return None
        if stat.S_ISLNK(st.st_mode):
            raise SubmissionError(f"refused: '{'/'.join(parts[:i + 1])}' is a symbolic link")
        last = i == len(parts) - 1
        if not last and not stat.S_ISDIR(st.st_mode):
            return None
        if last and not stat.S_ISREG(st.st_mode):
            if stat.S_ISDIR(st.st_mode):
                return None
            raise SubmissionError(f"refused: '{rel}' is not a regular file")
    return path


def _take_from_dir(sub: Submission, root: Path, exercises: list[str]) -> None:
    top = _dir_top(root)
    for ex in exercises:
        for cand in candidates(ex, top):
            path = _safe_regular_file(root, cand)
            if path is None:
                continue
            if path.stat().st_size > MAX_FILE_BYTES:
                raise SubmissionError(f"refused: '{cand}' is larger than {MAX_FILE_BYTES // 1024} KiB")
            sub.files[ex] = path.read_bytes()
            sub.found_at[ex] = cand
            break
        else:
            sub.missing[ex] = missing_message(ex)


# --- entry point --------------------------------------------------------------

def load(spec: str | os.PathLike, exercises: list[str]) -> Submission:
    """Read the student files for the given exercises from a directory, a tar
    archive (.tar, .tar.gz, .tgz, ...) or a .zip. Exercises whose file is
    absent land in .missing; an unusable submission raises SubmissionError."""
    path = Path(spec)
    if not os.path.lexists(path):
        raise SubmissionError(f"no such file or directory: {spec}")
    if path.is_symlink():
        # One a student's archive left among the submissions could name the
        # solutions or another student's folder.
        raise SubmissionError(f"refused: {spec} is a symbolic link (grade the folder or archive "
                              f"it points to by its own path)")
    if path.is_dir():
        sub = Submission(str(spec), "directory")
        _take_from_dir(sub, path, exercises)
        return sub
    if not path.is_file():
        raise SubmissionError(f"{spec} is neither a directory nor an archive")
    try:
        if zipfile.is_zipfile(path):
            sub = Submission(str(spec), "zip")
            with zipfile.ZipFile(path) as zf:
                _take_from_members(sub, _zip_members(zf), exercises)
            return sub
        tf = _open_tar(path)
        if tf is not None:
            sub = Submission(str(spec), "tar")
            with tf:
                _take_from_members(sub, _tar_members(tf), exercises)
            return sub
    except _Refused as e:
        raise SubmissionError(str(e)) from None
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, NotImplementedError,
            zlib.error, ValueError, RecursionError) as e:
        raise SubmissionError(f"cannot read {spec}: {e}") from None
    except UnicodeDecodeError:
        raise SubmissionError(f"cannot read {spec}: undecodable member name") from None
    raise SubmissionError(f"{spec} is not a directory, a tar archive (.tar.gz) or a .zip")

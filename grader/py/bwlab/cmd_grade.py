"""run.py grade: grade a batch of submissions (for instructors).

    python3 run.py grade SUBMISSION... [--out DIR] [--jobs N] [--gpus LIST]
                         [--shard K/N] [--policy FILE] [--seed-file FILE | --public]

Each submission (a directory, .tar.gz or .zip) gives only its student files,
exercises/NAME/NAME.cu (submission.py takes them, safely). They are compiled
against a pristine copy of the kit's sources that holds no solutions and no
instructor files, in a build tree of their own, with a time limit on every
build and run (the whole process group is killed when one runs over). bwgrade,
built once per run from the same pristine copy, decides every case with the
secret seed and the hidden cases; scoring.py turns its reports into points;
gradebook.py writes the results.

A compile error, crash, hang or missing file costs only the exercise it
touches. Exit codes:
    0  every submission was graded (whatever the scores)
    1  every submission was graded, but some had a problem that needs a look
       (an unreadable archive, a grader error): see PROBLEM in the notes
    2  usage: bad arguments, unusable policy, no secret seed without --public,
       a submission path that does not exist, two submissions with one id
    3  no CUDA device: nothing was graded
    4  the kit's grader itself could not be built

The build and run steps sit behind a Runner object (KitRunner here), so the
tests can grade with a fake one, without nvcc or a GPU.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import (EXIT_FAIL, EXIT_KIT, EXIT_NO_DEVICE, EXIT_OK, EXIT_USAGE, __version__,
               console, exercises, repo_root)
from . import gradebook, sandbox, scoring
from .scoring import fmt_points, pts

HELP = "grade submissions (instructors): hidden cases, scoring policy, gradebook"

SECRET_ENV = "BWLAB_SECRET_SEED"
SEED_ENV = "BWLAB_SEED"
DEFAULT_SEED_FILE = "grader/instructor/secret_seed"
DEFAULT_POLICY_FILE = "grader/instructor/policy.ini"
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar", ".zip")
REDACTED = "<secret seed>"
MIN_SECRET_SEED = 2 ** 32
NEW_SEED_COMMAND = "python3 -c 'import secrets; print(secrets.randbits(63) | 1 << 62)'"
OUTPUT_CAP = 200_000          # characters of a child's output kept in memory

# Of the handout's files, those a student-only build never reads.
KIT_SKIP = ("docs/", "handout/", "tests/", "grader/py/")


class NoDevice(Exception):
    """bwgrade found no CUDA device: stop, grading further is pointless."""


# --------------------------------------------------------------------------
# Seeds


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
    """BW_PUBLIC_SEED from grader/cases.h, if it can be read."""
    try:
        text = (root / "grader" / "cases.h").read_text(encoding="utf-8")
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


# --------------------------------------------------------------------------
# Running a child with a time limit


_live: set[subprocess.Popen] = set()
_live_lock = threading.Lock()


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_all_children() -> None:
    with _live_lock:
        procs = list(_live)
    for p in procs:
        _kill_group(p)


@dataclass
class Run:
    rc: int | None              # None when it timed out or could not start
    output: str                 # merged stdout and stderr (the end, when long)
    timed_out: bool = False
    seconds: float = 0.0


def run_limited(cmd: list[str], timeout: float, env: dict[str, str] | None = None,
                cwd: Path | None = None, stdin_text: str | None = None) -> Run:
    """Run cmd in a process group of its own; kill the whole group when it
    runs past timeout seconds, and once it is done (strays included).
    stdin_text, if given, is what it reads on standard input."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out:
        try:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL if stdin_text is None else subprocess.PIPE,
                                    env=env, cwd=cwd, start_new_session=True)
        except OSError as e:
            return Run(None, f"cannot start {cmd[0]}: {e.strerror or e}\n")
        with _live_lock:
            _live.add(proc)
        if stdin_text is not None and proc.stdin is not None:
            try:
                proc.stdin.write(stdin_text.encode())
                proc.stdin.close()
            except OSError:
                pass  # it died at once; its exit code says why
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(proc)
            proc.wait()
            with _live_lock:
                _live.discard(proc)
        size = out.seek(0, os.SEEK_END)
        out.seek(max(0, size - OUTPUT_CAP))
        text = out.read().decode("utf-8", "replace")
        if size > OUTPUT_CAP:
            text = f"[... {size - OUTPUT_CAP} bytes cut ...]\n" + text
    return Run(None if timed_out else proc.returncode, text, timed_out, time.monotonic() - start)


# --------------------------------------------------------------------------
# The runner: how a submission is read, built and run


@dataclass
class Built:
    """What building one submission produced."""
    workdir: Path | None = None
    workers: dict[str, Path] = field(default_factory=dict)        # exercise -> executable
    build: dict[str, dict] = field(default_factory=dict)          # exercise -> build info
    found_at: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    logs: dict[str, str] = field(default_factory=dict)            # log name -> full text


@dataclass
class Outcome:
    """One bwgrade run: exit code (None: timed out or not started), its JSON, output."""
    rc: int | None
    doc: dict | None
    output: str = ""
    timed_out: bool = False
    seconds: float = 0.0


class KitRunner:
    """Builds submissions with CMake against a pristine copy of the kit, runs bwgrade."""

    def __init__(self, root: Path, workdir: Path, exercises: list[str], build_jobs: int = 2,
                 bwgrade: Path | None = None, verbose: bool = False):
        self.root = Path(root)
        self.workdir = Path(workdir)
        self.exercises = list(exercises)
        self.build_jobs = max(1, build_jobs)
        self.bwgrade = Path(bwgrade) if bwgrade else None
        self.verbose = verbose
        self.archs: str | None = None
        self._kit_files: list[str] | None = None

    # -- set-up ---------------------------------------------------------------

    def kit_files(self) -> list[str]:
        """The kit files a build may see: the student handout's own list
        (cmd_handout: no solutions, no instructor files), minus what the
        student-only build never reads (docs, tests, the Python layer)."""
        if self._kit_files is None:
            from . import cmd_handout
            files, _ = cmd_handout.list_files(self.root)
            kept, _ = cmd_handout.select(files)
            self._kit_files = [f for f in kept
                               if not f.startswith(KIT_SKIP) or f == "tests/CMakeLists.txt"]
        return self._kit_files

    def pristine_copy(self, dest: Path) -> Path:
        for rel in self.kit_files():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(self.root / rel, target)
        return dest

    def setup(self, timeout: float) -> None:
        """Build bwgrade once, from a pristine copy. Raises build.KitError."""
        from . import build
        if self.archs is None:
            self.archs = build.cache_values(build.build_dir(self.root)).get("CMAKE_CUDA_ARCHITECTURES")
        if self.bwgrade is not None:
            if not self.bwgrade.is_file():
                raise build.KitError(f"--bwgrade {self.bwgrade}: no such file")
            return
        if not shutil.which("cmake"):
            raise build.KitError("cmake was not found: install CMake 3.24 or newer")
        kit = self.pristine_copy(self.workdir / "grader" / "kit")
        tree = self.workdir / "grader" / "build"
        console.say("building the grader (bwgrade) from a pristine copy of the kit ...")
        opts = {"BW_STUDENT_ONLY": "ON", **self._arch_opt()}
        for step in (build.configure_command(kit, tree, opts),
                     ["cmake", "--build", str(tree), "-j", str(build.jobs()), "--target", "bwgrade"]):
            r = run_limited(step, timeout, env=build_env())
            if r.rc != 0:
                why = "timed out" if r.timed_out else f"exit {r.rc}"
                raise build.KitError(f"the grader did not build ({why})",
                                     build.trim_compiler_output(r.output, {str(kit) + "/": ""})
                                     or r.output.splitlines()[-40:])
        self.bwgrade = build.executable(tree, "bwgrade")
        if self.bwgrade is None:
            raise build.KitError(f"bwgrade was built but cannot be found in {tree}")

    def _arch_opt(self) -> dict[str, str]:
        return {"CMAKE_CUDA_ARCHITECTURES": self.archs} if self.archs else {}

    # -- a submission ---------------------------------------------------------

    def load(self, path: Path):
        """submission.load: raises submission.SubmissionError when unusable."""
        from . import submission
        return submission.load(path, self.exercises)

    def build(self, sub, sub_id: str, timeout: float) -> Built:
        from . import build
        b = Built()
        b.workdir = Path(tempfile.mkdtemp(prefix=_safe_name(sub_id) + "-", dir=self.workdir))
        b.found_at = dict(sub.found_at)
        kit = self.pristine_copy(b.workdir / "kit")
        student = b.workdir / "student"
        for ex in self.exercises:
            dest = student / ex / f"{ex}.cu"
            dest.parent.mkdir(parents=True, exist_ok=True)
            # A missing file gets a placeholder so CMake can configure; it is never built.
            dest.write_bytes(sub.files.get(ex, build.MISSING_PLACEHOLDER.encode()))
        tree = b.workdir / "build"
        env = build_env()
        path_map = {str(student) + "/": "exercises/", str(kit) + "/": ""}
        opts = {"BW_STUDENT_DIR": str(student), "BW_STUDENT_ONLY": "ON", **self._arch_opt()}
        steps = [("configure", build.configure_command(kit, tree, opts)),
                 ("worker core", ["cmake", "--build", str(tree), "-j", str(self.build_jobs),
                                  "--target", "bwworker"])]
        for what, cmd in steps:
            r = run_limited(cmd, timeout, env=env)
            b.logs[f"build_{what.replace(' ', '_')}"] = r.output
            if r.rc != 0:
                why = f"took longer than {fmt_points(timeout)} s" if r.timed_out else f"exit {r.rc}"
                b.problems.append(f"the kit's {what} step failed for this submission ({why})")
                for ex in self.exercises:
                    b.build[ex] = {"state": "not_built", "reason": f"the kit's {what} step failed"}
                return b
        for ex in self.exercises:
            if ex not in sub.files:
                b.build[ex] = {"state": "missing",
                               "reason": sub.missing.get(ex, f"missing file exercises/{ex}/{ex}.cu")}
                continue
            target = f"bw_worker_{ex}"
            stale = build.executable(tree, target)
            if stale:
                stale.unlink()
            r = run_limited(["cmake", "--build", str(tree), "-j", str(self.build_jobs),
                             "--target", target], timeout, env=env)
            b.logs[f"build_{ex}"] = r.output
            info = {"seconds": round(r.seconds, 2)}
            if r.timed_out:
                info.update(state="build_timeout", build_timeout=timeout)
            elif r.rc != 0:
                info.update(state="build_failed",
                            log_tail="\n".join(build.trim_compiler_output(r.output, path_map)))
                # Compiled but did not link (a cuBLAS call): name the rule.
                refused = _vet(tree, target, ex) if _has_object(tree, target, ex) else None
                if refused:
                    info.update(state="refused", reason=refused)
            else:
                exe = build.executable(tree, target)
                if exe is None:
                    info.update(state="not_built", reason=f"built {target} but its executable is missing")
                    b.problems.append(f"{ex}: the build left no executable")
                else:
                    refused = _vet(tree, target, ex)
                    if refused:
                        info.update(state="refused", reason=refused)
                    else:
                        info["state"] = "ok"
                        b.workers[ex] = exe
            b.build[ex] = info
        return b

    def cleanup(self, built: Built) -> None:
        if built.workdir is not None:
            shutil.rmtree(built.workdir, ignore_errors=True)

    # -- bwgrade --------------------------------------------------------------

    # bwgrade's --sandbox/--hide (sandbox.Sandbox.bwgrade_args), set by run()
    sandbox_args: tuple[str, ...] = ()

    def _bwgrade(self, args: list[str], json_path: Path, env: dict[str, str], timeout: float,
                 stdin_text: str | None = None) -> Outcome:
        from .cmd_test import read_json
        assert self.bwgrade is not None
        r = run_limited([str(self.bwgrade), *args, *self.sandbox_args, "--json", str(json_path)],
                        timeout, env=env, stdin_text=stdin_text)
        doc = read_json(json_path) if r.rc is not None else None
        return Outcome(r.rc, doc, r.output, r.timed_out, r.seconds)

    def test(self, exercise: str, worker: Path, seed: Seed, env: dict[str, str],
             timeout: float, json_path: Path) -> Outcome:
        args = ["test", exercise, "--worker", str(worker), "--quiet"]
        if seed.value is not None:
            # On standard input, not the command line: /proc/PID/cmdline is
            # readable by every process of the user, the worker included.
            args += ["--seed", "-"]
        if seed.hidden:
            args.append("--hidden")
        return self._bwgrade(args, json_path, env, timeout,
                             stdin_text=None if seed.value is None else f"{seed.value}\n")

    def bench(self, exercise: str, worker: Path, env: dict[str, str], timeout: float,
              json_path: Path) -> Outcome:
        return self._bwgrade(["bench", exercise, "--worker", str(worker), "--label", "student",
                              "--quick"], json_path, env, timeout)


def _has_object(tree: Path, target: str, exercise: str) -> bool:
    from . import vet
    return vet.find_object(tree, target, exercise) is not None


def _vet(tree: Path, target: str, exercise: str) -> str | None:
    """vet.py on a submission's built worker: why it may not run, or None."""
    from . import vet
    try:
        refusal = vet.vet_built(tree, target, exercise)
    except vet.VetError as e:
        return f"refused: the compiled file could not be checked ({str(e).splitlines()[0]})"
    return f"refused: {' '.join(refusal.lines())}" if refusal else None


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:40] or "submission"


# --------------------------------------------------------------------------
# Submissions, ids and shards


def submission_id(path: str | Path) -> str:
    """The file or directory name without its archive extension."""
    p = Path(path)
    name = p.name or Path(os.path.abspath(path)).name
    if not p.is_dir():
        low = name.lower()
        for suffix in ARCHIVE_SUFFIXES:
            if low.endswith(suffix) and len(name) > len(suffix):
                return name[:-len(suffix)]
    return name


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
    """id -> path. ValueError on a missing path, a duplicate or reserved id."""
    out: dict[str, Path] = {}
    for p in paths:
        path = Path(p)
        if not os.path.lexists(path):
            raise ValueError(f"no such file or directory: {p}")
        sid = submission_id(p)
        if not sid or set(sid) <= {"."}:
            raise ValueError(f"{p}: cannot make a submission id from this name")
        if sid in gradebook.RESERVED_IDS:
            raise ValueError(f"{p}: the id '{sid}' is reserved for an output file; rename it")
        if sid in out:
            raise ValueError(f"two submissions have the id '{sid}': {out[sid]} and {p}")
        out[sid] = path
    return out


# --------------------------------------------------------------------------
# Grading


INCLUDE_RE = re.compile(rb'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)


def include_notes(files: dict[str, bytes]) -> list[str]:
    """Flag #include paths that climb out ('..') or are absolute: a student
    file has no business reaching into the rest of the machine."""
    notes = []
    for ex, data in sorted(files.items()):
        for m in INCLUDE_RE.finditer(data):
            inc = m.group(1).decode("utf-8", "replace")
            if inc.startswith("/") or ".." in inc.split("/"):
                notes.append(f"{ex}: suspicious #include \"{inc}\"")
    return notes


@dataclass
class Options:
    exercises: list[str]
    policy: scoring.Policy
    seed: Seed
    out_dir: Path
    lanes: list[str | None] = field(default_factory=lambda: [None])   # GPU per lane
    jobs: int = 2
    build_timeout: float = scoring.LIMIT_DEFAULTS["build_timeout"]
    test_timeout: float = scoring.LIMIT_DEFAULTS["test_timeout"]
    bench_timeout: float = scoring.LIMIT_DEFAULTS["bench_timeout"]
    keep_work: bool = False
    quiet: bool = False


def build_env() -> dict[str, str]:
    """CMake's environment (build.tool_env: nvcc on PATH) without the seeds."""
    from . import build
    return {k: v for k, v in build.tool_env().items() if k not in (SECRET_ENV, SEED_ENV)}


def child_env(gpu: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (SECRET_ENV, SEED_ENV)}
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    return env


class Progress:
    def __init__(self, total: int, quiet: bool = False):
        self.total = total
        self.done = 0
        self.start = time.monotonic()
        self.lock = threading.Lock()
        self.quiet = quiet

    @staticmethod
    def clock(seconds: float) -> str:
        s = int(round(seconds))
        h, rem = divmod(s, 3600)
        m, s = divmod(rem, 60)
        return f"{h}h{m:02d}m{s:02d}s" if h else (f"{m}m{s:02d}s" if m else f"{s}s")

    def say(self, text: str) -> None:
        if not self.quiet:
            with self.lock:
                console.say(text)

    def started(self, sid: str, gpu: str | None) -> None:
        where = f" on GPU {gpu}" if gpu is not None else ""
        self.say(f"[{self.done}/{self.total}] grading {sid}{where} ...")

    def finished(self, rec: dict) -> None:
        with self.lock:
            self.done += 1
            done = self.done
        elapsed = time.monotonic() - self.start
        left = elapsed / done * (self.total - done)
        flag = "  PROBLEM" if rec.get("problems") else ""
        self.say(f"[{done}/{self.total}] {rec['id']}: {fmt_points(rec['total'])}/"
                 f"{fmt_points(rec['max_total'])}{flag}  (elapsed {self.clock(elapsed)}, "
                 f"about {self.clock(left)} left)")


def _empty_exercise(ex: str) -> dict:
    return {"exercise": ex, "state": "not_built", "student_file": f"exercises/{ex}/{ex}.cu",
            "found_at": None, "build": None, "test_exit": None, "test": None,
            "bench_exit": None, "bench": None, "seconds": 0.0}


def build_submission(runner, sid: str, path: Path, opts: Options) -> tuple[object | None, Built, list[str]]:
    """Read and build one submission: (submission or None, Built, problems)."""
    from .submission import SubmissionError
    try:
        sub = runner.load(path)
    except SubmissionError as e:
        return None, Built(), [f"the submission could not be read: {e}"]
    except OSError as e:
        return None, Built(), [f"the submission could not be read: {e.strerror or e}"]
    try:
        built = runner.build(sub, sid, opts.build_timeout)
    except Exception as e:  # noqa: BLE001 - one submission's trouble must not stop the batch
        return sub, Built(), [f"building failed inside the grader: {type(e).__name__}: {e}"]
    return sub, built, []


def test_submission(runner, sid: str, path: Path, sub, built: Built, load_problems: list[str],
                    gpu: str | None, opts: Options) -> dict:
    """Run bwgrade on what was built and score it: the submission's record."""
    seed = opts.seed
    t0 = time.monotonic()
    env = child_env(gpu)
    logs_dir = opts.out_dir / gradebook.LOGS_DIR / sid
    problems = list(load_problems) + list(built.problems)
    notes = list(built.notes)
    if sub is not None:
        notes += include_notes(getattr(sub, "files", {}))
    results = []
    scratch = Path(tempfile.mkdtemp(prefix="bwlab-json-"))
    try:
        for ex in opts.exercises:
            t_ex = time.monotonic()
            res = _empty_exercise(ex)
            res["found_at"] = built.found_at.get(ex)
            binfo = built.build.get(ex)
            if sub is None:
                res.update(state="not_built", reason="the submission could not be read")
            elif binfo is None:
                res.update(state="not_built", reason="not built")
            else:
                res["build"] = binfo
                res["state"] = binfo["state"]
                if binfo.get("reason"):
                    res["reason"] = binfo["reason"]
                if binfo["state"] == "build_timeout":
                    res["build_timeout"] = opts.build_timeout
            worker = built.workers.get(ex)
            if res["state"] == "ok" and worker is not None:
                _run_tests(runner, ex, worker, env, res, problems, scratch, opts)
            pol = opts.policy.for_exercise(ex)
            res["score"] = scoring.score_exercise(pol, res)
            res["seconds"] = round(time.monotonic() - t_ex + (binfo or {}).get("seconds", 0.0), 2)
            results.append(res)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if built.logs:
        for name, text in built.logs.items():
            p = logs_dir / f"{name}.log"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(redact(text, seed), encoding="utf-8")
    rec = {
        "kind": gradebook.RECORD_KIND, "format": gradebook.RECORD_FORMAT,
        "id": sid, "source": path.name or str(path), "kit_version": __version__,
        "seed": seed.describe(),
        "policy": {"source": opts.policy.source, "sha256": opts.policy.sha256},
        "gpu": gpu,
        "exercises": results,
        "total": pts(sum(r["score"]["total"] for r in results)),
        "max_total": pts(sum(r["score"]["max"] for r in results)),
        "notes": notes, "problems": problems,
        "seconds": round(time.monotonic() - t0, 2),
    }
    return redact(rec, seed)


def _looks_like_no_device(out: Outcome) -> bool:
    """bwgrade's exit 3 means no device, or a worker that would not start;
    a report that names a device rules the first out."""
    from .cmd_test import looks_like_no_device
    if out.rc != EXIT_NO_DEVICE:
        return False
    lines = out.output.splitlines()
    if out.doc:
        dev = out.doc.get("device")
        if isinstance(dev, dict) and dev.get("name"):
            return False
        lines += [str(d.get("text", "")) for d in out.doc.get("diagnoses") or []]
    return looks_like_no_device(lines)


def _tail_text(text: str, limit: int = 2000) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def _run_tests(runner, ex: str, worker: Path, env: dict[str, str], res: dict,
               problems: list[str], scratch: Path, opts: Options) -> None:
    out = runner.test(ex, worker, opts.seed, env, opts.test_timeout, scratch / f"{ex}.test.json")
    res["test_exit"] = out.rc
    res["test_seconds"] = round(out.seconds, 2)
    if out.timed_out:
        res.update(state="test_timeout", test_timeout=opts.test_timeout)
        return
    if out.rc in (0, 1) and isinstance(out.doc, dict):
        res["test"] = out.doc
    else:
        if _looks_like_no_device(out):
            raise NoDevice(_tail_text(out.output, 400) or "bwgrade found no CUDA device")
        if out.rc == 3:
            diag = "; ".join(str(d.get("text", "")) for d in (out.doc or {}).get("diagnoses") or [])
            why = f"bwgrade could not run the worker (exit 3){': ' + diag if diag else ''}"
        elif out.rc is None:
            why = "bwgrade could not be started"
        elif out.rc == 2:
            why = "bwgrade refused its command line (exit 2)"
        elif out.rc < 0:
            why = f"bwgrade was killed by signal {-out.rc}"
        else:
            why = f"bwgrade exited with code {out.rc} without a usable report"
        res.update(state="test_error", reason=why, test=out.doc, test_output=_tail_text(out.output))
        problems.append(f"{ex}: {why}")
        return
    pol = opts.policy.for_exercise(ex)
    corr = scoring.score_correctness(pol, res)
    if not corr["passed"] or pol.performance_points <= 0:
        return
    b = runner.bench(ex, worker, env, opts.bench_timeout, scratch / f"{ex}.bench.json")
    res["bench_exit"] = b.rc
    res["bench_seconds"] = round(b.seconds, 2)
    if b.timed_out:
        res.update(bench_state="bench_timeout", bench_timeout=opts.bench_timeout)
    elif b.rc in (0, 1) and isinstance(b.doc, dict):
        res["bench"] = b.doc
        res["bench_state"] = "ok"
    else:
        if _looks_like_no_device(b):
            raise NoDevice(_tail_text(b.output, 400) or "bwgrade found no CUDA device")
        why = f"the benchmark could not run (bwgrade exit {b.rc})"
        res.update(bench_state="bench_error", bench_reason=why, bench_output=_tail_text(b.output))
        problems.append(f"{ex}: {why}")


def grade_batch(runner, todo: dict[str, Path], opts: Options,
                on_record=None) -> list[dict]:
    """Grade the submissions in todo (id -> path) in sorted id order: builds on
    up to opts.jobs threads, runs on one lane per GPU. on_record(rec) is called
    as each finishes. Raises NoDevice (after stopping the others)."""
    ids = sorted(todo)
    progress = Progress(len(ids), opts.quiet)
    records: dict[str, dict] = {}
    lanes = opts.lanes or [None]
    ahead = threading.Semaphore(len(lanes) + max(1, opts.jobs))
    work: queue.Queue = queue.Queue()
    stop = threading.Event()
    failure: list[BaseException] = []

    def build_job(sid: str):
        if stop.is_set():
            return None, Built(), ["not graded: the run stopped"]
        return build_submission(runner, sid, todo[sid], opts)

    def producer(pool: ThreadPoolExecutor) -> None:
        for sid in ids:
            ahead.acquire()
            if stop.is_set():
                break
            work.put((sid, pool.submit(build_job, sid)))
        for _ in lanes:
            work.put(None)

    def lane(gpu: str | None) -> None:
        while True:
            item = work.get()
            if item is None:
                return
            sid, fut = item
            built = Built()
            try:
                if stop.is_set():
                    continue
                sub, built, load_problems = fut.result()
                progress.started(sid, gpu)
                rec = test_submission(runner, sid, todo[sid], sub, built, load_problems, gpu, opts)
                if stop.is_set():
                    continue   # its runs may have been killed by the stop: no record
                records[sid] = rec
                if on_record:
                    on_record(rec)
                progress.finished(rec)
            except BaseException as e:  # noqa: BLE001 - stop everything, report once
                failure.append(e)
                stop.set()
                kill_all_children()
            finally:
                if not opts.keep_work:
                    try:
                        runner.cleanup(built)
                    except Exception:  # noqa: BLE001
                        pass
                ahead.release()

    pool = ThreadPoolExecutor(max_workers=max(1, opts.jobs), thread_name_prefix="bwlab-build")
    prod = threading.Thread(target=producer, args=(pool,), daemon=True)
    threads = [threading.Thread(target=lane, args=(g,), daemon=True) for g in lanes]
    try:
        prod.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        prod.join()
    except KeyboardInterrupt:
        stop.set()
        kill_all_children()
        for _ in range(len(lanes) + max(1, opts.jobs)):
            ahead.release()   # let the producer see the stop
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True, cancel_futures=True)
    if failure:
        raise failure[0]
    return [records[s] for s in ids if s in records]


# --------------------------------------------------------------------------
# The command


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("exit codes: 0 every submission graded; 1 graded, but some submission has a PROBLEM "
                     "to look at; 2 usage (including: no secret seed without --public); 3 no CUDA device; "
                     "4 the grader did not build. Details: docs/INSTRUCTORS.md")
    parser.add_argument("submissions", nargs="*", metavar="SUBMISSION",
                        help="a directory, .tar.gz or .zip per student, holding exercises/NAME/NAME.cu "
                             "(id = the name without its extension)")
    parser.add_argument("--out", default="grades", metavar="DIR",
                        help="where the results go (default: grades/)")
    parser.add_argument("--jobs", type=int, default=None, metavar="N",
                        help="submissions built at the same time (default: 2, or one per GPU if more)")
    parser.add_argument("--gpus", metavar="LIST",
                        help="grade in parallel, one submission per GPU: e.g. 0,1,2,3 "
                             "(sets CUDA_VISIBLE_DEVICES for each)")
    parser.add_argument("--shard", metavar="K/N",
                        help="grade only slice K of N (1-based): the submissions whose index in "
                             "the sorted id list, counted from 0, leaves K-1 when divided by N")
    parser.add_argument("--policy", metavar="FILE",
                        help=f"scoring policy (default: {DEFAULT_POLICY_FILE}, else built-in defaults)")
    seed = parser.add_mutually_exclusive_group()
    seed.add_argument("--seed-file", metavar="FILE",
                      help=f"the secret seed (default: ${SECRET_ENV}, else {DEFAULT_SEED_FILE})")
    seed.add_argument("--public", action="store_true",
                      help="grade on the public seed and the public cases only (what students see)")
    parser.add_argument("--build-timeout", type=float, metavar="S",
                        help="seconds for each build step (default: the policy's [limits])")
    parser.add_argument("--test-timeout", type=float, metavar="S",
                        help="seconds for one exercise's bwgrade test run")
    parser.add_argument("--bench-timeout", type=float, metavar="S",
                        help="seconds for one exercise's bwgrade bench run")
    parser.add_argument("--bwgrade", metavar="PATH",
                        help="use this bwgrade instead of building one from the kit")
    parser.add_argument("--work", metavar="DIR",
                        help="where build trees go (default: a temporary folder)")
    parser.add_argument("--keep-work", action="store_true",
                        help="keep the build trees (default: removed after each submission)")
    parser.add_argument("--show-policy", action="store_true",
                        help="print the scoring policy in effect and stop")
    parser.add_argument("-q", "--quiet", action="store_true", help="no per-submission progress lines")
    parser.add_argument("--sandbox", choices=sandbox.MODES, default="auto",
                        help="run the workers inside bubblewrap: no network, read-only files, the "
                             "instructor's files, seed file and grades hidden (auto: when bwrap "
                             "works here, else none with a warning; default auto)")


def resolve_policy(root: Path, path: str | None) -> scoring.Policy:
    if path:
        return scoring.load_policy(path)
    default = root / DEFAULT_POLICY_FILE
    if default.is_file():
        return scoring.load_policy(default)
    return scoring.default_policy()


def show_policy(policy: scoring.Policy, names: list[str]) -> None:
    console.say(f"policy: {policy.source} (sha256 {policy.sha256[:12]})")
    for ex in names:
        p = policy.for_exercise(ex)
        groups = ", ".join(f"{g}:{w:g}" for g, w in p.groups)
        thr = ", ".join(f">={t:g}%: {f:g}" for t, f in p.thresholds)
        console.say(f"  {ex}: correctness {fmt_points(p.correctness_points)} ({p.correctness_mode}"
                    + (f"; weights {groups}" if p.correctness_mode == "per_group" else "") + "), "
                    f"performance {fmt_points(p.performance_points)} ({p.bench_row} row; {thr})")
    console.say("  limits: " + ", ".join(f"{k} {v:g} s" for k, v in policy.limits.items()))


def manifest_for(opts: Options, ids: list[str], all_ids: list[str],
                 shard: tuple[int, int] | None) -> dict:
    return {"kind": "bwlab-grade-run", "format": 1, "kit_version": __version__,
            "exercises": opts.exercises, "ids": sorted(ids),
            "shard": {"k": shard[0], "n": shard[1]} if shard else None,
            "all_ids_count": len(all_ids), "all_ids_sha256": ids_digest(all_ids),
            "policy": {"source": opts.policy.source, "sha256": opts.policy.sha256},
            "seed": opts.seed.describe()}


def finish(out_dir: Path, manifest: dict, exercises_: list[str]) -> list[dict]:
    """Write gradebook.csv, junit.xml, results.json from the records on disk
    (the same path merge takes, so both write the same files)."""
    records = [gradebook.load_record(gradebook.record_path(out_dir, sid))
               for sid in manifest["ids"] if gradebook.record_path(out_dir, sid).is_file()]
    gradebook.write_outputs(out_dir, records, exercises_)
    gradebook.write_manifest(out_dir, manifest)
    return records


def run(args: argparse.Namespace, runner=None) -> int:
    root = repo_root()
    try:
        names = exercises.names(root)
    except OSError as e:
        console.error(f"cannot read the exercise table: {e}")
        return EXIT_KIT
    try:
        policy = resolve_policy(root, args.policy)
        policy.check_exercises(names)
    except scoring.PolicyError as e:
        console.error(str(e))
        return EXIT_USAGE
    if args.show_policy:
        show_policy(policy, names)
        return EXIT_OK
    if not args.submissions:
        console.error("no submissions given (run.py grade SUBMISSION...)")
        return EXIT_USAGE
    try:
        seed = find_seed(root, args.seed_file, args.public)
    except SeedError as e:
        console.error(str(e))
        return EXIT_USAGE
    try:
        shard = parse_shard(args.shard)
        todo_all = collect(args.submissions)
    except ValueError as e:
        console.error(str(e))
        return EXIT_USAGE
    lanes: list[str | None] = [None]
    if args.gpus:
        lanes = [g.strip() for g in args.gpus.split(",") if g.strip()]
        if not lanes or any(not re.fullmatch(r"[0-9]+|GPU-[0-9a-fA-F-]+|MIG-[0-9a-zA-Z/-]+", g)
                            for g in lanes) or len(set(lanes)) != len(lanes):
            console.error(f"--gpus {args.gpus}: give distinct GPU indices (or UUIDs), like 0,1,2,3")
            return EXIT_USAGE
    jobs = args.jobs if args.jobs is not None else max(2, len(lanes))
    if jobs < 1:
        console.error("--jobs must be at least 1")
        return EXIT_USAGE
    limits = dict(policy.limits)
    for key in ("build_timeout", "test_timeout", "bench_timeout"):
        v = getattr(args, key)
        if v is not None:
            if v <= 0:
                console.error(f"--{key.replace('_', '-')} must be above 0")
                return EXIT_USAGE
            limits[key] = v

    chosen = shard_select(list(todo_all), shard)
    todo = {sid: todo_all[sid] for sid in chosen}
    out_dir = Path(args.out)
    opts = Options(exercises=names, policy=policy, seed=seed, out_dir=out_dir, lanes=lanes, jobs=jobs,
                   build_timeout=limits["build_timeout"], test_timeout=limits["test_timeout"],
                   bench_timeout=limits["bench_timeout"], keep_work=args.keep_work, quiet=args.quiet)
    hide = [root / "grader" / "instructor", root / DEFAULT_SEED_FILE, out_dir.resolve()]
    if args.seed_file:
        hide.append(Path(args.seed_file).resolve())
    try:
        box = sandbox.choose(args.sandbox, hide)
    except sandbox.SandboxError as e:
        console.error(str(e))
        return EXIT_USAGE
    manifest = manifest_for(opts, chosen, list(todo_all), shard)
    manifest["sandbox"] = box.describe()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        console.error(f"cannot create {out_dir}: {e.strerror or e}")
        return EXIT_USAGE

    if box.warning:
        console.warn(box.warning)
    elif box.kind == "bwrap":
        console.say(f"workers run inside bubblewrap ({box.bwrap}): no network, read-only files, "
                    f"{len(box.hide)} paths hidden")
    if seed.kind == "public":
        console.warn("grading on the PUBLIC seed with the public cases only (--public)")
    else:
        console.say(f"secret seed from {seed.origin} (fingerprint {seed.fingerprint}); hidden cases on")
    what = f"{len(todo)} of {len(todo_all)} submissions (shard {shard[0]}/{shard[1]})" if shard \
        else console.plural(len(todo), "submission")
    console.say(f"grading {what} into {out_dir}/, {console.plural(len(lanes), 'lane')}"
                + (f" (GPUs {','.join(lanes)})" if lanes != [None] else "")
                + f", {jobs} build jobs")

    work_parent = Path(args.work) if args.work else None
    if work_parent:
        work_parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="bwlab-grade-", dir=work_parent))
    try:
        if runner is None:
            runner = KitRunner(root, workdir, names, build_jobs=max(1, (os.cpu_count() or 2) // jobs),
                               bwgrade=Path(args.bwgrade) if args.bwgrade else None)
        from .build import KitError
        try:
            if hasattr(runner, "setup"):
                runner.setup(limits["build_timeout"] * 2)
        except KitError as e:
            console.error(e.message)
            if e.lines:
                console.say(console.indent(e.lines))
            return EXIT_KIT
        gradebook.write_manifest(out_dir, manifest)
        runner.sandbox_args = tuple(box.bwgrade_args())
        try:
            grade_batch(runner, todo, opts,
                        on_record=lambda r: gradebook.write_record(out_dir, {**r, "sandbox": box.kind}))
        except NoDevice as e:
            console.error(f"no CUDA device: nothing more can be graded ({e})")
            finish(out_dir, manifest, names)
            return EXIT_NO_DEVICE
        except KeyboardInterrupt:
            kill_all_children()
            console.error("interrupted; the submissions graded so far are in " + str(out_dir))
            finish(out_dir, manifest, names)
            return 130
    finally:
        if not args.keep_work:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            console.say(f"build trees kept in {workdir}")

    records = finish(out_dir, manifest, names)
    console.say("")
    for line in gradebook.summary_lines(records, names):
        console.say(line)
    console.say("")
    troubled = [r for r in records if r.get("problems")]
    for r in troubled:
        for p in r["problems"]:
            console.say(f"PROBLEM {r['id']}: {p}")
    console.say(f"wrote {out_dir}/{gradebook.GRADEBOOK}, {gradebook.JUNIT}, "
                f"<id>.json and {gradebook.GRADESCOPE_DIR}/<id>/results.json")
    return EXIT_FAIL if troubled else EXIT_OK

"""Building with CMake: the kit's own targets, then one worker per exercise.

Layout (see docs/ARCHITECTURE.md):
    build/                                 the main tree (BWLAB_BUILD_DIR overrides)
        bwgrade                            the grader
        bw_worker_NAME                     the student's worker (not in ALL)
        bw_worker_NAME_solution            a reference solution (when solutions/ exists)
        bw_worker_NAME_LIB                 a library peer (grader/peers/NAME_LIB.cu)
    build/submissions/HASH/student/NAME/NAME.cu   a submission's files, by content hash
    build/submissions/HASH/build/                 its tree (-DBW_STUDENT_ONLY=ON)

Each student worker is built on its own, so a compile error in one exercise
does not stop another; its compiler messages come back trimmed to the lines
that matter.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import console, repo_root, vet
from .submission import Submission
from .toolchain import CUDA_BIN, cache_values, tool_env  # noqa: F401 (used by callers as build.*)

MAX_ERROR_LINES = 60
CHECK_MISSING_RE = re.compile(r"Check \(the C unit test library\) was not found|Check\b.*\bnot found", re.I)


class KitError(Exception):
    """The kit itself could not be configured or built."""

    def __init__(self, message: str, lines: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.lines = lines or []


class CheckMissing(KitError):
    """CMake stopped because the Check library is not installed."""


@dataclass
class Worker:
    exercise: str
    label: str                   # student, solution, submission, or a peer's library name
    target: str
    path: Path | None = None
    status: str = "pending"      # ok | build_error | refused | missing | unavailable
    message: str = ""
    lines: list[str] = field(default_factory=list)   # trimmed compiler output
    rule: str = ""               # refused: the vet.py rule broken, and the symbol
    symbol: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class Plan:
    build_dir: Path
    bwgrade: Path | None = None
    workers: list[Worker] = field(default_factory=list)

    def for_exercise(self, exercise: str) -> list[Worker]:
        return [w for w in self.workers if w.exercise == exercise]


# --- environment ----------------------------------------------------------------

def build_dir(root: Path | None = None) -> Path:
    root = root or repo_root()
    env = os.environ.get("BWLAB_BUILD_DIR")
    if env:
        p = Path(env)
        return p if p.is_absolute() else (root / p)
    return root / "build"


def jobs() -> int:
    return os.cpu_count() or 2


def run_captured(cmd: list[str], verbose: bool = False, env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> tuple[int, str]:
    """Run a command; return its exit code and its merged output. With
    verbose, the output is also echoed as it comes."""
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=env or tool_env(), cwd=cwd, text=True, errors="replace")
    except FileNotFoundError:
        return 127, f"{cmd[0]}: command not found\n"
    chunks = []
    with proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            chunks.append(line)
            if verbose:
                sys.stdout.write(line)
                sys.stdout.flush()
    return proc.wait(), "".join(chunks)


def _require_cmake() -> None:
    if not shutil.which("cmake"):
        raise KitError("cmake was not found: install CMake 3.24 or newer")


# --- configure and build -------------------------------------------------------------

def _truthy(v: str) -> bool:
    return v.upper() in ("1", "ON", "YES", "TRUE", "Y")


def _same(cached: str | None, wanted: str) -> bool:
    if cached is None:
        return False
    if wanted.upper() in ("ON", "OFF", "TRUE", "FALSE", "YES", "NO", "0", "1"):
        return _truthy(cached) == _truthy(wanted)
    return cached == wanted


def needs_configure(bdir: Path, options: dict[str, str]) -> bool:
    """True when the tree has no usable configuration or an option differs."""
    if not (bdir / "CMakeCache.txt").exists():
        return True
    if not ((bdir / "Makefile").exists() or (bdir / "build.ninja").exists()):
        return True  # an earlier configure stopped half way
    cached = cache_values(bdir)
    return any(not _same(cached.get(k), v) for k, v in options.items())


def configure_command(root: Path, bdir: Path, options: dict[str, str]) -> list[str]:
    cmd = ["cmake", "-S", str(root), "-B", str(bdir), "-DCMAKE_BUILD_TYPE=Release"]
    cmd += [f"-D{k}={v}" for k, v in options.items()]
    return cmd


def configure(root: Path, bdir: Path, options: dict[str, str] | None = None,
              verbose: bool = False) -> bool:
    """Configure bdir unless it already is, with these options. Returns True if
    CMake ran. Raises CheckMissing or KitError."""
    options = options or {}
    if not needs_configure(bdir, options):
        return False
    _require_cmake()
    console.say(f"configuring {_show(bdir, root)} ...")
    bdir.mkdir(parents=True, exist_ok=True)
    rc, out = run_captured(configure_command(root, bdir, options), verbose)
    if rc != 0:
        _forget_generation(bdir)
        lines = cmake_error_lines(out)
        if CHECK_MISSING_RE.search(out):
            raise CheckMissing("Check (the C unit test library) is not installed; "
                               "install it with: apt-get install -y check", lines)
        raise KitError(f"CMake could not configure {_show(bdir, root)}", lines)
    return True


def _forget_generation(bdir: Path) -> None:
    """A failed configure still saves its cache; drop the (now stale) build
    files so that the next run configures again instead of building."""
    for stale in ("Makefile", "build.ninja"):
        with contextlib.suppress(OSError):
            (bdir / stale).unlink()


def build_kit(bdir: Path, targets: list[str] | None = None, verbose: bool = False,
              root: Path | None = None) -> None:
    """Build kit targets (all of ALL when targets is None). A failure here is
    the kit's problem, not the student's: raises KitError."""
    _require_cmake()
    cmd = ["cmake", "--build", str(bdir), "-j", str(jobs())]
    if targets:
        cmd += ["--target", *targets]
    rc, out = run_captured(cmd, verbose)
    if rc != 0:
        if "Configuring incomplete" in out or "CMake Error" in out:
            # The build re-ran CMake (a CMakeLists.txt changed) and that failed.
            _forget_generation(bdir)
            if CHECK_MISSING_RE.search(out):
                raise CheckMissing("Check (the C unit test library) is not installed; "
                                   "install it with: apt-get install -y check", cmake_error_lines(out))
            raise KitError(f"CMake could not configure {bdir}", cmake_error_lines(out))
        path_map = {str(root or repo_root()) + "/": ""}
        lines = trim_compiler_output(out, path_map) or out.splitlines()[-40:]
        failed = failed_make_targets(out)
        if failed:
            lines.append("failed: " + ", ".join(failed))
        raise KitError("the kit's own code did not build", lines)


_MAKE_FAIL_RE = re.compile(r"^g?make\[\d+\]: \*\*\* \[[^\]]*?build\.make:\d+: ([^\]]+)\] Error")
_NINJA_FAIL_RE = re.compile(r"^FAILED: (\S+)")


def failed_make_targets(text: str) -> list[str]:
    """The files whose rule failed, from make's or ninja's messages."""
    out: list[str] = []
    for line in text.splitlines():
        m = _MAKE_FAIL_RE.match(line) or _NINJA_FAIL_RE.match(line)
        if m and m.group(1) not in out:
            out.append(m.group(1))
    return out


def build_target(bdir: Path, target: str, verbose: bool = False,
                 path_map: dict[str, str] | None = None) -> tuple[bool, list[str]]:
    """Build one target; on failure return its trimmed compiler messages."""
    _require_cmake()
    rc, out = run_captured(["cmake", "--build", str(bdir), "-j", str(jobs()), "--target", target],
                           verbose)
    if rc == 0:
        return True, []
    return False, trim_compiler_output(out, path_map or {})


def executable(bdir: Path, target: str) -> Path | None:
    direct = bdir / target
    if direct.is_file():
        return direct
    for p in sorted(bdir.rglob(target)):
        if p.is_file() and os.access(p, os.X_OK):
            return p
    return None


# --- compiler output ----------------------------------------------------------------

_ERROR_START = [
    re.compile(r"^.*\(\d+\): (catastrophic error|error)\b"),          # nvcc front end
    re.compile(r"^.*:\d+(:\d+)?: (fatal error|error)\b"),              # gcc / clang / cudafe
    re.compile(r"undefined reference to|multiple definition of"),      # linker
    re.compile(r"^(/\S*/)?ld(\.\S+)?: "),
    re.compile(r"^nvcc (fatal|error)\b|^nvlink (error|fatal)|^ptxas (error|fatal)", re.I),
    re.compile(r"^\S*: error\b|^error\b", re.I),
    re.compile(r"^CMake Error"),
]
_CONTEXT_OK = re.compile(r"^\s|^\S*: (note|In function|In member function)|^In file included from|"
                         r"^\s*\^|^.*:\d+(:\d+)?: note\b|^.*\(\d+\): note\b")
_LEAD_IN = re.compile(r"^\S+: In (function|member function|instantiation)|^In file included from|^\s+from \S+:\d+")
_ALWAYS = re.compile(r"errors? detected in the compilation|ld returned \d+ exit status")
_NOISE = re.compile(r"^(\[ *\d+%\]|gmake|make(\[\d+\])?:|Scanning dependencies|Consolidate compiler|"
                    r"Building (C|CUDA|CXX) object|Linking |-- )")


def _apply_map(line: str, path_map: dict[str, str]) -> str:
    for src, dst in path_map.items():
        line = line.replace(src, dst)
    return line


def trim_compiler_output(text: str, path_map: dict[str, str] | None = None,
                         cap: int = MAX_ERROR_LINES) -> list[str]:
    """The error messages of a failed build (with file:line and the few lines
    of context the compiler prints after each), with build-tree paths mapped
    back to the names the student knows. At most cap lines."""
    path_map = path_map or {}
    lines = [_apply_map(l.rstrip("\n"), path_map) for l in text.splitlines()]
    picked: list[str] = []
    lead_in: list[str] = []   # "In function ..." / "In file included from ..." before an error
    in_block = False
    context = 0
    for line in lines:
        if any(r.search(line) for r in _ERROR_START) and not _NOISE.search(line):
            picked.extend(lead_in)
            lead_in = []
            picked.append(line)
            in_block, context = True, 0
            continue
        if _LEAD_IN.search(line):
            lead_in.append(line)
            in_block = False
            continue
        lead_in = [] if not line.startswith(" ") else lead_in
        if in_block and line.strip() and not _NOISE.search(line) and context < 6 and _CONTEXT_OK.search(line):
            picked.append(line)
            context += 1
            continue
        if _ALWAYS.search(line):
            picked.append(line)
        in_block = False
    if not picked:
        picked = [l for l in lines if l.strip() and not _NOISE.search(l)][-30:]
    # Drop exact repeats (nvcc and make often print the same line twice).
    seen: set[str] = set()
    unique = []
    for l in picked:
        if l in seen and not l.startswith(" "):
            continue
        seen.add(l)
        unique.append(l)
    if len(unique) > cap:
        more = len(unique) - cap
        unique = unique[:cap] + [f"... {more} more lines (run with --verbose to see the whole build)"]
    return unique


def cmake_error_lines(text: str, cap: int = 40) -> list[str]:
    lines = text.splitlines()
    for i, l in enumerate(lines):
        if l.startswith("CMake Error"):
            return lines[i:i + cap]
    return lines[-cap:]


# --- Check ------------------------------------------------------------------------------

def check_installed(env: dict[str, str] | None = None) -> bool:
    env = env or tool_env()
    if not shutil.which("pkg-config", path=env.get("PATH")):
        return False
    return subprocess.run(["pkg-config", "--exists", "check"], env=env).returncode == 0


def check_install_command() -> list[str]:
    pkgs = ["check"]
    if not shutil.which("pkg-config"):
        pkgs.append("pkg-config")
    return ["apt-get", "install", "-y", *pkgs]


def ensure_check(install: bool = True) -> bool:
    """Make sure Check is there. As root with apt-get, install it (saying so);
    otherwise print the command to run and return False."""
    if check_installed():
        return True
    cmd = check_install_command()
    shown = " ".join(cmd)
    can_install = install and hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get")
    if not can_install:
        console.error("Check (the C unit test library) is not installed; the kit's C tests need it.\n"
                      f"    install it with: sudo {shown}\n"
                      "    (on other systems: the 'check' package, e.g. dnf install check-devel)")
        return False
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    console.say(f"installing Check: {shown}")
    rc = subprocess.run(cmd, env=env).returncode
    if rc != 0:
        console.say("apt-get install failed; updating the package lists: apt-get update")
        subprocess.run(["apt-get", "update"], env=env)
        console.say(f"installing Check: {shown}")
        rc = subprocess.run(cmd, env=env).returncode
    if rc != 0 or not check_installed():
        console.error(f"could not install Check; run this yourself: {shown}")
        return False
    return True


# --- workers --------------------------------------------------------------------------------

def peer_libraries(root: Path, exercise: str) -> list[str]:
    """The library peers of an exercise: grader/peers/NAME_LIB.cu -> LIB."""
    peers = root / "grader" / "peers"
    prefix = f"{exercise}_"
    return sorted(p.stem[len(prefix):] for p in peers.glob(f"{exercise}_*.cu")) if peers.is_dir() else []


def has_solution(root: Path, exercise: str) -> bool:
    return (root / "solutions" / exercise / f"{exercise}.cu").is_file()


def _show(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root)) + "/"
    except ValueError:
        return str(path)


# Student code is untrusted: its object is vetted (vet.py) before it may run.
# Solutions and library peers are the kit's own and are not.
VETTED_LABELS = ("student", "submission")


def _vet_worker(w: Worker, bdir: Path) -> None:
    """Refuse a built worker whose student file breaks vet.py's rules. Not
    strict: without objdump the system call rule is skipped with a warning
    (vet.py says why test and benchmark differ from grade there)."""
    if vet.skip_requested():
        console.warn(f"UNSAFE: {w.exercise} ({w.label}) runs unvetted: {vet.SKIP_WARNING}")
        return
    warnings: list[str] = []
    try:
        refusal = vet.vet_built(bdir, w.target, w.exercise, strict=False, warnings=warnings)
    except vet.VetError as e:
        w.status, w.path = "refused", None
        w.message = f"{w.exercise}: the compiled file could not be checked, so it will not run"
        w.lines = str(e).splitlines()[-MAX_ERROR_LINES:]
        return
    for text in warnings:
        console.warn(text)
    if refusal is not None:
        _refuse(w, refusal)


def _refuse(w: Worker, refusal) -> None:
    w.status, w.path = "refused", None
    w.message = f"{w.exercise} was refused: {refusal.message}"
    w.lines = refusal.lines()
    w.rule, w.symbol = refusal.rule, refusal.symbol


def _build_at_once(bdir: Path, targets: list[str], verbose: bool) -> bool:
    """Build every target in one cmake call; True when all of them built."""
    _require_cmake()
    rc, _out = run_captured(["cmake", "--build", str(bdir), "-j", str(jobs()), "--target", *targets],
                            verbose)
    return rc == 0


def _build_kit_and_workers(bdir: Path, kit: list[str], workers: list[Worker], heading: str,
                           verbose: bool, path_map: dict[str, str], root: Path) -> None:
    """The kit targets and the workers: in one cmake call when all of it
    builds (the usual case; a no-op call costs ~0.5 s on the lent H100
    host, so one call rather than one per target); otherwise the kit alone
    (its failure raises KitError) and then worker by worker, so that a
    compile error lands in its own exercise."""
    at_once = _build_at_once(bdir, kit + [w.target for w in workers], verbose)
    if not at_once:
        build_kit(bdir, kit, verbose, root)
    if workers:
        console.say(heading)
    for w in workers:
        if at_once:
            _built_worker(w, bdir)
            _say_state(w)
        else:
            _build_worker(w, bdir, verbose, path_map)


def _built_worker(w: Worker, bdir: Path) -> None:
    """A worker whose target built: find it, and vet a student's."""
    w.path = executable(bdir, w.target)
    if w.path is None:
        w.status, w.message = "build_error", f"built {w.target} but cannot find the executable"
    else:
        w.status = "ok"
        if w.label in VETTED_LABELS:
            _vet_worker(w, bdir)


def _build_worker(w: Worker, bdir: Path, verbose: bool, path_map: dict[str, str]) -> None:
    started = time.time()
    ok, lines = build_target(bdir, w.target, verbose, path_map)
    if ok:
        _built_worker(w, bdir)
    else:
        w.status, w.lines = "build_error", lines
        w.message = f"{w.exercise} ({w.label}) did not compile"
        # Compiled but did not link (a cuBLAS call, say): the rule it broke
        # says more than the linker's "undefined reference".
        if w.label in VETTED_LABELS:
            _object_refused(w, bdir, started)
    _say_state(w)


def _object_is_current(obj: Path, bdir: Path, exercise: str, since: float) -> bool:
    """Whether obj was compiled from the student's file as it is now: made by
    this build, or newer than the file (make kept it, so a second run of a
    submission that does not link is still vetted). An older object is from
    an earlier version of the file and says nothing about this one."""
    made = obj.stat().st_mtime
    if made >= since - 1.0:
        return True
    cache = cache_values(bdir)
    student = cache.get("BW_STUDENT_DIR") or str(Path(cache.get("CMAKE_HOME_DIRECTORY", ".")) /
                                                   "exercises")
    src = Path(student) / exercise / f"{exercise}.cu"
    try:
        return made >= src.stat().st_mtime
    except OSError:
        return False


def _object_refused(w: Worker, bdir: Path, since: float) -> bool:
    """After a failed link: vet the student's object if this build made it
    (one left from an earlier build says nothing about this file)."""
    if vet.skip_requested():
        return False
    obj = vet.find_object(bdir, w.target, w.exercise)
    if obj is None or not _object_is_current(obj, bdir, w.exercise, since):
        return False
    try:
        refusal = vet.vet_object(obj, source=f"exercises/{w.exercise}/{w.exercise}.cu",
                                 strict=False)
    except vet.VetError:
        return False
    if refusal is None:
        return False
    _refuse(w, refusal)
    return True


def _say_state(w: Worker) -> None:
    state = "ok" if w.ok else ("REFUSED" if w.status == "refused" else "FAILED")
    console.say(f"  {w.exercise:<14} {w.label:<11} {state}")
    if not w.ok and w.lines:
        console.say(console.indent(w.lines))


MISSING_PLACEHOLDER = '#error "bwlab: the submission has no file for this exercise"\n'


def _submission_tree(root: Path, bdir: Path, sub: Submission, all_names: list[str]) -> tuple[Path, Path]:
    sdir = bdir / "submissions" / sub.digest()
    student = sdir / "student"
    tree = sdir / "build"
    for name in all_names:
        dest = student / name / f"{name}.cu"
        data = sub.files.get(name, MISSING_PLACEHOLDER.encode())
        if not dest.exists() or dest.read_bytes() != data:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
    return student, tree


def prepare(exercises: list[str], variant: str = "student", submission: Submission | None = None,
            peers: bool = False, verbose: bool = False, root: Path | None = None,
            all_names: list[str] | None = None) -> Plan:
    """Configure and build what running these exercises needs: bwgrade and one
    worker per exercise and label. Compile errors land in the workers; only a
    kit failure raises (KitError / CheckMissing)."""
    root = root or repo_root()
    bdir = build_dir(root)
    plan = Plan(build_dir=bdir)
    all_names = all_names or list(exercises)

    # Solutions and peers live only in the full tree. Without Check, CMake
    # leaves out the kit's unit tests and says so; the grader still builds.
    full = variant == "solution" or peers
    options: dict[str, str] = {"BW_STUDENT_ONLY": "OFF"} if full else {}
    configure(root, bdir, options, verbose)
    console.say("building the grader ...")

    main_map = {str(root) + "/": ""}
    for ex in exercises:
        if variant == "student":
            plan.workers.append(Worker(ex, "student", f"bw_worker_{ex}"))
        elif variant == "solution":
            w = Worker(ex, "solution", f"bw_worker_{ex}_solution")
            if not has_solution(root, ex):
                w.status = "unavailable"
                w.message = f"no solutions/{ex}/{ex}.cu in this copy of the kit"
            plan.workers.append(w)
        elif variant == "submission":
            w = Worker(ex, "submission", f"bw_worker_{ex}")
            assert submission is not None
            if ex in submission.missing or ex not in submission.files:
                w.status = "missing"
                w.message = submission.missing.get(ex) or f"missing file exercises/{ex}/{ex}.cu"
            plan.workers.append(w)
        if peers:
            for lib in peer_libraries(root, ex):
                plan.workers.append(Worker(ex, lib, f"bw_worker_{ex}_{lib}"))

    pending = [w for w in plan.workers if w.status == "pending"]
    in_main = [w for w in pending if w.label != "submission"]
    _build_kit_and_workers(bdir, ["bwgrade", "bwworker"], in_main, "building the workers ...",
                           verbose, main_map, root)
    plan.bwgrade = executable(bdir, "bwgrade")

    sub_workers = [w for w in pending if w.label == "submission"]
    if sub_workers:
        assert submission is not None
        student, tree = _submission_tree(root, bdir, submission, all_names)
        configure(root, tree, {"BW_STUDENT_DIR": str(student), "BW_STUDENT_ONLY": "ON"}, verbose)
        sub_map = {str(student): "exercises", str(root) + "/": ""}
        _build_kit_and_workers(tree, ["bwworker"], sub_workers,
                               "building the submission's workers ...", verbose, sub_map, root)

    for w in plan.workers:
        if w.status == "missing" or w.status == "unavailable":
            console.say(f"  {w.exercise:<14} {w.label:<11} {w.message}")

    if plan.bwgrade is None:
        raise KitError("bwgrade was built but cannot be found in " + _show(bdir, root))
    return plan

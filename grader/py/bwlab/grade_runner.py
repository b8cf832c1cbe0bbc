"""How run.py grade reads, builds and runs one submission: KitRunner.

Each submission is compiled against a pristine copy of the kit's sources that
holds no solutions and no instructor files (the handout's own file list), in a
build tree of its own, with a time limit on every step; its compiled file is
vetted (vet.py) before it may run. bwgrade, built once per grading run from
the same pristine copy, runs the cases and the benchmark.

grade_batch.py only calls a runner's load, build, test, bench, cleanup and
(when it has one) hold_context, so the tests can grade with a fake runner,
without nvcc or a GPU.
"""
from __future__ import annotations

import re
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from . import build, console, exercises, foreign_includes, handout_files, submission, toolchain, vet
from .context_hold import ContextHold
from .cmd_test import read_json
from .child_run import run_limited
from .scoring import fmt_points
from .seeds import SECRET_ENV, SEED_ENV, Seed

# Of the handout's files, those a student-only build never reads.
KIT_SKIP = ("docs/", "handout/", "tests/", "grader/py/")


def build_env() -> dict[str, str]:
    """The tools' environment (build.tool_env: CUDA's bin folder on PATH, for
    nvcc and compute-sanitizer) without the seeds: for CMake and bwgrade."""
    return {k: v for k, v in build.tool_env().items() if k not in (SECRET_ENV, SEED_ENV)}


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
        self._archs: str | None = None
        self._archs_read = False
        self._lock = threading.Lock()   # setup runs alongside the first builds
        # The grader's tree, where setup builds the workers' kit code once for
        # every submission (BW_PREBUILT_DIR); None when --bwgrade was given.
        self._prebuilt: Path | None = None if self.bwgrade else self.workdir / "grader" / "build"
        self._prebuilt_done = threading.Event()
        self._kit_files: list[str] | None = None

    # -- set-up ---------------------------------------------------------------

    def kit_files(self) -> list[str]:
        """The kit files a build may see: the student handout's own list
        (handout_files: no solutions, no instructor files), minus what the
        student-only build never reads (docs, tests, the Python layer)."""
        with self._lock:
            if self._kit_files is None:
                files, _ = handout_files.list_files(self.root)
                kept, _ = handout_files.select(files, self.root)
                self._kit_files = [f for f in kept
                                   if not f.startswith(KIT_SKIP) or f == "tests/CMakeLists.txt"]
            return self._kit_files

    @property
    def archs(self) -> str | None:
        """The CUDA architectures the kit's own build tree was configured for."""
        with self._lock:
            if not self._archs_read:
                values = build.cache_values(build.build_dir(self.root))
                self._archs = values.get("CMAKE_CUDA_ARCHITECTURES")
                self._archs_read = True
            return self._archs

    def pristine_copy(self, dest: Path) -> Path:
        for rel in self.kit_files():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(self.root / rel, target)
        return dest

    def setup(self, timeout: float) -> None:
        """Build bwgrade and the workers' kit code (bwworker, bwref, the
        adapters) once, from a pristine copy. Raises build.KitError. run.py
        grade runs it while the first submissions configure."""
        try:
            self._setup(timeout)
        finally:
            self._prebuilt_done.set()

    def _setup(self, timeout: float) -> None:
        if self.bwgrade is not None:
            if not self.bwgrade.is_file():
                raise build.KitError(f"--bwgrade {self.bwgrade}: no such file")
            return
        if not shutil.which("cmake"):
            raise build.KitError("cmake was not found: install CMake 3.24 or newer")
        kit = self.pristine_copy(self.workdir / "grader" / "kit")
        tree = self.workdir / "grader" / "build"
        console.say("building the grader (bwgrade) and the workers' kit code from a pristine "
                    "copy of the kit ...")
        opts = {"BW_STUDENT_ONLY": "ON", **self._arch_opt()}
        # bw_grade_kit: bwgrade, bwworker, bwref and the adapters, in parallel.
        for step in (build.configure_command(kit, tree, opts),
                     ["cmake", "--build", str(tree), "-j", str(build.jobs()), "--target",
                      "bw_grade_kit"]):
            r = run_limited(step, timeout, env=build_env())
            if r.rc != 0:
                why = "timed out" if r.timed_out else f"exit {r.rc}"
                raise build.KitError(f"the grader did not build ({why})",
                                     build.trim_compiler_output(r.output, {str(kit) + "/": ""})
                                     or r.output.splitlines()[-40:])
        self.bwgrade = build.executable(tree, "bwgrade")
        if self.bwgrade is None:
            raise build.KitError(f"bwgrade was built but cannot be found in {tree}")
        # The baseline worker (no student code) runs as the worker user too.
        baseline = self.bwgrade.parent / "bw_worker_baseline"
        if not baseline.is_file():
            raise build.KitError(f"bw_worker_baseline was not built beside {self.bwgrade}")
        _reachable(baseline, self.workdir)

    def hold_context(self, env: dict[str, str]) -> ContextHold | None:
        """A CUDA context held open on the GPU env selects while a lane works
        there (bwhold, built beside bwgrade), or None when there is no bwhold.
        Call after setup."""
        exe = self.bwgrade.parent / "bwhold" if self.bwgrade is not None else None
        return ContextHold(exe, env) if exe is not None and exe.is_file() else None

    def _arch_opt(self) -> dict[str, str]:
        return {"CMAKE_CUDA_ARCHITECTURES": self.archs} if self.archs else {}

    # -- a submission ---------------------------------------------------------

    def load(self, path: Path):
        """submission.load: raises submission.SubmissionError when unusable."""
        return submission.load(path, self.exercises)

    def build(self, sub, sub_id: str, timeout: float) -> Built:
        b = Built()
        b.workdir = Path(tempfile.mkdtemp(prefix=_safe_name(sub_id) + "-", dir=self.workdir))
        # Searchable, not listable: the worker user (nobody, when grading as
        # root) must reach its executable in build/; mkdtemp made it 0700.
        b.workdir.chmod(0o711)
        b.found_at = dict(sub.found_at)
        kit = self.pristine_copy(b.workdir / "kit")
        student = b.workdir / "student"
        student.mkdir(mode=0o700)   # the sources: only the grading user reads them
        # Every exercise of the kit's table, graded or not (--exercises LIST):
        # CMake configures them all, and a missing file gets a placeholder
        # so that it can; a placeholder is never built.
        for ex in sorted(set(self.exercises) | set(exercises.names(self.root))):
            dest = student / ex / f"{ex}.cu"
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(sub.files.get(ex, build.MISSING_PLACEHOLDER.encode())
                             if ex in self.exercises else build.MISSING_PLACEHOLDER.encode())
        tree = b.workdir / "build"
        env = build_env()
        path_map = {str(student) + "/": "exercises/", str(kit) + "/": ""}
        opts = {"BW_STUDENT_DIR": str(student), "BW_STUDENT_ONLY": "ON", **self._arch_opt()}
        if self._prebuilt is not None:
            # The kit's worker code comes from the grader's tree, built by setup.
            opts["BW_PREBUILT_DIR"] = str(self._prebuilt)
            path_map[str(self._prebuilt) + "/"] = ""
        steps = [("configure", build.configure_command(kit, tree, opts))]
        if self._prebuilt is None:
            steps.append(("worker core", ["cmake", "--build", str(tree), "-j", str(self.build_jobs),
                                          "--target", "bwworker"]))
        for what, cmd in steps:
            r = run_limited(cmd, timeout, env=env)
            b.logs[f"build_{what.replace(' ', '_')}"] = r.output
            if r.rc != 0:
                why = f"took longer than {fmt_points(timeout)} s" if r.timed_out else f"exit {r.rc}"
                b.problems.append(f"the kit's {what} step failed for this submission ({why})")
                for ex in self.exercises:
                    b.build[ex] = {"state": "not_built", "reason": f"the kit's {what} step failed"}
                return b
        if self._prebuilt is not None:
            self._prebuilt_done.wait()
            if self.bwgrade is None:   # setup failed; its KitError stops the batch, this is for the record
                for ex in self.exercises:
                    b.build[ex] = {"state": "not_built", "reason": "the grader's kit code did not build"}
                return b
        for ex in self.exercises:
            if ex not in sub.files:
                b.build[ex] = {"state": "missing",
                               "reason": sub.missing.get(ex, f"missing file exercises/{ex}/{ex}.cu")}
                continue
            refused = _foreign_include(kit, tree, student / ex / f"{ex}.cu", ex, env, timeout, path_map)
            if refused:
                b.build[ex] = refused
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
                        _reachable(exe, b.workdir)
            b.build[ex] = info
        return b

    def cleanup(self, built: Built) -> None:
        if built.workdir is not None:
            shutil.rmtree(built.workdir, ignore_errors=True)

    # -- bwgrade --------------------------------------------------------------

    # bwgrade's --sandbox/--hide (sandbox.Sandbox.bwgrade_args), set by run()
    sandbox_args: tuple[str, ...] = ()
    # Containment without bubblewrap (grader/supervisor/containment.h): as root the
    # workers run as nobody, each in its own PID namespace; bwgrade skips it
    # under --sandbox and says in its JSON ("containment") what was in force.
    contain_args: tuple[str, ...] = ("--contain",)

    def _bwgrade(self, args: list[str], json_path: Path, env: dict[str, str], timeout: float,
                 stdin_text: str | None = None) -> Outcome:
        assert self.bwgrade is not None
        r = run_limited([str(self.bwgrade), *args, *self.sandbox_args, *self.contain_args,
                         "--json", str(json_path)],
                        timeout, env=env, stdin_text=stdin_text)
        doc = read_json(json_path) if r.rc is not None else None
        return Outcome(r.rc, doc, r.output, r.timed_out, r.seconds)

    def test(self, exercise: str, worker: Path, seed: Seed, env: dict[str, str],
             timeout: float, json_path: Path) -> Outcome:
        return self._test(exercise, worker, seed, env, timeout, json_path, [])

    def memcheck(self, exercise: str, worker: Path, seed: Seed, env: dict[str, str],
                 timeout: float, json_path: Path, groups: tuple[str, ...],
                 case_limit: float | None = None) -> Outcome:
        """The cases of these groups under compute-sanitizer memcheck. One
        failure decides a group, so the rest of a failed group is not run
        (a kernel that faults everywhere costs seconds, not a worker restart
        per case). case_limit: no case may take longer (seconds)."""
        extra = ["--sanitize", "memcheck", "--groups", ",".join(groups), "--group-fail-fast"]
        if case_limit:
            extra += ["--case-limit", f"{case_limit:g}"]
        return self._test(exercise, worker, seed, env, timeout, json_path, extra)

    def _test(self, exercise: str, worker: Path, seed: Seed, env: dict[str, str],
              timeout: float, json_path: Path, extra: list[str]) -> Outcome:
        args = ["test", exercise, "--worker", str(worker), "--quiet", *extra]
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
    return vet.find_object(tree, target, exercise) is not None


def _foreign_include(kit: Path, tree: Path, source: Path, exercise: str, env: dict[str, str],
                     timeout: float, path_map: dict[str, str]) -> dict | None:
    """foreign_includes.check before the compile: the build entry of a file
    that reads files outside its contract and the system's headers (refused),
    or whose #include lines do not resolve (build_failed, showing only the
    preprocessor's messages on its own lines); None when it may be built."""
    nvcc = toolchain.cache_values(tree).get("CMAKE_CUDA_COMPILER")
    if not nvcc:
        return None
    # The folders the compile itself searches: the contract's, and the kit
    # headers the worker core shares with student code (bwworker's and
    # bwref's public include folders in CMakeLists.txt).
    dirs = [kit / "exercises" / exercise, kit / "grader" / "protocol", kit / "reference"]
    why, shown = foreign_includes.check(source, dirs, nvcc, env, timeout)
    if why:
        return {"state": "refused", "reason": f"refused: {why}"}
    if shown is None:
        return None
    tail = "\n".join(build.trim_compiler_output(shown, path_map)) if shown else ""
    return {"state": "build_failed",
            "log_tail": tail or ("the preprocessor failed inside a file this one includes (its "
                                 "messages are not shown): a submission may #include only its "
                                 "exercise's header and system or CUDA headers")}


def _vet(tree: Path, target: str, exercise: str) -> str | None:
    """vet.py on a submission's built worker: why it may not run, or None.
    Strict: a file that cannot be fully checked (no objdump) is not graded.
    None, unchecked, when $BWLAB_UNSAFE_SKIP_VET asks (run.py grade says so)."""
    if vet.skip_requested():
        return None
    try:
        refusal = vet.vet_built(tree, target, exercise, strict=True)
    except vet.VetError as e:
        return f"refused: the compiled file could not be checked ({str(e).splitlines()[0]})"
    return f"refused: {' '.join(refusal.lines())}" if refusal else None


def _reachable(exe: Path, top: Path) -> None:
    """Lets other users run exe (as root, bwgrade runs workers as nobody):
    every folder from top down to it searchable, the file readable and
    executable, whatever umask the build ran under. Listing stays closed."""
    try:
        folder = exe.parent
        while folder != top and top in folder.parents:
            folder.chmod(folder.stat().st_mode | 0o111)
            folder = folder.parent
        exe.chmod(exe.stat().st_mode | 0o555)
    except OSError:
        pass   # bwgrade then says the worker user cannot run it, and why


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:40] or "submission"

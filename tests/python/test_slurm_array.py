"""docs/slurm/grade_array.sbatch for real: a 3-task job array on a one-node
Slurm cluster (instructor side; needs slurm-wlm, nvcc and cmake, and
BWLAB_SLOW_TESTS=1, which CI sets; .ci/run installs slurm-wlm).

The test starts slurmctld and slurmd in a temporary folder
(tests/slurm/one_node.py: a node that looks like a GPU node to the script's
#SBATCH lines), submits the script unchanged, as docs/INSTRUCTORS.md says,
over five small submissions, then merges the three shard folders with
run.py merge and compares them with one unsharded run.py grade of the same
batch: the same gradebook.csv byte for byte, the same JUnit report (times
aside), Gradescope files and records. The submissions are built with nvcc for
real; bwgrade is tests/slurm/stand_in_bwgrade.py (no GPU), which reads a
marker compiled into each worker, so every row differs.

When the daemons cannot start here, or cannot run a one-line probe job, the
test prints their own log lines, runs the script directly once per task id
with the variables Slurm would set, checks the same things, and then reports
itself skipped with that reason: the Slurm part did not run. It runs as root
or as any other user (the daemons and the jobs then run as that user).

ScriptGuardTests need only bash: the script's refusals and the run.py grade
command line it builds (GRADE_ARGS included).
"""
import csv
import json
import os
import secrets
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SBATCH = ROOT / "docs" / "slurm" / "grade_array.sbatch"
HELPERS = ROOT / "tests" / "slurm"
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import exercises, submission_ids  # noqa: E402

SHARDS = 3
# id -> {exercise: marker for the stand-in, or None: the file is left out,
# or "COMPILE_ERROR"}. Five ids in three shards: 2, 2 and 1 submissions.
BATCH = {
    "ada": {"haxpy": "PCT=95", "vector_sum": "PCT=60"},
    "bob.tar.gz": {"haxpy": "FAIL=large", "vector_sum": "PCT=85"},
    "cyd": {"haxpy": "COMPILE_ERROR", "vector_sum": "FAIL=special,huge"},
    "dee": {"haxpy": "PCT=40", "vector_sum": None},
    "eve": {"haxpy": "", "vector_sum": ""},      # the kit's stubs as they are
}
TASK_TIMEOUT = 900   # seconds for the whole array (about a minute on 2 cores)


def missing_prerequisite():
    """Why the big test cannot run here, or None (the order says what to fix first)."""
    if not SBATCH.is_file() or not (HELPERS / "one_node.py").is_file():
        return "no docs/slurm/grade_array.sbatch or tests/slurm/ in this copy of the kit (the handout)"
    sys.path.insert(0, str(HELPERS))
    import one_node
    _, missing = one_node.find_tools()
    if missing:
        return f"slurm-wlm is not installed ({', '.join(missing)} not found; apt-get install -y slurm-wlm)"
    if os.environ.get("BWLAB_SLOW_TESTS") != "1":
        return "slow (builds with nvcc, starts Slurm daemons): set BWLAB_SLOW_TESTS=1"
    if not shutil.which("cmake"):
        return "cmake not found"
    if not (shutil.which("nvcc") or Path("/usr/local/cuda/bin/nvcc").exists()):
        return "nvcc not found"
    if not {"haxpy", "vector_sum"} <= set(exercises.names(ROOT)):
        return "the kit has no haxpy and vector_sum"
    return None


def clean_env():
    """This process's environment without seeds, GPU choice, the script's
    own variables or anything of an enclosing Slurm job."""
    return {k: v for k, v in os.environ.items()
            if k not in ("BWLAB_SECRET_SEED", "BWLAB_SEED", "BWLAB_ROOT", "CUDA_VISIBLE_DEVICES", "SHARDS",
                         "KIT", "SUBMISSIONS", "OUT_BASE", "GRADE_ARGS")
            and not k.startswith(("SLURM_", "SBATCH_", "SALLOC_", "SRUN_"))}


def student_file(ex, marker):
    stub = (ROOT / "exercises" / ex / f"{ex}.cu").read_text()
    if marker == "COMPILE_ERROR":
        return f'#include "{ex}.h"\nint not_valid(void) {{ return undefined_name; }}\n'
    if not marker:
        return stub
    # static and used: kept in the worker, and a local symbol, which vet.py allows.
    return stub + f'\n__attribute__((used)) static const char bwlab_stand_in[] = "BWLAB_STAND_IN {marker}";\n'


def make_batch(folder):
    folder.mkdir(parents=True)
    for sid, files in BATCH.items():
        present = {ex: student_file(ex, m) for ex, m in files.items() if m is not None}
        if sid.endswith(".tar.gz"):
            src = folder.parent / "tar-src"
            for ex, text in present.items():
                (src / "exercises" / ex).mkdir(parents=True, exist_ok=True)
                (src / "exercises" / ex / f"{ex}.cu").write_text(text)
            with tarfile.open(folder / sid, "w:gz") as tar:
                tar.add(src / "exercises", arcname="exercises")
        else:
            for ex, text in present.items():
                (folder / sid / "exercises" / ex).mkdir(parents=True)
                (folder / sid / "exercises" / ex / f"{ex}.cu").write_text(text)
    return folder


def strip_times(el):
    """An element as nested tuples, without time attributes (as test_grading does)."""
    attrs = tuple(sorted((k, v) for k, v in el.attrib.items() if k != "time"))
    return (el.tag, attrs, (el.text or "").strip(), tuple(strip_times(c) for c in el))


def without_times(value):
    """A record without its durations, the one thing that differs between
    two gradings of the same batch."""
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items()
                if not (k == "seconds" or k.endswith("_seconds"))}
    if isinstance(value, list):
        return [without_times(v) for v in value]
    return value


def read_rows(folder):
    with open(folder / "gradebook.csv", newline="", encoding="utf-8") as f:
        return {r["id"]: r for r in csv.DictReader(f)}


class Setup:
    """The temporary folder: submissions, stand-in, policy, seed, and the
    environment the job and the reference run share."""

    def __init__(self, tmp: Path):
        if any(c.isspace() for c in str(tmp)):
            raise unittest.SkipTest(f"the temporary folder's path has blanks ({tmp}); "
                                    "GRADE_ARGS cannot hold it")
        self.tmp = tmp
        self.subs = make_batch(tmp / "submissions")
        self.ids = sorted(submission_ids.submission_id(p) for p in self.subs.iterdir())
        self.bwgrade = tmp / "bwgrade"
        shutil.copyfile(HELPERS / "stand_in_bwgrade.py", self.bwgrade)
        self.bwgrade.chmod(0o755)
        # The default policy runs memcheck, which needs compute-sanitizer
        # (CI's CUDA has none) and which the stand-in does not model.
        self.policy = tmp / "policy.ini"
        self.policy.write_text("[all]\nmemcheck = none\n")
        self.out_base = tmp / "grades-shards"      # the script's --output folder too
        self.out_base.mkdir()
        self.job_tmp = tmp / "node-tmp"           # the nodes' TMPDIR: the task's build trees
        self.job_tmp.mkdir()
        self.env = clean_env()
        self.env.update(BWLAB_SECRET_SEED=str(secrets.randbits(63) | 1 << 62), KIT=str(ROOT),
                        SUBMISSIONS=str(self.subs), OUT_BASE=str(self.out_base), TMPDIR=str(self.job_tmp),
                        GRADE_ARGS=f"--bwgrade {self.bwgrade} --policy {self.policy}")


class SlurmArrayTests(unittest.TestCase):
    def test_array_of_three_shards_merges_into_the_unsharded_gradebook(self):
        why = missing_prerequisite()
        if why:
            self.skipTest(why)
        import one_node
        tools, _ = one_node.find_tools()
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="bwlab-slurm-") as tmp:
            tmp = Path(tmp)
            s = Setup(tmp)
            cluster = one_node.OneNodeCluster(tmp / "slurm", tools)
            slurm_broken = None
            try:
                try:
                    cluster.start()
                except one_node.StartError as e:
                    slurm_broken = (f"Slurm cannot run jobs here: {e}", e.detail)
                    print(f"\n{slurm_broken[0]}\n" + "\n".join(e.detail) + "\n" + cluster.log_tails(),
                          file=sys.stderr)
                if slurm_broken is None:
                    # As docs/INSTRUCTORS.md has it; the rest comes from the environment.
                    try:
                        job = cluster.submit([f"--array=0-{SHARDS - 1}", f"--export=ALL,SHARDS={SHARDS}",
                                              str(SBATCH)], cwd=tmp, env=s.env)
                        tasks = cluster.wait(job, SHARDS, TASK_TIMEOUT)
                    except (TimeoutError, RuntimeError) as e:
                        self.fail(f"{e}\n{cluster.log_tails()}\n{self.task_logs(s)}")
                    exits = {int(t["ArrayTaskId"]): (t["JobState"], t["ExitCode"]) for t in tasks}
                    self.assertEqual(exits, {k: ("COMPLETED", "0:0") for k in range(SHARDS)},
                                     f"{[(t['ArrayTaskId'], t['JobState'], t['Reason']) for t in tasks]}\n"
                                     + self.task_logs(s))
                    logs = {k: s.out_base / f"slurm-{job}_{k}.out" for k in range(SHARDS)}
            finally:
                cluster.stop()
            if slurm_broken is not None:
                logs, exits = self.run_tasks_directly(s)
                self.assertEqual(exits, {k: 0 for k in range(SHARDS)}, self.task_logs(s))
            self.check_shards_and_merge(s, logs)
            elapsed = time.monotonic() - t0
        if slurm_broken is not None:
            self.skipTest(slurm_broken[0] + " (" + "; ".join(slurm_broken[1][-3:]) + "); the script ran "
                          f"directly for each task id instead and passed ({elapsed:.0f} s)")

    # -- the parts ------------------------------------------------------------

    def run_tasks_directly(self, s):
        """The script once per task id, at the same time, with what Slurm sets
        (SHARDS left to SLURM_ARRAY_TASK_COUNT). ({task: log}, {task: exit})."""
        job = "4242"
        procs, logs = {}, {}
        for k in range(SHARDS):
            env = dict(s.env, SLURM_ARRAY_TASK_ID=str(k), SLURM_ARRAY_JOB_ID=job,
                       SLURM_JOB_ID=str(int(job) + 1 + k), SLURM_ARRAY_TASK_COUNT=str(SHARDS),
                       SLURM_SUBMIT_DIR=str(s.tmp))
            logs[k] = s.out_base / f"slurm-{job}_{k}.out"
            with open(logs[k], "w") as out:
                procs[k] = subprocess.Popen(["bash", str(SBATCH)], cwd=s.tmp, env=env, stdout=out,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        exits = {}
        for k, p in procs.items():
            try:
                exits[k] = p.wait(TASK_TIMEOUT)
            except subprocess.TimeoutExpired:
                for q in procs.values():
                    q.kill()
                self.fail(f"task {k} ran past {TASK_TIMEOUT} s\n" + self.task_logs(s))
        return logs, exits

    def task_logs(self, s):
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted(s.out_base.glob("slurm-*.out")))

    def check_shards_and_merge(self, s, logs):
        tmp, n = s.tmp, len(s.ids)
        # Each task graded its own shard, K = task id + 1, of the whole batch.
        # (Catches an off-by-one or reversed task -> shard mapping, a SHARDS
        # that did not arrive, a glob that saw another list of submissions.)
        for k in range(SHARDS):
            text = logs[k].read_text(errors="replace")
            self.assertIn(f"shard {k + 1}/{SHARDS} on ", text, f"task {k}:\n{text}")
            want = submission_ids.shard_select(s.ids, (k + 1, SHARDS))
            self.assertIn(f"grading {len(want)} of {n} submissions (shard {k + 1}/{SHARDS})", text, text)
            manifest = json.loads((s.out_base / f"shard-{k + 1}" / "manifest.json").read_text())
            self.assertEqual(manifest["shard"], {"k": k + 1, "n": SHARDS})
            self.assertEqual(manifest["ids"], want)
            self.assertEqual(manifest["all_ids_count"], n)
        self.assertEqual(sorted(p.name for p in s.out_base.iterdir() if p.is_dir()),
                         [f"shard-{k}" for k in range(1, SHARDS + 1)])
        # The trap removed every task's build trees.
        self.assertEqual(sorted(p.name for p in s.job_tmp.glob("bwlab-grade-*")), [])

        # The reference: one process, the same batch, seed, policy and stand-in.
        r = subprocess.run([sys.executable, str(ROOT / "run.py"), "grade",
                            *map(str, sorted(s.subs.iterdir())), "--out", str(tmp / "all"),
                            "--work", str(tmp / "work-all"), *s.env["GRADE_ARGS"].split()],
                           cwd=ROOT, env=s.env, capture_output=True, text=True, timeout=TASK_TIMEOUT)
        self.assertEqual(r.returncode, 0, (r.stdout + r.stderr)[-6000:])

        # As the INSTRUCTORS.md recipe: merge grades-shards/shard-*.
        shard_dirs = sorted(str(p) for p in s.out_base.glob("shard-*"))
        r = subprocess.run([sys.executable, str(ROOT / "run.py"), "merge", *shard_dirs,
                            "--out", str(tmp / "merged")],
                           cwd=ROOT, env=s.env, capture_output=True, text=True, timeout=300)
        # exit 1 would mean a missing shard, a short batch or a PROBLEM note
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"merged {n} submissions from {SHARDS} folders", r.stdout)

        a, b = tmp / "all", tmp / "merged"
        self.assertEqual((b / "gradebook.csv").read_bytes(), (a / "gradebook.csv").read_bytes())
        self.assertEqual(strip_times(ET.parse(b / "junit.xml").getroot()),
                         strip_times(ET.parse(a / "junit.xml").getroot()))
        ma, mb = (json.loads((d / "manifest.json").read_text()) for d in (a, b))
        for key in ("ids", "all_ids_count", "all_ids_sha256", "exercises", "policy", "seed"):
            self.assertEqual(mb[key], ma[key], key)
        self.assertEqual(ma["ids"], s.ids)
        for sid in s.ids:
            self.assertEqual((b / "gradescope" / sid / "results.json").read_text(),
                             (a / "gradescope" / sid / "results.json").read_text(), sid)
            self.assertEqual(without_times(json.loads((b / f"{sid}.json").read_text())),
                             without_times(json.loads((a / f"{sid}.json").read_text())), sid)

        # The comparison means something only if the rows differ: each one
        # carries its own submission's marker (read from its built worker).
        rows = read_rows(b)
        self.assertEqual(list(rows), s.ids)
        self.assertEqual(rows["cyd"]["haxpy_total"], "0", rows["cyd"]["notes"])           # compile error
        self.assertEqual(rows["dee"]["vector_sum_total"], "0", rows["dee"]["notes"])      # no file
        self.assertEqual(rows["ada"]["haxpy_total"], "100", rows["ada"]["notes"])         # PCT=95
        self.assertNotEqual(rows["bob"]["haxpy_correctness"], "70", rows["bob"]["notes"])  # FAIL=large
        self.assertEqual(len({r["total"] for r in rows.values()}), len(rows),
                         {sid: r["total"] for sid, r in rows.items()})
        cyd = json.loads((b / "cyd.json").read_text())
        hx = [e for e in cyd["exercises"] if e["exercise"] == "haxpy"][0]
        self.assertEqual(hx["state"], "build_failed")
        self.assertIn("undefined_name", hx["build"]["log_tail"])


class ScriptGuardTests(unittest.TestCase):
    """The script's own checks and the command line it builds, run directly
    with a python3 on PATH that only prints its arguments (bash only)."""

    def setUp(self):
        if not SBATCH.is_file():
            self.skipTest("no docs/slurm/grade_array.sbatch in this copy of the kit (the handout)")
        self.tmp = Path(tempfile.mkdtemp(prefix="bwlab-sbatch-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)
        for sid in ("bob", "ada"):
            (self.tmp / "subs" / sid).mkdir(parents=True)
        tools = self.tmp / "tools"
        tools.mkdir()
        (tools / "python3").write_text('#!/bin/sh\nfor a in "$@"; do printf \'ARG %s\\n\' "$a"; done\n')
        (tools / "python3").chmod(0o755)
        self.path = f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"

    def run_script(self, **env):
        base = dict(clean_env(), PATH=self.path, KIT=str(ROOT), SUBMISSIONS=str(self.tmp / "subs"),
                    OUT_BASE=str(self.tmp / "out"), TMPDIR=str(self.tmp), SLURM_JOB_ID="7",
                    SLURM_SUBMIT_DIR=str(self.tmp))
        base.update(env)
        r = subprocess.run(["bash", str(SBATCH)], cwd=self.tmp, env=base, capture_output=True,
                           text=True, timeout=120)
        args = [line[4:] for line in r.stdout.splitlines() if line.startswith("ARG ")]
        return r, args

    def test_a_task_outside_the_shards_is_refused(self):
        r, args = self.run_script(SLURM_ARRAY_TASK_ID="3", SHARDS="3")
        self.assertEqual((r.returncode, args), (2, []), r.stdout + r.stderr)
        self.assertIn("outside SHARDS=3: the --array range must be 0-2", r.stderr)
        r, args = self.run_script(SHARDS="3")     # not an array task
        self.assertEqual((r.returncode, args), (2, []), r.stdout + r.stderr)
        self.assertIn("sbatch --array", r.stderr)
        r, args = self.run_script(SLURM_ARRAY_TASK_ID="0", SHARDS="3", SUBMISSIONS=str(self.tmp / "none"))
        self.assertEqual((r.returncode, args), (2, []), r.stdout + r.stderr)
        self.assertIn("no submissions in", r.stderr)

    def test_the_grade_command_line(self):
        subs = [str(self.tmp / "subs" / "ada"), str(self.tmp / "subs" / "bob")]
        # task 1 of an array of 2: shard 2/2 (SHARDS from SLURM_ARRAY_TASK_COUNT)
        r, args = self.run_script(SLURM_ARRAY_TASK_ID="1", SLURM_ARRAY_TASK_COUNT="2")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("shard 2/2 on ", r.stdout)
        work = str(self.tmp / "bwlab-grade-7-1")
        self.assertEqual(args, ["run.py", "grade", *subs, "--shard", "2/2",
                                "--out", str(self.tmp / "out" / "shard-2"), "--work", work, "--jobs", "2"])
        self.assertFalse(Path(work).exists())     # the trap removed it
        # GRADE_ARGS: split on blanks, no glob, after the script's own options
        r, args = self.run_script(SLURM_ARRAY_TASK_ID="0", SHARDS="3", BWLAB_BUILD_JOBS="1",
                                  GRADE_ARGS="  --policy /p/x.ini\t--sandbox   none *")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(args[args.index("--shard"):],
                         ["--shard", "1/3", "--out", str(self.tmp / "out" / "shard-1"),
                          "--work", str(self.tmp / "bwlab-grade-7-0"), "--jobs", "1",
                          "--policy", "/p/x.ini", "--sandbox", "none", "*"])

    def test_relative_paths_are_from_where_the_job_started(self):
        """SUBMISSIONS and OUT_BASE given relative to the submit folder while
        KIT is elsewhere: run.py (run from KIT) must get paths that still name
        them. Catches the glob taken before the cd to KIT, which handed run.py
        paths relative to the wrong folder."""
        r, args = self.run_script(SLURM_ARRAY_TASK_ID="0", SHARDS="1", SUBMISSIONS="subs",
                                  OUT_BASE="out")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(args[2:4], [str(self.tmp / "subs" / "ada"), str(self.tmp / "subs" / "bob")])
        self.assertEqual(args[args.index("--out") + 1], str(self.tmp / "out" / "shard-1"))


if __name__ == "__main__":
    unittest.main()

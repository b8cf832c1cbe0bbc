"""A throw-away one-node Slurm cluster for tests (Debian's slurm-wlm, 22.05).

Everything lives in one folder: slurm.conf, gres.conf, state, spool, pid and
log files. slurmctld and slurmd run as children of the test, in the
foreground (-D), as whoever runs the test (root or not: both daemons run as
that user, and so do the jobs), on ports picked free at start, so they touch
nothing of the host's own Slurm, if it has one. Plugins are the ones that work
in a container without systemd or cgroup delegation: auth/none and cred/none
(no munged to run), proctrack/linuxproc, task/none, no accounting.

The node claims what grade_array.sbatch asks of a real GPU node (8 CPUs and
32G per task, gpu:1) for three tasks at once: SlurmdParameters=config_overrides
lets slurmd report more than the hardware has, and the three "GPUs" are plain
files in the folder. Slurm only counts them (it logs that they are no device
nodes); nothing binds or opens them. So the script is submitted unchanged.

    cluster = OneNodeCluster(folder, tools)
    try:
        cluster.start()                   # StartError: the daemons' own words
                                          # (node idle and a probe job ran, else)
        job = cluster.submit([...], cwd, env)
        tasks = cluster.wait(job, timeout)
    finally:
        cluster.stop()
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = ("slurmctld", "slurmd")
CLIENTS = ("sbatch", "sinfo", "scontrol", "scancel")
# The daemons are in sbin, which is not on every user's PATH.
SBIN = ("/usr/sbin", "/usr/local/sbin", "/sbin")
NODE = "bwlab-node"
FINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                "BOOT_FAIL", "DEADLINE", "PREEMPTED"}
# Lines 22.05 logs on every fresh start; they never explain a failure.
NOISE = re.compile(r"state file|Trying backup state|Information may be lost|Jobs may be lost|"
                   r"Reservations may be lost|Triggers may be lost|pmix|PMIx|MPI: Cannot create context|"
                   r"not a valid character or block device")


def find_tools(path: str | None = None) -> tuple[dict[str, str], list[str]]:
    """({name: path}, [missing names]) for the daemons and the client commands."""
    search = os.pathsep.join([path if path is not None else os.environ.get("PATH", ""), *SBIN])
    found, missing = {}, []
    for name in DAEMONS + CLIENTS:
        p = shutil.which(name, path=search)
        if p:
            found[name] = p
        else:
            missing.append(name)
    return found, missing


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StartError(Exception):
    """The cluster did not come up; .detail holds the daemons' log lines."""

    def __init__(self, message: str, detail: list[str]):
        super().__init__(message)
        self.detail = detail


class OneNodeCluster:
    def __init__(self, folder: Path, tools: dict[str, str], gpus: int = 3, cpus: int = 24,
                 memory_mb: int = 98304):
        self.dir = Path(folder)
        self.tools = tools
        self.gpus, self.cpus, self.memory_mb = gpus, cpus, memory_mb
        self.conf = self.dir / "slurm.conf"
        self.procs: dict[str, subprocess.Popen] = {}
        self._outs = []

    # -- configuration -------------------------------------------------------

    def write_config(self) -> None:
        d = self.dir
        for sub in ("state", "spool", "log"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        for i in range(self.gpus):
            (d / f"fake-gpu{i}").touch()
        (d / "plugstack.conf").write_text("")   # not the host's /etc/slurm/plugstack.conf
        (d / "gres.conf").write_text(f"NodeName={NODE} Name=gpu File={d}/fake-gpu[0-{self.gpus - 1}]\n")
        self.conf.write_text("\n".join([
            "ClusterName=bwlabtest",
            "SlurmctldHost=localhost",
            f"SlurmctldPort={free_port()}",
            f"SlurmdPort={free_port()}",
            "AuthType=auth/none",
            "CredType=cred/none",
            f"SlurmUser={_user()}",
            f"SlurmdUser={_user()}",
            f"StateSaveLocation={d}/state",
            f"SlurmdSpoolDir={d}/spool",
            f"SlurmctldPidFile={d}/slurmctld.pid",
            f"SlurmdPidFile={d}/slurmd.pid",
            f"SlurmctldLogFile={d}/log/slurmctld.log",
            f"SlurmdLogFile={d}/log/slurmd.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            f"PlugStackConfig={d}/plugstack.conf",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/builtin",
            "MpiDefault=none",
            "SwitchType=switch/none",
            "MailProg=/bin/true",
            "ReturnToService=2",
            "SlurmdParameters=config_overrides",
            "GresTypes=gpu",
            f"NodeName={NODE} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={self.memory_mb} "
            f"Gres=gpu:{self.gpus} State=UNKNOWN",
            f"PartitionName=bwlab Nodes={NODE} Default=YES MaxTime=INFINITE State=UP",
            "",
        ]))

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """base (default os.environ) for the client commands: SLURM_CONF set,
        and no inherited SLURM_*/SBATCH_* variable (inside a real job they would
        point sbatch at that job's cluster and options)."""
        env = {k: v for k, v in (base if base is not None else os.environ).items()
               if not k.startswith(("SLURM_", "SBATCH_", "SALLOC_", "SRUN_"))}
        env["SLURM_CONF"] = str(self.conf)
        return env

    # -- running -------------------------------------------------------------

    def client(self, name: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run([self.tools[name], *args], capture_output=True, text=True,
                              timeout=timeout, env=self.env())

    def start(self, timeout: float = 60) -> None:
        """Start both daemons; return once sinfo shows the node idle. Raises
        StartError with the daemons' log lines otherwise (they are left running:
        call stop())."""
        self.write_config()
        env = self.env()
        starts = (("slurmctld", ["-D", "-f", str(self.conf)]),
                  ("slurmd", ["-D", "-f", str(self.conf), "-N", NODE]))
        for name, args in starts:
            out = open(self.dir / "log" / f"{name}.stderr", "w")
            self._outs.append(out)
            try:
                self.procs[name] = subprocess.Popen([self.tools[name], *args], stdin=subprocess.DEVNULL,
                                                    stdout=out, stderr=subprocess.STDOUT, env=env,
                                                    start_new_session=True)
            except OSError as e:
                raise StartError(f"{name} could not be started: {e}", []) from None
        deadline = time.monotonic() + timeout
        state = "no answer from sinfo"
        while time.monotonic() < deadline:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise StartError(f"{name} exited with status {p.returncode} at start",
                                     self.why_lines())
            try:
                r = self.client("sinfo", "-h", "-N", "-o", "%T|%E", timeout=10)
            except subprocess.TimeoutExpired:
                r = None
            if r is not None and r.returncode != 0:
                state = "sinfo: " + (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
            elif r is not None and r.stdout.strip():
                state, _, reason = r.stdout.strip().splitlines()[0].partition("|")
                if state == "idle":
                    self._probe(max(10.0, deadline - time.monotonic()))
                    return
                # (down* and unknown* pass while slurmd registers; these do not)
                if state.startswith(("inval", "drain")):
                    raise StartError(f"the node registered but is {state}: {reason}", self.why_lines())
            time.sleep(0.5)
        raise StartError(f"the node did not become idle within {timeout:g} s (last state: {state})",
                         self.why_lines())

    def _probe(self, timeout: float) -> None:
        """An idle node is not yet a working one (slurmstepd may fail to set a
        job up): run a one-line job first, so that a failure here is told
        apart from a failure of the script under test."""
        out = self.dir / "log" / "probe.out"
        try:
            job = self.submit([f"--output={out}", "--wrap", "echo probe ran"], self.dir, self.env())
            [rec] = self.wait(job, 1, timeout)
        except (TimeoutError, RuntimeError, ValueError) as e:
            raise StartError(f"a one-line probe job did not finish: {e}", self.why_lines()) from None
        text = out.read_text(errors="replace").strip() if out.is_file() else "(no output file)"
        if rec.get("JobState") != "COMPLETED" or rec.get("ExitCode") != "0:0" or text != "probe ran":
            raise StartError(f"a one-line probe job did not run: {rec.get('JobState')}, exit "
                             f"{rec.get('ExitCode')}, reason {rec.get('Reason')}, output {text!r}",
                             self.why_lines())

    def submit(self, args: list[str], cwd: Path, env: dict[str, str]) -> str:
        r = subprocess.run([self.tools["sbatch"], "--parsable", *args], cwd=cwd, capture_output=True,
                           text=True, timeout=60, env=self.env(env))
        if r.returncode != 0:
            raise RuntimeError(f"sbatch failed ({r.returncode}): {(r.stdout + r.stderr).strip()}")
        return r.stdout.strip().split(";")[0]

    def tasks(self, job: str) -> list[dict[str, str]]:
        """The job's records (one per array task once they are split), as
        key=value dicts from `scontrol show job -o`."""
        r = self.client("scontrol", "show", "job", "-o", job)
        if r.returncode != 0:
            raise RuntimeError(f"scontrol show job {job}: {(r.stdout + r.stderr).strip()}")
        recs = []
        for line in r.stdout.splitlines():
            if line.strip():
                recs.append(dict(kv.split("=", 1) for kv in line.split() if "=" in kv))
        return recs

    def wait(self, job: str, count: int, timeout: float) -> list[dict[str, str]]:
        """Wait until the job's count tasks (1 for a plain job) have all ended;
        their records, by task id. TimeoutError (with the job's records) otherwise."""
        deadline = time.monotonic() + timeout
        recs: list[dict[str, str]] = []
        while time.monotonic() < deadline:
            recs = self.tasks(job)
            done = [r for r in recs
                    if r.get("ArrayTaskId", "0").isdigit() and r.get("JobState") in FINAL_STATES]
            if len(done) == count and len(recs) == count:
                return sorted(done, key=lambda r: int(r.get("ArrayTaskId", "0")))
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{name} died while job {job} ran (status {p.returncode}):\n"
                                       + "\n".join(self.why_lines()))
            time.sleep(1)
        raise TimeoutError(f"job {job} not done after {timeout:g} s: "
                           + "; ".join(f"task {r.get('ArrayTaskId')} {r.get('JobState')} "
                                       f"({r.get('Reason')})" for r in recs))

    def stop(self) -> None:
        """Cancel every job (so no slurmstepd outlives the test), then stop
        the daemons: SIGTERM, and SIGKILL after 15 s."""
        ctld = self.procs.get("slurmctld")
        if ctld is not None and ctld.poll() is None:
            try:
                self.client("scancel", "--user", _user(), timeout=20)
                end = time.monotonic() + 30
                while time.monotonic() < end:
                    r = self.client("scontrol", "show", "job", "-o", timeout=10)
                    live = [line for line in r.stdout.splitlines()
                            if "JobState=" in line and not any(f"JobState={s}" in line for s in FINAL_STATES)]
                    if r.returncode != 0 or not live:
                        break
                    time.sleep(1)
            except (subprocess.TimeoutExpired, OSError):
                pass
        for name in ("slurmd", "slurmctld"):
            p = self.procs.get(name)
            if p is None or p.poll() is not None:
                continue
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
        for out in self._outs:
            out.close()
        self._outs = []

    # -- diagnosis -----------------------------------------------------------

    def logs(self) -> dict[str, list[str]]:
        """Each daemon's log file, and its stderr where that says more: with
        -D a daemon echoes its log there, but a daemon that dies before it
        opens the log file only says why on stderr."""
        found = {}
        for daemon in DAEMONS:
            log, err = (self.dir / "log" / f"{daemon}{ext}" for ext in (".log", ".stderr"))
            text = log.read_text(errors="replace").splitlines() if log.is_file() else []
            if text:
                found[log.name] = text
            extra = err.read_text(errors="replace").splitlines() if err.is_file() else []
            if extra and (not text or any("fatal" in t for t in extra)):
                found[err.name] = extra
        return found

    def why_lines(self, tail: int = 12) -> list[str]:
        """What the daemons said about the failure: their fatal and error
        lines (without the ones every fresh start logs), else their last lines."""
        lines = []
        for name, text in self.logs().items():
            bad = [t for t in text if re.search(r"\b(fatal|error)\b", t) and not NOISE.search(t)]
            # A daemon retries and says the same again: each message once
            # (a log line starts with its time; ports and ids change).
            seen, once = set(), []
            for t in bad or text:
                msg = re.sub(r"^\[[^]]*\] ", "", t)
                key = re.sub(r"[0-9]+", "N", msg)
                if key not in seen:
                    seen.add(key)
                    once.append(msg)
            lines += [f"{name}: {t}" for t in once[-tail:]]
        return lines

    def log_tails(self, tail: int = 30) -> str:
        return "\n".join(f"--- {name} (last {tail} lines)\n" + "\n".join(text[-tail:])
                         for name, text in self.logs().items())


def _user() -> str:
    """Who runs the daemons and the jobs (root, or any user: SlurmUser and
    SlurmdUser are set to them)."""
    import pwd
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:   # a uid without a passwd entry, as in some CI containers
        return str(os.geteuid())

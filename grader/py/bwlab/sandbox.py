"""Which sandbox `run.py grade` runs the workers in (--sandbox auto|bwrap|none).

bwgrade does the confining (grader/supervisor/sandbox.c: bubblewrap around each worker,
no network, read-only files but a private HOME/TMPDIR, hidden paths, the
GPU's device nodes). This module only picks it: `bwrap` must be installed
and must work here (a container may forbid namespaces), `auto` falls back to
none with a warning, `none` is asked for. The choice is recorded in the
manifest and every gradebook record."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

MODES = ("auto", "bwrap", "none")
# What bwgrade asks of bwrap, minus the per-worker binds: if this runs
# `true`, the workers' sandbox can start.
PROBE_ARGS = ["--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev",
              "--proc", "/proc", "--", "true"]


class SandboxError(ValueError):
    pass


@dataclass
class Sandbox:
    kind: str                        # "bwrap" or "none"
    bwrap: str | None = None         # the executable, with kind "bwrap"
    warning: str | None = None       # why auto fell back to none
    hide: list[str] = field(default_factory=list)

    def bwgrade_args(self) -> list[str]:
        if self.kind != "bwrap":
            return []
        args = ["--sandbox", self.bwrap]
        if self.hide:
            args += ["--hide", ":".join(self.hide)]   # checked in choose: no ':' inside
        return args

    def describe(self) -> dict:
        return {"kind": self.kind, "bwrap": self.bwrap, "warning": self.warning,
                "hidden": list(self.hide)}


def probe(bwrap: str, timeout: float = 20.0) -> str | None:
    """None when bwrap can start a sandbox here, else why not."""
    try:
        r = subprocess.run([bwrap, *PROBE_ARGS], capture_output=True, text=True,
                           errors="replace", timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{bwrap} could not be run: {e}"
    if r.returncode != 0:
        detail = (r.stderr or r.stdout).strip().splitlines()
        return f"{bwrap} cannot make a sandbox here: " + (detail[-1] if detail else f"exit {r.returncode}")
    return None


def choose(mode: str, hide: list[Path], which=None, probe_fn=None) -> Sandbox:
    """The sandbox for --sandbox MODE. SandboxError when bwrap was asked for
    and cannot be used. which and probe_fn stand in for shutil.which and
    probe in tests."""
    which = which or shutil.which
    probe_fn = probe_fn or probe
    if mode not in MODES:
        raise SandboxError(f"--sandbox {mode}: choose one of {', '.join(MODES)}")
    hidden = [str(p) for p in hide]
    if mode == "none":
        return Sandbox("none", hide=hidden)
    bwrap = which("bwrap")
    why = "bubblewrap (bwrap) is not installed" if bwrap is None else probe_fn(bwrap)
    if why is None:
        colon = [h for h in hidden if ":" in h]
        if colon:   # bwgrade takes them as one ':'-separated list
            raise SandboxError(f"cannot hide {colon[0]} in the sandbox: its path holds a ':'")
        return Sandbox("bwrap", bwrap=bwrap, hide=hidden)
    if mode == "bwrap":
        raise SandboxError(f"--sandbox bwrap: {why}")
    return Sandbox("none", warning=f"{why}: the workers run WITHOUT a sandbox "
                   "(install bubblewrap; see docs/SECURITY.md)", hide=hidden)

"""Running a child process with a time limit, in a process group of its own,
so that a hang or a stray grandchild costs only itself: the whole group is
killed at the limit and again once the child is done."""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

OUTPUT_CAP = 200_000          # characters of a child's output kept in memory

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

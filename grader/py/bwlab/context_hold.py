"""A CUDA context held open on a grading lane's GPU for as long as the lane
works (bwhold, grader/worker/hold_context.c).

With no other process on a GPU, a worker's first CUDA call took about twice
as long as with a context held there (docs/SPEED.md), and a submission
starts about six workers. The holder is kit code: it never sees student
code or the seed. If it cannot start, grading goes on without it.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from . import console

# How long close() waits for bwhold to go once its input is closed.
CLOSE_WAIT_S = 10.0


class ContextHold:
    """One bwhold process; it exits when close() closes its standard input,
    or when this process dies (the pipe closes with it)."""

    def __init__(self, exe: Path, env: dict[str, str]):
        self.proc: subprocess.Popen | None = None
        try:
            self.proc = subprocess.Popen([str(exe)], stdin=subprocess.PIPE,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         env=env, start_new_session=True)
        except OSError as e:
            console.say(f"note: bwhold could not start ({e}); the workers start slower")
            self.proc = None

    def close(self) -> None:
        p, self.proc = self.proc, None
        if p is None:
            return
        if p.poll() not in (None, 0):
            # It gave up on its own (no GPU context, an exclusive compute mode):
            # say why once, since the batch ran slower for it.
            why = p.stderr.read().decode("utf-8", "replace").strip() if p.stderr else ""
            console.say(f"note: {why or f'bwhold exited with code {p.returncode}'}; "
                        "this lane's workers started without a held context")
        try:
            if p.stdin is not None:
                p.stdin.close()
            p.wait(timeout=CLOSE_WAIT_S)
        except (OSError, subprocess.TimeoutExpired):
            p.kill()
            p.wait()
        if p.stderr is not None:
            p.stderr.close()

"""`swell run --detach`: the run continues in a process of its own.

The run is created (and checked) by the `swell run` the user typed, which then lets it
go and starts `swell resume RUN` in a new session (setsid): no terminal, stdin from
/dev/null, stdout and stderr into `.swell/runs/RUN/detached.log`. Closing the terminal
(SIGHUP to its session) does not reach it. `swell status`, `swell logs --follow`,
`swell approve` and `swell cancel` work on it as on any run.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from swell.store.protocols import RunReader
from swell.workspace import safe

CLAIM_WAIT = 15.0  # seconds the detached process has to take the run
_NO_TRAPS = os.O_NOFOLLOW | os.O_NONBLOCK


@dataclass(frozen=True)
class Detached:
    pid: int
    log: Path


def spawn(root: Path, run_dir: Path, run_id: str, extra: list[str]) -> Detached:
    """Start `swell resume RUN` detached from this terminal; the run must be released."""
    log = safe.place(run_dir, "detached.log", "run directory")
    argv = [sys.executable, "-m", "swell", "-C", str(root), "resume", run_id, *extra]
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        # never through a link, never waiting on a FIFO planted there
        (
            os.POSIX_SPAWN_OPEN,
            1,
            str(log),
            os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NO_TRAPS,
            0o644,
        ),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    env = {**os.environ, "SWELL_DETACHED": "1"}
    pid = os.posix_spawn(sys.executable, argv, env, file_actions=actions, setsid=True)
    return Detached(pid, log)


def wait_until_claimed(store: RunReader, run_id: str, child: Detached) -> str | None:
    """Wait until the detached process executes the run (or finished it already).
    Returns None, or why it did not start (its log's tail)."""
    deadline = time.monotonic() + CLAIM_WAIT
    while time.monotonic() < deadline:
        if store.owner(run_id) is not None or store.get_run(run_id).status != "pending":
            return None
        try:
            done, status = os.waitpid(child.pid, os.WNOHANG)
        except ChildProcessError:
            done, status = child.pid, 0
        if done == child.pid:
            if store.get_run(run_id).status != "pending":
                return None
            tail = _tail(child.log)
            return f"the detached process ended (status {status}) before starting the run{tail}"
        time.sleep(0.05)
    return f"the detached process (pid {child.pid}) has not started the run yet; see {child.log}"


def _tail(log: Path) -> str:
    try:
        lines = safe.read_project_text(log).strip().splitlines()[-5:]
    except (OSError, safe.UnsafePath):
        return ""
    return (":\n" + "\n".join(lines)) if lines else ""


__all__ = ["Detached", "spawn", "wait_until_claimed"]

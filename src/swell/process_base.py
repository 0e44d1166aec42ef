"""What the two process runners share (`swell.process`: `run_process` for command
steps, `swell.streamed`: `StreamedProcess` for agent CLIs): their result, the capped
output buffer, ending a process group, the count of processes started, and the notes
of processes killed for holding a finished child's pipes."""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from dataclasses import dataclass

from swell.sweep import Marked

DEFAULT_MAX_OUTPUT = 10 * 1024 * 1024
DRAIN_SECONDS = 1.0  # how long to read on after the exit (children may hold the pipes)

_spawned = 0  # processes the two runners started, ever (see `spawned`)

# processes the runner itself killed because they held a finished child's pipes
# (`process._Child._drained`, `streamed._drain_after_exit`), for whoever reports leftovers (a visit)
_left: contextvars.ContextVar[list[Marked] | None] = contextvars.ContextVar(
    "swell_left_behind", default=None
)


@contextlib.contextmanager
def noting_left_behind() -> Iterator[None]:
    """Inside, processes killed for holding a finished child's pipes are noted for
    `left_behind` (a visit reports them with what its sweep stops)."""
    token = _left.set([])
    try:
        yield
    finally:
        _left.reset(token)


def left_behind() -> list[Marked]:
    """What was noted since the last call (see `noting_left_behind`), and forget it."""
    noted = _left.get()
    if not noted:
        return []
    taken = list(noted)
    noted.clear()
    return taken


def spawned() -> int:
    """How many processes this module has started in this swell process. A caller that
    sees it unchanged across some work knows that work started no process (and can
    skip looking for leftovers)."""
    return _spawned


def count_spawn() -> None:
    global _spawned
    _spawned += 1


@dataclass
class ProcessResult:
    exit_code: int | None  # None when the process was killed by us
    stdout: str
    stderr: str
    timed_out: bool
    duration: float
    truncated: bool


class Capped:
    """Keeps the last `cap` bytes of a stream (the end of output explains failures)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.chunks: list[bytes] = []
        self.size = 0
        self.truncated = False

    def add(self, data: bytes) -> None:
        self.chunks.append(data)
        self.size += len(data)
        if self.size > self.cap * 2:
            joined = b"".join(self.chunks)[-self.cap :]
            self.chunks, self.size, self.truncated = [joined], len(joined), True

    def text(self) -> str:
        data = b"".join(self.chunks)
        if len(data) > self.cap:
            data, self.truncated = data[-self.cap :], True
        return data.decode("utf-8", errors="replace")


def signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def left_notes() -> list[Marked] | None:
    """Where this task notes processes killed for holding pipes (None: nobody asks)."""
    return _left.get()


def _pidfd_available() -> bool:
    if not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


PIDFD = _pidfd_available()

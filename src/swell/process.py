"""The one subprocess runner: command steps and CLI adapters both use it.

New process group, stdin closed, stdout/stderr read concurrently with a size cap,
and a timeout or cancellation ends the whole group (SIGTERM, grace, SIGKILL) so no
orphan survives.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

DEFAULT_MAX_OUTPUT = 10 * 1024 * 1024
DRAIN_SECONDS = 1.0


@dataclass
class ProcessResult:
    exit_code: int | None  # None when the process was killed by us
    stdout: str
    stderr: str
    timed_out: bool
    duration: float
    truncated: bool


class _Capped:
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


def install_child_watcher() -> None:
    """Use pidfd-based child watching on 3.11 (3.12+ does so by default); much cheaper
    than the default thread-per-child watcher. Call from inside the running loop."""
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:  # kernel without pidfd
        return
    watcher = asyncio.PidfdChildWatcher()
    asyncio.set_child_watcher(watcher)
    watcher.attach_loop(asyncio.get_running_loop())


async def _pump(stream: asyncio.StreamReader | None, sink: _Capped,
                on_chunk: Callable[[bytes], None] | None) -> None:
    if stream is None:
        return
    while True:
        data = await stream.read(65536)
        if not data:
            return
        sink.add(data)
        if on_chunk:
            on_chunk(data)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def _end_group(proc: asyncio.subprocess.Process, grace: float) -> None:
    """SIGTERM the group, give it `grace` seconds, then SIGKILL whatever is left."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), grace)
    except TimeoutError:
        pass
    _signal_group(proc.pid, signal.SIGKILL)
    await proc.wait()


async def run_process(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    grace: float = 3.0,
    max_output: int = DEFAULT_MAX_OUTPUT,
    on_stdout: Callable[[bytes], None] | None = None,
) -> ProcessResult:
    """Run `argv` to completion; raises FileNotFoundError if the binary is missing."""
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    out, err = _Capped(max_output), _Capped(max_output)
    pumps = asyncio.gather(_pump(proc.stdout, out, on_stdout), _pump(proc.stderr, err, None))
    timed_out = False
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            timed_out = True
            await _end_group(proc, grace)
        try:
            # children that outlive the shell may hold the pipes open
            await asyncio.wait_for(asyncio.shield(pumps), DRAIN_SECONDS)
        except TimeoutError:
            _signal_group(proc.pid, signal.SIGKILL)
            pumps.cancel()
    except asyncio.CancelledError:
        await asyncio.shield(_end_group(proc, grace))
        pumps.cancel()
        raise
    finally:
        if proc.returncode is None:  # pragma: no cover - defensive
            _signal_group(proc.pid, signal.SIGKILL)
    return ProcessResult(
        exit_code=None if timed_out else proc.returncode,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        duration=time.monotonic() - started,
        truncated=out.truncated or err.truncated,
    )

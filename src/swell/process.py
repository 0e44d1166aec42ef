"""The one subprocess runner: command steps and CLI adapters both use it.

New process group, stdin closed (or fed and closed), stdout/stderr read
concurrently with a size cap, and a timeout or cancellation ends the whole group
(SIGTERM, grace, SIGKILL). Processes that left the group (`setsid`, a double fork)
are found by the markers every visit puts in its processes' environment
(`find_marked`, `stop_marked`): the engine sweeps them after each visit, and
`swell resume` stops what a killed swell process left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass

DEFAULT_MAX_OUTPUT = 10 * 1024 * 1024
DRAIN_SECONDS = 1.0
SWEEP_ROUNDS = 5  # a process may fork while it is being stopped; look again this often
POLL_SECONDS = 0.05

_spawned = 0  # processes started through this module, ever (see `spawned`)


def spawned() -> int:
    """How many processes this module has started in this swell process. A caller that
    sees it unchanged across some work knows that work started no process (and can
    skip looking for leftovers)."""
    return _spawned


def _count_spawn() -> None:
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


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


@dataclass(frozen=True)
class Marked:
    """A live process whose environment carries the markers looked for."""

    pid: int
    pgid: int
    command: str  # its command line, cut to 200 characters

    def __str__(self) -> str:
        return f"{self.pid} ({self.command})"


def _read(path: str, limit: int = 1 << 20) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        size = 0
        while size < limit and (data := os.read(fd, 65536)):
            chunks.append(data)
            size += len(data)
        return b"".join(chunks)
    finally:
        os.close(fd)


def find_marked(markers: Sequence[str]) -> list[Marked]:
    """Live processes whose environment holds every one of `markers` (`NAME=value`),
    swell itself excepted. Linux only (reads /proc); elsewhere nothing is found. A
    zombie has no environment left and is not found."""
    needles = [m.encode() for m in markers]
    found: list[Marked] = []
    if not os.path.isdir("/proc"):
        return found
    me, my_group = os.getpid(), os.getpgrp()
    with os.scandir("/proc") as entries:
        pids = [int(e.name) for e in entries if e.name.isdigit()]
    for pid in pids:
        if pid == me:
            continue
        try:
            environ = _read(f"/proc/{pid}/environ").split(b"\0")
            if not all(n in environ for n in needles):
                continue
            pgid = os.getpgid(pid)
            command = _read(f"/proc/{pid}/cmdline", 4096).replace(b"\0", b" ").strip()
        except (OSError, ValueError):  # gone, or not ours to read
            continue
        if pgid != my_group:
            found.append(Marked(pid, pgid, command.decode(errors="replace")[:200]))
    return found


def marked_groups(markers: Sequence[str]) -> set[int]:
    """Process groups of the processes `find_marked` finds."""
    return {m.pgid for m in find_marked(markers)}


def _signal_all(found: Sequence[Marked], sig: int) -> None:
    for group in {m.pgid for m in found}:
        _signal_group(group, sig)
    for m in found:  # a member that moved to another group since it was found
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(m.pid, sig)


async def stop_marked(markers: Sequence[str], grace: float = 1.0) -> list[Marked]:
    """End every process `find_marked` finds, with its process group: SIGTERM, up to
    `grace` seconds to exit, then SIGKILL; looked for again (a process may have forked
    meanwhile) until none is left. Steps run in process groups of their own and may
    leave them (`setsid`, double forks), so the groups alone do not find everything.
    Returns what was found (empty: nothing was running)."""
    stopped: dict[int, Marked] = {}
    found = find_marked(markers)
    for _ in range(SWEEP_ROUNDS):
        if not found:
            break
        stopped.update((m.pid, m) for m in found)
        _signal_all(found, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while found and time.monotonic() < deadline:
            await asyncio.sleep(POLL_SECONDS)
            found = find_marked(markers)
        if found:
            _signal_all(found, signal.SIGKILL)
            await asyncio.sleep(POLL_SECONDS)
            found = find_marked(markers)
    return list(stopped.values())


class _Child:
    """A started child read with the event loop's own readers (pidfd for the exit).

    Cheaper per process than asyncio's subprocess transports, which matters for
    loops of short command steps.
    """

    def __init__(self, proc: subprocess.Popen[bytes], max_output: int) -> None:
        self.proc = proc
        self.loop = asyncio.get_running_loop()
        self.out, self.err = _Capped(max_output), _Capped(max_output)
        self.exited: asyncio.Future[int] = self.loop.create_future()
        self.closed: list[asyncio.Future[None]] = []
        assert proc.stdout is not None and proc.stderr is not None
        for stream, sink in ((proc.stdout, self.out), (proc.stderr, self.err)):
            fd = stream.fileno()
            os.set_blocking(fd, False)
            done: asyncio.Future[None] = self.loop.create_future()
            self.closed.append(done)
            self.loop.add_reader(fd, self._read, fd, sink, done)
        self.pidfd = os.pidfd_open(proc.pid)
        self.loop.add_reader(self.pidfd, self._reap)

    def _read(self, fd: int, sink: _Capped, done: asyncio.Future[None]) -> None:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            sink.add(data)
            return
        self.loop.remove_reader(fd)
        if not done.done():
            done.set_result(None)

    def _reap(self) -> None:
        self.loop.remove_reader(self.pidfd)
        os.close(self.pidfd)
        code = self.proc.wait()
        if not self.exited.done():
            self.exited.set_result(code)

    async def wait(self, timeout: float | None) -> bool:
        """True if the child exited within `timeout`."""
        done, _ = await asyncio.wait([self.exited], timeout=timeout)
        return bool(done)

    async def drain(self, timeout: float) -> None:
        """Wait for both pipes to close; children that outlive the shell may hold them."""
        _, pending = await asyncio.wait(self.closed, timeout=timeout)
        if pending:
            _signal_group(self.proc.pid, signal.SIGKILL)
        self.close()

    def close(self) -> None:
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None and not stream.closed:
                self.loop.remove_reader(stream.fileno())
                stream.close()

    async def end_group(self, grace: float) -> None:
        """SIGTERM the group, give it `grace` seconds, then SIGKILL whatever is left."""
        _signal_group(self.proc.pid, signal.SIGTERM)
        if not await self.wait(grace):
            _signal_group(self.proc.pid, signal.SIGKILL)
            await self.exited
        else:
            _signal_group(self.proc.pid, signal.SIGKILL)


def _pidfd_available() -> bool:
    if not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


_PIDFD = _pidfd_available()


async def run_process(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    grace: float = 3.0,
    max_output: int = DEFAULT_MAX_OUTPUT,
) -> ProcessResult:
    """Run `argv` to completion; raises FileNotFoundError if the binary is missing."""
    if not _PIDFD:
        streamed = StreamedProcess(
            argv, cwd=cwd, env=env, timeout=timeout, grace=grace, max_output=max_output
        )
        async for _ in streamed.lines():
            pass
        assert streamed.result is not None
        return streamed.result
    started = time.monotonic()
    _count_spawn()
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    child = _Child(proc, max_output)
    timed_out = False
    try:
        if not await child.wait(timeout):
            timed_out = True
            await child.end_group(grace)
        await child.drain(DRAIN_SECONDS)
    except asyncio.CancelledError:
        await asyncio.shield(child.end_group(grace))
        child.close()
        raise
    return ProcessResult(
        exit_code=None if timed_out else proc.returncode,
        stdout=child.out.text(),
        stderr=child.err.text(),
        timed_out=timed_out,
        duration=time.monotonic() - started,
        truncated=child.out.truncated or child.err.truncated,
    )


async def _pump(stream: asyncio.StreamReader | None, sink: _Capped) -> None:
    if stream is None:
        return
    while data := await stream.read(65536):
        sink.add(data)


async def _end_group(proc: asyncio.subprocess.Process, grace: float) -> None:
    _signal_group(proc.pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), grace)
    _signal_group(proc.pid, signal.SIGKILL)
    await proc.wait()


class StreamedProcess:
    """A child whose stdout is read line by line while it runs (agent CLIs).

    `async for line in proc.lines()` yields each stdout line (without the newline)
    as it arrives; afterwards `proc.result` holds the exit code, the capped stdout
    and stderr, and whether the timeout ended it. `stdin_data` is written to the
    child's stdin, which is then closed; without it stdin is /dev/null. Leaving the
    loop early, a cancellation or the timeout ends the whole process group.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str],
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        grace: float = 3.0,
        max_output: int = DEFAULT_MAX_OUTPUT,
        stdin_data: bytes | None = None,
        max_line: int = 64 * 1024 * 1024,
    ) -> None:
        self.argv, self.cwd, self.env = list(argv), cwd, env
        self.timeout, self.grace, self.max_output = timeout, grace, max_output
        self.stdin_data, self.max_line = stdin_data, max_line
        self.result: ProcessResult | None = None
        self.pid: int | None = None

    async def lines(self) -> AsyncIterator[str]:
        """Yield stdout lines; raises FileNotFoundError if the binary is missing."""
        started = time.monotonic()
        _count_spawn()
        proc = await asyncio.create_subprocess_exec(
            *self.argv,
            cwd=self.cwd,
            env=dict(self.env) if self.env is not None else None,
            stdin=asyncio.subprocess.PIPE
            if self.stdin_data is not None
            else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            limit=self.max_line,
        )
        self.pid = proc.pid
        out, err = _Capped(self.max_output), _Capped(self.max_output)
        feeder = asyncio.create_task(self._feed(proc))
        err_pump = asyncio.create_task(_pump(proc.stderr, err))
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        timed_out = eof = False
        assert proc.stdout is not None
        try:
            while True:
                remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                try:
                    raw = await asyncio.wait_for(proc.stdout.readline(), remaining)
                except TimeoutError:
                    timed_out = True
                    break
                if not raw:
                    eof = True
                    break
                out.add(raw)
                yield raw.decode("utf-8", errors="replace").rstrip("\r\n")
        finally:
            feeder.cancel()
            if not eof:  # the timeout, a consumer that stopped early, or a cancellation
                await asyncio.shield(_end_group(proc, self.grace))
        if not timed_out:
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            try:
                await asyncio.wait_for(proc.wait(), remaining)
            except TimeoutError:
                timed_out = True
                await _end_group(proc, self.grace)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(err_pump), DRAIN_SECONDS)
        err_pump.cancel()
        self.result = ProcessResult(
            exit_code=None if timed_out else proc.returncode,
            stdout=out.text(),
            stderr=err.text(),
            timed_out=timed_out,
            duration=time.monotonic() - started,
            truncated=out.truncated or err.truncated,
        )

    async def _feed(self, proc: asyncio.subprocess.Process) -> None:
        if self.stdin_data is None or proc.stdin is None:
            return
        try:
            proc.stdin.write(self.stdin_data)
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            proc.stdin.close()

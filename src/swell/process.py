"""The one subprocess runner: command steps and CLI adapters both use it.

New process group, stdin closed (or fed and closed), stdout/stderr read
concurrently with a size cap, and a timeout or cancellation ends the whole group
(SIGTERM, grace, SIGKILL). Processes that left the group (`setsid`, a double fork)
are found by the markers every visit puts in its processes' environment
(`sweep.py`: `find_marked`, `stop_marked`, re-exported here): the engine sweeps
them after each visit, and `swell resume` stops what a killed swell process left
behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from swell import sandbox, streaming, sweep
from swell.sandbox import streams
from swell.sandbox.boxes import Boxed
from swell.streaming import Feed, Stream
from swell.sweep import Marked, find_marked, marked_groups, stop_marked

__all__ = [
    "DEFAULT_MAX_OUTPUT",
    "Marked",
    "ProcessResult",
    "StreamedProcess",
    "find_marked",
    "left_behind",
    "marked_groups",
    "noting_left_behind",
    "run_process",
    "spawned",
    "stop_marked",
]

DEFAULT_MAX_OUTPUT = 10 * 1024 * 1024
_FIRST = asyncio.FIRST_COMPLETED
DRAIN_SECONDS = 1.0  # how long to read on after the exit (children may hold the pipes)

_spawned = 0  # processes started through this module, ever (see `spawned`)

# processes the runner itself killed because they held a finished child's pipes
# (see `_Child._drained`), for whoever reports leftovers (a visit)
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


class _Child:
    """A started child read with the event loop's own readers (a pidfd for its exit).

    Everything is callbacks on one future, `finished`, which the caller awaits once:
    it is set when the child has exited and both pipes are closed (or
    `DRAIN_SECONDS` after the exit, when a child that outlived it holds them: its
    group is killed then). A deadline (`expire`) and a cancellation (`stop`) end the
    group: SIGTERM, `grace` seconds, SIGKILL. Cheaper per process than asyncio's
    subprocess transports or waits, which matters for loops of short command steps.
    """

    def __init__(
        self,
        proc: subprocess.Popen[bytes] | Boxed,
        pipes: tuple[int, int],
        max_output: int,
        grace: float,
        feed: Feed | None = None,
    ) -> None:
        self.proc = proc
        self.feed = feed
        self.grace = grace
        self.loop = asyncio.get_running_loop()
        self.out, self.err = _Capped(max_output), _Capped(max_output)
        self.code: int | None = None
        self.timed_out = False
        self.finished: asyncio.Future[None] = self.loop.create_future()
        self._open: list[int] = []  # the read ends of stdout and stderr, until EOF
        self._exited: list[asyncio.Future[None]] = []
        self._timers: list[asyncio.TimerHandle] = []
        self._ending = False
        self._streams: dict[int, Stream] = {pipes[0]: "stdout", pipes[1]: "stderr"}
        self._noted = _left.get()
        for fd, sink in zip(pipes, (self.out, self.err), strict=True):
            os.set_blocking(fd, False)
            self._open.append(fd)
            self.loop.add_reader(fd, self._read, fd, sink)
        # a process in a shared sandbox is no child of swell's: its exit comes by socket
        self.pidfd = proc.exit_fd() if isinstance(proc, Boxed) else os.pidfd_open(proc.pid)
        self.loop.add_reader(self.pidfd, self._reap)

    def _read(self, fd: int, sink: _Capped) -> None:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            sink.add(data)
            if self.feed is not None:
                self.feed(self._streams[fd], data)
            return
        self.loop.remove_reader(fd)
        self._open.remove(fd)
        os.close(fd)
        self._settle()

    def _reap(self) -> None:
        if isinstance(self.proc, Boxed) and self.proc.poll() is None:
            return  # it said its pid: it runs
        self.loop.remove_reader(self.pidfd)
        os.close(self.pidfd)
        self.pidfd = -1
        self.code = self.proc.wait()
        sweep.untrack(self.proc.pid)
        if self._ending:  # what is left of the group goes with it
            _signal_group(self.proc.pid, signal.SIGKILL)
        for waiter in self._exited:
            if not waiter.done():
                waiter.set_result(None)
        if self._open:
            self._later(DRAIN_SECONDS, self._drained)
        self._settle()

    def _settle(self) -> None:
        if self.code is not None and not self._open:
            self._finish()

    def _finish(self) -> None:
        for timer in self._timers:
            timer.cancel()
        if not self.finished.done():
            self.finished.set_result(None)

    def _later(self, delay: float, callback: Callable[[], None]) -> None:
        self._timers.append(self.loop.call_later(delay, callback))

    def _drained(self) -> None:
        """Children that outlive the shell hold its pipes: end its group, stop reading.
        Who they were is noted, so the visit's warning names them as it names what its
        sweep stops (docs/security.md, "Background children ... are ended, and reported")."""
        members = sweep.group_members(self.proc.pid) if self._noted is not None else []
        _signal_group(self.proc.pid, signal.SIGKILL)
        if self._noted is not None:
            self._noted.extend(members)
        self.close()
        self._finish()

    def expire(self) -> None:
        """The deadline: end the group if the child still runs."""
        if self.code is None and not self._ending:
            self.timed_out = True
            self._end()

    def _end(self) -> None:
        self._ending = True
        _signal_group(self.proc.pid, signal.SIGTERM)
        self._later(self.grace, lambda: _signal_group(self.proc.pid, signal.SIGKILL))

    async def stop(self) -> None:
        """End the group (a cancellation) and wait for the child's exit."""
        if self.code is None:
            if not self._ending:
                self._end()
            waiter: asyncio.Future[None] = self.loop.create_future()
            self._exited.append(waiter)
            await waiter
        for timer in self._timers:
            timer.cancel()

    def close(self) -> None:
        for fd in self._open:
            self.loop.remove_reader(fd)
            os.close(fd)
        self._open.clear()


def _pidfd_available() -> bool:
    if not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


_PIDFD = _pidfd_available()


@contextlib.contextmanager
def _stdin_file(data: bytes | None) -> Iterator[int | IO[bytes]]:
    """The child's stdin: `data` in an unlinked file, there in full the instant the child
    starts (an agent CLI that gives up on a slow stdin, as Claude Code does after 3 s,
    never waits on swell's event loop), or /dev/null."""
    if data is None:
        yield asyncio.subprocess.DEVNULL
        return
    with tempfile.TemporaryFile() as fh:
        fh.write(data)
        fh.seek(0)
        yield fh


_devnull = -1  # one /dev/null for every child's stdin
_Proc = asyncio.subprocess.Process | streams.BoxedProcess


@functools.lru_cache(maxsize=64)
def _which(name: str, path: str | None) -> str | None:
    return shutil.which(name, path=path)


def _spawn(
    argv: list[str], cwd: str | os.PathLike[str], env: Mapping[str, str] | None
) -> tuple[subprocess.Popen[bytes], tuple[int, int]]:
    """Start `argv` in a new session, stdin /dev/null, stdout and stderr into pipes;
    returns it with the pipes' read ends, its pid tracked (see `sweep.track`).

    A bare command name is looked up on PATH once per process (and again if the file
    it found has gone): otherwise the child tries every PATH entry in turn."""
    global _devnull
    if _devnull < 0:
        _devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    name = argv[0]
    path = (os.environ if env is None else env).get("PATH", os.defpath)
    found = _which(name, path) if os.sep not in name else None
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    try:
        for executable in [found, None] if found else [None]:
            try:
                proc = subprocess.Popen(
                    argv,
                    executable=executable,
                    cwd=cwd,
                    env=env,
                    stdin=_devnull,
                    stdout=out_w,
                    stderr=err_w,
                    start_new_session=True,
                )
                break
            except FileNotFoundError:
                if executable is None:
                    raise
                _which.cache_clear()
    except BaseException:
        os.close(out_r)
        os.close(err_r)
        raise
    finally:
        os.close(out_w)
        os.close(err_w)
    sweep.track(proc.pid)
    return proc, (out_r, err_r)


def _spawn_boxed(
    argv: Sequence[str], cwd: str | os.PathLike[str], env: Mapping[str, str] | None
) -> tuple[Boxed, tuple[int, int]] | None:
    """`argv` started in the visit's long-lived sandbox (`sandbox.start_boxed`), with
    the pipes' read ends; None when it needs a bwrap of its own."""
    global _devnull
    if _devnull < 0:
        _devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    try:
        boxed = sandbox.start_boxed(argv, env, cwd, (_devnull, out_w, err_w))
    finally:
        os.close(out_w)
        os.close(err_w)
    if boxed is None:
        os.close(out_r)
        os.close(err_r)
        return None
    return boxed, (out_r, err_r)


async def run_process(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    grace: float = 3.0,
    max_output: int = DEFAULT_MAX_OUTPUT,
    on_output: Feed | None = None,
) -> ProcessResult:
    """Run `argv` to completion; raises FileNotFoundError if the binary is missing.

    `on_output(stream, data)` sees stdout and stderr as they are read (uncapped: the
    caller bounds what it keeps); without it, the current visit's feed does
    (`streaming.current_feed`), so a step kind's output is stored while it runs
    without the kind passing anything on."""
    feed = on_output or streaming.current_feed()
    if not _PIDFD:
        streamed = StreamedProcess(
            argv, cwd=cwd, env=env, timeout=timeout, grace=grace, max_output=max_output
        )
        async for line in streamed.lines():
            if feed is not None:  # this fallback reads stderr only at the end
                feed("stdout", line.encode() + b"\n")
        assert streamed.result is not None
        if feed is not None and streamed.result.stderr:
            feed("stderr", streamed.result.stderr.encode())
        return streamed.result
    started = time.monotonic()
    _count_spawn()
    boxed = None
    if sandbox.current() is not None:  # the visit's sandbox (runtime.sandbox)
        boxed = _spawn_boxed(argv, cwd, env)
        if boxed is None:  # a bwrap of its own
            argv, env = sandbox.confine(argv, env, cwd)
    proc, pipes = boxed or _spawn(list(argv), cwd, env)
    child = _Child(proc, pipes, max_output, grace, feed)
    deadline = None if timeout is None else child.loop.call_later(timeout, child.expire)
    try:
        await child.finished
    except asyncio.CancelledError:
        await asyncio.shield(child.stop())
        child.close()
        raise
    finally:
        if deadline is not None:
            deadline.cancel()
    child.close()
    return ProcessResult(
        exit_code=None if child.timed_out else child.code,
        stdout=child.out.text(),
        stderr=child.err.text(),
        timed_out=child.timed_out,
        duration=time.monotonic() - started,
        truncated=child.out.truncated or child.err.truncated,
    )


async def _pump(stream: asyncio.StreamReader | None, sink: _Capped) -> None:
    if stream is None:
        return
    while data := await stream.read(65536):
        sink.add(data)


async def _end_group(proc: _Proc, grace: float) -> None:
    _signal_group(proc.pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), grace)
    _signal_group(proc.pid, signal.SIGKILL)
    await proc.wait()


async def _drain_after_exit(proc: _Proc, noted: list[Marked] | None) -> None:
    """Return `DRAIN_SECONDS` after `proc` exits, having killed its group: children
    that outlived it and still hold its stdout (`sleep 100 &` in a wrapper script).
    Who they were is noted, so the visit's warning names them, as for a command step
    (`_Child._drained`). (`proc.wait()` would wait for those pipes too.)"""
    await _exit_of(proc)
    await asyncio.sleep(DRAIN_SECONDS)
    members = sweep.group_members(proc.pid) if noted is not None else []
    _signal_group(proc.pid, signal.SIGKILL)
    if noted is not None:
        noted.extend(members)


async def _exit_of(proc: _Proc) -> None:
    """Return once `proc` has exited, whoever holds its pipes: a pidfd where there is
    one, else its return code looked at every 0.1 s."""
    if isinstance(proc, streams.BoxedProcess):  # no child of swell's: its box says
        await proc.wait()
    elif _PIDFD:
        try:
            pidfd = os.pidfd_open(proc.pid)
        except ProcessLookupError:  # already reaped
            return
        loop = asyncio.get_running_loop()
        exited: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            if not exited.done():
                exited.set_result(None)

        loop.add_reader(pidfd, readable)
        try:
            await exited
        finally:
            loop.remove_reader(pidfd)
            os.close(pidfd)
        return
    while proc.returncode is None:
        await asyncio.sleep(0.1)


class StreamedProcess:
    """A child whose stdout is read line by line while it runs (agent CLIs).

    `async for line in proc.lines()` yields each stdout line (without the newline)
    as it arrives; afterwards `proc.result` holds the exit code, the capped stdout
    and stderr, and whether the timeout ended it. `stdin_data` is the child's whole
    stdin (a file, read to its end); without it stdin is /dev/null. Leaving the
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
        inherit_env: tuple[str, ...] = (),
    ) -> None:
        self.argv, self.cwd, self.env = list(argv), cwd, env
        self.inherit_env = inherit_env
        self.timeout, self.grace, self.max_output = timeout, grace, max_output
        self.stdin_data, self.max_line = stdin_data, max_line
        self.result: ProcessResult | None = None
        self.pid: int | None = None

    async def lines(self) -> AsyncIterator[str]:
        """Yield stdout lines; raises FileNotFoundError if the binary is missing."""
        started = time.monotonic()
        _count_spawn()
        argv, env = self.argv, dict(self.env) if self.env is not None else None
        proc: _Proc | None = None
        with sweep.spawning(), _stdin_file(self.stdin_data) as stdin:
            if sandbox.current() is not None:  # the visit's sandbox (runtime.sandbox)
                args = (self.cwd, self.inherit_env, stdin, self.max_line)
                proc = await streams.start(argv, env, *args)  # in the run's box
                if proc is None:  # a bwrap of its own
                    argv, env = sandbox.confine(argv, env, self.cwd, self.inherit_env)
            proc = proc or await asyncio.create_subprocess_exec(
                *argv,
                cwd=self.cwd,
                env=env,
                stdin=stdin,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                limit=self.max_line,
            )
            if not isinstance(proc, streams.BoxedProcess):  # (its pid is read when needed)
                sweep.track(proc.pid)
                self.pid = proc.pid
        out, err = _Capped(self.max_output), _Capped(self.max_output)
        err_pump = asyncio.create_task(_pump(proc.stderr, err))
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        timed_out = eof = held = False
        assert proc.stdout is not None
        drained = asyncio.create_task(_drain_after_exit(proc, _left.get()))
        read: asyncio.Task[bytes] | None = None
        try:
            try:
                while True:
                    remaining = None if deadline is None else max(deadline - time.monotonic(), 0)
                    read = read or asyncio.create_task(proc.stdout.readline())
                    if not drained.done():
                        await asyncio.wait((read, drained), timeout=remaining, return_when=_FIRST)
                        if not read.done():
                            timed_out = not drained.done()
                            if timed_out:
                                break
                            continue  # its group is killed: what it held reaches EOF now
                    else:
                        # a holder outside the group (`setsid`) is not waited for either:
                        # the CLI has exited, the sweep ends the holder
                        limit = (
                            DRAIN_SECONDS if remaining is None else min(remaining, DRAIN_SECONDS)
                        )
                        await asyncio.wait((read,), timeout=limit)
                        if not read.done():
                            eof = held = True
                            break
                    raw, read = read.result(), None
                    if not raw:
                        eof = True
                        break
                    out.add(raw)
                    yield raw.decode("utf-8", errors="replace").rstrip("\r\n")
            finally:
                drained.cancel()
                if read is not None:
                    read.cancel()
                if not eof:  # the timeout, a consumer that stopped early, or a cancellation
                    await asyncio.shield(_end_group(proc, self.grace))
            # `wait` also waits for the pipes, which a process outside its group `held`
            # (its return code is known: it has exited)
            if not timed_out and not held:
                remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                try:
                    await asyncio.wait_for(proc.wait(), remaining)
                except TimeoutError:
                    timed_out = True
                    await _end_group(proc, self.grace)
        finally:
            if proc.returncode is not None:  # reaped by asyncio; else it still waits for it
                sweep.untrack(proc.pid)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(err_pump), DRAIN_SECONDS)
        err_pump.cancel()
        if isinstance(proc, streams.BoxedProcess):
            proc.close()
        self.result = ProcessResult(
            exit_code=None if timed_out else proc.returncode,
            stdout=out.text(),
            stderr=err.text(),
            timed_out=timed_out,
            duration=time.monotonic() - started,
            truncated=out.truncated or err.truncated,
        )

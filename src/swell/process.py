"""The one subprocess runner: command steps and CLI adapters both use it.

`run_process` runs a command to its end (`StreamedProcess`, re-exported here from
`swell.streamed`, reads an agent CLI's stdout line by line): a new process group,
stdin closed (or fed and closed), stdout/stderr read concurrently with a size cap, and a timeout or cancellation ends the whole group
(SIGTERM, grace, SIGKILL). Processes that left the group (`setsid`, a double fork)
are found by the markers every visit puts in its processes' environment
(`sweep.py`: `find_marked`, `stop_marked`, re-exported here): the engine sweeps
them after each visit, and `swell resume` stops what a killed swell process left
behind.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence

from swell import sandbox, streaming, sweep
from swell.process_base import (
    DEFAULT_MAX_OUTPUT,
    DRAIN_SECONDS,
    PIDFD,
    Capped,
    ProcessResult,
    count_spawn,
    left_behind,
    left_notes,
    noting_left_behind,
    signal_group,
    spawned,
)
from swell.sandbox.boxes import Boxed
from swell.streamed import StreamedProcess
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
        self.out, self.err = Capped(max_output), Capped(max_output)
        self.code: int | None = None
        self.timed_out = False
        self.finished: asyncio.Future[None] = self.loop.create_future()
        self._open: list[int] = []  # the read ends of stdout and stderr, until EOF
        self._exited: list[asyncio.Future[None]] = []
        self._timers: list[asyncio.TimerHandle] = []
        self._ending = False
        self._streams: dict[int, Stream] = {pipes[0]: "stdout", pipes[1]: "stderr"}
        self._noted = left_notes()
        for fd, sink in zip(pipes, (self.out, self.err), strict=True):
            os.set_blocking(fd, False)
            self._open.append(fd)
            self.loop.add_reader(fd, self._read, fd, sink)
        # a process in a shared sandbox is no child of swell's: its exit comes by socket
        self.pidfd = proc.exit_fd() if isinstance(proc, Boxed) else os.pidfd_open(proc.pid)
        self.loop.add_reader(self.pidfd, self._reap)

    def _read(self, fd: int, sink: Capped) -> None:
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
            signal_group(self.proc.pid, signal.SIGKILL)
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
        signal_group(self.proc.pid, signal.SIGKILL)
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
        signal_group(self.proc.pid, signal.SIGTERM)
        self._later(self.grace, lambda: signal_group(self.proc.pid, signal.SIGKILL))

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


_devnull = -1  # one /dev/null for every child's stdin


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
    if not PIDFD:
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
    count_spawn()
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

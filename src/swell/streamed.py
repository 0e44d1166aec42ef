"""A child whose stdout is read line by line while it runs: an agent CLI's process
(`StreamedProcess`), started as `swell.process` starts a command's (a new session, its
group ended on timeout or cancellation, in the visit's sandbox when there is one)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import IO

from swell import sandbox, sweep
from swell.process_base import (
    DEFAULT_MAX_OUTPUT,
    DRAIN_SECONDS,
    PIDFD,
    Capped,
    ProcessResult,
    count_spawn,
    left_notes,
    signal_group,
)
from swell.sandbox import streams
from swell.sweep import Marked

__all__ = ["StreamedProcess"]

_FIRST = asyncio.FIRST_COMPLETED
_Proc = asyncio.subprocess.Process | streams.BoxedProcess


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


async def _pump(stream: asyncio.StreamReader | None, sink: Capped) -> None:
    if stream is None:
        return
    while data := await stream.read(65536):
        sink.add(data)


async def _end_group(proc: _Proc, grace: float) -> None:
    signal_group(proc.pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), grace)
    signal_group(proc.pid, signal.SIGKILL)
    await proc.wait()


async def _drain_after_exit(proc: _Proc, noted: list[Marked] | None) -> None:
    """Return `DRAIN_SECONDS` after `proc` exits, having killed its group: children
    that outlived it and still hold its stdout (`sleep 100 &` in a wrapper script).
    Who they were is noted, so the visit's warning names them, as for a command step
    (`_Child._drained`). (`proc.wait()` would wait for those pipes too.)"""
    await _exit_of(proc)
    await asyncio.sleep(DRAIN_SECONDS)
    members = sweep.group_members(proc.pid) if noted is not None else []
    signal_group(proc.pid, signal.SIGKILL)
    if noted is not None:
        noted.extend(members)


async def _exit_of(proc: _Proc) -> None:
    """Return once `proc` has exited, whoever holds its pipes: a pidfd where there is
    one, else its return code looked at every 0.1 s."""
    if isinstance(proc, streams.BoxedProcess):  # no child of swell's: its box says
        await proc.wait()
    elif PIDFD:
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
        count_spawn()
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
        out, err = Capped(self.max_output), Capped(self.max_output)
        err_pump = asyncio.create_task(_pump(proc.stderr, err))
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        timed_out = eof = held = False
        assert proc.stdout is not None
        drained = asyncio.create_task(_drain_after_exit(proc, left_notes()))
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

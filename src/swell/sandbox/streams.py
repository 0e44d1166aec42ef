"""A process started in a long-lived box (sandbox/boxes.py) seen as asyncio sees a
subprocess: `pid`, `stdout` and `stderr` stream readers, `returncode`, `wait()`. The
runner reads an agent CLI's output line by line through it (`process.StreamedProcess`)
as it does for a process of its own."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import IO

from swell.sandbox.active import start_boxed
from swell.sandbox.boxes import Boxed


class BoxedProcess:
    """`Boxed` with its pipes as `asyncio.StreamReader`s and its exit as a future."""

    def __init__(self, boxed: Boxed, pipes: tuple[int, int], limit: int) -> None:
        self.boxed = boxed
        self.loop = asyncio.get_running_loop()
        self.stdout = asyncio.StreamReader(limit=limit, loop=self.loop)
        self.stderr = asyncio.StreamReader(limit=limit, loop=self.loop)
        self._pipes = list(pipes)
        self._transports: list[asyncio.BaseTransport] = []
        self._exited: asyncio.Future[int] = self.loop.create_future()
        self._exit_fd = boxed.exit_fd()
        self.loop.add_reader(self._exit_fd, self._news)

    @property
    def pid(self) -> int:
        return self.boxed.pid

    @property
    def returncode(self) -> int | None:
        return self._exited.result() if self._exited.done() else None

    async def connect(self) -> None:
        """Read its stdout and stderr into `stdout` and `stderr`."""
        for fd, reader in zip(self._pipes, (self.stdout, self.stderr), strict=True):
            pipe = os.fdopen(fd, "rb", buffering=0)
            protocol = asyncio.StreamReaderProtocol(reader, loop=self.loop)
            transport, _ = await self.loop.connect_read_pipe(
                functools.partial(_same, protocol), pipe
            )
            self._transports.append(transport)
        self._pipes.clear()

    def _news(self) -> None:
        code = self.boxed.poll()
        if code is None:
            return  # it said its pid: it runs
        self.loop.remove_reader(self._exit_fd)
        os.close(self._exit_fd)
        self.boxed.wait()
        if not self._exited.done():
            self._exited.set_result(code)

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    def close(self) -> None:
        """Let go of its pipes (once it has exited and been read)."""
        for transport in self._transports:
            transport.close()
        for fd in self._pipes:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._pipes.clear()


def _same(protocol: asyncio.StreamReaderProtocol) -> asyncio.StreamReaderProtocol:
    return protocol


async def start(
    argv: Sequence[str],
    env: Mapping[str, str] | None,
    cwd: str | os.PathLike[str],
    inherit: Iterable[str],
    stdin: int | IO[bytes],
    limit: int,
) -> BoxedProcess | None:
    """`argv` started in the current visit's long-lived box with `stdin` (a file, or
    asyncio's DEVNULL), its output read as a stream; None when it needs a bwrap of its
    own (`sandbox.confine`)."""
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC) if isinstance(stdin, int) else -1
    fd = null if isinstance(stdin, int) else stdin.fileno()
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    try:
        boxed = start_boxed(argv, env, cwd, (fd, out_w, err_w), tuple(inherit))
    finally:
        for end in (out_w, err_w, null):
            if end >= 0:
                os.close(end)
    if boxed is None:
        os.close(out_r)
        os.close(err_r)
        return None
    proc = BoxedProcess(boxed, (out_r, err_r), limit)
    try:
        await proc.connect()
    except BaseException:
        proc.close()
        raise
    return proc

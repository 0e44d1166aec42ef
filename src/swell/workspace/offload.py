"""Work that must not hold up the event loop: reading and hashing files a step left.

A file can be huge (a sparse file of a terabyte costs a step one `truncate`) or slow
to read (a broken disk). On the event loop such a read would keep `--timeout`,
`swell cancel`, Ctrl-C and SIGTERM from being handled until it ends; in a thread the
loop goes on, and a cancelled caller returns at once. The thread is a daemon: a read
still going when swell exits does not keep the process alive (the default executor
of `asyncio.to_thread` is joined at exit, and would)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def off_loop(fn: Callable[[], T], name: str = "swell-read") -> T:
    """`fn()` in a daemon thread of its own; its result or its exception."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(done: Callable[[], None]) -> None:
        if not future.done():  # else the caller was cancelled meanwhile
            done()

    def work() -> None:
        try:
            value = fn()
        except BaseException as exc:  # handed to the caller, whatever it is
            outcome = functools.partial(future.set_exception, exc)
        else:
            outcome = functools.partial(future.set_result, value)
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=work, name=name, daemon=True).start()
    return await future


__all__ = ["off_loop"]

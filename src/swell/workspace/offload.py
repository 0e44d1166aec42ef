"""Work that must not hold up the event loop: reading and hashing files a step left.

A file can be huge (a sparse file of a terabyte costs a step one `truncate`) or slow
to read (a broken disk). On the event loop such a read would keep `--timeout`,
`swell cancel`, Ctrl-C and SIGTERM from being handled until it ends; in a thread the
loop goes on, and a cancelled caller returns at once. The threads are daemons: a read
still going when swell exits does not keep the process alive (the default executor
of `asyncio.to_thread` is joined at exit, and would).

A visit hands off several times (its mounts, its workspace check, its checkpoint), so
the threads are kept and reused: starting one costs more than most of what it runs.
Every job gets a thread that is free (an idle one, or a new one): a read stuck on a
broken disk holds up no other."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import queue
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

IDLE_SECONDS = 30.0  # an idle thread ends after this long


class _Pool:
    """Daemon threads taking jobs from one queue; each job is given to a thread that
    is idle when it is queued, or to a new one."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # threads waiting for a job no one has claimed them for

    def submit(self, job: Callable[[], None], name: str) -> None:
        with self._lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1  # that thread takes this job
        self._jobs.put(job)
        if spawn:
            threading.Thread(target=self._work, name=name, daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # no job was queued for this thread: it ends
                        self._idle -= 1
                        return
                continue  # a job is on its way to this thread
            job()
            del job
            with self._lock:
                self._idle += 1


_pool = _Pool()


def _forked() -> None:
    # a child process has none of its parent's threads
    global _pool
    _pool = _Pool()


os.register_at_fork(after_in_child=_forked)


async def off_loop(fn: Callable[[], T], name: str = "swell-read") -> T:
    """`fn()` in a daemon thread; its result or its exception."""
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

    _pool.submit(work, name)
    return await future


__all__ = ["off_loop"]

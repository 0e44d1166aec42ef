"""Work that must not hold up the event loop: reading and hashing files a step left.

A file can be huge (a sparse file of a terabyte costs a step one `truncate`) or slow
to read (a broken disk). On the event loop such a read would keep `--timeout`,
`swell cancel`, Ctrl-C and SIGTERM from being handled until it ends; in a thread the
loop goes on, and a cancelled caller returns at once. The threads are daemons: a read
still going when swell exits does not keep the process alive (the default executor
of `asyncio.to_thread` is joined at exit, and would).

A thread that finished its work waits a while for the next: every visit hands its
checkpoint off the loop, and starting a thread for each costs a loop of short visits
more than the work does (the start waits until the new thread runs: long on a busy
machine). A call that finds every thread busy (a slow read) starts one more."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

IDLE_SECONDS = 30.0  # how long a thread waits for more work before it ends

# a job runs its work and returns how to hand the outcome over: called once its thread
# is back among the idle ones, so the caller's next call finds it there
_Job = Callable[[], Callable[[], None]]


class _Worker:
    """One daemon thread running jobs handed to it, one at a time."""

    def __init__(self) -> None:
        self.job: _Job | None = None
        self.ready = threading.Event()  # a job was handed over
        self.thread = threading.Thread(target=self._run, name="swell-read", daemon=True)

    def _run(self) -> None:
        while True:
            if not self.ready.wait(IDLE_SECONDS):
                with _GUARD:  # no work came: end, unless a job arrives meanwhile
                    if not self.ready.is_set():
                        _IDLE.remove(self)
                        return
            self.ready.clear()
            job, self.job = self.job, None
            deliver = job() if job is not None else None
            with _GUARD:
                _IDLE.append(self)
            if deliver is not None:
                deliver()


_GUARD = threading.Lock()
_IDLE: list[_Worker] = []  # threads waiting for work


def _hand(job: _Job, name: str) -> None:
    """Run `job` in an idle thread, or a new one."""
    with _GUARD:  # handed over under the guard: an idle thread ends only under it
        worker = _IDLE.pop() if _IDLE else None
        if worker is not None:
            worker.thread.name = name
            worker.job = job
            worker.ready.set()
            return
    worker = _Worker()
    worker.thread.name = name
    worker.job = job
    worker.ready.set()
    worker.thread.start()


def _forget_after_fork() -> None:
    """A forked child has none of its parent's threads."""
    global _GUARD
    _GUARD = threading.Lock()
    _IDLE.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


async def off_loop(fn: Callable[[], T], name: str = "swell-read") -> T:
    """`fn()` in a daemon thread; its result or its exception."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(done: Callable[[], None]) -> None:
        if not future.done():  # else the caller was cancelled meanwhile
            done()

    def work() -> Callable[[], None]:
        try:
            value = fn()
        except BaseException as exc:  # handed to the caller, whatever it is
            outcome = functools.partial(future.set_exception, exc)
        else:
            outcome = functools.partial(future.set_result, value)
        return lambda: deliver(outcome)

    def deliver(outcome: Callable[[], None]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle, outcome)

    _hand(work, name)
    return await future


__all__ = ["off_loop"]

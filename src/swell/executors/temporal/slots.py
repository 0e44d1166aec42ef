"""A worker's visit slots (`swell worker --slots N`): at most N visits doing work at
once on each of its task queues, where a visit that waits for its child runs (a
`pipeline:` step, `iterate`, a matrix's `child_pipeline`) lends its slot to others
while it waits. Without that, a parent's visit would hold the slot its children's
visits need, and a worker with few slots would never finish a run with a sub-pipeline.

Temporal asks the supplier for a slot before each poll of the task queue and gives it
back when the task ends; `park` / `unpark` (children.py) take the waiting visit out of
the count and put it back. The SDK calls `release_slot` from its own thread, hence the
lock and the thread-safe wake-ups.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

from temporalio.worker import (
    CustomSlotSupplier,
    SlotMarkUsedContext,
    SlotPermit,
    SlotReleaseContext,
    SlotReserveContext,
)

Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]


class VisitSlots(CustomSlotSupplier):
    """The activity slots of one task queue of one worker."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._lock = threading.Lock()
        self._held = 0  # permits given out (a poll waiting for a task holds one)
        self._parked = 0  # of those, visits waiting for their child runs
        self._waiters: list[Waiter] = []

    def _free(self) -> bool:
        return self._held - self._parked < self.slots

    async def reserve_slot(self, ctx: SlotReserveContext) -> SlotPermit:
        while True:
            loop = asyncio.get_running_loop()
            with self._lock:
                if self._free():
                    self._held += 1
                    return SlotPermit()
                waiter: Waiter = (loop, loop.create_future())
                self._waiters.append(waiter)
            try:
                await waiter[1]
            finally:
                with self._lock, contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)

    def try_reserve_slot(self, ctx: SlotReserveContext) -> SlotPermit | None:
        with self._lock:
            if not self._free():
                return None
            self._held += 1
            return SlotPermit()

    def mark_slot_used(self, ctx: SlotMarkUsedContext) -> None:
        return None

    def release_slot(self, ctx: SlotReleaseContext) -> None:
        with self._lock:
            self._held -= 1
            self._wake()

    def park(self) -> None:
        """A visit waits for its child runs: its slot serves other visits meanwhile."""
        with self._lock:
            self._parked += 1
            self._wake()

    def unpark(self) -> None:
        """The visit goes on (for a moment the worker may run one visit over its slots)."""
        with self._lock:
            self._parked -= 1

    def _wake(self) -> None:
        """Let every waiting reservation look again (the lock is held)."""
        waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # its loop closed: the worker stopped
                loop.call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)

"""Checkpoint refs written after the visit, in a thread: a visit's own ref
(`refs/swell/RUN/STEP/VISIT`) names a commit its workspace's tip already reaches, so
nothing needs it before the run ends, and making its file costs a directory change
(over a millisecond on a busy disk) the next visit should not wait for.

What is queued is written by a daemon thread soon after, and what is left when the
process exits (or `settle` is called) by the caller. A process killed with kill -9
may lose the names of its last visits: their commits stay reachable from the tip
(each checkpoint's parent is the one before), so `swell clean` keeps them and
`swell diff`, `fork` and `rewind`, which read commits from the events, find them."""

from __future__ import annotations

import atexit
import threading
import weakref
from collections.abc import Callable

Write = Callable[[str, str], None]  # ref, commit
LINGER = 5.0  # seconds the thread waits for more before it ends (a new one starts then)


class LaterRefs:
    """Refs to write soon, in order, each by the `Write` it was queued with."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._queued: list[tuple[Write, str, str]] = []
        self._unwritten = 0  # queued or being written
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        _all.add(self)

    def add(self, write: Write, ref: str, commit: str) -> None:
        with self._lock:
            self._queued.append((write, ref, commit))
            self._unwritten += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="swell-refs", daemon=True)
                self._thread.start()
        self._wake.set()

    def settle(self, timeout: float = 30.0) -> None:
        """Write what is still queued, here, and wait for the one being written."""
        while self._write_next():
            pass
        with self._lock:
            self._lock.wait_for(lambda: self._unwritten == 0, timeout)

    def _work(self) -> None:
        """Write what comes; end after LINGER seconds with nothing (a Temporal worker
        makes a `LaterRefs` per visit: no thread is left behind for each)."""
        while True:
            self._wake.clear()
            while self._write_next():
                pass
            if self._wake.wait(LINGER):
                continue
            with self._lock:
                if not self._queued:
                    self._thread = None
                    return

    def _write_next(self) -> bool:
        with self._lock:
            if not self._queued:
                return False
            write, ref, commit = self._queued.pop(0)
        try:
            write(ref, commit)
        except Exception:  # a full disk: the ref is only a name, the tip keeps the commit
            pass
        finally:
            with self._lock:
                self._unwritten -= 1
                self._lock.notify_all()
        return True


_all: weakref.WeakSet[LaterRefs] = weakref.WeakSet()


@atexit.register
def _settle_all() -> None:
    for later in list(_all):
        later.settle()


__all__ = ["LaterRefs"]

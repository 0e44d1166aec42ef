"""Who executes a run: an OS file lock per run, held by the executing process.

The kernel releases a lock when its process ends, kill -9 included, so a crashed
run is free to resume at once and a live one can never be taken over: taking the
lock is the claim, and probing it is the liveness check. The lock file also names
its holder (pid and host) for the message the loser gets. Locks live next to the
SQLite file and, like it, on one machine.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import socket
import time
from pathlib import Path

from swell.errors import RunBusy, StoreError
from swell.store.rows import Owner

_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}")
RECORD = 256  # bytes of "pid host" in a lock file


def this_process() -> Owner:
    return Owner(os.getpid(), socket.gethostname())


def busy(run_id: str, owner: Owner | None) -> RunBusy:
    who = f"pid {owner.pid} on {owner.host}" if owner else "another process"
    return RunBusy(f"run {run_id} is already being executed by {who}")


class RunLocks:
    """The run locks of one store: `directory/<run>.lock`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._held: dict[str, int] = {}  # run id -> the open, locked file

    def _path(self, run_id: str) -> Path:
        # run ids are names swell made, but a lock must never land outside its directory
        name = run_id if _SAFE.fullmatch(run_id) else hashlib.sha256(run_id.encode()).hexdigest()
        return self.directory / f"{name}.lock"

    def acquire(self, run_id: str, owner: Owner) -> None:
        """Hold the run's lock; RunBusy naming the holder when another one holds it."""
        if run_id in self._held:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(self._path(run_id), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StoreError(f"cannot lock run {run_id}: {exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise busy(run_id, holder) from None
        # one fixed-size write: a reader sees the previous holder or this one, whole
        os.pwrite(fd, f"{owner.pid} {owner.host}".ljust(RECORD).encode()[:RECORD], 0)
        self._held[run_id] = fd

    def release(self, run_id: str) -> None:
        fd = self._held.pop(run_id, None)
        if fd is not None:
            os.close(fd)  # closing the file releases its lock

    def release_all(self) -> None:
        for run_id in list(self._held):
            self.release(run_id)

    def holder(self, run_id: str) -> Owner | None:
        """The process holding the run's lock now, or None when no process does."""
        if run_id in self._held:
            return this_process()
        try:
            fd = os.open(self._path(run_id), os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(f"cannot read the lock of run {run_id}: {exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_holder(fd) or Owner(0, "?")
        finally:
            os.close(fd)
        return None


def _read_holder(fd: int) -> Owner | None:
    """The holder the lock file names. Just after a process takes the lock the file may
    still name the previous holder, which is gone: wait a moment for the new name."""
    deadline = time.monotonic() + 1.0
    while True:
        found = _read(fd)
        if found is not None and (found.host != socket.gethostname() or _alive(found.pid)):
            return found
        if time.monotonic() >= deadline:
            return found
        time.sleep(0.01)


def _read(fd: int) -> Owner | None:
    try:
        pid, _, host = os.pread(fd, RECORD, 0).decode(errors="replace").strip().partition(" ")
        return Owner(int(pid), host or "?")
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

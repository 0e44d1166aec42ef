"""Who executes a run: a lock the kernel holds for the executing process, on the
database file itself.

Each run has one byte of `state.db`, far past anything SQLite locks (its lock bytes
sit at 1 GiB; a run's byte is at 2^62 plus 61 bits of a hash of its id), and its
executor holds a write lock on that byte. Taking the lock is the claim and probing it
is the liveness check; the kernel drops it when its process ends, kill -9 included,
so a crashed run is free to resume at once and a live one can never be taken over.
The holder's pid and host are in the run's row (`owner_pid`, `owner_host`), for the
message the loser gets.

Why the database and no lock file of its own: a step runs two directories below the
state directory and can remove, replace or plant anything there. A lock on a file
named per run could be deleted (and a reader would call a live run gone, and a second
executor would start), replaced by a FIFO (a reader would hang) or by a link (a
claimer would write through it); and the files piled up. Replacing the database is
replacing the runs themselves, and nothing is ever written through this descriptor.

The locks are Linux's open-file-description locks (`F_OFD_SETLK`): held by the open
file, so SQLite closing its own descriptors of the file never drops them (it would drop
classic POSIX locks of the whole process). Each process opens the file once, however
many store handles it has, and keeps it open while a handle is open or a claim held
(closing it would drop SQLite's POSIX locks: SQLite itself defers its closes likewise);
handles of one process tell their claims apart here, under a lock. Where the platform
has no such locks, POSIX locks on a companion file (`state.db-claims`, never closed while
a claim is held) do the same, except that removing that file fools readers.
"""

from __future__ import annotations

import errno
import fcntl
import itertools
import os
import stat
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path

from swell.errors import StoreError
from swell.store.rules import busy, this_process
from swell.store.sqlite.errors import os_store_error, read_only

_OFD = hasattr(fcntl, "F_OFD_SETLK")  # Linux 3.15+
_BASE = 1 << 62  # a run's lock byte: _BASE + 61 bits of a hash of its id
_SPAN = 1 << 61
_FLOCK = struct.Struct("@hhqqi")  # Linux's struct flock: type, whence, start, len, pid


@dataclass
class _File:
    """The lock file of one database, as this process has it open."""

    fd: int
    handles: int = 0  # open RunLocks on it
    claims: dict[str, int] = field(default_factory=dict)  # run id -> the holding handle's token


_GUARD = threading.Lock()
_TOKENS = itertools.count(1)
_FILES: dict[tuple[int, int], _File] = {}  # (device, inode) -> the file


def _forget_after_fork() -> None:
    """A forked child holds no claims: it opens its own file when it opens a store."""
    global _GUARD
    _GUARD = threading.Lock()
    _FILES.clear()  # the inherited descriptors stay open: closing them drops nothing of ours


os.register_at_fork(after_in_child=_forget_after_fork)


class RunLocks:
    """The run locks of one SQLite database, for one store handle."""

    def __init__(self, database: Path) -> None:
        self.path = database if _OFD else database.with_name(database.name + "-claims")
        self._token = next(_TOKENS)
        with _GUARD:
            self.key, file = _open(self.path)
            file.handles += 1
        self._closed = False

    def acquire(self, run_id: str) -> bool:
        """Hold the run's lock: False when another process holds it; RunBusy naming this
        process when another handle of it does."""
        with _GUARD:
            file = self._file()
            holder = file.claims.get(run_id)
            if holder == self._token:
                return True
            if holder is not None:
                raise busy(run_id, this_process())
            if not _lock(file.fd, _byte(run_id), self.path):
                return False
            file.claims[run_id] = self._token
            return True

    def release(self, run_id: str) -> None:
        with _GUARD:
            file = self._file()
            if file.claims.get(run_id) == self._token:
                del file.claims[run_id]
                _unlock(file.fd, _byte(run_id))

    def holder(self, run_id: str) -> str | None:
        """Who holds the run's lock: "here" (a handle of this process), "elsewhere"
        (another process), or None."""
        with _GUARD:
            file = self._file()
            if run_id in file.claims:
                return "here"
            return "elsewhere" if _taken(file.fd, _byte(run_id), self.path) else None

    def close(self) -> None:
        """Release this handle's claims; the last handle of the process closes the file."""
        with _GUARD:
            file = _FILES.get(self.key)
            if self._closed or file is None:
                return
            self._closed = True
            for run_id, holder in list(file.claims.items()):
                if holder == self._token:
                    del file.claims[run_id]
                    _unlock(file.fd, _byte(run_id))
            file.handles -= 1
            if file.handles == 0 and not file.claims:
                del _FILES[self.key]
                os.close(file.fd)

    def _file(self) -> _File:
        file = _FILES.get(self.key)
        if file is None or self._closed:  # closed, or opened before this process forked
            raise StoreError(f"the store at {self.path} is closed")
        return file


def _open(path: Path) -> tuple[tuple[int, int], _File]:
    """The process's open lock file at `path`: opened now unless open already. Never
    blocks (a FIFO), and only a regular file will do."""
    own = not _OFD  # the companion file is swell's alone: never through a link
    try:
        found = os.stat(path, follow_symlinks=not own)
    except FileNotFoundError:
        found = None
    except OSError as exc:
        raise StoreError(f"cannot open the state database {path}: {exc}") from None
    if found is not None:
        if not stat.S_ISREG(found.st_mode):
            raise StoreError(f"cannot open the state database {path}: not a regular file")
        known = _FILES.get((found.st_dev, found.st_ino))
        if known is not None:
            return (found.st_dev, found.st_ino), known
    flags = os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_NOFOLLOW if own else 0)
    try:
        try:
            fd = os.open(path, os.O_RDWR | flags, 0o644)
        except OSError as exc:  # a read-only database: readers probe, no one claims
            if not isinstance(exc, PermissionError) and exc.errno != errno.EROFS:
                raise
            if found is None:  # none yet, and none can be made: why not is the error
                raise os_store_error(exc, path) from None
            fd = os.open(path, (flags & ~os.O_CREAT) | os.O_RDONLY)
    except OSError as exc:
        raise os_store_error(exc, path) from None
    opened = os.fstat(fd)
    key = (opened.st_dev, opened.st_ino)
    if not stat.S_ISREG(opened.st_mode):  # swapped since `stat`: not the database
        os.close(fd)
        raise StoreError(f"cannot open the state database {path}: not a regular file")
    if key in _FILES:  # swapped for a file open here already: never close (SQLite's locks)
        return key, _FILES[key]
    _FILES[key] = _File(fd)
    return key, _FILES[key]


def _byte(run_id: str) -> int:
    import hashlib  # when a run is locked: readers of the store start without it

    digest = hashlib.sha256(run_id.encode()).digest()
    return _BASE + int.from_bytes(digest[:8], "big") % _SPAN


def _lock(fd: int, byte: int, path: Path) -> bool:
    try:
        if _OFD:
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, byte, 1, 0))
        else:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, byte, os.SEEK_SET)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        if exc.errno == errno.EBADF:  # opened read-only: this user cannot write the file
            raise read_only(path, "no write access to it") from None
        raise StoreError(f"cannot lock a run in {path}: {exc}") from None
    return True


def _unlock(fd: int, byte: int) -> None:
    if _OFD:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _FLOCK.pack(fcntl.F_UNLCK, os.SEEK_SET, byte, 1, 0))
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, byte, os.SEEK_SET)


def _taken(fd: int, byte: int, path: Path) -> bool:
    """Whether another process holds the lock. Without OFD locks the probe takes and
    drops the lock: a claim racing it may lose, as to a holder."""
    if not _OFD:
        if not _lock(fd, byte, path):
            return True
        _unlock(fd, byte)
        return False
    try:
        got = fcntl.fcntl(
            fd, fcntl.F_OFD_GETLK, _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, byte, 1, 0)
        )
    except OSError as exc:
        raise StoreError(f"cannot read the run locks of {path}: {exc}") from None
    return bool(_FLOCK.unpack(got)[0] != fcntl.F_UNLCK)


def alive(pid: int) -> bool:
    """Whether a process of this pid runs on this machine (for naming a holder only)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

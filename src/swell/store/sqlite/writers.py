"""A first-come, first-served line for the processes writing one SQLite database.

SQLite lets one writer in at a time, and a writer that finds the lock taken polls it:
its busy handler sleeps 1, 2, 5 ... 100 ms between tries, then 100 ms a try. Against
writers that commit every millisecond a poller finds the lock free only by luck: with
fifty runs on one state.db single commits waited 2.5-4.1 s (issue 35), and a run
starting among them could wait out the 30 s timeout ("database is locked"). A kernel
lock taken blocking is no better alone: the writer that just let go asks again before
the woken waiter runs, and takes it back.

So a writer that finds SQLite's lock taken (or others in line) takes a ticket and
waits its turn: a ticket lock made of kernel locks. `state.db-writers` holds the last
ticket taken and the last served, read and advanced under a lock on its byte 0; the
writer holding ticket t holds a lock on slot t (a byte further on) from then until its
transaction ends, and waits for slot t-1 to be let go before it begins: the kernel
wakes exactly the next writer, and nobody slips in between. A writer that finds no
one in line and SQLite's lock free begins at once, as before: one run alone pays one
read of the file a commit. A writer that dies lets go of its slot with its process
(the locks are the kernel's), and the line moves on.

The line only orders swell's writers: SQLite's lock still makes each transaction
exclusive. If the file is missing, unwritable, replaced or garbled, the worst is a
writer that does not wait its turn and meets SQLite's polling, as before.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

_OFD = hasattr(fcntl, "F_OFD_SETLKW")  # Linux 3.15+: locks held by the open file
_SLOTS = 1 << 16  # a ring of slots: more than will ever wait at once
_FLOCK = struct.Struct("@hhqqi")  # Linux's struct flock: type, whence, start, len, pid
_COUNTS = struct.Struct("<QQ")  # the last ticket taken, the last served


@dataclass
class _File:
    """The line file of one database, as this process has it open."""

    fd: int | None = None  # opened by the first write (-1: there is no line to be had)
    handles: int = 0  # open `Line`s on it
    threads: threading.Lock = field(default_factory=threading.Lock)  # one thread at a time


class Turn:
    """A writer's place at the head of the line, held until its transaction ends."""

    __slots__ = ("fd", "file", "ticket")

    def __init__(self, file: _File, fd: int) -> None:
        self.file = file  # its `threads` lock is held
        self.fd = fd
        self.ticket: int | None = None  # None: it began without a ticket


def leave(turn: Turn | None) -> None:
    """The transaction is over: the next writer may begin."""
    if turn is None:
        return
    try:
        if turn.ticket is not None:
            _served(turn.fd, turn.ticket)
    finally:
        turn.file.threads.release()


_GUARD = threading.Lock()
_FILES: dict[Path, _File] = {}  # database -> its line file


def _forget_after_fork() -> None:
    """A forked child shares its parent's open files, so their locks: it opens its own."""
    global _GUARD
    _GUARD = threading.Lock()
    _FILES.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


class Line:
    """The writers' line of one database, for one store handle."""

    def __init__(self, database: Path) -> None:
        self.key = database.resolve()
        with _GUARD:
            file = _FILES.setdefault(self.key, _File())
            file.handles += 1
        self.file: _File | None = file

    def enter(self, begin_now: Callable[[], bool]) -> tuple[bool, Turn | None]:
        """Begin at once (`begin_now`, which must not wait) when no one is in line, or
        else wait this writer's turn: whether the transaction has begun, and the turn
        to give back to `leave` when it ends (None: there is no line to be had)."""
        fd = self._fd()
        file = self.file
        if fd < 0 or file is None:
            return False, None
        file.threads.acquire()
        turn = Turn(file, fd)
        try:
            if _no_line(fd) and begin_now():
                return True, turn
            turn.ticket = _take(fd)
            if turn.ticket is not None:
                _wait(fd, turn.ticket - 1)
        except BaseException:
            leave(turn)
            raise
        return False, turn

    def _fd(self) -> int:
        file = self.file
        if file is not None and file.fd is not None and _FILES.get(self.key) is file:
            return file.fd  # opened already, and neither closed nor forked since
        with _GUARD:
            file = self.file
            if file is None or _FILES.get(self.key) is not file:  # closed, or forked since
                return -1
            if file.fd is None:
                file.fd = _open(self.key.with_name(self.key.name + "-writers"))
            return file.fd

    def close(self) -> None:
        """The last handle of the process closes the file."""
        with _GUARD:
            file, self.file = self.file, None
            if file is None or _FILES.get(self.key) is not file:
                return
            file.handles -= 1
            if file.handles == 0:
                del _FILES[self.key]
                if file.fd is not None and file.fd >= 0:
                    os.close(file.fd)


def _open(path: Path) -> int:
    """The line file, made if need be: a regular file, never through a link, never
    waited on (a FIFO); -1 where there is none to be had (no OFD locks, read-only)."""
    if not _OFD:
        return -1
    flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError:
        return -1
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return -1
    return fd


def _counts(fd: int) -> tuple[int, int]:
    got = os.pread(fd, _COUNTS.size, 0)
    return _COUNTS.unpack(got) if len(got) == _COUNTS.size else (0, 0)


def _no_line(fd: int) -> bool:
    """Whether every ticket taken has been served (read without the lock: at worst one
    writer begins ahead of a writer that just took a ticket)."""
    try:
        taken, served = _counts(fd)
    except OSError:
        return True
    return served >= taken


def _take(fd: int) -> int | None:
    """The next ticket, its slot locked; None when the file cannot be locked."""
    if not _set(fd, fcntl.F_WRLCK, 0):
        return None
    try:
        taken, served = _counts(fd)
        ticket = taken % (1 << 62) + 1
        if not _set(fd, fcntl.F_WRLCK, _slot(ticket)):
            return None
        os.pwrite(fd, _COUNTS.pack(ticket, served), 0)
        return ticket
    except OSError:
        return None
    finally:
        _set(fd, fcntl.F_UNLCK, 0, wait=False)


def _wait(fd: int, ticket: int) -> None:
    """Until the writer holding `ticket` has let go of its slot (at once if it has)."""
    if _set(fd, fcntl.F_RDLCK, _slot(ticket)):
        _set(fd, fcntl.F_UNLCK, _slot(ticket), wait=False)


def _served(fd: int, ticket: int) -> None:
    """This writer's turn is over: the next may begin."""
    with contextlib.suppress(OSError):  # a garbled count: writers begin without the line
        os.pwrite(fd, _COUNTS.pack(ticket, ticket)[8:], 8)
    _set(fd, fcntl.F_UNLCK, _slot(ticket), wait=False)


def _slot(ticket: int) -> int:
    return 16 + ticket % _SLOTS  # past the counts (bytes 0-15; byte 0 their lock)


def _set(fd: int, kind: int, byte: int, *, wait: bool = True) -> bool:
    """Lock (waiting for it) or unlock one byte; False where it cannot be done."""
    command = fcntl.F_OFD_SETLKW if wait else fcntl.F_OFD_SETLK
    try:
        fcntl.fcntl(fd, command, _FLOCK.pack(kind, os.SEEK_SET, byte, 1, 0))
    except OSError as exc:
        if exc.errno in (errno.EBADF, errno.ENOLCK, errno.EINVAL, errno.EDEADLK):
            return False
        raise
    return True

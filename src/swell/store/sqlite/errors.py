"""What a failing SQLite file means to a user: each `sqlite3.Error` (and `OSError`) of
the state database becomes a `StoreError` that names the file and says what to do.

A full disk, a read-only file or directory and a damaged file are `StoreFull`,
`StoreReadOnly` and `StoreDamaged`; anything else is a plain `StoreError` with
SQLite's words. `translated` applies this to every public method of a class that
talks to one database (`SqliteStore`, `SqlitePages`), so no query, fetch or commit
lets a raw `sqlite3` error (and its traceback) reach a user.
"""

from __future__ import annotations

import errno
import functools
import inspect
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from swell.errors import StoreBroken, StoreDamaged, StoreError, StoreFull, StoreReadOnly

T = TypeVar("T")

# primary result codes (https://www.sqlite.org/rescode.html)
_PERM, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 3, 8, 10, 11, 13, 14, 26


def store_error(exc: sqlite3.Error, path: Path) -> StoreError:
    """The user's view of SQLite's `exc` on the database at `path`."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    said = str(exc)
    if code == _FULL:
        return full(path, said)
    if code in (_READONLY, _PERM):
        return read_only(path, said)
    if code in (_CORRUPT, _NOTADB):
        return damaged(path, said)
    if code == _CANTOPEN:
        return StoreBroken(
            f"cannot open the state database {path} ({said})",
            f"check that {path.parent} exists and this user may read and write it",
        )
    if code == _IOERR:
        return StoreBroken(
            f"cannot read or write the state database {path}: a disk I/O error ({said})",
            "check the disk holding it (full? failing? remounted read-only?)",
        )
    return StoreError(f"the state database {path} failed: {said}")


def os_store_error(exc: OSError, path: Path) -> StoreError:
    """The user's view of an `OSError` opening or creating the database at `path`."""
    said = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return full(path, said)
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return read_only(path, said)
    return StoreError(f"cannot open the state database {path}: {said}")


def full(path: Path, said: str) -> StoreFull:
    return StoreFull(
        f"cannot write to the state database {path}: the disk is full ({said})",
        f"free space on the disk holding {path.parent}",
    )


def read_only(path: Path, said: str) -> StoreReadOnly:
    return StoreReadOnly(
        f"cannot write to the state database {path} ({said})",
        f"make {path} and its directory {path.parent} writable for this user (SQLite "
        f"writes {path.name}-wal and {path.name}-shm beside it), or set SWELL_STORE elsewhere",
    )


def damaged(path: Path, said: str) -> StoreDamaged:
    name = path.name
    return StoreDamaged(
        f"the state database {path} is damaged ({said}): swell cannot use it",
        f"restore it from a backup, or move {name}, {name}-wal and {name}-shm out of "
        f'{path.parent} to start afresh with no runs (docs/architecture.md, "When the '
        'disk fails", says how to save what it still holds)',
    )


def translated(cls: type[T]) -> type[T]:
    """`cls` with every public method's `sqlite3.Error` raised as `store_error` of the
    instance's `path` (one `try` per call: nothing per row fetched), inherited ones
    (store/sql_reads.py) included."""
    for name in dir(cls):
        member = getattr(cls, name)
        if not name.startswith("_") and inspect.isfunction(member):
            setattr(cls, name, _translating(member))
    return cls


def _translating(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise store_error(exc, self.path) from None

    return call

"""Which directories of a workspace changed since the last look: Linux's inotify,
read without blocking (docs/time-travel.md, "What a checkpoint costs").

A checkpoint of a workspace nothing touched then costs one `read` that finds no
events, however many files the workspace holds; one that changed a few files
rescans only their directories. Every directory the checkpoint walks is watched
before it is listed, so a change made after the listing is an event. Anything this
cannot account for says "look at everything" (`None` from `changed`): an overflowed
queue, a watched directory moved, a `.gitignore` or `.gitattributes` changed (it
changes what is kept below it). Where inotify is missing (not Linux) or exhausted
(`fs.inotify.max_user_instances`, `max_user_watches`), `Watch.open` gives None and
every checkpoint stats every entry instead.

What inotify does not see: a change made through a shared memory mapping of a file
(`mmap`) without closing a descriptor written through, and changes made on another
host to a network filesystem. A full scan every FULL_EVERY checkpoints bounds how
long such a change can go unseen."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
import sys
import weakref

# from <sys/inotify.h>
_MODIFY, _ATTRIB, _CLOSE_WRITE = 0x2, 0x4, 0x8
_MOVED_FROM, _MOVED_TO, _CREATE, _DELETE = 0x40, 0x80, 0x100, 0x200
_DELETE_SELF, _MOVE_SELF = 0x400, 0x800
_OVERFLOW, _IGNORED = 0x4000, 0x8000
_ONLYDIR, _DONT_FOLLOW, _EXCL_UNLINK = 0x01000000, 0x02000000, 0x04000000
_NONBLOCK, _CLOEXEC = 0o4000, 0o2000000
_MASK = (
    _MODIFY
    | _ATTRIB
    | _CLOSE_WRITE
    | _MOVED_FROM
    | _MOVED_TO
    | _CREATE
    | _DELETE
    | _DELETE_SELF
    | _MOVE_SELF
    | _ONLYDIR
    | _DONT_FOLLOW
    | _EXCL_UNLINK
)
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len
_RULES = (b".gitignore", b".gitattributes")
FULL_EVERY = 64  # checkpoints between full scans (what inotify cannot see)


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


class Watch:
    """The inotify watches of one workspace's directories (`rel` paths, "" its top)."""

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._libc = libc
        self.fd = fd
        self._dirs: dict[int, str] = {}  # watch descriptor -> directory
        self._fresh: set[int] = set()  # watches (re)made by the scan under way
        self._since_full = 0
        self.broken = False  # a watch could not be added: every checkpoint scans
        weakref.finalize(self, os.close, fd)

    @classmethod
    def open(cls) -> Watch | None:
        libc = _libc()
        if libc is None:
            return None
        fd = int(libc.inotify_init1(_NONBLOCK | _CLOEXEC))
        return None if fd < 0 else cls(libc, fd)

    def add(self, path: str, rel: str) -> None:
        """Watch directory `path` (call before listing it)."""
        if self.broken:
            return
        wd = int(self._libc.inotify_add_watch(self.fd, os.fsencode(path), _MASK))
        if wd < 0:
            self.broken = True  # out of watches: a directory would go unseen
            return
        self._dirs[wd] = rel
        self._fresh.add(wd)

    def begin_full(self) -> None:
        """A full scan starts: it adds a watch to every directory it lists again."""
        self._fresh = set()
        self._since_full = 0

    def end_full(self) -> None:
        """Drop the watches the full scan did not renew (directories gone or ignored)."""
        for wd in set(self._dirs) - self._fresh:
            del self._dirs[wd]
            self._libc.inotify_rm_watch(self.fd, wd)

    def changed(self) -> set[str] | None:
        """The directories with an event since the last call, or None: scan everything."""
        dirty: set[str] = set()
        # no watch yet (just opened): only a full scan makes them
        full = self.broken or not self._dirs or self._since_full >= FULL_EVERY
        self._since_full += 1
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            at = 0
            while at < len(data):
                wd, mask, _, size = _HEADER.unpack_from(data, at)
                name = data[at + _HEADER.size : at + _HEADER.size + size].rstrip(b"\0")
                at += _HEADER.size + size
                if mask & (_OVERFLOW | _MOVE_SELF) or name in _RULES:
                    full = True
                    continue
                rel = self._dirs.get(wd)
                if rel is None:
                    continue
                if mask & (_DELETE_SELF | _IGNORED):
                    del self._dirs[wd]
                    rel = rel.rpartition("/")[0]  # its parent lists it no more
                dirty.add(rel)
        return None if full else dirty


__all__ = ["FULL_EVERY", "Watch"]

"""A workspace's tree written in this process, as `git add --all` then `git write-tree`
through swell's own index would write it (docs/time-travel.md).

A full scan stats every entry (`os.scandir`); a file is read and hashed only when its
stat data differs from what it was when last hashed (`StatCache.files`, kept on disk
between processes: statcache.py), or when it was changed within RACY_NS of being
hashed (its times may not show a change made in the same clock tick: git's "racy
clean" rule). With a `Watch` (watch.py), a later scan looks only at the directories
that had an event since: the others keep their trees, so a checkpoint of a workspace
nothing touched stats nothing. Trees are hashed again only where an entry changed,
and objects git does not have yet are written as loose objects. Anything this does
not handle raises `Fallback` and git takes the whole checkpoint: a `.git` below the
workspace's top (git would add a submodule), a `.gitattributes` (it can change bytes
on the way in), a FIFO, socket or device, an unreadable file, an ignore pattern
`ignores.py` does not match."""

from __future__ import annotations

import os
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from swell.workspace import ignores
from swell.workspace.gitobjects import (
    EXECUTABLE,
    REGULAR,
    SYMLINK,
    TREE,
    Entry,
    ObjectWriter,
    tree_body,
)
from swell.workspace.statcache import Hashed, Stat
from swell.workspace.watch import Watch

# a bigger file is left out of the checkpoint, as if ignored: hashing a 50 GB sparse
# file a step made would hold the run up for minutes (docs/time-travel.md)
MAX_FILE_BYTES = 100 * 1024 * 1024
RACY_NS = 1_000_000_000  # a file changed this close to its hashing is hashed again

Rules = list[tuple[str, ignores.Rules]]  # the `.gitignore`s above a directory, with their folders


class Fallback(Exception):
    """Something only git handles: it takes this checkpoint."""


class NotCheap(Exception):
    """A scan asked to stay small (`Budget`: it runs on the event loop) met more: more
    entries to stat, or more bytes to read, than it may. Nothing is lost: the caller
    takes the checkpoint again in a thread."""


@dataclass(frozen=True)
class Budget:
    """What a scan on the event loop may do: stat `entries`, read `bytes`."""

    entries: int
    bytes: int


@dataclass
class _Dir:
    """A directory as last listed: its files' entries, its subdirectories (not
    ignored), the rules that hold inside it, and its tree (None: git would add nothing)."""

    files: list[Entry]
    subdirs: list[str]
    rules: Rules
    key: tuple[Entry, ...] = ()
    oid: str | None = None


@dataclass
class StatCache:
    """What one workspace's files and directories hashed to. `files` is what the
    on-disk copy keeps; `changed` what changed in it since that copy was written."""

    files: dict[str, Hashed] = field(default_factory=dict)
    dirs: dict[str, _Dir] = field(default_factory=dict)
    rules: dict[str, tuple[Stat, ignores.Rules]] = field(default_factory=dict)
    changed: dict[str, Hashed | None] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _stat_of(st: os.stat_result) -> Stat:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_mode)


def _mode(st_mode: int) -> bytes:
    if stat.S_ISLNK(st_mode):
        return SYMLINK
    return EXECUTABLE if st_mode & stat.S_IXUSR else REGULAR


def _within(rel: str, folder: str) -> bool:
    return not folder or rel == folder or rel.startswith(folder + "/")


class _Walk:
    def __init__(
        self,
        cache: StatCache,
        objects: ObjectWriter,
        excludes: ignores.Rules,
        watch: Watch | None,
        dirty: set[str] | None,
        budget: Budget | None = None,
    ) -> None:
        self.cache = cache
        self.budget = budget
        self.stats = 0  # entries stat'ed
        self.read = 0  # bytes read
        self.objects = objects
        self.excludes = excludes
        self.watch = watch
        self.dirty = dirty
        self.touched: set[str] = set()  # the dirty directories and every one above them
        for rel in dirty or ():
            while rel not in self.touched:
                self.touched.add(rel)
                rel = rel.rpartition("/")[0]
        self.listed: set[str] = set()  # directories listed by this scan
        self.seen: set[str] = set()  # files stat'ed by this scan
        self.racy_after = time.time_ns() - RACY_NS  # a file changed since may change unseen

    def tree(self, root: str) -> str:
        oid = self.directory(root, "", [])
        if self.dirty is None:  # a full scan: what it did not see is gone (or ignored)
            for rel in set(self.cache.dirs) - self.listed:
                self.cache.dirs.pop(rel, None)
                self.cache.rules.pop(rel, None)
            for rel in set(self.cache.files) - self.seen:
                self.drop_file(rel)
        return oid or self.objects.write(b"tree", b"")

    def forget(self, gone: set[str]) -> None:
        """Drop what is known of directories `gone` and everything below them."""
        if not gone:
            return
        below = {d for d in self.cache.dirs if any(_within(d, g) for g in gone)}
        for rel in below:
            self.cache.dirs.pop(rel, None)
            self.cache.rules.pop(rel, None)
        for rel in [f for f in self.cache.files if any(f.startswith(f"{g}/") for g in gone)]:
            self.drop_file(rel)

    def drop_file(self, rel: str) -> None:
        if self.cache.files.pop(rel, None) is not None:
            self.cache.changed[rel] = None

    def directory(self, path: str, rel: str, rules: Rules) -> str | None:
        """The tree of directory `path` (`rel` in the workspace), None when it holds
        nothing git would add. `rules`: the `.gitignore`s above it, with their folders."""
        known = self.cache.dirs.get(rel)
        if known is not None and self.dirty is not None and rel not in self.dirty:
            if rel not in self.touched:
                return known.oid  # nothing changed in or below it
            entries = list(known.files)  # its own files did not change: only below
            for name in known.subdirs:
                sub = f"{rel}/{name}" if rel else name
                oid = self.directory(os.path.join(path, name), sub, known.rules)
                if oid is not None:
                    entries.append((os.fsencode(name), TREE, oid))
            return self.close(known, entries)
        return self.read_listing(path, rel, rules, known)

    def read_listing(self, path: str, rel: str, rules: Rules, known: _Dir | None) -> str | None:
        if self.watch is not None:
            self.watch.add(path, rel)  # before listing: a later change is an event
        self.listed.add(rel)
        with os.scandir(path) as listing:
            items = list(listing)
        names = {e.name for e in items}
        if ".gitattributes" in names:
            raise Fallback(".gitattributes")
        if ".gitignore" in names:
            rules = [*rules, (rel, self.ignore_file(os.path.join(path, ".gitignore"), rel))]
        files: list[Entry] = []
        subdirs: list[str] = []
        entries: list[Entry] = []
        for item in items:
            name = item.name
            if name == ".git":
                if rel:
                    raise Fallback("a repository inside the workspace")
                continue
            st = item.stat(follow_symlinks=False)
            self.stats += 1
            if self.budget is not None and self.stats > self.budget.entries:
                raise NotCheap(f"more than {self.budget.entries} entries")
            sub = f"{rel}/{name}" if rel else name
            is_dir = stat.S_ISDIR(st.st_mode)
            if self.ignored(rules, sub, name, is_dir):
                continue
            if is_dir:
                subdirs.append(name)
                oid = self.directory(item.path, sub, rules)
                if oid is not None:
                    entries.append((os.fsencode(name), TREE, oid))
            elif stat.S_ISREG(st.st_mode) and st.st_size > MAX_FILE_BYTES:
                continue
            elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                files.append(self.blob(item.path, sub, name, st))
            else:
                raise Fallback(f"{sub} is not a file")
        if known is not None:  # files and folders gone since it was last listed
            now = set(subdirs)
            self.forget({f"{rel}/{d}" if rel else d for d in known.subdirs if d not in now})
            listed = {e[0] for e in files}
            for gone in (os.fsdecode(e[0]) for e in known.files if e[0] not in listed):
                self.drop_file(f"{rel}/{gone}" if rel else gone)
        mine = _Dir(files, subdirs, rules)
        self.cache.dirs[rel] = mine
        return self.close(mine, files + entries)

    def close(self, mine: _Dir, entries: list[Entry]) -> str | None:
        """`mine`'s tree from `entries`, hashed again only when they changed."""
        if not entries:
            mine.key, mine.oid = (), None
            return None
        key = tuple(sorted(entries))
        if key != mine.key or mine.oid is None:
            mine.key, mine.oid = key, self.objects.write(b"tree", tree_body(entries))
        return mine.oid

    def blob(self, path: str, rel: str, name: str, st: os.stat_result) -> Entry:
        self.seen.add(rel)
        data = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_mode)
        mode = _mode(st.st_mode)
        known = self.cache.files.get(rel)
        if known is not None and known.trusted and known.stat == data:
            return (os.fsencode(name), mode, known.oid)
        self.read += st.st_size
        if self.budget is not None and self.read > self.budget.bytes:
            raise NotCheap(f"more than {self.budget.bytes} bytes to read")
        try:
            if mode == SYMLINK:
                body = os.fsencode(os.readlink(path))
            else:
                with open(path, "rb") as f:
                    body = f.read()
        except OSError as exc:
            raise Fallback(f"{rel}: {exc}") from None
        # any later change moves the mtime (or, set back by hand, the ctime) off `data`
        hashed = Hashed(data, self.objects.write(b"blob", body), st.st_mtime_ns < self.racy_after)
        if hashed != known:
            self.cache.files[rel] = hashed
            self.cache.changed[rel] = hashed
        return (os.fsencode(name), mode, hashed.oid)

    def ignore_file(self, path: str, rel: str) -> ignores.Rules:
        try:
            st = os.stat(path)
            known = self.cache.rules.get(rel)
            if known is not None and known[0] == _stat_of(st):
                return known[1]
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                rules = ignores.parse(f.read())
        except (OSError, ignores.Unsupported) as exc:
            raise Fallback(f"{path}: {exc}") from None
        self.cache.rules[rel] = (_stat_of(st), rules)
        return rules

    def ignored(self, rules: Rules, rel: str, name: str, is_dir: bool) -> bool:
        for folder, found in reversed(rules):  # the deepest .gitignore first
            mine = rel[len(folder) + 1 :] if folder else rel
            verdict = ignores.verdict(found, mine, name, is_dir)
            if verdict is not None:
                return verdict
        return ignores.verdict(self.excludes, rel, name, is_dir) is True


def write_tree(
    root: Path,
    cache: StatCache,
    objects: ObjectWriter,
    excludes: ignores.Rules,
    watch: Watch | None = None,
    budget: Budget | None = None,
) -> str:
    """The id of `root`'s tree, its new objects written; `Fallback` when git must do
    it. With `watch`, only the directories it reports changed are listed again. With
    `budget`, `NotCheap` when the scan would do more than it allows."""
    with cache.lock:
        dirty = watch.changed() if watch is not None and cache.dirs else None
        if watch is not None and dirty is None:
            watch.begin_full()
        try:
            oid = _Walk(cache, objects, excludes, watch, dirty, budget).tree(str(root))
        except OSError as exc:
            cache.dirs.clear()  # half walked: the next scan is a full one
            raise Fallback(str(exc)) from None
        except (Fallback, NotCheap):
            cache.dirs.clear()
            raise
        if watch is not None and dirty is None:
            watch.end_full()
        return oid


__all__ = ["MAX_FILE_BYTES", "Budget", "Fallback", "NotCheap", "StatCache", "write_tree"]

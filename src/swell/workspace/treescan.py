"""A workspace's tree written in this process, as `git add --all` then `git write-tree`
through swell's own index would write it (docs/time-travel.md).

Every entry is stat'ed (`os.scandir`); a file is read and hashed only when its stat
data differs from what this process last saw, or when it was changed within RACY_NS
of being hashed (its times may not show a change made in the same clock tick: git's
"racy clean" rule). Trees are hashed again only where an entry changed, and objects
git does not have yet are written as loose objects. Anything this does not handle
raises `Fallback` and git takes the whole checkpoint: a workspace of more than
SCAN_LIMIT entries, a `.git` below its top (git would add a submodule), a
`.gitattributes` (it can change bytes on the way in), a FIFO, socket or device, an
unreadable file, an ignore pattern `ignores.py` does not match."""

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

SCAN_LIMIT = 2000  # entries; a bigger workspace is checkpointed by git
# a bigger file is left out of the checkpoint, as if ignored: hashing a 50 GB sparse
# file a step made would hold the run up for minutes (docs/time-travel.md)
MAX_FILE_BYTES = 100 * 1024 * 1024
RACY_NS = 1_000_000_000  # a file changed this close to its hashing is hashed again

Stat = tuple[int, int, int, int, int]  # mtime_ns, ctime_ns, size, inode, mode


class Fallback(Exception):
    """Something only git handles: it takes this checkpoint."""


@dataclass
class _Blob:
    stat: Stat
    entry: Entry
    trusted: bool  # hashed more than RACY_NS after its last change


@dataclass
class StatCache:
    """What one workspace's files and directories hashed to, in this process."""

    blobs: dict[str, _Blob] = field(default_factory=dict)
    trees: dict[str, tuple[tuple[Entry, ...], str]] = field(default_factory=dict)
    rules: dict[str, tuple[Stat, ignores.Rules]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _stat_of(st: os.stat_result) -> Stat:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_mode)


class _Walk:
    def __init__(self, cache: StatCache, objects: ObjectWriter, excludes: ignores.Rules) -> None:
        self.cache = cache
        self.objects = objects
        self.excludes = excludes
        self.count = 0
        self.seen: set[str] = set()
        self.racy_after = time.time_ns() - RACY_NS  # a file changed since may change unseen

    def tree(self, root: str) -> str:
        oid = self.directory(root, "", [])
        for stale in set(self.cache.blobs) - self.seen:  # deleted files: forget them
            del self.cache.blobs[stale]
        return oid or self.objects.write(b"tree", b"")

    def directory(self, path: str, rel: str, rules: list[tuple[str, ignores.Rules]]) -> str | None:
        """The tree of directory `path` (`rel` in the workspace), None when it holds
        nothing git would add. `rules`: the `.gitignore`s above it, with their folders."""
        with os.scandir(path) as listing:
            items = list(listing)
        names = {e.name for e in items}
        if ".gitattributes" in names:
            raise Fallback(".gitattributes")
        if ".gitignore" in names:
            rules = [*rules, (rel, self.ignore_file(os.path.join(path, ".gitignore"), rel))]
        entries: list[Entry] = []
        for item in items:
            name = item.name
            if name == ".git":
                if rel:
                    raise Fallback("a repository inside the workspace")
                continue
            self.count += 1
            if self.count > SCAN_LIMIT:
                raise Fallback("a big workspace")
            st = item.stat(follow_symlinks=False)
            sub = f"{rel}/{name}" if rel else name
            is_dir = stat.S_ISDIR(st.st_mode)
            if self.ignored(rules, sub, name, is_dir):
                continue
            if is_dir:
                oid = self.directory(item.path, sub, rules)
                if oid is not None:
                    entries.append((os.fsencode(name), TREE, oid))
            elif stat.S_ISREG(st.st_mode) and st.st_size > MAX_FILE_BYTES:
                continue
            elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                entries.append(self.blob(item.path, sub, st))
            else:
                raise Fallback(f"{sub} is not a file")
        if not entries:
            return None
        key = tuple(sorted(entries))
        known = self.cache.trees.get(rel)
        if known is not None and known[0] == key:
            return known[1]
        oid = self.objects.write(b"tree", tree_body(entries))
        self.cache.trees[rel] = (key, oid)
        return oid

    def blob(self, path: str, rel: str, st: os.stat_result) -> Entry:
        self.seen.add(rel)
        data = _stat_of(st)
        known = self.cache.blobs.get(rel)
        if known is not None and known.trusted and known.stat == data:
            return known.entry
        if stat.S_ISLNK(st.st_mode):
            mode = SYMLINK
        else:
            mode = EXECUTABLE if st.st_mode & stat.S_IXUSR else REGULAR
        try:
            if mode == SYMLINK:
                body = os.fsencode(os.readlink(path))
            else:
                with open(path, "rb") as f:
                    body = f.read()
        except OSError as exc:
            raise Fallback(f"{rel}: {exc}") from None
        # any later change moves the mtime (or, set back by hand, the ctime) off `data`
        entry = (os.fsencode(os.path.basename(rel)), mode, self.objects.write(b"blob", body))
        known = _Blob(data, entry, st.st_mtime_ns < self.racy_after)
        self.cache.blobs[rel] = known
        return known.entry

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

    def ignored(
        self, rules: list[tuple[str, ignores.Rules]], rel: str, name: str, is_dir: bool
    ) -> bool:
        for folder, found in reversed(rules):  # the deepest .gitignore first
            mine = rel[len(folder) + 1 :] if folder else rel
            verdict = ignores.verdict(found, mine, name, is_dir)
            if verdict is not None:
                return verdict
        return ignores.verdict(self.excludes, rel, name, is_dir) is True


def write_tree(root: Path, cache: StatCache, objects: ObjectWriter, excludes: ignores.Rules) -> str:
    """The id of `root`'s tree, its new objects written; `Fallback` when git must do it."""
    with cache.lock:
        try:
            return _Walk(cache, objects, excludes).tree(str(root))
        except OSError as exc:
            raise Fallback(str(exc)) from None


__all__ = ["SCAN_LIMIT", "Fallback", "StatCache", "write_tree"]

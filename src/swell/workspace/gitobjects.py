"""git objects written in this process: what `git hash-object -w`, `mktree` and
`commit-tree` would write, without a git process (docs/time-travel.md).

A loose object is `zlib("{type} {len}\\0" + body)` at `objects/XX/YYYY…`, named by the
SHA-1 of the uncompressed bytes. Only a SHA-1 repository is written this way
(`sha1_repository`); anything else goes through git."""

from __future__ import annotations

import hashlib
import os
import threading
import zlib
from pathlib import Path

TREE = b"40000"
REGULAR = b"100644"
EXECUTABLE = b"100755"
SYMLINK = b"120000"
# author and committer of every checkpoint, at a fixed date (checkpoint.py's _ENV):
# the same tree, parent and message give the same commit, as with `git commit-tree`
SIGNATURE = b"swell <swell@localhost> 946684800 +0000"

Entry = tuple[bytes, bytes, str]  # name, mode, object id


def object_id(kind: bytes, body: bytes) -> str:
    return hashlib.sha1(b"%s %d\0%s" % (kind, len(body), body)).hexdigest()


def sha1_repository(repo: Path) -> bool:
    """Whether `repo` names objects by SHA-1 (a repository made with
    `init.defaultObjectFormat=sha256` does not: git writes its objects)."""
    try:
        config = (repo / "config").read_text(errors="replace").lower()
    except OSError:
        return False
    return "objectformat" not in config or "objectformat = sha1" in config


def tree_body(entries: list[Entry]) -> bytes:
    """A tree's bytes: entries in git's order (names as bytes, a directory's as if it
    ended in '/'), each `MODE NAME\\0` and the 20 bytes of its id."""
    entries.sort(key=lambda e: e[0] + b"/" if e[1] == TREE else e[0])
    return b"".join(b"%s %s\0%s" % (mode, name, bytes.fromhex(oid)) for name, mode, oid in entries)


def commit_body(tree: str, parent: str | None, message: str) -> bytes:
    """The commit `git commit-tree TREE [-p PARENT] -m MESSAGE` makes with checkpoint.py's
    environment (a fixed author, committer and date; the message ends in a newline)."""
    lines = [b"tree " + tree.encode()]
    if parent is not None:
        lines.append(b"parent " + parent.encode())
    lines += [b"author " + SIGNATURE, b"committer " + SIGNATURE, b""]
    text = message.encode()
    return b"\n".join(lines) + b"\n" + text + (b"" if text.endswith(b"\n") else b"\n")


class ObjectWriter:
    """Writes loose objects into `repo`, once each: ids known to be there are
    remembered (a repository only ever gains objects: gc.auto=0, swell never prunes)."""

    def __init__(self, repo: Path) -> None:
        self.objects = repo / "objects"
        self._known: set[str] = set()
        self._folders: set[str] = set()  # objects/XX folders known to be there
        self._lock = threading.Lock()

    def write(self, kind: bytes, body: bytes) -> str:
        raw = b"%s %d\0%s" % (kind, len(body), body)
        oid = hashlib.sha1(raw).hexdigest()
        if oid in self._known:
            return oid
        folder = f"{self.objects}/{oid[:2]}"
        path = f"{folder}/{oid[2:]}"
        if not os.path.exists(path):
            if oid[:2] not in self._folders:
                os.makedirs(folder, exist_ok=True)
                self._folders.add(oid[:2])
            # written beside it and renamed into place: a reader never sees half of one
            partial = f"{folder}/tmp_obj_{os.getpid()}_{threading.get_ident()}"
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o444)
            try:
                os.write(fd, zlib.compress(raw, 1))  # git's core.loosecompression default
            finally:
                os.close(fd)
            os.replace(partial, path)
        with self._lock:
            self._known.add(oid)
        return oid

    def read(self, oid: str) -> tuple[bytes, bytes] | None:
        """The type and body of loose object `oid`, or None (not loose: ask git)."""
        try:
            raw = zlib.decompress((self.objects / oid[:2] / oid[2:]).read_bytes())
        except (OSError, zlib.error):
            return None
        header, _, body = raw.partition(b"\0")
        return header.split(b" ", 1)[0], body


def writer(repo: Path) -> ObjectWriter:
    """A writer of `repo` (checkpoint.Memory keeps one per repository for a run)."""
    return ObjectWriter(repo)


__all__ = [
    "EXECUTABLE",
    "REGULAR",
    "SYMLINK",
    "TREE",
    "Entry",
    "ObjectWriter",
    "commit_body",
    "object_id",
    "sha1_repository",
    "tree_body",
    "writer",
]

"""What a workspace's files hashed to, kept on disk like git's index: a new `swell run`
or `swell resume` process stats the workspace's files but reads only those whose stat
data changed since they were hashed (docs/time-travel.md).

One file per workspace of a run (`.swell/runs/RUN/checkpoint/KEY.stat`): a header,
then one line a file, `OID TRUSTED MTIME_NS CTIME_NS SIZE INODE MODE PATH`, or
`- PATH` for a file gone. A checkpoint appends only the lines of what changed, so
its cost follows the change, not the workspace; when the appended lines outnumber
the files, the whole file is written again beside it and renamed into place. A torn
last line (a process killed while appending) is dropped; anything else unreadable
drops the whole file: every file is then read once again, never trusted wrongly."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import NamedTuple

HEADER = "swell-stat-cache 1\n"
_OID = re.compile(r"[0-9a-f]{40}")

Stat = tuple[int, int, int, int, int]  # mtime_ns, ctime_ns, size, inode, mode


class Hashed(NamedTuple):
    """A file as it was when hashed."""

    stat: Stat
    oid: str
    trusted: bool  # hashed long enough after its last change for its stat data to tell


def _line(rel: str, known: Hashed | None) -> str:
    if known is None:
        return f"- {rel}\n"
    mtime, ctime, size, ino, mode = known.stat
    return f"{known.oid} {int(known.trusted)} {mtime} {ctime} {size} {ino} {mode} {rel}\n"


def load(path: Path) -> dict[str, Hashed]:
    """The files `path` records; empty when there is none or it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return {}
    if not text.startswith(HEADER):
        return {}
    lines = text[len(HEADER) :].split("\n")
    lines.pop()  # after the last newline: empty, or a torn line
    found: dict[str, Hashed] = {}
    for line in lines:
        if line[:2] == "- ":
            found.pop(line[2:], None)
            continue
        fields = line.split(" ", 7)
        try:
            oid, trusted, mtime, ctime, size, ino, mode, rel = fields
            stat = (int(mtime), int(ctime), int(size), int(ino), int(mode))
        except ValueError:
            return {}
        if not rel or trusted not in ("0", "1") or not _OID.fullmatch(oid):
            return {}
        found[rel] = Hashed(stat, oid, trusted == "1")
    return found


class StatFile:
    """The on-disk copy of one workspace's hashes; `record` appends what changed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._appended = 0

    def record(self, files: dict[str, Hashed], changed: dict[str, Hashed | None]) -> None:
        """Note `changed` (None: gone); `files` is everything known, for a rewrite."""
        lines = [_line(rel, known) for rel, known in changed.items() if "\n" not in rel]
        if not lines:
            return
        self._appended += len(lines)
        if self._appended > len(files) + 100 or not self.path.is_file():
            self.rewrite(files)
            return
        with open(self.path, "a", encoding="utf-8", errors="surrogateescape") as f:
            f.write("".join(lines))

    def rewrite(self, files: dict[str, Hashed]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        body = [_line(rel, known) for rel, known in files.items() if "\n" not in rel]
        try:
            with open(partial, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(HEADER + "".join(body))
            os.replace(partial, self.path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                partial.unlink()
        self._appended = 0

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        self._appended = 0


__all__ = ["Hashed", "Stat", "StatFile", "load"]

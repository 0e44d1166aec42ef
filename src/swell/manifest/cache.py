"""Validated manifests and pipelines kept between commands, as Python keeps bytecode.

Validating a wave.yaml and a pipeline builds pydantic's validators for every model of
the format, about 25 ms of each `swell run` (more than the run of a short pipeline).
A file that validated once is kept here, pickled with what loading it produced (its
model, positions, warnings), under a key made of its text, where it is and how it is
shown, and the code that read it (swell's version, its manifest package's files,
pydantic's version): any change to one of these is a miss, and the file is read and
validated as always. Only files that loaded without an error are kept.

The cache is `$SWELL_CACHE_DIR`, else `$XDG_CACHE_HOME/swell`, else `~/.cache/swell`;
`SWELL_CACHE_DIR=off` turns it off. A pickle runs code when it is read, so a cache
directory that is not this user's own, or that others may write to, is never read.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import stat
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
KEEP = 500  # files kept; past this the oldest go (each is a few kilobytes)


def cache_dir() -> Path | None:
    """Where kept manifests live, None when caching is off."""
    chosen = os.environ.get("SWELL_CACHE_DIR")
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "off", "0") else Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "swell"


@cache
def _code_stamp() -> str:
    """What the kept objects depend on besides the file: the code that built them."""
    import pydantic

    import swell

    here = Path(__file__).parent
    stamps = sorted(f"{p.name}:{p.stat().st_mtime_ns}" for p in here.glob("*.py"))
    return "|".join([swell.__version__, pydantic.VERSION, *stamps])


def key(kind: str, path: Path, shown: str, text: str) -> str:
    """The name a file's loaded form is kept under."""
    parts = "\0".join([kind, str(path.resolve()), shown, _code_stamp(), text])
    return hashlib.sha256(parts.encode("utf-8", errors="surrogateescape")).hexdigest()


def _safe(directory: Path) -> bool:
    """Whether `directory` is this user's own and no one else may write to it."""
    try:
        info = directory.stat()
    except OSError:
        return False
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def kept(name: str, build: Callable[[], T], kind: type[T]) -> T:
    """The object kept under `name`, else `build()` (kept for next time). Anything
    wrong with the cache (missing, unreadable, another version's pickle) is a miss."""
    directory = cache_dir()
    if directory is None:
        return build()
    folder = directory / "manifests"
    path = folder / f"{name}.pickle"
    if _safe(directory) and _safe(folder):
        with contextlib.suppress(Exception):  # a broken entry is a miss, never an error
            found = pickle.loads(path.read_bytes())
            if isinstance(found, kind):
                return found
    value = build()
    with contextlib.suppress(OSError, pickle.PicklingError, TypeError, AttributeError):
        _write(directory, folder, path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    return value


def _write(directory: Path, folder: Path, path: Path, data: bytes) -> None:
    """Write atomically (no reader sees half a file) into directories only this user
    may write, keeping at most KEEP files."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not (_safe(directory) and _safe(folder)):
        return
    import tempfile  # with random and shutil: only when a file is written

    fd, part = tempfile.mkstemp(dir=folder, prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(part, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise
    entries = list(folder.glob("*.pickle"))
    if len(entries) > KEEP:
        entries.sort(key=lambda p: p.stat().st_mtime)
        for old in entries[: len(entries) - KEEP]:
            with contextlib.suppress(OSError):
                old.unlink()


__all__ = ["cache_dir", "kept", "key"]

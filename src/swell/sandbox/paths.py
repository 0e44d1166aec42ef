"""The places a sandbox hides: the user's HOME, swell's state directory and its store."""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterator
from pathlib import Path

from swell.errors import StoreError
from swell.store.location import backend_of, store_location


def homes() -> Iterator[Path]:
    """The user's HOME as the environment says, and as the password database says."""
    if os.environ.get("HOME"):
        yield Path(os.environ["HOME"])
    try:
        entry = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:  # a uid the password database does not know
        return
    yield Path(entry)


def store_dirs(project_root: Path, configured: str | None) -> Iterator[Path]:
    """The directory of a SQLite store the project uses outside its state directory."""
    try:
        backend, target = backend_of(store_location(project_root, configured))
    except StoreError:
        return
    if backend == "sqlite" and isinstance(target, Path):
        yield target.resolve().parent


def real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def hidden_paths(state_dir: Path, project_root: Path, configured_store: str | None) -> list[Path]:
    """What a sandboxed visit must not see: the user's HOME, swell's state directory
    (every run's workspace and files, the store) and the store's directory; real paths
    (a bind mount follows links), without `/` (that would hide everything)."""
    found = [*homes(), state_dir, *store_dirs(project_root, configured_store)]
    unique = dict.fromkeys(real(p) for p in found)
    return [p for p in unique if p != Path("/")]


def path_entries_under(hidden: list[Path], path: str) -> list[Path]:
    """Directories of PATH inside a hidden one (`~/.local/bin`): shown read-only, so the
    programs installed there still run."""
    shown = []
    for entry in path.split(os.pathsep):
        if entry and os.path.isabs(entry) and os.path.isdir(entry):
            where = real(Path(entry))
            if any(where == h or h in where.parents for h in hidden) and where not in shown:
                shown.append(where)
    return shown

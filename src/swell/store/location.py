"""Where state lives and which backend holds it: the one place that picks a store.

`open_store(location)` reads the location and the store settings in the environment
and returns a `Store`; nothing else constructs a backend. A project's state is in
`.swell/` at its root, or in $SWELL_STATE_DIR.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from swell.errors import StoreError
from swell.manifest.discovery import find_project_root
from swell.store.protocols import Store

LOCATIONS = "a path, sqlite:///PATH or memory:"
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")  # two letters at least: C:\ is a path


def open_store(location: str | Path) -> Store:
    """The store at `location`.

    - a path, or `sqlite:///abs/state.db` (`sqlite://rel/state.db`): SQLite in that
      file; SWELL_SYNC=full makes every commit survive power loss (synchronous=FULL).
    - `memory:`: a new in-memory database (more handles on it: `MemoryStore(store.database)`).
    """
    if isinstance(location, Path):
        return _sqlite(location)
    match = _SCHEME.match(location)
    if match is None:
        return _sqlite(Path(location))
    scheme, rest = match.group(1).lower(), location[match.end() :]
    if scheme == "sqlite" and rest.startswith("//") and len(rest) > 2:
        return _sqlite(Path(rest[2:]))
    if scheme == "memory" and not rest:
        from swell.store.memory import MemoryStore

        return MemoryStore()
    raise StoreError(f"cannot open a store at '{location}': use {LOCATIONS}")


def _sqlite(path: Path) -> Store:
    from swell.store.sqlite import SqliteStore  # imported when used: `swell thread` starts fast

    sync = "FULL" if os.environ.get("SWELL_SYNC", "").lower() == "full" else "NORMAL"
    return SqliteStore(path, synchronous=sync)


def state_dir_for(root: Path) -> Path:
    """`.swell/` in the project, unless SWELL_STATE_DIR points elsewhere."""
    override = os.environ.get("SWELL_STATE_DIR")
    return Path(override).resolve() if override else root / ".swell"


def open_project_store(start: Path | None = None) -> Store:
    """The store of the project at or above `start`, found without loading the manifest."""
    return open_store(state_dir_for(find_project_root(start)) / "state.db")

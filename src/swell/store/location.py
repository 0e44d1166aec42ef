"""Where state lives and which backend holds it: the one place that picks a store.

`open_store(location)` reads the location and the store settings in the environment
and returns a `Store`; nothing else constructs a backend. A project's state is in
`.swell/` at its root, or in $SWELL_STATE_DIR; its store is SQLite there unless
$SWELL_STORE or `runtime.store` in wave.yaml names another (`store_location`).

Backends are found by the location's scheme in the `swell.stores` entry-point group
(swell/registry.py): swell's own are entries of it (`BUILTIN`), and a plugin adds one
the same way, `NAME = "module:open"` where `open(location)` returns its `Store`
(tests/plugins/site/swell_scratch_store.py).
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from swell.errors import StoreError
from swell.manifest.discovery import find_project_root
from swell.store.protocols import Store
from swell.store.urls import redacted as redacted  # what messages show (doctor too)

if TYPE_CHECKING:
    from swell.registry import Registry

LOCATIONS = "a path, sqlite:///PATH, postgresql://HOST/DATABASE or memory:"
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")  # two letters at least: C:\ is a path
Backend = str  # "sqlite", "memory", "postgres", or a plugin's scheme
Opener = Callable[[str | Path], Store]

GROUP = "swell.stores"
# swell's own backends: entries of the group plugins use, by the name `backend_of` gives
BUILTIN = {
    "sqlite": "swell.store.location:_sqlite",
    "memory": "swell.store.location:_memory",
    "postgres": "swell.store.location:_postgres",
}


@cache
def backends() -> Registry[Opener]:
    """Store backends by scheme: the built-in ones and those plugins install."""
    from swell.registry import Registry, builtin_entry_points  # importlib.metadata: slow

    registry: Registry[Opener] = Registry("store backend", GROUP)
    registry.add_entry_points(builtin_entry_points(GROUP, BUILTIN))
    return registry


def backend_of(location: str | Path) -> tuple[Backend, Path | str]:
    """Which backend `location` names, with its file (SQLite) or URL; StoreError when it
    names none.

    - a path, or `sqlite:///abs/state.db` (`sqlite://rel/state.db`): SQLite in that file;
    - `memory:`: a new in-memory database;
    - `postgresql://` or `postgres://` URL: Postgres;
    - `SCHEME:...` where a plugin's backend is called SCHEME: that backend, given it all.
    """
    if isinstance(location, Path):
        return "sqlite", location
    match = _SCHEME.match(location)
    if match is None:
        return "sqlite", Path(location)
    scheme, rest = match.group(1).lower(), location[match.end() :]
    if scheme == "sqlite" and rest.startswith("//") and len(rest) > 2:
        return "sqlite", Path(rest[2:])
    if scheme == "memory" and not rest:
        return "memory", location
    if scheme in ("postgres", "postgresql") and rest.startswith("//"):
        return "postgres", location
    if scheme not in BUILTIN and scheme in backends():
        return scheme, location
    raise StoreError(f"cannot open a store at '{redacted(location)}': use {LOCATIONS}")


def open_store(location: str | Path) -> Store:
    """The store at `location` (`backend_of`). SQLite: SWELL_SYNC=full makes every commit
    survive power loss (synchronous=FULL). `memory:`: more handles on the new database
    are `MemoryStore(store.database)`. Postgres needs `pip install 'swell[postgres]'`."""
    backend, target = backend_of(location)
    return _opener(backend)(target)


def _opener(backend: Backend) -> Opener:
    if backend in BUILTIN:  # the entry itself, without a scan of the installed packages
        module, _, name = BUILTIN[backend].partition(":")
        opener: Opener = getattr(importlib.import_module(module), name)
        return opener
    return backends().get(backend)


def _sqlite(path: str | Path) -> Store:
    from swell.store.sqlite.store import (
        SqliteStore,  # imported when used: `swell thread` starts fast
    )

    sync = "FULL" if os.environ.get("SWELL_SYNC", "").lower() == "full" else "NORMAL"
    return SqliteStore(Path(path), synchronous=sync)


def _memory(location: str | Path) -> Store:
    from swell.store.memory import MemoryStore

    return MemoryStore()


def _postgres(url: str | Path) -> Store:
    try:
        from swell.store.postgres.store import PostgresStore  # its driver only when used
    except ImportError as exc:
        if exc.name not in ("psycopg", "psycopg_binary", "psycopg_c"):
            raise
        raise StoreError(
            "the Postgres store needs psycopg: pip install 'swell[postgres]'"
        ) from None
    return PostgresStore(str(url))


def store_location(root: Path, configured: str | None = None) -> str | Path:
    """Where the project at `root` keeps its runs: $SWELL_STORE, else `configured`
    (`runtime.store` in wave.yaml), else SQLite in its state directory."""
    return os.environ.get("SWELL_STORE") or configured or state_dir_for(root) / "state.db"


def store_source(configured: str | None = None) -> str:
    """What chose `store_location`'s answer, in words for a person to fix it in."""
    if os.environ.get("SWELL_STORE"):
        return "$SWELL_STORE"
    return "runtime.store in wave.yaml" if configured else "the default"


# a `store:` key, in block or flow style: only then is the YAML parsed (a project named
# "store-bench" is not)
_STORE_KEY = re.compile(r"""(?:^|[\s{,])["']?store["']?\s*:""", re.MULTILINE)


def _manifest_store(root: Path) -> str | None:
    """`runtime.store` of the project's wave.yaml, read without loading the manifest (only
    when the file mentions a store: YAML is not parsed otherwise)."""
    from swell.manifest.discovery import MANIFEST_NAMES

    for name in MANIFEST_NAMES:
        try:
            text = (root / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not _STORE_KEY.search(text):
            return None
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            return None  # the manifest's own loader reports it
        runtime = data.get("runtime") if isinstance(data, dict) else None
        store = runtime.get("store") if isinstance(runtime, dict) else None
        return store if isinstance(store, str) and store else None
    return None


def state_dir_for(root: Path) -> Path:
    """`.swell/` in the project, unless SWELL_STATE_DIR points elsewhere."""
    override = os.environ.get("SWELL_STATE_DIR")
    return Path(override).resolve() if override else root / ".swell"


def open_project_store(start: Path | None = None) -> Store:
    """The store of the project at or above `start`, found without loading the manifest."""
    root = find_project_root(start)
    return open_store(store_location(root, _manifest_store(root)))

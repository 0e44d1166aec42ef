"""Where a project's state lives: `.swell/` at its root, or $SWELL_STATE_DIR."""

from __future__ import annotations

import os
from pathlib import Path

from swell.manifest.discovery import find_project_root
from swell.store.sqlite import SqliteStore


def state_dir_for(root: Path) -> Path:
    """`.swell/` in the project, unless SWELL_STATE_DIR points elsewhere."""
    override = os.environ.get("SWELL_STATE_DIR")
    return Path(override).resolve() if override else root / ".swell"


def open_store(start: Path | None = None) -> SqliteStore:
    """The project's store, found from `start` without loading the manifest."""
    return SqliteStore(state_dir_for(find_project_root(start)) / "state.db")

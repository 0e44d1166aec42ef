"""Which store keeps the run a workspace belongs to.

One state directory can serve several stores: SQLite in `.swell/state.db`, and a
Postgres named by $SWELL_STORE in one shell and not in another. Each store sees only
its own runs, so to `swell clean` reading one, the other's workspaces would look like
orphans. When a run that gets a workspace of its own is recorded, its store's identity
(`Store.identity`: a file path, or a Postgres host, port, database and schema, never a
password) is written to `.owners/NAME` beside the workspace `NAME`; `swell clean`
removes a workspace only when that record names the store it reads (ops/clean.py).

A record is written outside the workspace, so no step sees it and no diff shows it.
Writing it is best effort: a workspace without one is kept by a `swell clean` whose
store has no run in it, never removed.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from swell.workspace import safe

OWNERS = ".owners"  # in the workspaces directory: one file per workspace
_MAX = 4096  # an identity is one short line


def marker(workspace: Path) -> Path:
    return workspace.parent / OWNERS / workspace.name


def record_owner(workspace: Path, identity: str) -> None:
    """Record that the run working in `workspace` is kept in the store `identity`."""
    with contextlib.suppress(OSError, safe.UnsafePath):
        data = (identity.strip() + "\n").encode()
        safe.write_bytes(workspace.parent, Path(OWNERS) / workspace.name, data, "workspaces")


def owner_of(workspace: Path) -> str | None:
    """The identity of the store that keeps the workspace's run, None when unrecorded."""
    try:
        data = safe.read_capped(marker(workspace), _MAX)
    except safe.UnsafePath:
        return None
    return data.decode("utf-8", "replace").strip() or None


def forget_owner(workspace: Path) -> None:
    """Remove the record (a link there is removed, never followed)."""
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        os.unlink(marker(workspace))


__all__ = ["OWNERS", "forget_owner", "marker", "owner_of", "record_owner"]

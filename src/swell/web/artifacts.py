"""Serving an artifact file: only a path the store recorded for the run, and only
when it lies inside the run's workspace (no `..`, no symbolic link anywhere on the
way, a regular file opened without following links: workspace/safe.py's rules).
A visit's version is served from the copy the run kept of it, else from the file
while it still holds that version (workspace/versions.py): never another's bytes."""

from __future__ import annotations

import os
from pathlib import Path

from swell.workspace import versions
from swell.workspace.safe import UnsafePath, is_link, open_regular

MAX_BYTES = 20 * 1024 * 1024  # what the dashboard serves of one file


def _inside(workspace: Path, recorded: str) -> Path:
    path = Path(recorded)
    if ".." in path.parts:
        raise UnsafePath(f"artifact path {recorded!r} contains '..'")
    if is_link(workspace):
        raise UnsafePath("the run's workspace is a symbolic link")
    root = workspace.resolve()
    if not path.is_absolute():
        rel = path
    elif path.is_relative_to(workspace):
        rel = path.relative_to(workspace)
    elif path.is_relative_to(root):
        rel = path.relative_to(root)
    else:
        raise UnsafePath(f"artifact path {recorded!r} is outside the run's workspace")
    current = root
    for part in rel.parts:
        current = current / part
        if is_link(current):
            raise UnsafePath(f"artifact path {recorded!r} goes through a symbolic link")
    return current


def read_artifact(workspace: str | None, recorded: str) -> bytes:
    """The artifact's bytes (at most MAX_BYTES); UnsafePath when it may not be served."""
    if not workspace:
        raise UnsafePath("the run has no workspace")
    return _read(open_regular(_inside(Path(workspace), recorded)))


def _read(fd: int) -> bytes:
    """At most MAX_BYTES of the open file `fd`, which is then closed."""
    try:
        chunks, size = [], 0
        while size < MAX_BYTES and (data := os.read(fd, min(1 << 20, MAX_BYTES - size))):
            chunks.append(data)
            size += len(data)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_version(workspace: str | None, recorded: str, sha256: str, run_dir: Path) -> bytes:
    """The bytes of the version recorded as (`recorded`, `sha256`): UnsafePath when the
    path may not be served, versions.Changed when no copy of it is left."""
    copy = versions.copy_path(run_dir, sha256)
    if copy.is_file():
        try:
            return versions.read(versions.Version(recorded, sha256, run_dir), MAX_BYTES)
        except versions.Changed:
            pass  # the copy was damaged: the recorded file may still hold it
    return versions.read(
        versions.Version(str(_held_at(workspace, run_dir, recorded)), sha256, run_dir), MAX_BYTES
    )


def _held_at(workspace: str | None, run_dir: Path, recorded: str) -> Path:
    """Where a recorded artifact lies: the run's workspace, or the run's own state
    directory (`.swell/runs/RUN/STEP/VISIT/`: a command's output, a review's
    feedback), with the same checks."""
    path = Path(recorded)
    if path.is_absolute() and (
        path.is_relative_to(run_dir) or path.is_relative_to(run_dir.resolve())
    ):
        if is_link(run_dir):
            raise UnsafePath("the run's state directory is a symbolic link")
        return _inside(run_dir, recorded)
    if not workspace:
        raise UnsafePath("the run has no workspace")
    return _inside(Path(workspace), recorded)

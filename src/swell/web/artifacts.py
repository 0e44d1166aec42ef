"""Serving an artifact file: only a path the store recorded for the run, and only
when it lies inside the run's workspace (no `..`, no symbolic link anywhere on the
way, a regular file opened without following links: workspace/safe.py's rules)."""

from __future__ import annotations

import os
from pathlib import Path

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


def read_run_artifact(workspace: str | None, run_dir: Path, recorded: str) -> bytes:
    """An artifact from the run's workspace, or one the run keeps in its own state
    directory (`.swell/runs/RUN/STEP/VISIT/`: a command's output, a review's
    feedback, the versions of each visit), with the same checks."""
    path = Path(recorded)
    if path.is_absolute() and (
        path.is_relative_to(run_dir) or path.is_relative_to(run_dir.resolve())
    ):
        if is_link(run_dir):
            raise UnsafePath("the run's state directory is a symbolic link")
        return _read(open_regular(_inside(run_dir, recorded)))
    return read_artifact(workspace, recorded)

"""Paths that must stay inside a directory."""

from __future__ import annotations

from pathlib import Path


class PathEscape(ValueError):
    """A relative path that would leave its base directory."""


def inside(base: Path, relative: str) -> Path:
    """`base / relative`, refusing absolute paths and anything resolving outside `base`."""
    if not relative or Path(relative).is_absolute():
        raise PathEscape(f"path {relative!r} must be relative to the workspace")
    if "\0" in relative:  # the OS would refuse it with a ValueError callers do not expect
        raise PathEscape(f"path {relative!r} contains a NUL byte")
    root = base.resolve()
    target = (root / relative).resolve()
    if target != root and root not in target.parents:
        raise PathEscape(f"path {relative!r} escapes the workspace")
    return target

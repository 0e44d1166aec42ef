"""Copying a mount's source into a workspace, as Wave does, minus its recursion.

Wave copies a mount's `source` into `<workspace>/<target>` leaving out build output,
dependencies and VCS data (its skip-list, reproduced here), binary archives and files
over 10 MB. swell also leaves out any directory that contains the destination: a
`./` mount of a project whose state directory (`.swell/`, where workspaces live) is
inside it would otherwise copy the copy into itself until paths get too long.

`subset_from: "STEP.ARTIFACT.json.path"` narrows a mount to the files an artifact
lists (a JSON array of paths relative to `source`); see `subset_paths`.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

from swell.workspace import safe

# Wave's list (internal/workspace/workspace.go `skipDirs`), plus swell's own state dir
SKIP_DIRS = frozenset(
    {
        "node_modules",
        ".git",
        ".agents",
        ".claude",
        "vendor",
        "__pycache__",
        ".venv",
        "dist",
        "build",
        ".next",
        ".cache",
        ".output",
        ".nuxt",
        ".parcel-cache",
        ".turbo",
        ".svelte-kit",
        ".angular",
        "__generated__",
        "coverage",
        ".nyc_output",
        ".swell",
    }
)
SKIP_SUFFIXES = (".pdf", ".zip", ".jar", ".war", ".whl", ".exe", ".dll", ".tar.gz")
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_SUBSET_FILE = 50 * 1024 * 1024  # the JSON list of files a subset mount takes


class SubsetError(ValueError):
    """`subset_from` names an artifact whose JSON does not give a list of paths."""


def _skipped_file(name: str, size: int) -> bool:
    return name.endswith(SKIP_SUFFIXES) or size > MAX_FILE_BYTES


def copy_tree(source: Path, dest: Path) -> None:
    """Copy the directory `source` to `dest` (created; existing files are kept) without
    the skip-list, and without any directory the destination lies in.

    Links: a relative link that resolves inside `source` is copied as a link (it still
    points at the copy); an absolute one inside `source` is copied as the file it names;
    a link out of `source`, or to a directory by absolute path, is left out, so nothing
    in the copy leads back into the project or elsewhere."""
    root = source.resolve()
    avoid = dest.resolve()
    _copy_dir(root, root, dest, avoid)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _copy_dir(root: Path, src: Path, dst: Path, avoid: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    with os.scandir(src) as entries:
        items = sorted(entries, key=lambda e: e.name)
    for entry in items:
        path, target = Path(entry.path), dst / entry.name
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            _copy_link(root, path, target)
        elif stat.S_ISDIR(st.st_mode):
            # the workspace (and so the run's state) must never be copied into itself
            if entry.name in SKIP_DIRS or _inside(avoid, path):
                continue
            _copy_dir(root, path, target, avoid)
        elif (
            stat.S_ISREG(st.st_mode)
            and not _skipped_file(entry.name, st.st_size)
            and not os.path.lexists(target)
        ):
            shutil.copy2(path, target, follow_symlinks=False)


def _copy_link(root: Path, link: Path, target: Path) -> None:
    value = os.readlink(link)
    resolved = link.resolve()
    if not _inside(resolved, root) or os.path.lexists(target):
        return
    if not os.path.isabs(value):
        os.symlink(value, target)
    elif resolved.is_file() and not _skipped_file(link.name, resolved.stat().st_size):
        shutil.copy2(resolved, target)


def copy_source(source: Path, dest: Path, only: list[str] | None = None) -> None:
    """Copy a mount's source (a file or a directory) to `dest`; with `only`, just
    those files of a directory source (already checked by `subset_paths`)."""
    if not source.is_dir():
        if not os.path.lexists(dest):
            shutil.copy2(source, dest)
        return
    if only is None:
        copy_tree(source, dest)
        return
    dest.mkdir(parents=True, exist_ok=True)
    for rel in only:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not os.path.lexists(target):
            shutil.copy2(source / rel, target, follow_symlinks=False)


def json_path(data: Any, path: str) -> Any:
    """Wave's JSON path: dotted keys, each optionally followed by one `[N]`; a leading
    dot is optional. Raises KeyError naming the part that is missing."""
    value = data
    for part in [p for p in path.lstrip(".").split(".") if p]:
        key, _, index = part.partition("[")
        if key:
            if not isinstance(value, dict) or key not in value:
                raise KeyError(key)
            value = value[key]
        if index:
            try:
                value = value[int(index.rstrip("]"))]
            except (ValueError, TypeError, IndexError):
                raise KeyError(part) from None
    return value


def subset_paths(artifact: Path, path: str, source: Path) -> tuple[list[str], list[str]]:
    """The files of `source` an artifact's JSON lists at `path`: (kept, left out).

    Only regular files inside `source` are kept; absolute paths, paths that leave
    `source`, links and missing files are left out (and named). Raises SubsetError
    when the artifact is not JSON or the path does not give a list of strings."""
    try:  # a regular file only: a step may have left a FIFO where its artifact was
        data = json.loads(safe.read_limited(artifact, MAX_SUBSET_FILE))
    except (OSError, ValueError, safe.UnsafePath) as exc:
        raise SubsetError(f"artifact {artifact.name} is not readable JSON: {exc}") from None
    try:
        listed = json_path(data, path) if path else data
    except KeyError as exc:
        raise SubsetError(f"JSON path {path!r} has no {exc.args[0]!r}") from None
    if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
        raise SubsetError(f"JSON path {path or '(root)'!r} does not give a list of paths")
    root = source.resolve()
    kept: list[str] = []
    left: list[str] = []
    for rel in listed:
        candidate = source / rel
        ok = (
            rel
            and not os.path.isabs(rel)
            and _inside(candidate.resolve(), root)
            and not candidate.is_symlink()
            and candidate.is_file()
        )
        if ok and rel not in kept:
            kept.append(rel)
        elif not ok:
            left.append(rel)
    return kept, left


__all__ = [
    "MAX_FILE_BYTES",
    "SKIP_DIRS",
    "SKIP_SUFFIXES",
    "SubsetError",
    "copy_source",
    "copy_tree",
    "json_path",
    "subset_paths",
]

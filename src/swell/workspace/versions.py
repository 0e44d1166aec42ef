"""Every recorded artifact version, readable with its recorded hash.

A step that writes its artifact on every visit overwrites one file in the workspace;
the store keeps one row per visit with that visit's sha256. So that each row stays
readable, the visit's bytes are copied, content-addressed, to
`RUN_DIR/versions/SHA256` when the artifact is recorded (a version already there is
not copied again). Reading a version takes that copy, else the recorded file; either
is served only while its content still hashes to the recorded sha256: a file that
changed since is `Changed`, never another version's bytes.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from swell.events.models import ArtifactWritten
from swell.workspace import safe

VERSIONS = "versions"  # under the run's directory
_SHA256 = re.compile(r"[0-9a-f]{64}")


class Changed(safe.UnsafePath):
    """The file no longer holds the recorded version (and no copy of it was kept)."""


@dataclass(frozen=True)
class Version:
    """One artifact version as the store recorded it."""

    path: str  # where the step wrote it
    sha256: str
    run_dir: Path  # the run's own directory, where copies are kept


def run_dir_of(run_id: str, project_root: str | Path) -> Path:
    """The run's own directory (logs, kept versions) in its project's state."""
    from swell.store.location import state_dir_for

    return state_dir_for(Path(project_root)) / "runs" / run_id


def copy_path(run_dir: Path, sha256: str) -> Path:
    return run_dir / VERSIONS / sha256


def keep(run_dir: Path, written: list[ArtifactWritten]) -> list[str]:
    """Copy each just-recorded artifact to the run's versions; returns problems (a file
    that changed between hashing and copying keeps no copy: it is reported, and reading
    that version later is refused unless the file holds it again)."""
    problems: list[str] = []
    for art in written:
        if not _SHA256.fullmatch(art.sha256) or copy_path(run_dir, art.sha256).is_file():
            continue
        try:
            target = safe.place(run_dir, f"{VERSIONS}/{art.sha256}", "run directory")
            safe.copy_verified(Path(art.path), art.sha256, target)
        except safe.UnsafePath as exc:
            problems.append(f"artifact '{art.name}': no copy of this version kept ({exc})")
    return problems


def read(version: Version, limit: int) -> bytes:
    """The version's bytes (at most `limit`): the kept copy, else the recorded file;
    `Changed` when neither holds the recorded content (a link or anything but a
    regular file holds none)."""
    copy = copy_path(version.run_dir, version.sha256)
    if _SHA256.fullmatch(version.sha256) and copy.is_file():
        data = _read_whole(copy, limit)
        if data is not None and hashlib.sha256(data).hexdigest() == version.sha256:
            return data
    data = _read_whole(Path(version.path), limit)
    if data is None or hashlib.sha256(data).hexdigest() != version.sha256:
        raise Changed(
            f"{version.path} no longer holds this version (sha256 {version.sha256[:12]}) "
            "and no copy of it was kept"
        )
    return data


def _read_whole(path: Path, limit: int) -> bytes | None:
    """The whole file, or None when it is larger than `limit` (its hash cannot be
    checked on a part) or missing."""
    try:
        fd = safe.open_regular(path)
    except safe.UnsafePath:  # missing, a link, not a regular file: it holds no version
        return None
    try:
        data = safe.read_fd(fd, limit + 1)
    finally:
        os.close(fd)
    return None if len(data) > limit else data


__all__ = ["VERSIONS", "Changed", "Version", "copy_path", "keep", "read", "run_dir_of"]

"""Artifact files: command logs, declared output artifacts, hashing.

Logs go to the run directory and artifacts are read from the workspace, both places a
step can plant links in: a log replaces whatever is at its path (never writing through
a link), an artifact is read only as a regular file inside the workspace."""

from __future__ import annotations

import hashlib
from pathlib import Path

from swell.events.models import ArtifactWritten
from swell.manifest.models import ArtifactDef
from swell.workspace import safe
from swell.workspace.paths import PathEscape, inside


def write_run_file(run_dir: Path, rel: str, data: bytes) -> Path:
    """Write one of swell's own files for a run (a log, a checkpoint, review feedback)
    at `run_dir/rel`, replacing a link a step may have put there; a directory on the
    way that is a link out of the run directory is an UnsafePath."""
    return safe.write_bytes(run_dir, rel, data, label="run directory")


def write_log(
    run_dir: Path, step_id: str, visit: int, stdout: str, stderr: str
) -> ArtifactWritten | None:
    """Store a command visit's output (already capped) as the artifact `output`;
    a visit that printed nothing leaves no file."""
    if not stdout and not stderr:
        return None
    data = stdout
    if stderr:
        data += ("" if not stdout or stdout.endswith("\n") else "\n") + "--- stderr ---\n" + stderr
    raw = data.encode("utf-8", errors="replace")
    path = write_run_file(run_dir, f"{step_id}/{visit}.log", raw)
    return ArtifactWritten(
        name="output",
        path=str(path),
        sha256=hashlib.sha256(raw).hexdigest(),
        size=len(raw),
        artifact_type="log",
    )


def collect(
    workspace: Path, declared: list[ArtifactDef], stdout: str | None
) -> tuple[list[ArtifactWritten], list[str]]:
    """Record each declared output artifact; returns events and problems.

    A `source: stdout` artifact is written from the visit's stdout (replacing a link at
    its path). A file artifact that is a link is followed only inside the workspace;
    what is recorded is the regular file it resolves to. A required artifact that is
    missing or empty is a problem (the visit fails), and so is any artifact that is a
    FIFO, a socket or a device: swell never opens one. Blocking (it hashes each file):
    call it off the event loop.
    """
    events: list[ArtifactWritten] = []
    problems: list[str] = []
    for art in declared:
        rel = art.path or f".swell-artifacts/{art.name}"
        try:
            if art.source == "stdout" and stdout is not None:
                path = safe.place(workspace, rel)
                safe.replace(path, stdout.encode("utf-8", errors="replace"))
            else:
                path = inside(workspace, rel)
        except (PathEscape, safe.UnsafePath) as exc:
            problems.append(f"artifact '{art.name}': {exc}")
            continue
        try:
            sha, size = safe.digest_file(path)
        except safe.NotRegular as exc:  # a FIFO, a socket, a device: never opened
            problems.append(f"artifact '{art.name}' ({rel}) {exc.reason}; not recorded")
            continue
        except safe.UnsafePath:
            sha, size = "", 0  # missing, a directory, unreadable
        if size == 0:
            if art.required:
                problems.append(f"required artifact '{art.name}' ({rel}) is missing or empty")
            continue
        events.append(
            ArtifactWritten(
                name=art.name, path=str(path), sha256=sha, size=size, artifact_type=art.type
            )
        )
    return events, problems

"""Artifact files: command logs, declared output artifacts, hashing."""

from __future__ import annotations

import hashlib
from pathlib import Path

from swell.events.models import ArtifactWritten
from swell.manifest.models import ArtifactDef
from swell.workspace.paths import PathEscape, inside


def _digest(path: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def write_log(
    run_dir: Path, step_id: str, visit: int, stdout: str, stderr: str
) -> ArtifactWritten | None:
    """Store a command visit's output (already capped) as the artifact `output`;
    a visit that printed nothing leaves no file."""
    if not stdout and not stderr:
        return None
    path = run_dir / step_id / f"{visit}.log"
    if not path.parent.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
    data = stdout
    if stderr:
        data += ("" if not stdout or stdout.endswith("\n") else "\n") + "--- stderr ---\n" + stderr
    raw = data.encode("utf-8", errors="replace")
    path.write_bytes(raw)
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

    A `source: stdout` artifact is written from the visit's stdout. A required
    artifact that is missing or empty is a problem (the visit fails).
    """
    events: list[ArtifactWritten] = []
    problems: list[str] = []
    for art in declared:
        rel = art.path or f".swell-artifacts/{art.name}"
        try:
            path = inside(workspace, rel)
        except PathEscape as exc:
            problems.append(f"artifact '{art.name}': {exc}")
            continue
        if art.source == "stdout" and stdout is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(stdout, encoding="utf-8")
        if not path.is_file() or path.stat().st_size == 0:
            if art.required:
                problems.append(f"required artifact '{art.name}' ({rel}) is missing or empty")
            continue
        sha, size = _digest(path)
        events.append(
            ArtifactWritten(
                name=art.name, path=str(path), sha256=sha, size=size, artifact_type=art.type
            )
        )
    return events, problems

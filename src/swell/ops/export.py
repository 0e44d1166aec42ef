"""`swell artifacts RUN --export DIR`: copy a run's artifact files out of swell's state.

The newest visit's file of each (step, artifact) goes to `DIR/STEP/NAME` (plus the
file's suffix when NAME has none). A source is read only if it is a regular file (a
link is never followed) whose content still has the sha256 recorded when the run wrote
it; a target is written by replacing whatever is there, never through a link, and only
inside DIR.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from swell.store.rows import ArtifactRow
from swell.workspace import safe, versions


@dataclass(frozen=True)
class Exported:
    step: str
    name: str
    visit: int
    target: Path
    size: int


def newest(rows: list[ArtifactRow]) -> list[ArtifactRow]:
    """The newest visit's row of each (step, name), in the order they were first written."""
    found: dict[tuple[str, str], ArtifactRow] = {}
    for row in rows:
        key = (row.step_id, row.name)
        if key not in found or row.visit >= found[key].visit:
            found[key] = row
    return list(found.values())


def target_name(row: ArtifactRow) -> str:
    suffix = Path(row.path).suffix
    name = row.name if not suffix or row.name.endswith(suffix) else row.name + suffix
    return f"{row.step_id or '_run'}/{name}"


def export(
    rows: list[ArtifactRow], directory: Path, run_dir: Path | None = None
) -> tuple[list[Exported], list[str]]:
    """Copy the newest version of each artifact into `directory` (from the copy the run
    kept in `run_dir`, else the recorded file); returns what was copied and, for each
    file that was not, why."""
    done: list[Exported] = []
    problems: list[str] = []
    for row in newest(rows):
        rel = target_name(row)
        try:
            target = safe.place(directory, rel, "export directory")
            kept = versions.copy_path(run_dir, row.sha256) if run_dir else None
            source = kept if kept is not None and kept.is_file() else Path(row.path)
            safe.copy_verified(source, row.sha256, target)
        except safe.ContentChanged as exc:
            problems.append(f"{row.step_id}/{row.name}: changed since the run wrote it ({exc})")
            continue
        except safe.UnsafePath as exc:
            problems.append(f"{row.step_id}/{row.name}: {exc}")
            continue
        done.append(Exported(row.step_id, row.name, row.visit, target, row.size))
    return done, problems


__all__ = ["Exported", "export", "newest", "target_name"]

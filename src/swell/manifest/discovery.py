"""Finding the project: the nearest directory with wave.yaml or swell.yaml.

Kept free of the manifest models so quick commands (`swell thread`) start fast.
"""

from __future__ import annotations

from pathlib import Path

from swell.errors import ProjectNotFound

MANIFEST_NAMES = ("wave.yaml", "swell.yaml")


def find_project_root(start: Path | None = None) -> Path:
    """The nearest directory at or above `start` holding wave.yaml or swell.yaml."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        if any((directory / name).is_file() for name in MANIFEST_NAMES):
            return directory
    raise ProjectNotFound(
        f"no wave.yaml or swell.yaml in {here} or any parent directory "
        "(run `swell init` to create a project)"
    )

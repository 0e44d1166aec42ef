"""Finding the project: the nearest directory with wave.yaml or swell.yaml.

Kept free of the manifest models so quick commands (`swell thread`) start fast.
"""

from __future__ import annotations

from pathlib import Path

from swell.errors import ProjectNotFound

MANIFEST_NAMES = ("wave.yaml", "swell.yaml")


def find_project_root(start: Path | None = None) -> Path:
    """The nearest directory at or above `start` holding wave.yaml or swell.yaml."""
    try:
        if start is not None and not start.is_dir():  # `-C PATH`: the project directory
            what = "is not a directory" if start.exists() else "does not exist"
            raise ProjectNotFound(f"project directory {start} {what}")
        here = (start or Path.cwd()).resolve()
    except (OSError, ValueError) as exc:  # a name too long, a removed cwd, a NUL
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise ProjectNotFound(f"cannot use project directory {start or '.'}: {reason}") from None
    for directory in (here, *here.parents):
        if any((directory / name).is_file() for name in MANIFEST_NAMES):
            return directory
    raise ProjectNotFound(
        f"no wave.yaml or swell.yaml in {here} or any parent directory "
        "(run `swell init` to create a project)"
    )

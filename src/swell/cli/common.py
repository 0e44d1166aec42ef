"""Helpers shared by command modules."""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from swell.cli import params as typer  # typer's names, without typer (params.py)

if TYPE_CHECKING:
    from swell.runtime import Runtime
    from swell.store.protocols import Store


class Output(enum.StrEnum):
    text = "text"
    json = "json"


def run_id_given(value: str | None) -> str | None:
    """A RUN argument's check: an empty id would match every run as a prefix."""
    if value is not None and not value.strip():
        raise typer.BadParameter("a run id cannot be empty (see `swell list`)")
    return value


OUTPUT_HELP = "Output format: text for people, json for machines."
# the parameters several commands share
OutputOption = Annotated[Output, typer.Option("--output", "-o", help=OUTPUT_HELP)]
RunArgument = Annotated[str, typer.Argument(metavar="RUN", callback=run_id_given)]
RunPrefixArgument = Annotated[
    str,
    typer.Argument(
        metavar="RUN", help="Run id (a unique prefix is enough).", callback=run_id_given
    ),
]


def project_dir(ctx: typer.Context) -> Path | None:
    value = ctx.obj
    return Path(value) if value else None


def runtime(ctx: typer.Context) -> Runtime:
    """The project with its manifest, registries and store: for commands that run things."""
    from swell.runtime import open_runtime

    return open_runtime(project_dir(ctx))


def store_runtime(ctx: typer.Context) -> Runtime:
    """`runtime(ctx)` for commands that act on stored runs (cancel): a wave.yaml with
    errors must not lock the user out of their runs, so they get its defaults and a
    warning instead (`swell validate` shows the problems)."""
    import sys

    from swell.errors import ManifestError

    try:
        return runtime(ctx)
    except ManifestError as exc:
        from swell.manifest.discovery import MANIFEST_NAMES, find_project_root
        from swell.manifest.loader import Project
        from swell.manifest.models import Manifest
        from swell.manifest.yamldoc import SourceMap
        from swell.runtime import Runtime, open_registries
        from swell.store.location import open_project_store, state_dir_for

        root = find_project_root(project_dir(ctx))
        path = root / MANIFEST_NAMES[0]
        n = len(exc.problems)
        print(
            f"warning: {path.name} has {n} problem(s) (swell validate); using defaults",
            file=sys.stderr,
        )
        project = Project(root, path, Manifest(kind="WaveManifest"), SourceMap(str(path)))
        store = open_project_store(project_dir(ctx))
        return Runtime(project, store, open_registries(), state_dir_for(root))


def project_store(ctx: typer.Context) -> Store:
    """The project's store alone, for commands that only read it: no manifest is loaded
    (a broken wave.yaml does not stop them) and neither the engine nor pydantic's event
    models are imported, so they start fast."""
    from swell.store.location import open_project_store

    return open_project_store(project_dir(ctx))


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=None, default=str) + "\n")

"""Helpers shared by command modules."""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from swell.runtime import Runtime


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
    from swell.runtime import open_runtime

    return open_runtime(project_dir(ctx))


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=None, default=str) + "\n")

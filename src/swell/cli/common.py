"""Helpers shared by command modules."""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import Any

import typer


class Output(enum.StrEnum):
    text = "text"
    json = "json"


OUTPUT_HELP = "Output format: text for people, json for machines."


def project_dir(ctx: typer.Context) -> Path | None:
    value = ctx.obj
    return Path(value) if value else None


def runtime(ctx: typer.Context) -> Any:
    from swell.runtime import open_runtime

    return open_runtime(project_dir(ctx))


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=None, default=str) + "\n")

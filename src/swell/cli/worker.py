"""`swell worker`: a process that runs visits of engine runs (executors/temporal/,
docs/scale-out.md). The CLI reaches such runs through executors/base.py, as any other."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Annotated

import typer

from swell.cli.common import project_dir

if TYPE_CHECKING:
    from swell.manifest.models import TemporalConfig

MAX_SLOTS = 1_000  # each slot may hold an agent process; past this a machine runs out first


def _project_config(ctx: typer.Context) -> TemporalConfig | None:
    """`runtime.temporal` of the project here, if there is one (a worker needs none)."""
    from swell.errors import SwellError
    from swell.manifest.loader import load_project

    try:
        return load_project(project_dir(ctx)).manifest.runtime.temporal
    except SwellError:
        return None


def worker(
    ctx: typer.Context,
    queue: Annotated[
        str | None,
        typer.Option(
            "--queue",
            "-q",
            help="Task queue to serve (default: $SWELL_TEMPORAL_QUEUE, runtime.temporal."
            "queue, else `swell`).",
        ),
    ] = None,
    slots: Annotated[
        int,
        typer.Option(
            "--slots", min=1, max=MAX_SLOTS, help="Visits this worker runs at once, at most."
        ),
    ] = 4,
    address: Annotated[
        str | None,
        typer.Option(
            "--address",
            help="Temporal server host:port (default: $SWELL_TEMPORAL_ADDRESS, runtime."
            "temporal.address, else 127.0.0.1:7233).",
        ),
    ] = None,
) -> None:
    """Run visits of engine runs (`swell run --engine temporal`) until stopped (Ctrl-C,
    SIGTERM). Serves runs of any project: each run says where its project and store are."""
    from swell.executors.temporal.client import configured
    from swell.executors.temporal.worker import serve

    engine = configured(_project_config(ctx), address)
    if queue:
        engine = dataclasses.replace(engine, queue=queue)

    def ready() -> None:
        print(f"worker ready: queue {engine.queue} on {engine.address}, {slots} slots", flush=True)

    asyncio.run(serve(engine, slots, ready))

"""Outbound notifications: Wave's lifecycle `hooks` (wave.yaml and pipeline files) run
as commands or HTTP POSTs when a run starts, a step ends, a gate waits or a run
finishes; and traces of runs when an OTLP endpoint is configured (swell/telemetry).
Both observe the run's events from threads of their own and never hold up, slow or
fail the run (docs/service.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from swell.engine.visit.context import RunPlan
    from swell.events.bus import EventSink
    from swell.manifest.loader import LoadedPipeline, Project

__all__ = ["observers", "run_observers"]

TRACE_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def observers(
    project: Project, loaded: LoadedPipeline, run_id: str, workspace: str, state_dir: Path
) -> list[EventSink]:
    """The observers a run's events go to besides the store: its trace's when
    OTEL_EXPORTER_OTLP_ENDPOINT is set (swell/telemetry), and its hooks'."""
    # imported here: a run without hooks or traces never loads them (nor httpx)
    hooks = [*project.manifest.hooks, *loaded.pipeline.hooks]
    found: list[EventSink] = []
    if any(os.environ.get(v) for v in TRACE_VARIABLES):
        from swell.telemetry import trace_observers

        found += trace_observers(loaded.name)
    if not hooks:
        return found
    from swell.notify.observer import hook_observers

    found += hook_observers(
        project.manifest.hooks,
        loaded.pipeline.hooks,
        run_id=run_id,
        pipeline=loaded.name,
        workspace=workspace,
        root=project.root,
        state_dir=state_dir,
    )
    return found


def run_observers(plan: RunPlan, state_dir: Path) -> list[EventSink]:
    """`observers` of a run this process executes."""
    return observers(plan.project, plan.pipeline, plan.run_id, str(plan.workspace), state_dir)

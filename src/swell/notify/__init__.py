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
    from swell.store.protocols import RunReader

__all__ = ["observers", "run_observers"]

TRACE_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def observers(
    project: Project,
    loaded: LoadedPipeline,
    run_id: str,
    workspace: str,
    state_dir: Path,
    store: RunReader | None = None,
) -> list[EventSink]:
    """The observers a run's events go to besides the store: its trace's when
    OTEL_EXPORTER_OTLP_ENDPOINT is set (swell/telemetry), and its hooks' (with `store`,
    also its sub-pipeline runs' own hooks, read from the store: docs/service.md)."""
    # imported here: a run without hooks or traces never loads them (nor httpx)
    hooks = [*project.manifest.hooks, *loaded.pipeline.hooks]
    found: list[EventSink] = []
    if any(os.environ.get(v) for v in TRACE_VARIABLES):
        from swell.telemetry import trace_observers

        found += trace_observers(loaded.name)
    children = store is not None and has_sub_pipelines(loaded)
    if not hooks and not children:
        return found
    from swell.notify.observer import hook_observers, stored_runs

    found += hook_observers(
        project.manifest.hooks,
        loaded,
        run_id=run_id,
        workspace=workspace,
        root=project.root,
        state_dir=state_dir,
        children=stored_runs(store) if store is not None and children else None,
    )
    return found


def has_sub_pipelines(loaded: LoadedPipeline) -> bool:
    """Whether a step of the pipeline may start sub-pipeline runs."""
    steps = loaded.pipeline.steps
    return any(s.pipeline or s.branch or s.iterate or s.loop or s.strategy for s in steps)


def run_observers(
    plan: RunPlan, state_dir: Path, store: RunReader | None = None
) -> list[EventSink]:
    """`observers` of a run this process executes."""
    return observers(
        plan.project, plan.pipeline, plan.run_id, str(plan.workspace), state_dir, store
    )

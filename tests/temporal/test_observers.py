"""Traces of a run on the Temporal engine: the worker that stores the run's events
builds its spans (executors/temporal/observing.py) and exports them."""

from __future__ import annotations

from pathlib import Path

from conftest import swell, wait_for, write_pipeline
from notify.receiver import receiver
from telemetry.test_traces import PIPELINE, collector
from temporal.conftest import Workers


def test_a_temporal_run_is_traced_by_its_worker(project: Path, workers: Workers) -> None:
    write_pipeline(project, "traced", PIPELINE)
    with collector() as (url, spans):
        workers.start(env={"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_BSP_SCHEDULE_DELAY": "200"})
        done = swell("run", "traced", "--engine", "temporal", cwd=project)
        assert done.returncode != 0, done.stderr  # its check step fails
        wait_for(lambda: any(s.name == "run traced" for s in spans), 30)
    [run] = [s for s in spans if s.name == "run traced"]
    visits = sorted(s.name for s in spans if s.parent_span_id == run.span_id)
    assert visits == ["visit build#1", "visit check#1"]


def test_a_sub_pipeline_on_temporal_fires_its_own_hooks(project: Path, workers: Workers) -> None:
    """As on the local engine (tests/notify/test_hooks.py): the child run's own
    pipeline hooks hear the child run; the parent's hear the parent's."""
    with receiver() as got:
        inner = "kind: WavePipeline\nmetadata: {name: inner}\n"
        inner += f"hooks:\n  - {{name: own, event: run_completed, type: http, url: '{got.url}'}}\n"
        inner += "steps:\n  - {id: work, type: command, script: echo did}\n"
        write_pipeline(project, "inner", inner)
        outer = "kind: WavePipeline\nmetadata: {name: outer}\n"
        outer += f"hooks:\n  - {{name: top, event: run_completed, type: http, url: '{got.url}'}}\n"
        outer += "steps:\n  - {id: sub, pipeline: inner}\n"
        write_pipeline(project, "outer", outer)
        workers.start()
        done = swell("run", "outer", "--engine", "temporal", cwd=project)
        assert done.returncode == 0, done.stderr
        wait_for(lambda: len(got.bodies) >= 2, 60)
    assert sorted(b["pipeline"] for b in got.bodies) == ["inner", "outer"]

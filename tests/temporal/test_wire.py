"""What a visit returns reaches the workflow whole (the engine's own `StepResult`
over pydantic's data converter): a failure that retrying cannot help is not retried on
the Temporal engine either, as on the local one."""

from __future__ import annotations

from pathlib import Path

from conftest import events, swell, write_pipeline
from temporal.conftest import Workers
from temporal_server import TemporalServer

MISSING_INPUT = """kind: WavePipeline
metadata: {name: missing-input}
steps:
  - id: make
    type: command
    optional: true
    script: exit 1
    output_artifacts: [{name: plan, path: plan.md, required: true}]
  - id: use
    type: command
    dependencies: [make]
    retry: {max_attempts: 3}
    script: cat plan.md
"""


def _visits_of_use(project: Path, *engine: str) -> tuple[int, str]:
    result = swell("run", "missing-input", *engine, cwd=project)
    assert result.returncode == 1, result.stdout + result.stderr
    run_id = result.stdout.splitlines()[0].split()[1]
    evs = events(project, run_id)
    started = [e for e in evs if e["type"] == "step.started" and e["step_id"] == "use"]
    (finished,) = [e for e in evs if e["type"] == "run.finished"]
    return len(started), str(finished["error"])


def test_a_failure_retrying_cannot_help_is_not_retried_on_the_engine(
    project: Path, workers: Workers, engine: TemporalServer
) -> None:
    write_pipeline(project, "missing-input", MISSING_INPUT)
    workers.start()
    local = _visits_of_use(project)
    assert local[0] == 1 and "required artifact 'plan'" in local[1], local
    assert _visits_of_use(project, "--engine", "temporal") == local

"""Replay: the histories the server stored of real runs (a loop, a gate, a rework, a
run continued as new) replayed against the workflow code in this process (another
hash seed than the worker's) take the same decisions; a workflow that decides
differently is caught."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer

from conftest import swell, swell_json, wait_for, write_pipeline
from swell.executors.temporal import WORKFLOW
from swell.executors.temporal.client import data_converter
from swell.executors.temporal.specs import RunOutcome, RunSpec
from swell.executors.temporal.workflow import RunWorkflow
from temporal.conftest import Workers
from temporal_server import TemporalServer

REWORK = """kind: WavePipeline
metadata: {name: rework}
steps:
  - id: produce
    type: command
    script: echo produced >> produced.txt
    handover:
      contracts:
        - type: test_suite
          command: "test -f fixes.txt"
          on_failure: rework
          rework_step: fixer
  - id: fixer
    type: command
    rework_only: true
    script: echo fixed >> fixes.txt
  - id: after
    type: command
    dependencies: [produce]
    script: echo after
"""


def _run(project: Path, *args: str) -> str:
    started = swell("run", *args, "--engine", "temporal", "--detach", "-o", "quiet", cwd=project)
    assert started.returncode == 0, started.stderr
    return started.stdout.strip()


def _succeeded(project: Path, run_id: str) -> None:
    wait_for(lambda: swell_json("status", run_id, cwd=project)["status"] == "succeeded", 60)


async def _histories(engine: TemporalServer, run_ids: list[str]) -> list[WorkflowHistory]:
    client = await Client.connect(engine.address)
    found = []
    for run_id in run_ids:
        handle = client.get_workflow_handle(run_id)
        await handle.result()  # the history is complete
        found.append(await handle.fetch_history())
    return found


@pytest.fixture
def histories(project: Path, workers: Workers, engine: TemporalServer) -> list[WorkflowHistory]:
    """Histories of a loop, a gate decided by `swell approve`, a rework, the last
    execution of a loop that continued as new, and a loop of local visits."""
    write_pipeline(project, "rework", REWORK)
    workers.start()
    loop = _run(project, "loop", "x")
    gate = _run(project, "review", "v1")
    wait_for(lambda: swell_json("status", gate, cwd=project)["waiting_gates"])
    assert swell("approve", gate, "--choice", "rework", cwd=project).returncode == 0
    wait_for(lambda: len(swell_json("status", gate, cwd=project)["waiting_gates"]) == 1)
    waiting = swell_json("status", gate, cwd=project)
    assert waiting["waiting_gates"][0]["visit"] == 2, waiting
    assert swell("approve", gate, "--choice", "ship", cwd=project).returncode == 0
    rework = _run(project, "rework")
    manifest = project / "wave.yaml"  # a run that continues as new every 2 visits
    text = manifest.read_text()
    manifest.write_text(
        text.replace("runtime:\n", "runtime:\n  temporal: {continue_after: 2}\n", 1)
    )
    continued = _run(project, "loop", "y")
    _succeeded(project, continued)
    # visits as local activities, each storing the events recorded before it
    manifest.write_text(
        text.replace("runtime:\n", "runtime:\n  temporal: {local_visits: true}\n", 1)
    )
    local = _run(project, "loop", "z")
    for run_id in (loop, gate, rework, local):
        _succeeded(project, run_id)
    steps = [s["step_id"] for s in swell_json("status", rework, cwd=project)["steps"]]
    assert steps == ["produce", "fixer", "after"], steps
    # the continued run's history is its last execution's: it starts from carried state
    return asyncio.run(_histories(engine, [loop, gate, rework, continued, local]))


def test_stored_histories_replay_without_nondeterminism(
    histories: list[WorkflowHistory],
) -> None:
    async def replay() -> None:
        replayer = Replayer(workflows=[RunWorkflow], data_converter=data_converter())
        for history in histories:
            result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
            assert result.replay_failure is None

    asyncio.run(replay())


@workflow.defn(name=WORKFLOW, sandboxed=False)
class TrippyWorkflow(RunWorkflow):
    """The same workflow with a circuit breaker that trips at the first failure: on a
    loop's history it decides differently, which replay must catch."""

    @workflow.run
    async def run(self, spec: RunSpec) -> RunOutcome:
        limits = dataclasses.replace(spec.limits, breaker_limit=1)
        return await super().run(dataclasses.replace(spec, limits=limits))


def test_replay_catches_a_workflow_that_decides_differently(
    histories: list[WorkflowHistory],
) -> None:
    async def replay() -> Exception | None:
        result = await Replayer(
            workflows=[TrippyWorkflow], data_converter=data_converter()
        ).replay_workflow(histories[0], raise_on_replay_failure=False)
        return result.replay_failure

    failure = asyncio.run(replay())
    assert failure is not None and "nondetermin" in str(failure).lower(), failure

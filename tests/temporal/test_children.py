"""Sub-pipelines on the Temporal engine: each child run is a child workflow of its
parent's (its id the child run id), linked to the parent in the store as a local child
run is; a parent's cancel stops its children; a parent+child history replays."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.worker import Replayer

from conftest import events, swell, swell_json, wait_for, write_pipeline
from swell.executors.temporal.client import data_converter
from swell.executors.temporal.workflow import RunWorkflow
from temporal.conftest import Workers, run_end
from temporal_server import TemporalServer

CHILD = """kind: WavePipeline
metadata: {name: child}
steps:
  - id: write
    type: command
    script: |
      echo "{{ input }}" >> child.txt
      sleep 1  # long enough that parallel items overlap even on a busy machine
      mkdir -p .agents/output
      echo '{"said": "{{ input }}"}' > .agents/output/said.json
    output_artifacts:
      - {name: said, path: .agents/output/said.json, type: json}
"""

PARENT = """kind: WavePipeline
metadata: {name: parent}
steps:
  - id: sub
    pipeline: child
    input: "from parent"
  - id: after
    type: command
    dependencies: [sub]
    script: cat child.txt > after.txt
"""

FANOUT = """kind: WavePipeline
metadata: {name: fanout}
steps:
  - id: each
    pipeline: child
    input: "item {{ item }}"
    iterate:
      over: '["a", "b", "c"]'
      mode: parallel
"""

SLOW_CHILD = """kind: WavePipeline
metadata: {name: slowchild}
steps:
  - id: wait
    type: command
    script: |
      echo $$ > "$SWELL_RUN_DIR_PID"
      sleep 300
"""

SLOW_PARENT = """kind: WavePipeline
metadata: {name: slowparent}
steps:
  - id: sub
    pipeline: slowchild
"""


def _run(project: Path, name: str, *args: str) -> str:
    started = swell(
        "run", name, *args, "--engine", "temporal", "--detach", "-o", "quiet", cwd=project
    )
    assert started.returncode == 0, started.stderr
    return started.stdout.strip()


def _ended(project: Path, run_id: str, timeout: float = 90) -> dict[str, object]:
    return run_end(project, run_id, timeout)


def _children(project: Path, run_id: str) -> list[str]:
    evs = events(project, run_id)
    return [str(e["child_run_id"]) for e in evs if e["type"] == "child.started"]


async def _describe(engine: TemporalServer, ids: list[str]) -> list[tuple[str | None, str]]:
    client = await Client.connect(engine.address)
    found = []
    for run_id in ids:
        description = await client.get_workflow_handle(run_id).describe()
        found.append((description.parent_id, description.status.name if description.status else ""))
    return found


def _gapless(project: Path, run_id: str) -> list[dict[str, object]]:
    evs = events(project, run_id)
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    return evs


@pytest.fixture
def pipelines(project: Path) -> Path:
    for name, text in (("child", CHILD), ("parent", PARENT), ("fanout", FANOUT)):
        write_pipeline(project, name, text)
    return project


def test_a_sub_pipeline_runs_as_a_child_workflow(
    pipelines: Path, workers: Workers, engine: TemporalServer
) -> None:
    project = pipelines
    workers.start()
    parent = _run(project, "parent")
    status = _ended(project, parent)
    assert status["status"] == "succeeded", (status["error"], status.get("steps"))
    [child] = _children(project, parent)
    assert asyncio.run(_describe(engine, [child])) == [(parent, "COMPLETED")]
    run_started = _gapless(project, child)[0]
    assert (run_started["parent_run_id"], run_started["parent_step_id"]) == (parent, "sub")
    listed = swell_json("status", child, cwd=project)
    assert listed["status"] == "succeeded"
    # the child worked in its parent's workspace, and the parent step kept its artifact
    workspace = Path(str(swell_json("status", parent, cwd=project)["workspace"]))
    assert (workspace / "after.txt").read_text() == "from parent\n"
    evs = _gapless(project, parent)
    kept = [e for e in evs if e["type"] == "artifact.written" and e["step_id"] == "sub"]
    assert [e["name"] for e in kept] == ["said"]


def test_iterate_items_run_in_parallel_as_child_workflows(
    pipelines: Path, workers: Workers, engine: TemporalServer
) -> None:
    project = pipelines
    workers.start(slots=4)
    parent = _run(project, "fanout")
    status = _ended(project, parent)
    assert status["status"] == "succeeded", (status["error"], status.get("steps"))
    children = _children(project, parent)
    assert len(children) == 3 and len(set(children)) == 3
    described = asyncio.run(_describe(engine, children))
    assert described == [(parent, "COMPLETED")] * 3
    said = []
    for child in children:
        assert swell_json("status", child, cwd=project)["status"] == "succeeded"
        said.append(
            (
                Path(str(swell_json("status", child, cwd=project)["workspace"])) / "child.txt"
            ).read_text()
        )
    assert sorted(said) == ["item a\n", "item b\n", "item c\n"]
    # the items overlapped in time: parallel, not one after another
    spans = []
    for child in children:
        evs = _gapless(project, child)
        spans.append((evs[0]["ts"], evs[-1]["ts"]))
    assert max(s for s, _ in spans) <= min(e for _, e in spans), spans


def test_cancelling_a_parent_stops_its_child(
    project: Path, workers: Workers, engine: TemporalServer
) -> None:
    write_pipeline(project, "slowchild", SLOW_CHILD.replace('"$SWELL_RUN_DIR_PID"', "wait.pid"))
    write_pipeline(project, "slowparent", SLOW_PARENT)
    workers.start()
    parent = _run(project, "slowparent")
    workspace = Path(str(swell_json("status", parent, cwd=project)["workspace"]))
    pid_file = wait_for(lambda: (p := workspace / "wait.pid").is_file() and p, 60)
    pid = int(wait_for(lambda: pid_file.read_text().strip()))
    [child] = _children_running(project, parent)
    cancelled = swell("cancel", parent, cwd=project)
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    assert _ended(project, parent)["status"] == "cancelled"
    # within _ended's 90 s: the child's `sleep 300` did not run out
    assert _ended(project, child)["status"] == "cancelled"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    # a cancelled run's workflow records it and completes (as a parent's does)
    assert asyncio.run(_describe(engine, [child])) == [(parent, "COMPLETED")]


def _children_running(project: Path, parent: str) -> list[str]:
    """The parent's children while its visit runs: the store's links (the parent's
    `child.started` is committed with the visit's end)."""
    runs = swell_json("list", cwd=project)
    listed = runs if isinstance(runs, list) else runs["runs"]
    return [str(r["id"]) for r in listed if r.get("parent_run_id") == parent]


def test_a_parent_and_child_history_replays(
    pipelines: Path, workers: Workers, engine: TemporalServer
) -> None:
    project = pipelines
    workers.start()
    parent = _run(project, "fanout")
    status = _ended(project, parent)
    assert status["status"] == "succeeded", (status["error"], status.get("steps"))
    ids = [parent, *_children(project, parent)]

    async def replay() -> None:
        client = await Client.connect(engine.address)
        replayer = Replayer(workflows=[RunWorkflow], data_converter=data_converter())
        for run_id in ids:
            history = await client.get_workflow_handle(run_id).fetch_history()
            result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
            assert result.replay_failure is None

    asyncio.run(replay())


NESTED = """kind: WavePipeline
metadata: {name: nested}
steps:
  - id: sub
    pipeline: child
    input: "from parent"
  - id: each
    dependencies: [sub]
    pipeline: child
    input: "item {{ item }}"
    iterate:
      over: '["a", "b"]'
      mode: parallel
"""


def test_one_worker_with_one_slot_runs_sub_pipelines(
    pipelines: Path, workers: Workers, engine: TemporalServer
) -> None:
    """A visit waiting for its children lends its slot to their visits: one slot is
    enough for a sub-pipeline and an `iterate` of two items."""
    project = pipelines
    write_pipeline(project, "nested", NESTED)
    workers.start(slots=1)
    parent = _run(project, "nested")
    status = _ended(project, parent, timeout=120)
    assert status["status"] == "succeeded", (status["error"], status.get("steps"))
    children = _children(project, parent)
    assert len(children) == 3
    for child in children:
        assert swell_json("status", child, cwd=project)["status"] == "succeeded"

"""The run loop is one, whatever drives it: each run of the shared scenario table
(tests/driver_scenarios.py) stores the same events on the local engine and on the
Temporal engine (a real dev server and `swell worker`), ids, times and durations
masked; the tests in tests/engine compare the local runner with a fake driver."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import events, run_id_of, swell, write_pipeline
from driver_scenarios import ENDS, SCENARIOS, comparable
from temporal.conftest import Workers


def _run(project: Path, name: str, *engine: str) -> str:
    done = swell("run", name, "--input", "x", *engine, cwd=project)
    return run_id_of(done.stdout + done.stderr)


@pytest.fixture
def worker(workers: Workers) -> Workers:
    workers.start()
    return workers


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_local_runner_and_the_workflow_store_the_same_run(
    project: Path, worker: Workers, name: str
) -> None:
    write_pipeline(project, name, SCENARIOS[name])
    local = _run(project, name)
    remote = _run(project, name, "--engine", "temporal")
    stored = events(project, local)
    assert (stored[-1]["type"], stored[-1]["status"]) == ("run.finished", ENDS[name])
    assert comparable(events(project, remote), remote) == comparable(stored, local)

"""`swell watch --engine temporal`: a file source's items start runs that the Temporal
engine executes, each exactly once, also across a restarted watcher and a watcher
killed between recording an item's run and starting its workflow."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from conftest import start_swell, swell, wait_for
from service.helpers import dispatched, enqueue, run_facts, service_project
from temporal.conftest import Workers
from temporal_server import TemporalServer

SOURCE = "file:queue.jsonl"


def _all_ended(state: Path, n: int) -> bool:
    facts = run_facts(state)
    return len(facts) == n and all(f[0] == "succeeded" for f in facts.values())


def _each_once(state: Path, items: list[str]) -> None:
    """Every item has one run, executed once, with the item as its input."""
    found = dispatched(state, SOURCE)
    assert sorted(found) == sorted(items)
    assert all(len(runs) == 1 for runs in found.values()), found
    facts = run_facts(state)
    for item, [run_id] in found.items():
        status, text, started = facts[run_id]
        assert (status, text, started) == ("succeeded", f"item {item}", 1)


@pytest.fixture
def queue_project(tmp_path: Path, engine: TemporalServer) -> Path:
    return service_project(tmp_path / "p")


def test_watch_on_temporal_starts_each_item_once_and_a_restart_starts_nothing_twice(
    queue_project: Path, isolated_state: Path
) -> None:
    workers = Workers(queue_project)
    try:
        workers.start()
        enqueue(queue_project / "queue.jsonl", "a", "b")
        args = ("watch", "echo", "--source", SOURCE, "--engine", "temporal", "--once")
        first = swell(*args, cwd=queue_project)
        assert first.returncode == 0, first.stderr
        assert "stopped: 2 runs started, 0 failed" in first.stdout
        wait_for(lambda: _all_ended(isolated_state, 2), 120)
        enqueue(queue_project / "queue.jsonl", "c")
        again = swell(*args, cwd=queue_project)
        assert again.returncode == 0, again.stderr
        assert "stopped: 1 runs started" in again.stdout and "item a" not in again.stdout
        wait_for(lambda: _all_ended(isolated_state, 3), 120)
        _each_once(isolated_state, ["a", "b", "c"])
    finally:
        workers.stop()


def test_a_watcher_killed_before_the_workflow_started_has_it_started_on_restart(
    queue_project: Path, isolated_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The moment between the commit of an item's run and its workflow's start, made
    exact: the run is recorded with its key, no workflow executes it."""
    from swell.engine.visit.context import RunOptions
    from swell.executors.temporal.client import configured, record_run
    from swell.runtime import check_pipeline, open_runtime

    enqueue(queue_project / "queue.jsonl", "a")
    monkeypatch.chdir(queue_project)
    rt = open_runtime(queue_project)
    loaded, _ = check_pipeline(rt, "echo")
    key = (SOURCE, "a", "echo")
    spec = record_run(rt, loaded, "item a", RunOptions(dispatch_key=key), configured())
    rt.store.close()
    workers = Workers(queue_project)
    try:
        workers.start()
        args = ("watch", "echo", "--source", SOURCE, "--engine", "temporal", "--once")
        result = swell(*args, cwd=queue_project)
        assert result.returncode == 0, result.stderr
        assert f"run {spec.run_id}: handed on" in result.stdout
        assert "stopped: 0 runs started" in result.stdout
        wait_for(lambda: _all_ended(isolated_state, 1), 120)
        again = swell(*args, cwd=queue_project)  # its workflow runs or ran: not again
        assert "handed on" not in again.stdout, again.stdout
        _each_once(isolated_state, ["a"])
    finally:
        workers.stop()


def test_watchers_killed_at_random_moments_on_temporal_start_each_item_once(
    queue_project: Path, isolated_state: Path
) -> None:
    import random
    import time

    rng = random.Random(31)
    queue = queue_project / "queue.jsonl"
    workers = Workers(queue_project)
    try:
        workers.start(slots=8)
        n = 0
        for _ in range(5):
            enqueue(queue, *[f"i{n + k}" for k in range(rng.randint(1, 2))])
            n = len(queue.read_text().splitlines())
            proc = start_swell(
                "watch", "echo", "--source", SOURCE, "--engine", "temporal",
                "--interval", "0.05", cwd=queue_project,
            )  # fmt: skip
            time.sleep(rng.uniform(0.5, 3.0))  # (wall-clock only to pick the moment)
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=30)
        last = swell(
            "watch", "echo", "--source", SOURCE, "--engine", "temporal", "--once",
            cwd=queue_project, timeout=300,
        )  # fmt: skip
        assert last.returncode == 0, last.stderr
        wait_for(lambda: _all_ended(isolated_state, n), 240, 0.5)
        _each_once(isolated_state, [f"i{k}" for k in range(n)])
    finally:
        workers.stop()

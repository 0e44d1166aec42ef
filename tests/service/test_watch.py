"""`swell watch`: one run per new item of a work source, with the item as input, never
twice (a second poll, a second dispatcher, a dispatcher killed and restarted)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from conftest import start_swell, swell, wait_for
from swell.store.capabilities import dispatch
from swell.store.location import open_store

from .helpers import dispatched, enqueue, run_facts, service_project

SOURCE = "file:queue.jsonl"


def _all_ended(state: Path | str, n: int) -> bool:
    facts = run_facts(state)
    return len(facts) == n and all(f[0] == "succeeded" for f in facts.values())


def test_watch_starts_a_run_per_item_with_the_item_as_input_once(
    tmp_path: Path, isolated_state: Path
) -> None:
    project = service_project(tmp_path / "p")
    enqueue(project / "queue.jsonl", "a", "b")
    first = swell("watch", "echo", "--source", SOURCE, "--once", cwd=project)
    assert first.returncode == 0, first.stderr
    assert "item a: run echo-" in first.stdout and "item b: run echo-" in first.stdout
    assert "stopped: 2 runs started, 0 failed" in first.stdout
    wait_for(lambda: _all_ended(isolated_state, 2))
    assert sorted(f[1] for f in run_facts(isolated_state).values()) == ["item a", "item b"]
    enqueue(project / "queue.jsonl", "c")
    again = swell("watch", "echo", "--source", SOURCE, "--once", cwd=project)
    assert "stopped: 1 runs started" in again.stdout and "item a" not in again.stdout
    wait_for(lambda: _all_ended(isolated_state, 3))
    assert {k: len(v) for k, v in dispatched(isolated_state, SOURCE).items()} == {
        "a": 1,
        "b": 1,
        "c": 1,
    }


def test_waves_continuous_spelling_runs_the_same(tmp_path: Path, isolated_state: Path) -> None:
    project = service_project(tmp_path / "p")
    enqueue(project / "queue.jsonl", "a")
    result = swell("run", "echo", "--continuous", "--source", SOURCE, "--once", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "item a: run echo-" in result.stdout
    assert list(dispatched(isolated_state, SOURCE)) == ["a"]


def test_label_filter_and_batch_size_take_waves_meaning(
    tmp_path: Path, isolated_state: Path
) -> None:
    project = service_project(tmp_path / "p", ", label_filter: ready, batch_size: 2")
    queue = project / "queue.jsonl"
    enqueue(queue, "a", "b", "c", labels=["ready"])
    enqueue(queue, "d", labels=["later"])
    validate = swell("validate", cwd=project)
    assert "label_filter" not in validate.stdout + validate.stderr  # no "does not run"
    first = swell("watch", "echo", "--source", SOURCE, "--once", cwd=project)
    assert "stopped: 2 runs started" in first.stdout  # batch_size: two items a poll
    assert "item d: skipped (input.label_filter of echo is 'ready')" in first.stdout
    swell("watch", "echo", "--source", SOURCE, "--once", cwd=project)
    assert sorted(dispatched(isolated_state, SOURCE)) == ["a", "b", "c"]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_two_dispatchers_on_one_store_share_the_items(
    backend: str,
    tmp_path: Path,
    isolated_state: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    where: Path | str = isolated_state
    if backend == "postgres":
        where = request.getfixturevalue("postgres_server").fresh_schema()
        monkeypatch.setenv("SWELL_STORE", str(where))
    project = service_project(tmp_path / "p")
    enqueue(project / "queue.jsonl", *[f"i{n}" for n in range(8)])
    both = [
        start_swell("watch", "echo", "--source", SOURCE, "--once", cwd=project) for _ in range(2)
    ]
    outs = [p.communicate(timeout=180) for p in both]
    assert all(p.returncode == 0 for p in both), [err for _, err in outs]
    said = [line.split()[1].rstrip(":") for out, _ in outs for line in out.splitlines()]
    started = [s for s in said if s.startswith("i")]
    assert sorted(started) == sorted(f"i{n}" for n in range(8))  # each by one of them
    assert all(len(v) == 1 for v in dispatched(where, SOURCE).values())
    wait_for(lambda: _all_ended(where, 8), timeout=180)


def test_sigterm_stops_dispatching_gracefully(tmp_path: Path, isolated_state: Path) -> None:
    project = service_project(tmp_path / "p")
    enqueue(project / "queue.jsonl", "a")
    proc = start_swell("watch", "echo", "--source", SOURCE, "--interval", "0.2", cwd=project)
    wait_for(lambda: "a" in dispatched(isolated_state, SOURCE), timeout=60)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.splitlines()[-1] == "stopped: 1 runs started, 0 failed"


def test_a_failing_run_halts_dispatch_with_on_failure_halt(
    tmp_path: Path, isolated_state: Path
) -> None:
    fail = "kind: WavePipeline\nmetadata: {name: fail}\nsteps:\n  - {id: x, type: command, script: exit 3}\n"
    project = service_project(tmp_path / "p", fail=fail)
    enqueue(project / "queue.jsonl", "a")
    proc = start_swell(
        "watch", "fail", "--source", SOURCE, "--interval", "0.2", "--on-failure", "halt",
        cwd=project,
    )  # fmt: skip
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert "halting: --on-failure halt" in out and out.splitlines()[-1].endswith("(halted)")


def test_an_unknown_source_is_one_clear_error(tmp_path: Path) -> None:
    project = service_project(tmp_path / "p")
    result = swell("watch", "echo", "--source", "jira:x", "--once", cwd=project)
    assert result.returncode != 0
    assert "unknown work source kind `jira`" in result.stderr
    assert "Traceback" not in result.stderr


def _kill_cycles(tmp_path: Path, state: Path, cycles: int, seed: int) -> None:
    """Start the dispatcher, kill -9 it at a random moment, restart, while items keep
    arriving; then let one run to the end: every item has one run, started once."""
    import random
    import time

    rng = random.Random(seed)
    project = service_project(tmp_path / "p")
    queue = project / "queue.jsonl"
    n = 0
    for _ in range(cycles):
        enqueue(queue, *[f"i{n + k}" for k in range(rng.randint(0, 2))])
        n = sum(1 for _ in queue.read_text().splitlines())
        proc = start_swell("watch", "echo", "--source", SOURCE, "--interval", "0.05", cwd=project)
        time.sleep(rng.uniform(0.3, 2.5))  # (wall-clock only to pick the moment)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    enqueue(queue, f"i{n}")
    n += 1
    last = swell("watch", "echo", "--source", SOURCE, "--once", cwd=project, timeout=300)
    assert last.returncode == 0, last.stderr
    wait_for(lambda: _all_ended(state, n), timeout=300, interval=0.5)
    items = dispatched(state, SOURCE)
    assert sorted(items) == sorted(f"i{k}" for k in range(n))  # none lost
    assert all(len(runs) == 1 for runs in items.values())  # none twice
    facts = run_facts(state)
    assert all(started == 1 for _, _, started in facts.values())  # each executed once
    for item, [run_id] in items.items():
        assert facts[run_id][1] == f"item {item}"


def test_a_dispatcher_killed_at_random_moments_starts_each_item_once(
    tmp_path: Path, isolated_state: Path
) -> None:
    _kill_cycles(tmp_path, isolated_state, cycles=6, seed=31)


@pytest.mark.slow
def test_thirty_kill_9_cycles_with_items_arriving_lose_nothing_and_repeat_nothing(
    tmp_path: Path, isolated_state: Path
) -> None:
    _kill_cycles(tmp_path, isolated_state, cycles=30, seed=7)


def test_watch_without_a_source_says_what_it_needs(tmp_path: Path) -> None:
    project = service_project(tmp_path / "p")
    result = swell("watch", "echo", cwd=project)
    assert result.returncode != 0 and "needs --source URI" in result.stderr


def test_a_run_recorded_by_a_dispatcher_that_died_before_handing_it_on_goes_on(
    tmp_path: Path, isolated_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The moment between the commit of an item's run and its hand-on, made exact."""
    from swell.engine.visit.context import RunOptions
    from swell.runtime import check_pipeline, create_run, open_runtime
    from swell.store.capabilities import claims

    project = service_project(tmp_path / "p")
    enqueue(project / "queue.jsonl", "a")
    monkeypatch.chdir(project)
    rt = open_runtime(project)
    loaded, _ = check_pipeline(rt, "echo")
    plan = create_run(rt, loaded, "item a", RunOptions(dispatch_key=(SOURCE, "a", "echo")))
    claims(rt.store).release(plan.run_id)  # as its dying process's claim would end
    rt.store.close()
    result = swell("watch", "echo", "--source", SOURCE, "--once", cwd=project)
    assert f"run {plan.run_id}: handed on" in result.stdout
    assert "stopped: 0 runs started" in result.stdout
    wait_for(lambda: _all_ended(isolated_state, 1))
    assert run_facts(isolated_state)[plan.run_id][2] == 1


def test_a_dispatched_runs_sub_pipeline_is_not_a_work_item_of_its_own(
    tmp_path: Path, isolated_state: Path
) -> None:
    """A child run inherits its parent's options but not its dispatch key."""
    outer = "kind: WavePipeline\nmetadata: {name: outer}\nsteps:\n  - {id: sub, pipeline: echo}\n"
    project = service_project(tmp_path / "p", outer=outer)
    enqueue(project / "queue.jsonl", "a")
    result = swell("watch", "outer", "--source", SOURCE, "--once", cwd=project)
    assert "item a: run outer-" in result.stdout, result.stderr
    wait_for(lambda: _all_ended(isolated_state, 2))  # the item's run and its child
    assert [len(v) for v in dispatched(isolated_state, SOURCE).values()] == [1]


def test_items_are_recorded_while_earlier_runs_processes_start(
    tmp_path: Path, isolated_state: Path
) -> None:
    """A run's process takes seconds to start on a loaded machine: the watcher records
    the next items meanwhile and hands runs on several at once (up to
    --max-concurrent), instead of waiting for each process in turn."""
    project = service_project(tmp_path / "p")
    enqueue(project / "queue.jsonl", "a", "b", "c")
    done = swell(
        "watch", "echo", "--source", SOURCE, "--once", "--max-concurrent", "3", cwd=project
    )
    assert done.returncode == 0, done.stderr
    assert "stopped: 3 runs started, 0 failed" in done.stdout
    wait_for(lambda: _all_ended(isolated_state, 3))
    store = open_store(isolated_state / "state.db")
    try:
        keys = dispatch(store).dispatched(SOURCE)
        first_started = min(store.events_of_kind(k.run_id, ["run.started"])[0].ts for k in keys)
    finally:
        store.close()
    # every item was recorded before the first of their runs started
    assert max(k.created_at for k in keys) < first_started
    assert all(f[2] == 1 for f in run_facts(isolated_state).values())  # each started once

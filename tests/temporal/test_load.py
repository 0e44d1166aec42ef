"""Load: 50 concurrent loop runs across 3 `swell worker` processes, once undisturbed and
once with the busiest worker killed (`kill -9`) mid-step; every run succeeds with
exactly its expected changes and gapless events, and nothing of the test is left
running. Prints wall times, p95 run latency, dead-worker detection and cancel latency.

A visit on a dead worker runs again from the start on another (at-least-once): the
steps here are idempotent per visit (each writes its own file), as steps must be until
workspaces are restored per attempt (docs/scale-out.md).
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from temporalio.client import Client

from conftest import swell, swell_json, wait_for, write_pipeline
from postgres_server import PostgresServer
from swell.store.location import open_store
from swell.store.protocols import Store
from temporal.conftest import Workers
from temporal_server import TemporalServer

RUNS = 50
MARK = "sleep 0.37"  # this test's step processes, for the leftover check
LOOP = f"""kind: WavePipeline
metadata: {{name: busy}}
max_step_visits: 30
steps:
  - id: implement
    type: command
    script: |
      {MARK}
      echo "attempt $SWELL_VISIT" > attempt-$SWELL_VISIT.txt
  - id: run-tests
    type: command
    dependencies: [implement]
    script: |
      n=$(ls attempt-*.txt | wc -l)
      [ "$n" -ge 3 ] || {{ echo "only $n attempts" >&2; exit 1; }}
    output:
      context:
        tests_pass: "{{{{ exit_code == 0 }}}}"
  - id: check
    type: conditional
    dependencies: [run-tests]
    edges:
      - target: _complete
        condition: "context.tests_pass=true"
      - target: implement
"""


async def _start_all(project: Path, count: int) -> list[str]:
    """`count` runs started at once through swell's own client code, as `swell run
    --engine temporal --detach` starts each."""
    from swell.engine.visit.context import RunOptions
    from swell.executors.temporal import client as engines
    from swell.runtime import check_pipeline, open_runtime

    rt = open_runtime(project)
    loaded, _ = check_pipeline(rt, "busy")
    engine = engines.configured(rt.project.manifest.runtime.temporal)
    client = await engines.connect(engine)
    try:
        specs = [engines.record_run(rt, loaded, "", RunOptions(), engine) for _ in range(count)]
    finally:
        rt.store.close()
    await asyncio.gather(*(engines.start(client, engine, spec) for spec in specs))
    return [spec.run_id for spec in specs]


async def _outcomes(address: str, run_ids: list[str]) -> list[str]:
    from swell.executors.temporal.client import outcome

    client = await Client.connect(address)
    done = await asyncio.gather(*(outcome(client, run_id) for run_id in run_ids))
    return [o.status if o.status == "succeeded" else f"{o.status}: {o.error}" for o in done]


async def _first_retry(address: str, run_ids: list[str]) -> datetime | None:
    """When the first visit started again on another worker (attempt 2)."""
    client = await Client.connect(address)
    first = None
    for run_id in run_ids:
        history = await client.get_workflow_handle(run_id).fetch_history()
        for event in history.events:
            started = event.activity_task_started_event_attributes
            if event.HasField("activity_task_started_event_attributes") and started.attempt > 1:
                when = event.event_time.ToDatetime(tzinfo=UTC)
                first = when if first is None or when < first else first
    return first


def _check_runs(store: Store, run_ids: list[str]) -> list[float]:
    """Every run's changes and events are exactly what they should be; their latencies."""
    latencies = []
    for run_id in run_ids:
        run = store.get_run(run_id)
        assert run.status == "succeeded", run
        workspace = Path(str(run.workspace))
        assert sorted(p.name for p in workspace.glob("attempt-*.txt")) == [
            "attempt-1.txt",
            "attempt-2.txt",
            "attempt-3.txt",
        ]
        evs = store.events(run_id)
        assert [e.seq for e in evs] == list(range(1, len(evs) + 1)), run_id
        started = [(e.step_id, e.visit) for e in evs if e.type == "step.started"]
        assert len(started) == len(set(started)) == 9, run_id  # 3 x 3 steps: none twice
        began = datetime.fromisoformat(str(run.started_at).replace("Z", "+00:00"))
        ended = datetime.fromisoformat(str(run.finished_at).replace("Z", "+00:00"))
        latencies.append((ended - began).total_seconds())
    return latencies


def _busiest(procs: list[subprocess.Popen[str]]) -> subprocess.Popen[str]:
    def children(proc: subprocess.Popen[str]) -> int:
        out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True)
        return len(out.stdout.split())

    return max(procs, key=children)


def _leftovers() -> list[str]:
    out = subprocess.run(["pgrep", "-af", MARK], capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if "pgrep" not in line]


@pytest.mark.slow
def test_fifty_runs_on_three_workers_survive_a_killed_worker(
    project: Path,
    workers: Workers,
    engine: TemporalServer,
    postgres_server: PostgresServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SWELL_STORE", postgres_server.fresh_schema())
    write_pipeline(project, "busy", LOOP)
    procs = [workers.start(slots=4) for _ in range(3)]

    begun = time.monotonic()
    calm = asyncio.run(_start_all(project, RUNS))
    ended = asyncio.run(_outcomes(engine.address, calm))
    assert ended == ["succeeded"] * RUNS, [e for e in ended if e != "succeeded"]
    calm_wall = time.monotonic() - begun

    begun = time.monotonic()
    stormy = asyncio.run(_start_all(project, RUNS))
    wait_for(lambda: len(_leftovers()) >= 6, 30, 0.05)  # the workers are busy
    victim = _busiest(procs)
    killed_at = datetime.now().astimezone()
    os.killpg(victim.pid, signal.SIGKILL)  # the worker, not its steps' own groups
    victim.wait()
    ended = asyncio.run(_outcomes(engine.address, stormy))
    assert ended == ["succeeded"] * RUNS, [e for e in ended if e != "succeeded"]
    stormy_wall = time.monotonic() - begun
    retried = asyncio.run(_first_retry(engine.address, stormy))
    assert retried is not None, "no visit ran again after the kill"
    detection = (retried - killed_at).total_seconds()

    store = open_store(os.environ["SWELL_STORE"])
    try:
        latencies = _check_runs(store, calm) + _check_runs(store, stormy)
    finally:
        store.close()
    p95 = statistics.quantiles(latencies, n=20)[-1]

    write_pipeline(
        project, "idle", "kind: WavePipeline\nsteps:\n  - id: idle\n    script: sleep 300\n"
    )
    idle = swell("run", "idle", "--engine", "temporal", "--detach", "-o", "quiet", cwd=project)
    run_id = idle.stdout.strip()
    wait_for(lambda: swell_json("status", run_id, cwd=project)["steps"])
    begun = time.monotonic()
    assert swell("cancel", run_id, cwd=project).returncode == 0
    cancel_latency = time.monotonic() - begun

    assert wait_for(lambda: not _leftovers(), 15)
    with capsys.disabled():
        print(
            f"\nload: {RUNS} loop runs (9 visits each) on 3 workers x 4 slots: "
            f"{calm_wall:.1f}s undisturbed, {stormy_wall:.1f}s with a worker killed; "
            f"p95 run latency {p95:.1f}s; dead worker noticed after {detection:.1f}s; "
            f"cancel {cancel_latency:.1f}s"
        )

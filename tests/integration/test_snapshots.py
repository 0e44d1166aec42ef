"""Run state snapshots with real processes: a run writes its state down every so many
events (SWELL_SNAPSHOT_EVERY makes it often here); killed with -9 again and again, it
resumes from its newest snapshot, loses and repeats nothing, and drops the snapshot
once it has ended."""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path

import pytest

from conftest import events, start_swell, swell, swell_json, write_pipeline
from swell.engine.loop.state import RunState
from swell.runtime import load_state
from swell.store.location import open_store

ROUNDS = 60
LOOP = f"""
kind: WavePipeline
metadata: {{name: counted}}
max_step_visits: 1000
steps:
  - id: work
    max_visits: 500
    script: |
      echo "$SWELL_VISIT" >> ran.log
      prev={{{{ context.n }}}}
      echo "{{\\"n\\": $(( ${{prev:-0}} + 1 ))}}"
    output:
      context:
        n: "{{{{ n }}}}"
  - id: check
    dependencies: [work]
    max_visits: 500
    script: |
      # a different error each round: the circuit breaker must not stop the loop
      [ {{{{ context.n }}}} -ge {ROUNDS} ] || {{ echo "at_round_{{{{ context.n }}}}" >&2; exit 1; }}
    edges:
      - {{target: _complete, condition: outcome=success}}
      - {{target: work}}
"""


def _run_until_killed(args: list[str], project: Path, finished: int) -> str:
    """Start `swell ARGS -o json`, kill it -9 after `finished` visits ended; its run id."""
    proc = start_swell(*args, "-o", "json", cwd=project)
    assert proc.stdout is not None
    run_id, seen = "", 0
    for line in proc.stdout:
        event = json.loads(line)
        run_id = event["run_id"]
        seen += event["type"] == "step.finished"
        if seen >= finished:
            break
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)
    return run_id


def test_kill_9_and_resume_from_snapshots_loses_and_repeats_nothing(
    project: Path, isolated_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWELL_SNAPSHOT_EVERY", "9")
    write_pipeline(project, "counted", LOOP)
    run_id = _run_until_killed(["run", "counted"], project, 30)
    for cycle in range(3):
        store = open_store(isolated_state / "state.db")
        try:
            snapshot = store.load_snapshot(run_id)
            assert snapshot is not None and snapshot[0] > 20, cycle
            stored = store.events(run_id)
            assert snapshot[0] <= len(stored)
            # the snapshot and the events after it are the state of every event
            assert load_state(store, run_id) == RunState.replay(run_id, stored)
        finally:
            store.close()
        if cycle < 2:
            run_id = _run_until_killed(["resume", run_id], project, 20) or run_id

    resumed = swell("resume", run_id, cwd=project)
    assert resumed.returncode == 0, resumed.stderr
    evs = events(project, run_id)
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    started = Counter((e["step_id"], e["visit"]) for e in evs if e["type"] == "step.started")
    assert set(started.values()) == {1}  # no visit ran twice
    status = swell_json("status", run_id, cwd=project)
    assert status["status"] == "succeeded" and status["context"]["n"] == str(ROUNDS)
    store = open_store(isolated_state / "state.db")
    try:
        assert store.load_snapshot(run_id) is None  # a finished run needs none
    finally:
        store.close()
    # every `work` visit that finished counted once; a killed one may have logged first
    logged = (isolated_state / "workspaces" / run_id / "ran.log").read_text().split()
    finished = [e for e in evs if e["type"] == "step.finished" and e["step_id"] == "work"]
    assert len(finished) == ROUNDS and ROUNDS <= len(logged) <= ROUNDS + 3

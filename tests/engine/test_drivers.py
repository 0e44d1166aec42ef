"""The run loop is one, whatever drives it: each run of the shared scenario table
(tests/driver_scenarios.py) records the same events through the local runner and
through the harness's in-order fake driver (ids, times and durations masked)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harness import Harness, InOrder, Result

from driver_scenarios import ENDS, SCENARIOS, comparable
from swell.engine.loop.runner import Runner
from swell.events import models as ev


def _run(root: Path, driver: type[Runner], name: str) -> Result:
    h = Harness(root, driver=driver)
    h.pipeline(SCENARIOS[name], name)
    return h.run(name, "x")


def _stream(result: Result) -> list[dict[str, Any]]:
    events = [json.loads(ev.event_json(e)) for e in result.events]
    return comparable(events, result.run_id)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_local_runner_and_the_fake_driver_record_the_same_run(
    tmp_path: Path, name: str
) -> None:
    local = _run(tmp_path / "local", Runner, name)
    fake = _run(tmp_path / "fake", InOrder, name)
    assert local.status == ENDS[name], local.error
    assert _stream(fake) == _stream(local)
    # stamped on the fake clock: one second per visit it ran (a router's is decided inline)
    ran = len([e for e in fake.of(ev.StepFinished) if e.duration_ms == 1000])
    assert fake.events[-1].ts == ev.now_iso(InOrder.EPOCH.replace(second=ran))

"""A gate's visit cannot change the workspace: its checkpoint is the workspace's newest,
unchanged (docs/time-travel.md), so `swell fork --at GATE#N` still has one."""

from __future__ import annotations

from harness import Harness, h_fixture  # noqa: F401 - the fixture `h`

from swell.events import models as ev

PIPELINE = """
kind: WavePipeline
steps:
  - id: prepare
    script: echo "change" >> change.txt
  - id: approve
    dependencies: [prepare]
    gate:
      type: approval
      message: "Ship?"
      choices:
        - {label: Ship it, key: ship, target: ship}
      default: ship
  - id: ship
    dependencies: [approve]
    script: echo shipped > shipped.txt
"""


def test_a_gate_visit_keeps_the_newest_checkpoint(h: Harness) -> None:
    h.pipeline(PIPELINE)
    h.gates.decide("approve", choice="ship")
    result = h.run()
    assert result.status == "succeeded"
    points = {c.step_id: c for c in result.of(ev.WorkspaceCheckpoint)}
    assert points["prepare"].changed and points["ship"].changed
    gate = points["approve"]
    assert not gate.changed
    assert (gate.commit, gate.tree) == (points["prepare"].commit, points["prepare"].tree)
    assert points["ship"].parent == points["prepare"].commit

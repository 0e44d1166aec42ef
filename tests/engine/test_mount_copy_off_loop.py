"""A mount's copy runs off the event loop: other visits go on while it is under way."""

from __future__ import annotations

import threading
import time

import pytest
from harness import Harness, h_fixture  # noqa: F401 - the fixture `h`

from swell.workspace.manager import Opened, Workspaces

LINKS = 6


def _chain() -> str:
    steps = []
    for n in range(1, LINKS + 1):
        after = f"\n    dependencies: [link-{n - 1}]" if n > 1 else ""
        last = "touch chain-done" if n == LINKS else "echo link"
        steps.append(f"  - id: link-{n}{after}\n    script: {last}\n")
    return "".join(steps)


def test_a_chain_of_visits_runs_while_a_mount_is_copied(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy waits until a chain of steps, each started by the loop when the one
    before ends, has run to its end. On the loop, the copy would hold the loop and the
    chain would never end: the copy gives up waiting and the test fails. No timing:
    however slow the machine, the chain ends long before the copy gives up."""
    copy = Workspaces.mount
    seen: list[bool] = []

    def gated(self: Workspaces, opened: Opened) -> None:
        if opened.mounts:
            done = opened.workspace.path / "chain-done"
            deadline = time.monotonic() + 120
            while not done.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            seen.append(done.exists())
            seen.append(threading.current_thread() is not threading.main_thread())
        copy(self, opened)

    monkeypatch.setattr(Workspaces, "mount", gated)
    h.write("data/notes.txt", "mounted\n")
    h.pipeline(
        """
kind: WavePipeline
steps:
  - id: big
    workspace:
      mount: [{source: ./data, target: /project, mode: readonly}]
    script: grep -q mounted project/notes.txt
"""
        + _chain()
    )
    result = h.run()
    assert result.status == "succeeded", result.error
    assert seen == [True, True]
    assert [s for s, _, outcome in result.visits() if outcome == "success"][-1] == "big"
